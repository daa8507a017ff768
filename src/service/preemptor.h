// Preemptor: the preempt verb. For each node the scheduler's own dry run found victims on, it
// chooses the victims gputopo's filter needs gone (policies::ChooseVictims), or drops the node
// when no set of lower-priority pods makes room; records the call for /debug.
//
// preempt can be the first call a pod makes to the extender (kube-scheduler does not call the
// extender's filter when its own filters reject every node), so it reads the pod from the
// request and the nodes from the current snapshot, and needs nothing from an earlier call.
// A pod that requests no GPU is not gputopo's to judge: every node is kept as proposed. A pod
// gputopo cannot read (a corrupt annotation, an unknown preset) keeps no node: nothing is
// evicted for a pod gputopo would not place.
//
// With a DisruptionBudgetIndex that has synced, PDB violations are counted from the watched
// budgets; otherwise they are bounded from the scheduler's NumPDBViolations (see
// policies/preemption/victim_selection.h).
//
// Thread safety: thread-safe; calls run concurrently.
#ifndef GPUTOPO_SRC_SERVICE_PREEMPTOR_H_
#define GPUTOPO_SRC_SERVICE_PREEMPTOR_H_

#include <memory>
#include <string>
#include <vector>

#include "cluster/disruption_budget_index.h"
#include "src/codec/preemption_codec.h"
#include "src/service/decision_log.h"
#include "src/service/scheduling_context.h"

namespace gputopo::service {

struct PreemptReply {
  std::shared_ptr<const PreemptRecord> record;  // also in the DecisionLog
  // The nodes kept, in request order, pointing into `record`.
  std::vector<extender::MetaVictims> kept;
};

class Preemptor {
 public:
  // `context` and `budgets` (null: PodDisruptionBudgets are not watched) must outlive the
  // preemptor.
  explicit Preemptor(const SchedulingContext& context,
                     const cluster::DisruptionBudgetIndex* budgets = nullptr)
      : context_(context), budgets_(budgets) {}

  PreemptReply Preempt(const extender::PreemptionArgs& args) const;

 private:
  const SchedulingContext& context_;
  const cluster::DisruptionBudgetIndex* const budgets_;
};

}  // namespace gputopo::service

#endif  // GPUTOPO_SRC_SERVICE_PREEMPTOR_H_
