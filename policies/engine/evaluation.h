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
// Thread safety: pure functions. (Reusing evaluations across nodes and cycles is evaluation/'s.)
#ifndef GPUTOPO_POLICIES_ENGINE_EVALUATION_H_
#define GPUTOPO_POLICIES_ENGINE_EVALUATION_H_

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gputopo/enum_names.h"
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
inline constexpr EnumNames<Verdict, 3> kVerdictNames = {{
    {Verdict::kFits, "fits"},
    {Verdict::kUnschedulable, "unschedulable"},
    {Verdict::kUnresolvable, "unresolvable"},
}};
std::string_view VerdictName(Verdict verdict);

struct ComponentResult {
  std::string name;
  double weight = 0.0;
  double score = 0.0;  // 0..10
  std::string detail;
};

// Each preset component's score for one evaluation's GPUs, parallel to preset.components(),
// kept inline: a preset has at most Preset::kMaxComponents, and an evaluation then needs no
// memory of its own for them (5000 evaluations per new pod shape's cycle at 5000 nodes).
class ComponentScores {
 public:
  using value_type = double;
  using const_iterator = const double*;
  using iterator = const_iterator;

  // Precondition: size() < Preset::kMaxComponents (a further score is not kept).
  void push_back(double score) {
    if (size_ < scores_.size()) scores_[size_++] = score;
  }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  double operator[](size_t i) const { return scores_[i]; }
  const_iterator begin() const { return scores_.data(); }
  const_iterator end() const { return scores_.data() + size_; }
  friend bool operator==(const ComponentScores& a, const ComponentScores& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  std::array<double, Preset::kMaxComponents> scores_{};
  size_t size_ = 0;
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
  ComponentScores component_scores;
  uint64_t candidates = 0;  // candidate sets considered (scored, or bounded below the best)
  bool heuristic = false;   // the search did not try every candidate set
  // The pod prefers a locality (nvlink or numa, N > 1), the node's links are known, and no
  // eligible GPU set here meets it. Where some set does, the chosen one does (the preference
  // is a tier above the weighted score); rank normalization also puts such nodes below every
  // node that meets it (normalize.h).
  bool locality_missed = false;
  // The node's GPU count (0 in a rejection). Every node an evaluation is shared with has the
  // same topology shape, so the same count; CandidateOrder ranks smaller machines first among
  // share pods' equal steps.
  uint8_t node_gpus = 0;
  bool fits() const { return verdict == Verdict::kFits; }
};

// A node's evaluation with the fields the request path reads of every node copied beside it,
// so that a cycle over thousands of nodes need not touch the evaluations themselves.
struct EvaluationRef {
  const NodeEvaluation* evaluation = nullptr;
  double weighted_score = 0.0;
  Verdict verdict = Verdict::kUnschedulable;
  bool locality_missed = false;
  bool fits() const { return verdict == Verdict::kFits; }
  static EvaluationRef To(const NodeEvaluation& e) {
    return {&e, e.weighted_score, e.verdict, e.locality_missed};
  }
};

NodeEvaluation EvaluateNode(const PodRequirements& pod, const NodeState& node,
                            const Preset& preset);
// The same, with node.GroupGpus(pod.group) already known.
NodeEvaluation EvaluateNode(const PodRequirements& pod, const NodeState& node, const Preset& preset,
                            GpuMask group_gpus);

// How a search goes through a node's candidate sets. The answer is the same either way (tests
// compare the two):
// - kSkipBoundedOut: for pods of two GPUs or more, a set is first bounded
//   (PreparedScore::Bound: locality's, replica-spread's and slot-balance's score itself, a
//   per-node bound of fragmentation's, the top score of the rest), and scored only when its
//   bound reaches the best set of its tier found so far. In BM_FilterCold/5000/4, about half
//   the 4-GPU sets of a DGX-1 are skipped.
// - kScoreEverySet: every set is scored.
enum class SetBounding : uint8_t { kSkipBoundedOut, kScoreEverySet };

// The same; `*unique_best` (when not null) tells whether the search was exact and every other
// candidate set of the chosen one's locality tier scored at least 1e-9 below it. Then, on a node
// whose GPU states are this node's relabeled by a symmetry of its topology
// (topology::ShapeSymmetry), the relabeled set is the choice: EvaluatePlacement gives that
// node's evaluation without a search.
NodeEvaluation EvaluateNode(const PodRequirements& pod, const NodeState& node, const Preset& preset,
                            GpuMask group_gpus, bool* unique_best,
                            SetBounding bounding = SetBounding::kSkipBoundedOut);
// The evaluation EvaluateNode gives when its search chooses `gpus` after `candidates` sets:
// the same scores, bit for bit. Precondition: the pod fits the node and a search would choose
// `gpus` (see above).
NodeEvaluation EvaluatePlacement(const PodRequirements& pod, const NodeState& node,
                                 const Preset& preset, GpuMask group_gpus, GpuMask gpus,
                                 uint64_t candidates);

// The component split of placing `pod` on `gpus` of `node`, with each component's explanation.
// Deterministic: for the GPUs an evaluation chose, the scores equal its component_scores.
std::vector<ComponentResult> ExplainPlacement(const PodRequirements& pod, const NodeState& node,
                                              const Preset& preset, GpuMask gpus);

}  // namespace gputopo::policies

#endif  // GPUTOPO_POLICIES_ENGINE_EVALUATION_H_
