// EvaluationSource: where a scheduling cycle gets its pod's evaluation on each candidate node.
//
// The answer is defined by policies::EvaluateNode: for every node, the evaluation EvaluateNode
// gives for the pod, the preset and the node's state in the snapshot (with the GPUs of the node
// holding the pod's group), less the claims the pod looks through (nominated_claims.h). Two
// implementations give it:
//   PlainEvaluations   calls EvaluateNode for every node, every time; the definition, and the
//                      twin the cached one is tested against (test/evaluation/);
//   CachedEvaluations  owns every reuse of evaluations: tables per pod shape and group, node
//                      answers across cycles, prioritize reusing its filter's answers, and the
//                      background refresh that keeps the tables current.
// Callers cannot tell them apart except by speed.
//
// Thread safety: Evaluate is thread-safe. Refresh may run concurrently with Evaluate, but not
// with another Refresh (one background worker calls it).
#ifndef GPUTOPO_EVALUATION_EVALUATION_SOURCE_H_
#define GPUTOPO_EVALUATION_EVALUATION_SOURCE_H_

#include <cstdint>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "policies/engine/evaluation.h"
#include "policies/registry/component_registry.h"
#include "policies/requirements/pod_requirements.h"
#include "policies/state/cluster_snapshot.h"

namespace gputopo::evaluation {

// Keeps a cycle's evaluations alive for as long as it is held, whatever owns them in the source
// that answered (a table's pinned answers, a cycle's own). Copies share ownership. Immutable
// once handed out.
class EvaluationLease {
 public:
  void Hold(std::shared_ptr<const void> owner) {
    if (owner != nullptr) owners_.push_back(std::move(owner));
  }
  void HoldAll(const EvaluationLease& other) {
    owners_.insert(owners_.end(), other.owners_.begin(), other.owners_.end());
  }
  bool empty() const { return owners_.empty(); }
  size_t ApproxBytes() const { return owners_.capacity() * sizeof(owners_[0]); }  // its own

 private:
  std::vector<std::shared_ptr<const void>> owners_;
};

// One cycle's question.
struct EvaluationQuery {
  // The pod, and the one preset it is evaluated with (non-null).
  const policies::PodRequirements& pod;
  const std::shared_ptr<const policies::Preset>& preset;
  const policies::ClusterSnapshot& snapshot;
  // The candidate nodes' names, as the request lists them (possibly with names `snapshot`
  // does not know).
  const std::vector<std::string_view>& candidates;
  // Identifies the pod across its verbs (namespace/name/uid; may be empty): a prioritize may
  // reuse the answers (and the name lookups) of the same pod's filter on the same snapshot.
  std::string_view pod_key;
  // The pod's uid and spec.priority: the nominated pods' claims it looks through
  // (policies::ClaimsIgnoredBy).
  std::string_view pod_uid = {};
  int32_t pod_priority = 0;
};

struct Evaluations {
  // Parallel to the query's candidates: each one's position in the snapshot
  // (ClusterSnapshot::kNotFound for an unknown name) and evaluation (null where unknown).
  std::vector<size_t> positions;
  std::vector<policies::EvaluationRef> per_node;
  EvaluationLease lease;   // keeps per_node's evaluations alive
  uint64_t evaluated = 0;  // nodes searched for this answer (the others were found evaluated)
  bool reused = false;     // the answers of this pod's previous call on the same snapshot
};

class EvaluationSource {
 public:
  virtual ~EvaluationSource() = default;
  virtual Evaluations Evaluate(const EvaluationQuery& query) = 0;
  // The cluster changed to `snapshot`: work that makes later Evaluate calls cheaper, done off
  // the request path (never needed for an exact answer). Returns the nodes evaluated.
  virtual uint64_t Refresh(const std::shared_ptr<const policies::ClusterSnapshot>& snapshot) = 0;
};

}  // namespace gputopo::evaluation

#endif  // GPUTOPO_EVALUATION_EVALUATION_SOURCE_H_
