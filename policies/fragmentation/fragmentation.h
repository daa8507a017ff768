// fragmentation: prefer placements that leave whole GPUs, and whole NVLink islands, free for the
// pods that will come next (after FGD, "Beware of Fragmentation", USENIX ATC 2023).
//
// A workload is a weighted list of pod classes (k GPUs of m milli each). For one class, the
// fragment of a node is the free GPU capacity (milli) that a pod of that class cannot use:
//  - a GPU is usable when it has a free slot and at least m milli free;
//  - a class of k > 1 GPUs also needs k usable GPUs inside one locality domain (NVLink island
//    when the machine has NVLink, else NUMA node, else the whole node), and k free slots;
//  - a class that asks for CPU or memory fits only where the node has that much free besides
//    its GPUs (FGD's rule: a GPU share a pod cannot use for lack of CPU is stranded too);
//  - fragment = free milli on unusable GPUs when the class fits, else all free milli.
// A pod without GPUs changes only the node's free CPU and memory; its delta is what that strands
// of the GPUs, so that all-pod mode steers CPU-only pods to where they strand the least.
// The node's fragmentation is the weighted mean over classes. Placing the pod changes it by
// delta (milli); every GPU's worth of capacity newly stranded costs 5 points:
//   score = clamp(5 - 5 * delta / 1000, 0, 10)
//
// Thread safety: immutable.
#ifndef GPUTOPO_POLICIES_FRAGMENTATION_FRAGMENTATION_H_
#define GPUTOPO_POLICIES_FRAGMENTATION_FRAGMENTATION_H_

#include <array>
#include <cstdint>
#include <limits>
#include <vector>

#include "policies/engine/score_component.h"
#include "policies/registry/component_args.h"

namespace gputopo::policies {

// Free capacity of one node, as fragmentation sees it.
struct FreeView {
  int gpu_count = 0;
  std::array<int, 64> free_slots{};
  std::array<int, 64> free_milli{};
  int node_free_slots = 0;
  std::vector<GpuMask> domains;  // locality domains for multi-GPU classes
  int default_share = 1000;      // the share of a class with milli 0: 1000 / replicas
  // Free CPU (millicores) and memory (bytes) besides the GPUs; unlimited where unknown.
  int64_t cpu_free = std::numeric_limits<int64_t>::max();
  int64_t memory_free = std::numeric_limits<int64_t>::max();
};

// Fragment (milli) of `view` for one class. Pure.
double FragmentMilli(const FreeView& view, const WorkloadClass& cls);
// Weighted mean of FragmentMilli over `workload`. Pure.
double ExpectedFragmentMilli(const FreeView& view, const std::vector<WorkloadClass>& workload);
// The score for a fragmentation change of `delta_milli`. Pure.
double FragmentationScore(double delta_milli);

class Fragmentation final : public ScoreComponent {
 public:
  static constexpr std::string_view kName = "fragmentation";

  // Precondition: workload validated (see MakeFragmentation in the registry). A `pinned`
  // workload is always used; otherwise the node's learned one (NodeState::observed_workload)
  // is, once the cluster has learned one, and `workload` only until then.
  explicit Fragmentation(std::vector<WorkloadClass> workload, bool pinned = true)
      : workload_(std::move(workload)), pinned_(pinned) {}
  std::string_view Name() const override { return kName; }
  bool ScoresGpuLessPods() const override { return true; }
  bool ReadsHostResources() const override;
  // Computes the node's fragmentation once; each candidate set then costs
  // O(classes * (N + domains)).
  PreparedScorePtr PrepareIn(const PlacementContext& ctx,
                             std::pmr::memory_resource& memory) const override;
  // Convenience for one set (tests): Prepare(ctx)->Score(gpus).
  double Score(const PlacementContext& ctx, GpuMask gpus) const;

  // The view before and after placing the pod on `gpus`.
  static FreeView Before(const PlacementContext& ctx);
  static FreeView After(const PlacementContext& ctx, FreeView view, GpuMask gpus);

  // A mix of sharing and multi-GPU pods, used when a preset names no workload.
  static std::vector<WorkloadClass> DefaultWorkload();

 private:
  // The classes fragmentation is measured against on `ctx`'s node.
  const std::vector<WorkloadClass>& WorkloadFor(const PlacementContext& ctx) const;

  std::vector<WorkloadClass> workload_;
  bool pinned_ = true;
};

}  // namespace gputopo::policies

#endif  // GPUTOPO_POLICIES_FRAGMENTATION_FRAGMENTATION_H_
