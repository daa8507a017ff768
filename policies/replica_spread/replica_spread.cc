#include "policies/replica_spread/replica_spread.h"

#include <algorithm>

namespace gputopo::policies {

double ReplicaSpreadScore(int n, int same_gpu, int same_island, double island_penalty) {
  if (n <= 0) return kMaxComponentScore;
  const double penalty = same_gpu + island_penalty * same_island;
  return std::clamp(kMaxComponentScore * (1.0 - penalty / n), 0.0, kMaxComponentScore);
}

PreparedScorePtr ReplicaSpread::PrepareIn(const PlacementContext& ctx,
                                          std::pmr::memory_resource& memory) const {
  return MakeSimplePreparedScore(
      ctx, memory, [this](const PlacementContext& c, GpuMask g) { return Score(c, g); },
      [this](const PlacementContext& c, GpuMask g) { return Explain(c, g); });
}

double ReplicaSpread::Score(const PlacementContext& ctx, GpuMask gpus) const {
  if (ctx.pod.spread == SpreadMode::kNone) return kMaxComponentScore;
  // Nothing of the group near the set: ReplicaSpreadScore(n, 0, 0, penalty), the top score.
  if ((gpus & (ctx.group_gpus | ctx.group_islands)) == 0) return kMaxComponentScore;
  const int same_gpu = topology::Count(gpus & ctx.group_gpus);
  const int same_island = topology::Count(gpus & ctx.group_islands & ~ctx.group_gpus);
  return ReplicaSpreadScore(ctx.pod.gpus, same_gpu, same_island, island_penalty_);
}

std::string ReplicaSpread::Explain(const PlacementContext& ctx, GpuMask gpus) const {
  if (ctx.pod.spread == SpreadMode::kNone) return "spread not requested";
  const int same_gpu = topology::Count(gpus & ctx.group_gpus);
  const int same_island = topology::Count(gpus & ctx.group_islands & ~ctx.group_gpus);
  const int others = topology::Count(ctx.group_gpus);
  if (others == 0) return "no pod of group " + ctx.pod.group + " on this node";
  std::string out = std::to_string(same_gpu) + " of " + std::to_string(ctx.pod.gpus) +
                    " GPUs already hold group " + ctx.pod.group;
  if (same_island > 0) out += ", " + std::to_string(same_island) + " more share its NVLink island";
  return out;
}

}  // namespace gputopo::policies
