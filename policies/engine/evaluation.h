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
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "policies/registry/component_registry.h"
#include "policies/requirements/pod_requirements.h"
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
  double weighted_score = 0.0;  // 0..10
  int score = 0;                // 0..10, the extender priority
  std::vector<ComponentResult> components;
  uint64_t candidates = 0;  // candidate sets scored
  bool heuristic = false;   // the search did not try every candidate set
  bool fits() const { return verdict == Verdict::kFits; }
};

NodeEvaluation EvaluateNode(const PodRequirements& pod, const NodeState& node,
                            const Preset& preset);

// Evaluates one pod against the nodes of one cycle, reusing the answer for nodes whose
// signature and group GPUs are equal (thousands of nodes of one machine type in a handful of
// states cost a handful of searches).
class PodEvaluator {
 public:
  // Both must outlive the evaluator.
  PodEvaluator(const PodRequirements& pod, const Preset& preset) : pod_(pod), preset_(preset) {}

  // Index into evaluations() of the node's evaluation.
  uint32_t Evaluate(const NodeState& node);
  const NodeEvaluation& evaluation(uint32_t index) const { return evaluations_[index]; }
  // Distinct evaluations made; references stay valid while the evaluator lives. Movable out
  // once the cycle is done (see TakeEvaluations).
  const std::deque<NodeEvaluation>& evaluations() const { return evaluations_; }
  std::deque<NodeEvaluation> TakeEvaluations() { return std::move(evaluations_); }
  uint64_t memo_hits() const { return hits_; }

 private:
  const PodRequirements& pod_;
  const Preset& preset_;
  std::deque<NodeEvaluation> evaluations_;
  std::unordered_map<std::string, uint32_t> memo_;  // node signature + group GPUs -> index
  std::string key_;
  uint64_t hits_ = 0;
};

}  // namespace gputopo::policies

#endif  // GPUTOPO_POLICIES_ENGINE_EVALUATION_H_
