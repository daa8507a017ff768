// packing: prefer the node left with the least free capacity, so that pods consolidate on nodes
// already in use and whole nodes stay free for the large pods still to come (the FGD authors'
// BestFit, the same measure):
//   left  = 0.5 * free CPU after / cpuReference + 0.5 * free GPU milli after / gpuReference
//   score = clamp(10 * (1 - left), 0, 10)
// (only the GPU term, with weight 1, where the node does not say its CPU). The references are
// the largest node's CPU and GPUs, so that a small node nearly full and a large node nearly full
// compare as they should. Pods without GPUs are packed too.
//
// The FGD simulator's results owe much to packing: its ties between equal fragmentation scores
// go to nodes in one fixed order, which consolidates. Behind kube-scheduler, ties go at random;
// this component, with a small weight beside fragmentation, brings the consolidation back.
//
// Thread safety: immutable.
#ifndef GPUTOPO_POLICIES_PACKING_PACKING_H_
#define GPUTOPO_POLICIES_PACKING_PACKING_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "policies/engine/score_component.h"

namespace gputopo::policies {

// The score for a node left with `cpu_left_milli` (negative: unknown) and `gpu_left_milli`.
// Pure.
double PackingScore(int64_t cpu_left_milli, int64_t gpu_left_milli, double cpu_reference_milli,
                    double gpu_reference_milli);

class Packing final : public ScoreComponent {
 public:
  static constexpr std::string_view kName = "packing";

  // Preconditions: both references > 0.
  Packing(double cpu_reference_milli, double gpu_reference_milli)
      : cpu_reference_milli_(cpu_reference_milli), gpu_reference_milli_(gpu_reference_milli) {}
  std::string_view Name() const override { return kName; }
  PreparedScorePtr PrepareIn(const PlacementContext& ctx,
                             std::pmr::memory_resource& memory) const override;
  bool ScoresGpuLessPods() const override { return true; }
  bool ReadsHostResources() const override { return true; }

 private:
  double cpu_reference_milli_;
  double gpu_reference_milli_;
};

}  // namespace gputopo::policies

#endif  // GPUTOPO_POLICIES_PACKING_PACKING_H_
