#include "evaluation/nominated_claims.h"

#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

namespace gputopo::evaluation {

std::optional<policies::NodeState> ViewWithoutClaims(const policies::NodeState& node,
                                                     std::string_view uid, int32_t priority) {
  if (node.nominees().empty()) return std::nullopt;
  const std::vector<std::string_view> ignored = policies::ClaimsIgnoredBy(node, uid, priority);
  if (ignored.empty()) return std::nullopt;
  return node.Without(ignored, 0);
}

void LookThroughClaims(const EvaluationQuery& query, Evaluations& answers) {
  const std::vector<size_t>& claimed = query.snapshot.claimed_positions();
  if (claimed.empty()) return;
  std::shared_ptr<std::vector<policies::NodeEvaluation>> own;
  std::vector<size_t> replaced;  // candidate indices, parallel to *own
  for (size_t i = 0; i < answers.positions.size(); ++i) {
    const size_t position = answers.positions[i];
    if (position == policies::ClusterSnapshot::kNotFound ||
        !std::binary_search(claimed.begin(), claimed.end(), position)) {
      continue;
    }
    std::optional<policies::NodeState> view =
        ViewWithoutClaims(*query.snapshot.nodes()[position], query.pod_uid, query.pod_priority);
    if (!view) continue;
    if (own == nullptr) own = std::make_shared<std::vector<policies::NodeEvaluation>>();
    own->push_back(policies::EvaluateNode(query.pod, *view, *query.preset));
    replaced.push_back(i);
    ++answers.evaluated;
  }
  if (own == nullptr) return;
  // Pointers into *own once it no longer grows.
  for (size_t k = 0; k < replaced.size(); ++k) {
    answers.per_node[replaced[k]] = policies::EvaluationRef::To((*own)[k]);
  }
  answers.lease.Hold(std::move(own));
}

}  // namespace gputopo::evaluation
