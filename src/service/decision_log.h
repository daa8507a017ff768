// DecisionLog: what gputopo decided recently and why, for /debug.
//
// Records are immutable and shared: a cycle record keeps the evaluations it made and the
// cluster snapshot they were made on, so /debug can render every node's verdict and score split
// later without the request path paying for it. Bounded in count and in bytes: the last
// `max_events` records overall, and the latest filter, prioritize and bind record of the last
// `max_pods` pods, each set within `max_bytes` (ApproxBytes: what a record holds of its own; the
// node states and evaluations it shares with the cache are bounded by the trimming at commit).
//
// Thread safety: thread-safe.
#ifndef GPUTOPO_SRC_SERVICE_DECISION_LOG_H_
#define GPUTOPO_SRC_SERVICE_DECISION_LOG_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "evaluation/evaluation_source.h"
#include "gputopo/enum_names.h"
#include "gputopo/mutex.h"
#include "policies/engine/evaluation.h"
#include "policies/preemption/victim_selection.h"
#include "policies/state/cluster_snapshot.h"

namespace gputopo::service {

enum class Verb : uint8_t { kFilter, kPrioritize, kBind, kPreempt };
inline constexpr EnumNames<Verb, 4> kVerbNames = {{
    {Verb::kFilter, "filter"},
    {Verb::kPrioritize, "prioritize"},
    {Verb::kBind, "bind"},
    {Verb::kPreempt, "preempt"},
}};
std::string_view VerbName(Verb verb);

// One filter or prioritize call for one pod.
struct CycleRecord {
  static constexpr uint32_t kUnknownNode = 0x80000000u;  // flag: index into unknown_nodes

  Verb verb = Verb::kFilter;
  uint64_t sequence = 0;  // DecisionLog::NextSequence() when the cycle started
  std::chrono::system_clock::time_point time;
  std::chrono::microseconds duration{0};
  std::string pod_key;
  std::string pod_uid;
  std::string requirements;  // one line for people
  std::string preset;
  // What the evaluations were made with, so that /debug can explain them later.
  std::optional<policies::PodRequirements> pod;
  std::shared_ptr<const policies::Preset> preset_used;
  std::string error;  // set when the whole request failed

  // Until TrimForLog: every candidate node in request order, as the EvaluationSource answered
  // (moved, not copied: the request path writes nothing per candidate for the record): its
  // position in `snapshot` (ClusterSnapshot::kNotFound for a name gputopo does not know; those
  // names are unknown_nodes, in order) and its evaluation. TrimForLog keeps some of them in
  // `nodes` and frees these.
  std::vector<size_t> candidate_positions;
  std::vector<policies::EvaluationRef> candidate_evaluations;

  // After TrimForLog: one entry per candidate kept, in request order: where its state is (see
  // below; with kUnknownNode set, its name is in unknown_nodes) and which evaluation it got.
  struct NodeRef {
    uint32_t node = 0;
    policies::EvaluationRef evaluation;
  };
  // While the cycle runs: the snapshot it read. TrimForLog replaces it with node_states, the
  // states of the nodes the record keeps, and NodeRef::node is an index into node_states: a
  // recorded cycle does not pin a whole snapshot.
  std::shared_ptr<const policies::ClusterSnapshot> snapshot;
  std::vector<std::shared_ptr<const policies::NodeState>> node_states;
  std::vector<NodeRef> nodes;
  std::vector<std::string> unknown_nodes;
  // Keeps the evaluations NodeRefs point to alive (shared with other cycles through the
  // evaluation source's caches).
  evaluation::EvaluationLease lease;
  // Prioritize only: the 0..10 priority each node got (parallel to the candidates, then to
  // nodes), after the preset's normalization across the candidates.
  std::vector<int> priorities;
  std::string normalization;

  size_t passed = 0;
  size_t failed = 0;
  size_t unresolvable = 0;
  // Candidates evaluated during the cycle; the others were found evaluated.
  size_t evaluated = 0;
  // The evaluations are the pod's previous call's, reused (same snapshot): for a prioritize,
  // its filter's.
  bool from_filter = false;
  // A filter under ExtenderServiceOptions::filter_decides that chose among several nodes that
  // fit: the one node it passed (the others that fit were left out of the reply).
  std::string decided_node;
  // Failures by reason over all candidates (nodes may list only some of them).
  std::map<std::string, size_t> failure_reasons;

