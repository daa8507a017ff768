// PodEvaluator: the machinery of CachedEvaluations for one pod's cycle (or one table's refresh):
// reads the EvaluationCache's tables and node answers, evaluates what they lack, and stores it.
//
// Reuses, in order: the pod shape's table for the pod's group (two array reads per node whose
// state has not changed since the slot was made), the cache's node answers (same node version,
// pod shape and group GPUs), and within one evaluator, answers for nodes whose state signature
// and group GPUs are equal (thousands of nodes of one machine type in a handful of states cost a
// handful of searches; while that memo pays, see MemoPays); it evaluates otherwise, searching once
// per class of node states that a symmetry of the machine relabels into one another
// (SymmetricStates). Every answer equals policies::EvaluateNode's.
//
// Thread safety: a PodEvaluator is not thread-safe: use one per cycle. Evaluators sharing one
// cache may run concurrently.
#ifndef GPUTOPO_EVALUATION_POD_EVALUATOR_H_
#define GPUTOPO_EVALUATION_POD_EVALUATOR_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "evaluation/evaluation_cache.h"
#include "evaluation/evaluation_source.h"
#include "evaluation/parallel_for.h"
#include "evaluation/symmetric_states.h"
#include "policies/engine/evaluation.h"

namespace gputopo::evaluation {

class PodEvaluator {
 public:
  // Without a cache: only this evaluator's own memo of equal node states. `pod` and `preset`
  // must outlive the evaluator, and so must every NodeState it is asked about (with either
  // constructor: the memo keys on the nodes' signatures).
  PodEvaluator(const policies::PodRequirements& pod, const policies::Preset& preset);
  // With `cache` (which must outlive it): its tables and node answers too, the node answers
  // taken with `access` (kSkipWhenBusy on the request path).
  PodEvaluator(const policies::PodRequirements& pod, std::shared_ptr<const policies::Preset> preset,
               EvaluationCache& cache, CacheAccess access = CacheAccess::kWait);
  // The same, with the pod shape's id already known (a TableShape's, which is what
  // cache.ShapeId(pod, preset) gives): the pod shapes' lock, which every cycle takes, is not
  // taken.
  PodEvaluator(const policies::PodRequirements& pod, std::shared_ptr<const policies::Preset> preset,
               EvaluationCache& cache, uint64_t shape_id, CacheAccess access = CacheAccess::kWait);

  // Threads that may run a cycle's searches beside the caller's (EvaluateAt's sweep of a new
  // table, when it has at least kHelpedSearches to make), kSearchChunk at a time.
  void UseHelpers(const EvaluationHelpers& helpers) { helpers_ = helpers; }
  static constexpr size_t kHelpedSearches = 256;
  static constexpr size_t kSearchChunk = 64;

  // Index of the node's evaluation; see evaluation().
  uint32_t Evaluate(const policies::NodeState& node);
  const policies::NodeEvaluation& evaluation(uint32_t index) const { return *evaluations_[index]; }

