#include "evaluation/plain_evaluations.h"

#include <vector>

namespace gputopo::evaluation {

Evaluations PlainEvaluations::Evaluate(const EvaluationQuery& query) {
  Evaluations out;
  out.per_node.resize(query.positions.size());
  auto own = std::make_shared<std::vector<policies::NodeEvaluation>>();
  own->reserve(query.positions.size());
  for (size_t i = 0; i < query.positions.size(); ++i) {
    const size_t position = query.positions[i];
    if (position == policies::ClusterSnapshot::kNotFound) continue;
    const policies::NodeState& node = *query.snapshot.nodes()[position];
    own->push_back(policies::EvaluateNode(query.pod, node, *query.preset));
    ++out.evaluated;
  }
  // Pointers into *own once it no longer grows.
  size_t next = 0;
  for (size_t i = 0; i < query.positions.size(); ++i) {
    if (query.positions[i] == policies::ClusterSnapshot::kNotFound) continue;
    out.per_node[i] = policies::EvaluationRef::To((*own)[next++]);
  }
  out.lease.Hold(std::move(own));
  return out;
}

}  // namespace gputopo::evaluation
