// replica-spread: keep pods of one group (the replicas of a workload) on distinct physical GPUs.
//
// Time-slicing advertises one GPU as several replicas; two replicas of a Deployment on one GPU
// share a fault domain, its L2 cache and memory bandwidth. Per chosen GPU the penalty is 1 when
// it already holds a pod of the group, `island_penalty` when only its NVLink island does, else 0:
//   score = 10 * (1 - sum(penalty) / N)
// `gputopo.io/spread: none` makes the component neutral (10); `required` is a filter (the
// engine never offers such GPUs), so the island term is all that remains to score.
//
// Thread safety: immutable.
#ifndef GPUTOPO_POLICIES_REPLICA_SPREAD_REPLICA_SPREAD_H_
#define GPUTOPO_POLICIES_REPLICA_SPREAD_REPLICA_SPREAD_H_

#include "policies/engine/score_component.h"

namespace gputopo::policies {

// Pure scoring maths: `n` GPUs chosen, `same_gpu` of them hold the group, `same_island` more
// share an island with it. 0..10.
double ReplicaSpreadScore(int n, int same_gpu, int same_island, double island_penalty);

class ReplicaSpread final : public ScoreComponent {
 public:
  static constexpr std::string_view kName = "replica-spread";
  static constexpr double kDefaultIslandPenalty = 0.25;

  explicit ReplicaSpread(double island_penalty = kDefaultIslandPenalty)
      : island_penalty_(island_penalty) {}
  std::string_view Name() const override { return kName; }
  PreparedScorePtr PrepareIn(const PlacementContext& ctx,
                             std::pmr::memory_resource& memory) const override;
  double Score(const PlacementContext& ctx, GpuMask gpus) const;
  std::string Explain(const PlacementContext& ctx, GpuMask gpus) const;

 private:
  double island_penalty_;
};

}  // namespace gputopo::policies

#endif  // GPUTOPO_POLICIES_REPLICA_SPREAD_REPLICA_SPREAD_H_
