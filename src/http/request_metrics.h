// RequestMetrics: what the extender's request path records for Prometheus.
//
//   gputopo_extender_requests_total{verb,result}        result: ok | bad_request | error
//   gputopo_extender_request_duration_seconds{verb}      handler time, parse to reply written
//   gputopo_filter_nodes_total{result}                   passed | failed | unresolvable
//   gputopo_filter_failures_total{reason}                failed nodes by reason ("not enough free
//                                                        GPU slots", ...: a fixed set of texts)
//   gputopo_binds_total{result}                          ok | a StatusCode name (CONFLICT, ...)
//
// verb is filter, prioritize or bind. "bad_request" is a body that could not be decoded;
// "error" a request answered with the protocol's error (a bind that failed, a pod whose hints
// are invalid).
//
// Thread safety: thread-safe; recording is lock-free except for the first bind failure of each
// code (one child created). The registry must outlive this object.
#ifndef GPUTOPO_SRC_HTTP_REQUEST_METRICS_H_
#define GPUTOPO_SRC_HTTP_REQUEST_METRICS_H_

#include <array>
#include <chrono>
#include <cstddef>
#include <map>
#include <string>

#include "gputopo/status.h"
#include "src/observability/metrics.h"

namespace gputopo::http {

enum class Verb { kFilter = 0, kPrioritize = 1, kBind = 2 };
enum class RequestResult { kOk = 0, kBadRequest = 1, kError = 2 };

class RequestMetrics {
 public:
  explicit RequestMetrics(observability::MetricsRegistry& registry);

  void Request(Verb verb, RequestResult result, std::chrono::nanoseconds took);
  void FilterNodes(size_t passed, size_t failed, size_t unresolvable);
  // Failed nodes by reason (CycleRecord::failure_reasons); a leading "gputopo: " is dropped.
  void FilterFailures(const std::map<std::string, size_t>& by_reason);
  void Bind(StatusCode code);

 private:
  std::array<std::array<observability::Counter*, 3>, 3> requests_{};  // [verb][result]
  std::array<observability::Histogram*, 3> durations_{};              // [verb]
  std::array<observability::Counter*, 3> filter_nodes_{};  // passed, failed, unresolvable
  observability::CounterFamily& failures_;
  observability::CounterFamily& binds_;
};

}  // namespace gputopo::http

#endif  // GPUTOPO_SRC_HTTP_REQUEST_METRICS_H_
