// fragmentation: prefer placements that leave whole GPUs, and whole NVLink islands, free for the
// pods that will come next (after FGD, "Beware of Fragmentation", USENIX ATC 2023).
//
// A workload is a weighted list of pod classes (k GPUs of m milli each). For one class, the
// fragment of a node is the free GPU capacity (milli) that a pod of that class cannot use:
//  - a GPU is usable when it has a free slot and at least m milli free;
//  - a class of k > 1 GPUs also needs k usable GPUs inside one locality domain (NVLink island
//    when the machine has NVLink, else NUMA node, else the whole node), and k free slots;
//  - fragment = free milli on unusable GPUs when the class fits, else all free milli.
// The node's fragmentation is the weighted mean over classes. Placing the pod changes it by
// delta (milli); every GPU's worth of capacity newly stranded costs 5 points:
//   score = clamp(5 - 5 * delta / 1000, 0, 10)
//
// Thread safety: immutable.
#ifndef GPUTOPO_POLICIES_FRAGMENTATION_FRAGMENTATION_H_
#define GPUTOPO_POLICIES_FRAGMENTATION_FRAGMENTATION_H_

#include <array>
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

  // Precondition: workload validated (see MakeFragmentation in the registry).
  explicit Fragmentation(std::vector<WorkloadClass> workload) : workload_(std::move(workload)) {}
  std::string_view Name() const override { return kName; }
  // Computes the node's fragmentation once; each candidate set then costs
  // O(classes * (N + domains)).
  std::unique_ptr<PreparedScore> Prepare(const PlacementContext& ctx) const override;
  // Convenience for one set (tests): Prepare(ctx)->Score(gpus).
  double Score(const PlacementContext& ctx, GpuMask gpus) const;

  // The view before and after placing the pod on `gpus`.
  static FreeView Before(const PlacementContext& ctx);
  static FreeView After(const PlacementContext& ctx, FreeView view, GpuMask gpus);

  // A mix of sharing and multi-GPU pods, used when a preset names no workload.
  static std::vector<WorkloadClass> DefaultWorkload();

 private:
  std::vector<WorkloadClass> workload_;
};

}  // namespace gputopo::policies

#endif  // GPUTOPO_POLICIES_FRAGMENTATION_FRAGMENTATION_H_
