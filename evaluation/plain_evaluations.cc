#include "evaluation/plain_evaluations.h"

#include <vector>

#include "evaluation/nominated_claims.h"

namespace gputopo::evaluation {

Evaluations PlainEvaluations::Evaluate(const EvaluationQuery& query) {
  Evaluations out;
  query.snapshot.FindIndices(query.candidates, out.positions);
  out.per_node.resize(out.positions.size());
  auto own = std::make_shared<std::vector<policies::NodeEvaluation>>();
  own->reserve(out.positions.size());
  for (size_t i = 0; i < out.positions.size(); ++i) {
    const size_t position = out.positions[i];
    if (position == policies::ClusterSnapshot::kNotFound) continue;
    const policies::NodeState& node = *query.snapshot.nodes()[position];
    own->push_back(policies::EvaluateNode(query.pod, node, *query.preset));
    ++out.evaluated;
  }
  // Pointers into *own once it no longer grows.
  size_t next = 0;
  for (size_t i = 0; i < out.positions.size(); ++i) {
    if (out.positions[i] == policies::ClusterSnapshot::kNotFound) continue;
    out.per_node[i] = policies::EvaluationRef::To((*own)[next++]);
  }
  out.lease.Hold(std::move(own));
  LookThroughClaims(query, out);
  return out;
}

}  // namespace gputopo::evaluation