  // A filter of a pod without GPUs: every candidate passed, none was evaluated, and the record
  // lists no candidates (the pod's prioritize evaluates them, to score).
  bool GpuLessFilter() const {
    return verb == Verb::kFilter && error.empty() && pod.has_value() && pod->gpus <= 0;
  }
  // Of a kept node (after TrimForLog).
  const std::string& NodeName(const NodeRef& ref) const;
  // Precondition: the node is known (kUnknownNode not set) and kept.
  const policies::NodeState& StateOf(const NodeRef& ref) const { return *node_states[ref.node]; }
  const policies::NodeEvaluation& EvaluationOf(const NodeRef& ref) const {
    return *ref.evaluation.evaluation;
  }
};

struct BindRecord {
  uint64_t sequence = 0;  // DecisionLog::NextSequence() when the bind started
  std::chrono::system_clock::time_point time;
  std::chrono::microseconds duration{0};
  std::string pod_key;
  std::string pod_uid;
  std::string node;
  std::vector<std::string> gpus;  // as written to gputopo.io/assigned-gpus
  std::string placement;          // islands and NUMA nodes, for people
  double weighted_score = 0.0;    // the node's weighted score for the chosen GPUs
  std::vector<policies::ComponentResult> components;
  std::string error;           // empty on success
  bool event_dropped = false;  // the GPUsAssigned Event did not fit in the EventQueue
};

// One preempt call: each node the scheduler offered, and what gputopo made of it.
struct PreemptRecord {
  uint64_t sequence = 0;
  std::chrono::system_clock::time_point time;
  std::chrono::microseconds duration{0};
  std::string pod_key;
  std::string pod_uid;
  int32_t priority = 0;
  std::string requirements;
  std::string preset;
  std::string error;       // set when the whole request failed (no node is kept)
  bool full_pods = false;  // the scheduler sent NodeNameToVictims (nodeCacheCapable: false)
  struct Node {
    std::string name;
    std::vector<std::string> proposed;  // the scheduler's victims (UIDs)
    int64_t proposed_pdb_violations = 0;
    policies::VictimChoice choice;         // reason set when the node was dropped
    std::vector<std::string> victim_keys;  // "<namespace>/<name>" of choice.victims, where known
    std::string placement;                 // where the preemptor would go, for people
    // "<namespace>/<name>" of the watched budgets that count pods on the node (choice's
    // pdb_counted)
    std::vector<std::string> budgets;
  };
  std::vector<Node> nodes;  // in request order
  size_t kept = 0;
};

using DecisionRecord =
    std::variant<std::shared_ptr<const CycleRecord>, std::shared_ptr<const BindRecord>,
                 std::shared_ptr<const PreemptRecord>>;

// The memory a record holds of its own, in bytes (strings, arrays; shared parts as pointers).
size_t ApproxBytes(const CycleRecord& record);
size_t ApproxBytes(const BindRecord& record);
size_t ApproxBytes(const PreemptRecord& record);

struct PodHistory {
  std::shared_ptr<const CycleRecord> filter;
  std::shared_ptr<const CycleRecord> prioritize;
  std::shared_ptr<const BindRecord> bind;
  std::shared_ptr<const PreemptRecord> preempt;
};

class DecisionLog {
 public:
  DecisionLog(size_t max_events, size_t max_pods, size_t max_bytes = 16u << 20)
      : max_events_(max_events), max_pods_(max_pods), max_bytes_(max_bytes) {}

  // Numbers decisions in the order they start. Records are kept in this order whenever they
  // are added: a cycle's record is committed after its reply, possibly after a later bind's.
  uint64_t NextSequence() { return next_sequence_.fetch_add(1, std::memory_order_relaxed) + 1; }

  void Add(std::shared_ptr<const CycleRecord> record);
  void Add(std::shared_ptr<const BindRecord> record);
  void Add(std::shared_ptr<const PreemptRecord> record);

  // Newest first.
  std::vector<DecisionRecord> Recent(size_t limit) const;
  std::optional<PodHistory> ForPod(const std::string& pod_key) const;

 private:
  // What trimming took out of the log, freed by the caller once it has let go of the lock: the
  // last reference to a record can hold a cycle's evaluations, and freeing them took ~1 ms now
  // and then, during which a request thread committing a record (the recorder's queue full)
  // waited for the lock.
  struct Retired {
    std::vector<DecisionRecord> events;
    std::vector<PodHistory> pods;
  };
  void AddLocked(DecisionRecord record, uint64_t sequence, Retired& retired)
      GPUTOPO_REQUIRES(mutex_);
  // Adds `record`, and makes it the pod's `latest` of its kind unless that one is newer.
  template <typename Record>
  void AddLocked(std::shared_ptr<const Record>& latest, const std::shared_ptr<const Record>& record,
                 Retired& retired) GPUTOPO_REQUIRES(mutex_);
  PodHistory& PodLocked(const std::string& pod_key) GPUTOPO_REQUIRES(mutex_);
  void TrimPodsLocked(Retired& retired) GPUTOPO_REQUIRES(mutex_);

  const size_t max_events_;
  const size_t max_pods_;
  const size_t max_bytes_;
  mutable Mutex mutex_;
  std::atomic<uint64_t> next_sequence_{0};
  // By sequence, oldest first.
  std::deque<std::pair<uint64_t, DecisionRecord>> events_ GPUTOPO_GUARDED_BY(mutex_);
  size_t events_bytes_ GPUTOPO_GUARDED_BY(mutex_) = 0;
  std::unordered_map<std::string, PodHistory> pods_ GPUTOPO_GUARDED_BY(mutex_);
  std::deque<std::string> pod_order_ GPUTOPO_GUARDED_BY(mutex_);  // oldest first
  size_t pods_bytes_ GPUTOPO_GUARDED_BY(mutex_) = 0;
};

}  // namespace gputopo::service

#endif  // GPUTOPO_SRC_SERVICE_DECISION_LOG_H_
