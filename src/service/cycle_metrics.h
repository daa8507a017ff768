// CycleMetrics: what the committed cycle records add to Prometheus.
//
//   gputopo_filter_nodes_total{result}     passed | failed | unresolvable
//   gputopo_filter_failures_total{reason}  failed nodes by reason ("not enough free GPU slots",
//                                          ...: a fixed set of texts, without "gputopo: ")
//
// Counted when a filter's record is committed (DecisionRecorder), off the request path; a filter
// that failed as a whole (error set) counts nothing here.
//
// Thread safety: thread-safe. The registry must outlive this object.
#ifndef GPUTOPO_SRC_SERVICE_CYCLE_METRICS_H_
#define GPUTOPO_SRC_SERVICE_CYCLE_METRICS_H_

#include <array>

#include "src/observability/metrics.h"
#include "src/service/decision_log.h"

namespace gputopo::service {

class CycleMetrics {
 public:
  explicit CycleMetrics(observability::MetricsRegistry& registry);

  // Precondition: failure_reasons is filled (a trimmed record, TrimForLog).
  void Record(const CycleRecord& committed);

 private:
  std::array<observability::Counter*, 3> filter_nodes_{};  // passed, failed, unresolvable
  observability::CounterFamily& failures_;
};

}  // namespace gputopo::service

#endif  // GPUTOPO_SRC_SERVICE_CYCLE_METRICS_H_
