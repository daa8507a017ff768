// ExtenderService: the filter and prioritize verbs, independent of HTTP.
//
// Both evaluate the pod on every candidate node against one cluster snapshot (no side effects
// on the cluster), through the context's EvaluationSource (which may reuse the evaluations of
// the pod's filter for its prioritize), and record what they decided in the DecisionLog.
//
// Thread safety: thread-safe; calls run concurrently.
#ifndef GPUTOPO_SRC_SERVICE_EXTENDER_SERVICE_H_
#define GPUTOPO_SRC_SERVICE_EXTENDER_SERVICE_H_

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/codec/extender_codec.h"
#include "src/service/decision_log.h"
#include "src/service/scheduling_context.h"

namespace gputopo::service {

struct FilterReply {
  std::string error;  // the whole request failed (bad pod annotations, unknown preset)
  std::vector<extender::FilterOutcome> outcomes;  // parallel to the request's node names
  std::shared_ptr<CycleRecord> record;            // owns the strings outcomes point to
};

struct PrioritizeReply {
  std::string error;
  std::vector<std::pair<std::string_view, int>> scores;  // parallel to the request's node names
  std::shared_ptr<CycleRecord> record;
};

class ExtenderService {
 public:
  explicit ExtenderService(const SchedulingContext& context) : context_(context) {}

  FilterReply Filter(const extender::ExtenderArgs& args);
  PrioritizeReply Prioritize(const extender::ExtenderArgs& args);

  // Hands a cycle's record to the DecisionLog, once its reply has been written: trimmed to the
  // nodes /debug shows (the failures, by reason, and the best scores; counts cover all nodes),
  // so that a log of many cycles over thousands of nodes stays small.
  void Commit(std::shared_ptr<CycleRecord> record);

  // Nodes of each kind (failed, passed) a committed record keeps in detail.
  static constexpr size_t kRecordedNodes = 200;

 private:
  // Evaluates the pod on every candidate.
  std::shared_ptr<CycleRecord> RunCycle(Verb verb, const extender::ExtenderArgs& args);

  const SchedulingContext& context_;
};

}  // namespace gputopo::service

#endif  // GPUTOPO_SRC_SERVICE_EXTENDER_SERVICE_H_