  // Evaluates the pod on the nodes of `snapshot` at `positions` (kNotFound: an unknown node,
  // answered with a null evaluation). With a cache, through its ShapeTable for the pod's shape
  // and group: nodes that have not changed since the table last answered for them cost two
  // array reads, made in position order when the positions are at least 1/kSweepShare of the
  // snapshot's nodes. Does not add to evaluations().
  static constexpr size_t kSweepShare = 4;
  Evaluations EvaluateAt(const policies::ClusterSnapshot& snapshot,
                         const std::vector<size_t>& positions);
  // Brings `table`, a table of the cache for this pod's shape and group
  // (EvaluationCache::RefreshableShapes), up to date with `snapshot`: every node whose state
  // changed since its slot was computed is evaluated (with the GPUs holding the pod's group),
  // so that the next cycle of the shape and group only reads. With `positions`, only those are
  // looked at (the nodes known to have changed since the table was last brought up to date).
  // The table is locked only to find the stale slots and to store the answers, never during a
  // search, so cycles of the shape do not wait for it. Returns how many evaluations were made.
  size_t RefreshTable(ShapeTable& table, const policies::ClusterSnapshot& snapshot,
                      const std::vector<size_t>* positions = nullptr);
  uint64_t shape_id() const { return shape_id_; }  // in the cache; 0 without one
  uint64_t table_hits() const { return table_hits_; }
  size_t evaluation_count() const { return evaluations_.size(); }
  // The memo of equal node states is kept up for kMemoTrial lookups, and then only while at
  // least one in kMemoMinShare found an equal node. In a cluster of diverse node states (a large
  // Deployment spread over random GPUs: 4% equal) it cost a tenth of a new pod shape's cycle and
  // saved little; once it stops paying, it stays stopped for the evaluator's life (nothing is
  // looked up any more), and every node is evaluated on its own.
  static constexpr size_t kMemoTrial = 512;
  static constexpr size_t kMemoMinShare = 8;
  uint64_t memo_hits() const { return memo_hits_; }
  uint64_t cache_hits() const { return cache_hits_; }
  // Nodes this evaluator evaluated, rather than found evaluated (in a cache or its own memo).
  uint64_t evaluated() const { return evaluated_; }
  // Of those, the nodes answered from a relabeled node's search (SymmetricStates).
  uint64_t relabeled() const {
    uint64_t n = symmetric_.relabeled();
    for (const auto& helper : helper_symmetric_) n += helper->relabeled();
    return n;
  }

 private:
  uint32_t Add(std::shared_ptr<const policies::NodeEvaluation> evaluation);
  // The node's GPUs holding the pod's group, as far as the evaluation depends on them.
  policies::GpuMask GroupGpusOf(const policies::NodeState& node) const;
  // Evaluate()'s answer, through the node answers and this evaluator's memo, without keeping it
  // (Resolve, searching at once).
  std::shared_ptr<const policies::NodeEvaluation> EvaluateShared(const policies::NodeState& node,
                                                                 policies::GpuMask group);
  // A search to make: answers_[answer] = the evaluation of `node` with `group` (plain: a node
  // without topology, evaluated as such and never memoised).
  //
  // A deferred search (Defer) was queued without reading the node: the search finds whether the
  // node has a topology (plain) and, when find_group, its GPUs holding the pod's group (into
  // `group`), and RunSearches then queues its answer for the cache, for NodeState `version`.
  struct Search {
    const policies::NodeState* node;
    policies::GpuMask group;
    uint32_t answer;
    bool plain;
    bool deferred = false;
    bool find_group = false;
    uint64_t version = 0;
  };
  // Where the answer for (node, group) is in answers_: a node answer of the cache, an equal
  // node's (the memo), or a new search, made at once when `later` is null and else appended to
  // it for RunSearches (answers_ holds null there until then). Queues what the cache should
  // keep in to_insert_.
  uint32_t Resolve(const policies::NodeState& node, policies::GpuMask group,
                   std::vector<Search>* later);
  // True when Resolve would look nothing up: no node answer of this pod shape is kept in the
  // cache, and the memo has stopped paying (a new pod shape's first cycle, after kMemoTrial
  // nodes of diverse states). Resolve would then read the node only for what its search reads
  // anyway, so the sweep defers even that to the search (Defer), which helpers share.
  bool NothingToLookUp() const { return !cache_may_answer_ && !MemoPays(); }
  // Resolve when NothingToLookUp(), for a sweep: appends a deferred search of the node at NodeState
  // `version` (with its group GPUs when find_group, else none) and returns its index in answers_.
  uint32_t Defer(const policies::NodeState& node, uint64_t version, bool find_group,
                 std::vector<Search>& later);
  // Makes `searches`, on helper threads too when there are enough of them; each answer equals
  // what Resolve would have made at once. Completes the deferred ones (see Search).
  void RunSearches(std::vector<Search>& searches);
  // The answer `table` (of this pod's shape and group) keeps for the node at `position`,
  // evaluated and stored when the slot is not for the node's current version. A node that
  // cannot hold the pod's group takes `base`'s answer when it has one (the shape's table for a
  // group on no node; may be null).
  policies::EvaluationRef TableAnswer(ShapeTable::Locked& table, ShapeTable::Locked* base,
                                      const policies::ClusterSnapshot& snapshot, size_t position);
  // TableAnswer in two halves, so that a sweep can run its searches between them (RunSearches).
  // A slot to fill: answers_[answer] goes into the table's slot at `position`, and into the
  // base table's too when into_base.
  struct PendingAnswer {
    size_t position;
    uint32_t answer;
    bool into_base;
  };
  // The answer the tables already keep for the node at `position` (stored into `table` when it
  // came from `base`); else nullopt, with `pending` set through Resolve(..., later).
  std::optional<policies::EvaluationRef> FindTableAnswer(ShapeTable::Locked& table,
                                                         ShapeTable::Locked* base,
                                                         const policies::ClusterSnapshot& snapshot,
                                                         size_t position, PendingAnswer& pending,
                                                         std::vector<Search>* later);
  // Stores a pending answer (its search made) and returns the table's.
  policies::EvaluationRef StoreTableAnswer(ShapeTable::Locked& table, ShapeTable::Locked* base,
                                           const policies::ClusterSnapshot& snapshot,
                                           const PendingAnswer& pending);

