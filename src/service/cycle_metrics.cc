#include "src/service/cycle_metrics.h"

#include <string_view>

namespace gputopo::service {

CycleMetrics::CycleMetrics(observability::MetricsRegistry& registry)
    : failures_(registry.RegisterCounter(
          "gputopo_filter_failures_total",
          "Nodes that failed filter, by reason (both FailedNodes and FailedAndUnresolvableNodes).",
          {"reason"})) {
  auto& nodes = registry.RegisterCounter(
      "gputopo_filter_nodes_total",
      "Candidate nodes judged by filter: passed, failed (does not fit), unresolvable (unknown "
      "node or topology).",
      {"result"});
  filter_nodes_ = {&nodes.WithLabels({"passed"}), &nodes.WithLabels({"failed"}),
                   &nodes.WithLabels({"unresolvable"})};
}

void CycleMetrics::Record(const CycleRecord& committed) {
  if (committed.verb != Verb::kFilter || !committed.error.empty()) return;
  filter_nodes_[0]->Increment(static_cast<double>(committed.passed));
  filter_nodes_[1]->Increment(static_cast<double>(committed.failed));
  filter_nodes_[2]->Increment(static_cast<double>(committed.unresolvable));
  constexpr std::string_view kPrefix = "gputopo: ";
  for (const auto& [reason, count] : committed.failure_reasons) {
    std::string_view label = reason;
    if (label.starts_with(kPrefix)) label.remove_prefix(kPrefix.size());
    failures_.WithLabels({label}).Increment(static_cast<double>(count));
  }
}

}  // namespace gputopo::service
