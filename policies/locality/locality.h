// locality: how well the N GPUs of one pod are connected.
//
// For N > 1 two things count, both relative to the best any N GPUs of this machine could do:
//  - bandwidth: the set's total pairwise link weight over the best possible (a fully NVLinked
//    quad on a DGX-1 gets 1, a quad across the hybrid cube-mesh less);
//  - NUMA compactness: the share of the set on its most-used NUMA node, over the best share
//    possible (all-to-all NVSwitch machines tie on bandwidth; this keeps a job on one socket).
// The score is capped at `unmet_cap` when the pod's locality target is missed (`nvlink`: all in
// one NVLink island; `numa`: all on one NUMA node):
//   score = min(10 * ((1 - numa_weight) * bandwidth + numa_weight * numa), met ? 10 : unmet_cap)
// Single-GPU pods and `locality: none` are neutral (10). A node whose links are unknown scores
// `unknown_score`: schedulable, but behind any node that can prove locality.
//
// Thread safety: immutable.
#ifndef GPUTOPO_POLICIES_LOCALITY_LOCALITY_H_
#define GPUTOPO_POLICIES_LOCALITY_LOCALITY_H_

#include "policies/engine/score_component.h"

namespace gputopo::policies {

// True when `gpus` meets the pod's locality target on `shape` (always for N <= 1 or `none`).
bool LocalityTargetMet(Locality target, const topology::TopologyShape& shape, GpuMask gpus);

// Pure scoring maths for N > 1 on a node with known links. `numa_share` and `best_numa_share`
// are fractions of the set on one NUMA node (1 when NUMA nodes are unknown). 0..10.
double LocalityScore(double set_weight, double best_weight, double numa_share,
                     double best_numa_share, double numa_weight, bool target_met, double unmet_cap);

// Fraction of `gpus` on their most-used NUMA node; 1 when no NUMA node is known.
double NumaShare(const topology::TopologyShape& shape, GpuMask gpus);
// The largest NumaShare any n GPUs of the machine can have.
double BestNumaShare(const topology::TopologyShape& shape, int n);

class LocalityComponent final : public ScoreComponent {
 public:
  static constexpr std::string_view kName = "locality";
  static constexpr double kDefaultUnmetCap = 4.0;
  static constexpr double kDefaultUnknownScore = 5.0;
  static constexpr double kDefaultNumaWeight = 0.2;

  LocalityComponent(double unmet_cap = kDefaultUnmetCap,
                    double unknown_score = kDefaultUnknownScore,
                    double numa_weight = kDefaultNumaWeight)
      : unmet_cap_(unmet_cap), unknown_score_(unknown_score), numa_weight_(numa_weight) {}
  std::string_view Name() const override { return kName; }
  PreparedScorePtr PrepareIn(const PlacementContext& ctx,
                             std::pmr::memory_resource& memory) const override;
  double Score(const PlacementContext& ctx, GpuMask gpus) const;
  std::string Explain(const PlacementContext& ctx, GpuMask gpus) const;

 private:
  double unmet_cap_;
  double unknown_score_;
  double numa_weight_;
};

}  // namespace gputopo::policies

#endif  // GPUTOPO_POLICIES_LOCALITY_LOCALITY_H_
