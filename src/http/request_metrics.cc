#include "src/http/request_metrics.h"

#include <string>

namespace gputopo::http {
namespace {

constexpr std::array<const char*, 4> kVerbs = {"filter", "prioritize", "bind", "preempt"};
constexpr std::array<const char*, 3> kResults = {"ok", "bad_request", "error"};

}  // namespace

RequestMetrics::RequestMetrics(observability::MetricsRegistry& registry)
    : binds_(registry.RegisterCounter("gputopo_binds_total",
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
}

void RequestMetrics::Request(Verb verb, RequestResult result, std::chrono::nanoseconds took) {
  const auto v = static_cast<size_t>(verb);
  requests_[v][static_cast<size_t>(result)]->Increment();
  durations_[v]->Observe(std::chrono::duration<double>(took).count());
}

void RequestMetrics::Bind(StatusCode code) {
  binds_
      .WithLabels({code == StatusCode::kOk ? std::string("ok") : std::string(StatusCodeName(code))})
      .Increment();
}

}  // namespace gputopo::http
