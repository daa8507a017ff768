// RequestMetrics: what the extender's request path records for Prometheus.
//
//   gputopo_extender_requests_total{verb,result}        result: ok | bad_request | error
//   gputopo_extender_request_duration_seconds{verb}      handler time, parse to reply written
//   gputopo_binds_total{result}                          ok | a StatusCode name (CONFLICT, ...)
//
// (The filter outcomes per node are counted as records are committed: service/cycle_metrics.h.)
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

#include "gputopo/status.h"
#include "src/observability/metrics.h"

namespace gputopo::http {

enum class Verb { kFilter = 0, kPrioritize = 1, kBind = 2, kPreempt = 3 };
enum class RequestResult { kOk = 0, kBadRequest = 1, kError = 2 };

class RequestMetrics {
 public:
  explicit RequestMetrics(observability::MetricsRegistry& registry);

  void Request(Verb verb, RequestResult result, std::chrono::nanoseconds took);
  void Bind(StatusCode code);

 private:
  std::array<std::array<observability::Counter*, 3>, 4> requests_{};  // [verb][result]
  std::array<observability::Histogram*, 4> durations_{};              // [verb]
  observability::CounterFamily& binds_;
};

}  // namespace gputopo::http

#endif  // GPUTOPO_SRC_HTTP_REQUEST_METRICS_H_
