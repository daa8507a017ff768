// slot-balance: prefer nodes with more free time-slice slots after the placement, so load
// spreads across nodes (kube-scheduler's LeastAllocated, on GPU replicas):
//   score = 10 * free_slots_after / total_slots
//
// Thread safety: immutable.
#ifndef GPUTOPO_POLICIES_SLOT_BALANCE_SLOT_BALANCE_H_
#define GPUTOPO_POLICIES_SLOT_BALANCE_SLOT_BALANCE_H_

#include "policies/engine/score_component.h"

namespace gputopo::policies {

// Pure scoring maths. 0..10; 0 when the node has no slots.
double SlotBalanceScore(int free_after, int total);

class SlotBalance final : public ScoreComponent {
 public:
  static constexpr std::string_view kName = "slot-balance";
  std::string_view Name() const override { return kName; }
  PreparedScorePtr PrepareIn(const PlacementContext& ctx,
                             std::pmr::memory_resource& memory) const override;
  double Score(const PlacementContext& ctx, GpuMask gpus) const;
  std::string Explain(const PlacementContext& ctx, GpuMask gpus) const;
};

}  // namespace gputopo::policies

#endif  // GPUTOPO_POLICIES_SLOT_BALANCE_SLOT_BALANCE_H_