  // Puts the answers evaluated since the last call into the cache's node answers, all at once.
  void InsertAnswers();

  const policies::PodRequirements& pod_;
  std::shared_ptr<const policies::Preset> shared_preset_;  // null without a cache
  const policies::Preset& preset_;
  EvaluationCache* cache_;  // may be null
  uint64_t shape_id_ = 0;
  size_t group_hash_;
  std::vector<std::shared_ptr<const policies::NodeEvaluation>> evaluations_;
  // Every answer this evaluator resolved (the memo and to_insert_ refer to them by index).
  std::vector<std::shared_ptr<const policies::NodeEvaluation>> answers_;
  struct ToInsert {
    uint64_t version;  // the NodeState's
    policies::GpuMask group;
    uint32_t answer;
  };
  std::vector<ToInsert> to_insert_;  // with a cache: see Resolve
  EvaluationHelpers helpers_;
  std::vector<std::unique_ptr<SymmetricStates>> helper_symmetric_;  // one per helper thread
  // Node signature + group GPUs -> evaluation, for this evaluator's lifetime. The signature is
  // the first node's of that state, which the caller keeps alive (see the constructors).
  struct MemoKey {
    std::string_view signature;
    policies::GpuMask group = 0;
    size_t hash = 0;  // of both
    friend bool operator==(const MemoKey& a, const MemoKey& b) {
      return a.group == b.group && a.signature == b.signature;
    }
  };
  struct MemoKeyHash {
    size_t operator()(const MemoKey& key) const { return key.hash; }
  };
  std::unordered_map<MemoKey, uint32_t, MemoKeyHash> memo_;  // -> index in answers_
  bool MemoPays() const;                                     // see kMemoTrial
  CacheAccess access_ = CacheAccess::kWait;  // how the cache's node answers are taken
  // The cache held node answers of this pod shape when the evaluator was made; when it did not,
  // none is looked for.
  bool cache_may_answer_ = false;
  SymmetricStates symmetric_;  // searches shared by relabeled node states
  uint64_t memo_hits_ = 0;
  uint64_t cache_hits_ = 0;
  uint64_t table_hits_ = 0;
  uint64_t evaluated_ = 0;
};

}  // namespace gputopo::evaluation

#endif  // GPUTOPO_EVALUATION_POD_EVALUATOR_H_
