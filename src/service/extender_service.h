// ExtenderService: the filter and prioritize verbs, independent of HTTP.
//
// A cycle (RunCycle) evaluates the pod on its candidate nodes against one cluster snapshot,
// through the context's EvaluationSource (which may reuse the evaluations of the pod's filter
// for its prioritize), and returns the record of what it decided: no side effects but the
// evaluation source's caches. Filter and Prioritize run one on the current snapshot, build the
// reply from the record, and hand the record to the CycleObserver (the DecisionRecorder, which
// trims it and commits it to the DecisionLog off the request path).
//
// Thread safety: thread-safe; calls run concurrently.
#ifndef GPUTOPO_SRC_SERVICE_EXTENDER_SERVICE_H_
#define GPUTOPO_SRC_SERVICE_EXTENDER_SERVICE_H_

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "evaluation/evaluation_source.h"
#include "policies/state/cluster_snapshot.h"
#include "src/codec/extender_codec.h"
#include "src/service/cycle_observer.h"
#include "src/service/decision_log.h"
#include "src/service/scheduling_context.h"

namespace gputopo::service {

// What the request's log line tells.
struct CycleSummary {
  std::string pod_key;
  size_t passed = 0;
  size_t failed = 0;
  size_t unresolvable = 0;
};

struct FilterReply {
  std::string error;  // the whole request failed (bad pod annotations, unknown preset)
  std::vector<extender::FilterOutcome> outcomes;  // parallel to the request's node names
  CycleSummary summary;
  evaluation::EvaluationLease lease;  // owns the strings outcomes point to
};

struct PrioritizeReply {
  std::string error;
  // Parallel to the request's node names (the names are the request's).
  std::vector<std::pair<std::string_view, int>> scores;
  CycleSummary summary;
};

struct ExtenderServiceOptions {
  // Filter decides (`--filter-decides`): a GPU pod's filter passes only the node its prioritize
  // would score highest, and leaves the other nodes that fit out of the reply. kube-scheduler
  // then skips scoring, extender prioritize included, because one node is feasible
  // (schedulePod: "When only one node after predicate, just use it"): one round trip per pod
  // instead of two, and gputopo's choice is final among the nodes kube-scheduler's own filters
  // passed. Ties among the best go by a hash of the pod's uid and the node's name, so that pods
  // spread over equal nodes as kube-scheduler's random choice among equal scores spreads them.
  // A pod without GPUs still passes every node (its prioritize scores them).
  bool filter_decides = false;
};

class ExtenderService {
 public:
  // Both must outlive the service.
  ExtenderService(const SchedulingContext& context, CycleObserver& observer,
                  ExtenderServiceOptions options = {})
      : context_(context), observer_(observer), options_(options) {}

  FilterReply Filter(const extender::ExtenderArgs& args);
  PrioritizeReply Prioritize(const extender::ExtenderArgs& args);

  // One cycle: the request's pod evaluated on its candidates (args.node_names) against
  // `snapshot` (non-null), numbered `sequence` (DecisionLog::NextSequence). The record holds
  // every candidate's verdict and, for a prioritize, its priority.
  std::shared_ptr<CycleRecord> RunCycle(Verb verb, const extender::ExtenderArgs& args,
                                        std::shared_ptr<const policies::ClusterSnapshot> snapshot,
                                        uint64_t sequence);

 private:
  // RunCycle on the current snapshot, for a pod remembered as recently seen.
  std::shared_ptr<CycleRecord> RunCurrentCycle(Verb verb, const extender::ExtenderArgs& args);

  const SchedulingContext& context_;
  CycleObserver& observer_;
  const ExtenderServiceOptions options_;
};

}  // namespace gputopo::service

#endif  // GPUTOPO_SRC_SERVICE_EXTENDER_SERVICE_H_
