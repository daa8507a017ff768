#include "policies/slot_balance/slot_balance.h"

#include <algorithm>

namespace gputopo::policies {

double SlotBalanceScore(int free_after, int total) {
  if (total <= 0) return 0.0;
  return std::clamp(kMaxComponentScore * free_after / total, 0.0, kMaxComponentScore);
}

PreparedScorePtr SlotBalance::PrepareIn(const PlacementContext& ctx,
                                        std::pmr::memory_resource& memory) const {
  return MakeSimplePreparedScore(
      ctx, memory, [this](const PlacementContext& c, GpuMask g) { return Score(c, g); },
      [this](const PlacementContext& c, GpuMask g) { return Explain(c, g); });
}

double SlotBalance::Score(const PlacementContext& ctx, GpuMask gpus) const {
  return SlotBalanceScore(ctx.node_free_slots - topology::Count(gpus), ctx.node.total_slots());
}

std::string SlotBalance::Explain(const PlacementContext& ctx, GpuMask gpus) const {
  return std::to_string(std::max(0, ctx.node_free_slots - topology::Count(gpus))) + " of " +
         std::to_string(ctx.node.total_slots()) + " slots free after placement";
}

}  // namespace gputopo::policies
