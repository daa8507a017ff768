// PodDisruptionBudgets as kube-scheduler's default preemption counts them
// (filterPodsWithPDBViolation in pkg/scheduler/framework/plugins/defaultpreemption):
//  - a budget counts a pod when they share a namespace, the pod has labels, the budget's
//    selector is valid and not empty and matches them, and the pod is not among the budget's
//    status.disruptedPods (the API server already counted its eviction);
//  - victims are taken most important first; each one takes one from every budget that counts
//    it, starting from status.disruptionsAllowed, and violates a budget when that goes below 0.
// kube-scheduler classifies all of a node's lower-priority pods this way before it reprieves any;
// gputopo applies the same rule to the victim set it chooses, which is the number of evictions
// that would be refused or break a budget if that set were evicted.
//
// Thread safety: pure functions and value types.
#ifndef GPUTOPO_POLICIES_PREEMPTION_DISRUPTION_BUDGETS_H_
#define GPUTOPO_POLICIES_PREEMPTION_DISRUPTION_BUDGETS_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "gputopo/disruption_budget.h"
#include "gputopo/pod_info.h"

namespace gputopo::policies {

// Whether every requirement holds for `labels` (sorted by key). An empty selector matches
// everything here; CountsAgainst is where kube-scheduler's "empty matches nothing" applies.
bool SelectorMatches(const LabelSelector& selector, const LabelSet& labels);

// Whether `budget` counts the pod `namespace_name`/`name` with `labels`, by the rule above.
bool CountsAgainst(const DisruptionBudgetInfo& budget, std::string_view namespace_name,
                   std::string_view name, const LabelSet& labels);

// The budgets that count the pods of one node, as victim selection reads them.
struct BudgetCoverage {
  std::vector<int32_t> allowed;      // per budget: status.disruptionsAllowed
  std::vector<std::string> budgets;  // per budget: "<namespace>/<name>"
  // Pod uid -> the budgets (indices into `allowed`) that count it. A pod with no entry counts
  // against none.
  std::map<std::string, std::vector<int>, std::less<>> budgets_of;
};

// How many of `victims` (pod uids, most important first) break a budget, by the rule above.
int64_t CountPdbViolations(const std::vector<std::string_view>& victims,
                           const BudgetCoverage& coverage);

}  // namespace gputopo::policies

#endif  // GPUTOPO_POLICIES_PREEMPTION_DISRUPTION_BUDGETS_H_
