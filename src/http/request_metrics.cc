#include "src/http/request_metrics.h"

#include <string>

namespace gputopo::http {
namespace {

constexpr std::array<const char*, 3> kVerbs = {"filter", "prioritize", "bind"};
constexpr std::array<const char*, 3> kResults = {"ok", "bad_request", "error"};

}  // namespace

RequestMetrics::RequestMetrics(observability::MetricsRegistry& registry)
    : failures_(registry.RegisterCounter(
          "gputopo_filter_failures_total",
          "Nodes that failed filter, by reason (both FailedNodes and FailedAndUnresolvableNodes).",
          {"reason"})),
      binds_(registry.RegisterCounter("gputopo_binds_total",
                                      "Bind requests by outcome: ok, or the failure's code.",
                                      {"result"})) {
  auto& requests = registry.RegisterCounter(
      "gputopo_extender_requests_total",
      "Extender requests by verb and result (ok, bad_request: undecodable body, error: answered "
      "with the protocol's error).",
      {"verb", "result"});
  auto& durations = registry.RegisterHistogram(
      "gputopo_extender_request_duration_seconds",
      "Time to handle an extender request, from the body received to the reply built.", {"verb"},
      observability::kDefaultLatencyBuckets);
  for (size_t v = 0; v < kVerbs.size(); ++v) {
    durations_[v] = &durations.WithLabels({kVerbs[v]});
    for (size_t r = 0; r < kResults.size(); ++r) {
      requests_[v][r] = &requests.WithLabels({kVerbs[v], kResults[r]});
    }
  }
  auto& nodes = registry.RegisterCounter(
      "gputopo_filter_nodes_total",
      "Candidate nodes judged by filter: passed, failed (does not fit), unresolvable (unknown "
      "node or topology).",
      {"result"});
  filter_nodes_ = {&nodes.WithLabels({"passed"}), &nodes.WithLabels({"failed"}),
                   &nodes.WithLabels({"unresolvable"})};
}

void RequestMetrics::Request(Verb verb, RequestResult result, std::chrono::nanoseconds took) {
  const auto v = static_cast<size_t>(verb);
  requests_[v][static_cast<size_t>(result)]->Increment();
  durations_[v]->Observe(std::chrono::duration<double>(took).count());
}

void RequestMetrics::FilterNodes(size_t passed, size_t failed, size_t unresolvable) {
  filter_nodes_[0]->Increment(static_cast<double>(passed));
  filter_nodes_[1]->Increment(static_cast<double>(failed));
  filter_nodes_[2]->Increment(static_cast<double>(unresolvable));
}

void RequestMetrics::FilterFailures(const std::map<std::string, size_t>& by_reason) {
  constexpr std::string_view kPrefix = "gputopo: ";
  for (const auto& [reason, count] : by_reason) {
    std::string_view label = reason;
    if (label.starts_with(kPrefix)) label.remove_prefix(kPrefix.size());
    failures_.WithLabels({label}).Increment(static_cast<double>(count));
  }
}

void RequestMetrics::Bind(StatusCode code) {
  binds_
      .WithLabels({code == StatusCode::kOk ? std::string("ok") : std::string(StatusCodeName(code))})
      .Increment();
}

}  // namespace gputopo::http
