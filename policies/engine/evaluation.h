// Evaluating one pod on one node: does it fit, on which GPUs, and how well.
//
// Filter, prioritize and bind all ask the same question and get the same answer from here, so
// the GPUs bind reserves are the ones the score was computed for (given the same state).
//
// The search: every candidate set of N eligible GPUs (inside one island / NUMA node when the
// pod requires it) is scored by the preset's weighted components; the best wins, ties going to
// the lowest GPU indices. Exact while there are at most kExactSearchLimit candidate sets; beyond
// that (16+ GPU machines, mid-size N), candidates are greedy bandwidth-maximal sets grown from
// every GPU plus the N individually best GPUs, and the evaluation says it was heuristic.
//
// Thread safety: EvaluateNode is pure. A PodEvaluator is not thread-safe: use one per request.
#ifndef GPUTOPO_POLICIES_ENGINE_EVALUATION_H_
#define GPUTOPO_POLICIES_ENGINE_EVALUATION_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "policies/registry/component_registry.h"
#include "policies/requirements/pod_requirements.h"
#include "policies/state/cluster_snapshot.h"
#include "policies/state/node_state.h"

namespace gputopo::policies {

enum class Verdict : uint8_t {
  kFits,
  kUnschedulable,  // does not fit now; may fit when other pods leave
  kUnresolvable,   // does not fit on this node for good (FailedAndUnresolvableNodes)
};
std::string_view VerdictName(Verdict verdict);

struct ComponentResult {
  std::string name;
  double weight = 0.0;
  double score = 0.0;  // 0..10
  std::string detail;
};

struct NodeEvaluation {
  Verdict verdict = Verdict::kUnschedulable;
  std::string reason;           // short and stable across nodes (kube-scheduler aggregates by text)
  std::string detail;           // this node's particulars
  GpuMask gpus = 0;             // the chosen GPUs when it fits
  double weighted_score = 0.0;  // 0..10; prioritize turns it into a priority (normalize.h)
  // Each preset component's score for the chosen GPUs, parallel to preset.components(). The
  // words that explain them are made on demand (ExplainEvaluation): most evaluations are never
  // read by a person.
  std::vector<double> component_scores;
  uint64_t candidates = 0;  // candidate sets scored
  bool heuristic = false;   // the search did not try every candidate set
  bool fits() const { return verdict == Verdict::kFits; }
};

// A node's evaluation with the fields the request path reads of every node copied beside it,
// so that a cycle over thousands of nodes need not touch the evaluations themselves.
struct EvaluationRef {
  const NodeEvaluation* evaluation = nullptr;
  double weighted_score = 0.0;
  Verdict verdict = Verdict::kUnschedulable;
  bool fits() const { return verdict == Verdict::kFits; }
  static EvaluationRef To(const NodeEvaluation& e) { return {&e, e.weighted_score, e.verdict}; }
};

// One cycle's evaluations, one per node asked about, and what keeps them alive.
struct CycleEvaluations {
  std::vector<EvaluationRef> per_node;  // evaluation is null where the node is unknown
  std::vector<std::shared_ptr<const void>> owners;
};

NodeEvaluation EvaluateNode(const PodRequirements& pod, const NodeState& node,
                            const Preset& preset);
// The same, with node.GroupGpus(pod.group) already known.
NodeEvaluation EvaluateNode(const PodRequirements& pod, const NodeState& node, const Preset& preset,
                            GpuMask group_gpus);

// The component split of placing `pod` on `gpus` of `node`, with each component's explanation.
// Deterministic: for the GPUs an evaluation chose, the scores equal its component_scores.
std::vector<ComponentResult> ExplainPlacement(const PodRequirements& pod, const NodeState& node,
                                              const Preset& preset, GpuMask gpus);

class EvaluationCache;
class ShapeTable;

// Evaluates one pod against the nodes of one cycle. Reuses, in order: the cross-cycle cache
// (same node version, when one is given), then answers for nodes of this cycle whose signature
// and group GPUs are equal (thousands of nodes of one machine type in a handful of states cost
// a handful of searches), and evaluates otherwise.
class PodEvaluator {
 public:
  // All must outlive the evaluator; `cache` may be null.
  PodEvaluator(const PodRequirements& pod, const Preset& preset, EvaluationCache* cache = nullptr);
  // The same, and the cache's table for the pod's shape keeps `preset` (and the pod's
  // requirements) so that it can be refreshed in the background (RefreshTable).
  PodEvaluator(const PodRequirements& pod, std::shared_ptr<const Preset> preset,
               EvaluationCache* cache);

