// DisruptionBudgetInfo: the part of a PodDisruptionBudget (policy/v1) that kube-scheduler's
// preemption reads, and so gputopo's: its namespace, selector, status.disruptionsAllowed and
// status.disruptedPods.
//
// Thread safety: value types.
#ifndef GPUTOPO_DISRUPTION_BUDGET_H_
#define GPUTOPO_DISRUPTION_BUDGET_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gputopo/pod_info.h"

namespace gputopo {

// One requirement of a label selector (labels.Requirement).
struct LabelRequirement {
  enum class Operator : uint8_t { kIn, kNotIn, kExists, kDoesNotExist };
  std::string key;
  Operator op = Operator::kIn;
  std::vector<std::string> values;  // In, NotIn: at least one; Exists, DoesNotExist: none
  friend bool operator==(const LabelRequirement&, const LabelRequirement&) = default;
};

// A metav1.LabelSelector as metav1.LabelSelectorAsSelector turns it into a labels.Selector:
// matchLabels as `key In (value)`, then matchExpressions. Every requirement must hold.
struct LabelSelector {
  std::vector<LabelRequirement> requirements;
  friend bool operator==(const LabelSelector&, const LabelSelector&) = default;
};

struct DisruptionBudgetInfo {
  std::string namespace_name;
  std::string name;
  std::string uid;
  std::string resource_version;
  // spec.selector; nullopt when it is null or one LabelSelectorAsSelector rejects (an unknown
  // operator, In without values...), and then `selector_error` says why. kube-scheduler's
  // preemption lets such a budget, and one with an empty selector, match no pod.
  std::optional<LabelSelector> selector;
  std::string selector_error;
  int32_t disruptions_allowed = 0;  // status.disruptionsAllowed
  // The keys of status.disruptedPods (pod names whose eviction the API server has granted but
  // that the disruption controller has not yet seen go), sorted. They no longer count.
  std::vector<std::string> disrupted_pods;

  std::string Key() const { return namespace_name + "/" + name; }
  friend bool operator==(const DisruptionBudgetInfo&, const DisruptionBudgetInfo&) = default;
};

}  // namespace gputopo

#endif  // GPUTOPO_DISRUPTION_BUDGET_H_
