#include "policies/preemption/disruption_budgets.h"

#include <algorithm>

namespace gputopo::policies {
namespace {

const std::string* ValueOf(const LabelSet& labels, std::string_view key) {
  auto it = std::lower_bound(labels.begin(), labels.end(), key,
                             [](const auto& label, std::string_view k) { return label.first < k; });
  return it != labels.end() && it->first == key ? &it->second : nullptr;
}

bool Holds(const LabelRequirement& r, const LabelSet& labels) {
  const std::string* value = ValueOf(labels, r.key);
  const bool listed =
      value != nullptr && std::find(r.values.begin(), r.values.end(), *value) != r.values.end();
  switch (r.op) {
    case LabelRequirement::Operator::kIn:
      return listed;
    case LabelRequirement::Operator::kNotIn:
      return !listed;
    case LabelRequirement::Operator::kExists:
      return value != nullptr;
    case LabelRequirement::Operator::kDoesNotExist:
      return value == nullptr;
  }
  return false;
}

}  // namespace

bool SelectorMatches(const LabelSelector& selector, const LabelSet& labels) {
  return std::all_of(selector.requirements.begin(), selector.requirements.end(),
                     [&](const LabelRequirement& r) { return Holds(r, labels); });
}

bool CountsAgainst(const DisruptionBudgetInfo& budget, std::string_view namespace_name,
                   std::string_view name, const LabelSet& labels) {
  if (labels.empty() || budget.namespace_name != namespace_name) return false;
  if (!budget.selector || budget.selector->requirements.empty()) return false;
  if (!SelectorMatches(*budget.selector, labels)) return false;
  return !std::binary_search(budget.disrupted_pods.begin(), budget.disrupted_pods.end(), name);
}

int64_t CountPdbViolations(const std::vector<std::string_view>& victims,
                           const BudgetCoverage& coverage) {
  std::vector<int64_t> left(coverage.allowed.begin(), coverage.allowed.end());
  int64_t violations = 0;
  for (std::string_view uid : victims) {
    auto it = coverage.budgets_of.find(uid);
    if (it == coverage.budgets_of.end()) continue;
    bool violates = false;
    for (int b : it->second) {
      if (b < 0 || static_cast<size_t>(b) >= left.size()) continue;
      if (--left[b] < 0) violates = true;
    }
    if (violates) ++violations;
  }
  return violations;
}

}  // namespace gputopo::policies
