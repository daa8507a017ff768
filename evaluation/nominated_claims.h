// Nominated pods' claims in a cycle's answers.
//
// After preemption, kube-scheduler nominates the preemptor to a node (status.nominatedNodeName)
// and waits for the victims to leave. Meanwhile the preemptor holds a claim on the GPUs gputopo
// chose for it there (policies::Occupant::nominated), so that no other pod takes them. The
// snapshot's node states count every claim. The nominee itself and pods of higher priority look
// through it (policies::ClaimsIgnoredBy): for them, such a node is evaluated without the claims.
//
// Thread safety: pure functions.
#ifndef GPUTOPO_EVALUATION_NOMINATED_CLAIMS_H_
#define GPUTOPO_EVALUATION_NOMINATED_CLAIMS_H_

#include <optional>

#include "evaluation/evaluation_source.h"
#include "policies/state/node_state.h"

namespace gputopo::evaluation {

// `node` as a pod (`uid`, `priority`) sees it: nullopt when it sees the node as it is, else the
// node without the claims it looks through (version 0: evaluated, never published).
std::optional<policies::NodeState> ViewWithoutClaims(const policies::NodeState& node,
                                                     std::string_view uid, int32_t priority);

// Replaces the answers on the snapshot's claimed nodes where the query's pod looks through a
// claim by fresh evaluations of those nodes without it. Every EvaluationSource calls this on
// its answer before handing it out (and before keeping it for reuse).
void LookThroughClaims(const EvaluationQuery& query, Evaluations& answers);

}  // namespace gputopo::evaluation

#endif  // GPUTOPO_EVALUATION_NOMINATED_CLAIMS_H_