  // Index of the node's evaluation; see evaluation().
  uint32_t Evaluate(const NodeState& node);
  const NodeEvaluation& evaluation(uint32_t index) const { return *evaluations_[index]; }

  // Evaluates the pod on the nodes of `snapshot` at `positions` (kNotFound: an unknown node,
  // answered with a null evaluation). With a cache, through its ShapeTable for the pod's shape
  // and group: nodes that have not changed since the table last answered for them cost two
  // array reads, made in position order when the positions are at least 1/kSweepShare of the
  // snapshot's nodes. Does not add to evaluations().
  static constexpr size_t kSweepShare = 4;
  CycleEvaluations EvaluateAt(const ClusterSnapshot& snapshot,
                              const std::vector<size_t>& positions);
  // Brings `table`, a table of the cache for this pod's shape and group
  // (EvaluationCache::RefreshableShapes), up to date with `snapshot`: every node whose state
  // changed since its slot was computed is evaluated (with the GPUs holding the pod's group),
  // so that the next cycle of the shape and group only reads. With `positions`, only those are
  // looked at (the nodes known to have changed since the table was last brought up to date).
  // The table is locked only to find the stale slots and to store the answers, never during a
  // search, so cycles of the shape do not wait for it. Returns how many evaluations were made.
  size_t RefreshTable(ShapeTable& table, const ClusterSnapshot& snapshot,
                      const std::vector<size_t>* positions = nullptr);
  uint64_t table_hits() const { return table_hits_; }
  size_t evaluation_count() const { return evaluations_.size(); }
  uint64_t memo_hits() const { return memo_hits_; }
  uint64_t cache_hits() const { return cache_hits_; }
  // Nodes this evaluator evaluated, rather than found evaluated (in a cache or its own memo).
  uint64_t evaluated() const { return evaluated_; }

 private:
  uint32_t Add(std::shared_ptr<const NodeEvaluation> evaluation);
  // The node's GPUs holding the pod's group, as far as the evaluation depends on them.
  GpuMask GroupGpusOf(const NodeState& node) const;
  // Evaluate()'s answer, through the node memo and this cycle's memo, without keeping it.
  std::shared_ptr<const NodeEvaluation> EvaluateShared(const NodeState& node, GpuMask group);
  // The answer `table` (of this pod's shape and group) keeps for the node at `position`,
  // evaluated and stored when the slot is not for the node's current version. A node that
  // cannot hold the pod's group takes `base`'s answer when it has one (the shape's table for a
  // group on no node; may be null). The caller holds the mutex of both tables.
  EvaluationRef TableAnswer(ShapeTable& table, ShapeTable* base, const ClusterSnapshot& snapshot,
                            size_t position);

  const PodRequirements& pod_;
  std::shared_ptr<const Preset> shared_preset_;  // may be null
  const Preset& preset_;
  EvaluationCache* cache_;
  uint64_t shape_id_ = 0;
  size_t group_hash_;
  std::vector<std::shared_ptr<const NodeEvaluation>> evaluations_;
  // Node signature + group GPUs -> evaluation, for this evaluator's lifetime.
  std::unordered_map<std::string, std::shared_ptr<const NodeEvaluation>> memo_;
  std::string key_;
  uint64_t memo_hits_ = 0;
  uint64_t cache_hits_ = 0;
  uint64_t table_hits_ = 0;
  uint64_t evaluated_ = 0;
};

}  // namespace gputopo::policies

#endif  // GPUTOPO_POLICIES_ENGINE_EVALUATION_H_
