// EvaluationCache: node evaluations kept across scheduling cycles, for CachedEvaluations.
//
// kube-scheduler asks about one pod at a time, usually the next replica of the same workload,
// and between two cycles only the node the last pod went to has changed. An evaluation depends
// on the node's state, the pod's requirements apart from its group and the preset (together the
// *pod shape*, EvaluationShape), and which GPUs of the node hold the pod's group. Two layers keep
// them:
//
// - Per node state: answers keyed by (NodeState version, pod shape, group GPUs), so that tables
//   of one pod shape share them (a new group's table, the base table). Versions are never
//   reused, so a cached answer is always exactly what evaluating again would give. Two
//   generations of at most kNodeAnswers/2 entries each (AnswerGeneration, one flat array each):
//   when the newer fills up, the older is dropped, so answers for node states that no longer
//   exist age out.
// - Per pod shape and group: a ShapeTable holds, for each node position of a snapshot's name
//   index, the evaluation of that pod shape for a pod of that group (with the GPUs of the node
//   holding the group, where it has any), tagged with the NodeState version it was computed on.
//   A cycle reads the table and the snapshot's NodeSummary array instead of thousands of
//   scattered NodeStates, whether or not the nodes hold the pod's group (a large Deployment
//   spread over the cluster has a replica on every node); only nodes whose version changed are
//   evaluated again. A spreading pod shape also has a *base* table, its answers for a group on
//   no node: the first cycle of a new group copies them for every node its Bloom filter rules
//   out. Pods that do not spread share one table per pod shape (the group changes nothing). The
//   kShapeTables most recently used (pod shape, group) pairs have a table.
//
// ("Pod shape" is the pod's side; a node's machine type is its topology shape, which the node
// state includes.)
//
// Thread safety: thread-safe. A ShapeTable is read and written only through the Locked view its
// Lock() returns. The node answers have one lock, which the background refresh takes too; a
// cycle on the request path takes it with CacheAccess::kSkipWhenBusy, and so never waits for a
// background thread (see CacheAccess).
#ifndef GPUTOPO_EVALUATION_EVALUATION_CACHE_H_
#define GPUTOPO_EVALUATION_EVALUATION_CACHE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "evaluation/answer_generation.h"
#include "gputopo/mutex.h"
#include "policies/engine/evaluation.h"
#include "policies/state/name_index.h"

namespace gputopo::evaluation {

// The evaluations of one pod shape at each node position of one name index; see above.
class ShapeTable {
 public:
  // The table, locked for as long as the view lives: every read and write goes through one.
  class Locked {
   public:
    explicit Locked(ShapeTable& table) : table_(table), lock_(table.mutex_) {}

    // Makes the table describe positions of `index`. When it is another index (nodes came or
    // went), each node's slot moves to the node's new position.
    void Attach(const std::shared_ptr<const policies::FlatNameIndex>& index) {
      table_.Attach(index);
    }
    bool attached(const std::shared_ptr<const policies::FlatNameIndex>& index) const {
      return table_.index_ == index;
    }
    // The evaluation at `position` if it was made on NodeState `version`; null otherwise.
    const policies::EvaluationRef* Find(size_t position, uint64_t version) const {
      const Slot& slot = table_.slots_[position];
      return slot.version == version && slot.ref.evaluation != nullptr ? &slot.ref : nullptr;
    }
    void Prefetch(size_t position) const { __builtin_prefetch(&table_.slots_[position]); }
    // Find()'s evaluation, owned: for another table to keep as its own answer.
    std::shared_ptr<const policies::NodeEvaluation> FindOwned(size_t position,
                                                              uint64_t version) const;
    // True until the table has stored or been seeded with any answer.
    bool fresh() const { return table_.owned_->empty() && table_.borrowed_ == nullptr; }
    // Takes every slot of `base` (attached to the same index) and keeps base's evaluations
    // alive for as long as this table lives (borrowed()). The caller then Forget()s the slots
    // whose answers differ for this table (nodes holding its group).
    void SeedFrom(const Locked& base);
    void Forget(size_t position) { table_.slots_[position] = Slot{}; }
    // The evaluations seeded from another table, which cycles reading this one must keep alive
    // too (beside Pin()); null when not seeded.
    const std::shared_ptr<const void>& borrowed() const { return table_.borrowed_; }
    // Keeps `evaluation` as the answer at `position` for NodeState `version`, unless the slot
    // holds a newer version's (versions grow as nodes change: a cycle on an older snapshot,
    // racing a refresh, must not put older answers back). Returns the reference to it.
    policies::EvaluationRef Store(size_t position, uint64_t version,
                                  std::shared_ptr<const policies::NodeEvaluation> evaluation);
    // Keeps alive every evaluation Find and Store have answered since the last call to Pin()
    // (and possibly more). Call after a cycle's last Store.
    std::shared_ptr<const void> Pin();

   private:
    ShapeTable& table_;
    std::lock_guard<std::mutex> lock_;
  };

  Locked Lock() { return Locked(*this); }

 private:
  static constexpr uint32_t kBorrowed = UINT32_MAX;
  struct Slot {
    uint64_t version = 0;
    policies::EvaluationRef ref;
    uint32_t owned_at = kBorrowed;  // the evaluation's index in *owned_; kBorrowed: seeded
  };
  using Owned = std::vector<std::shared_ptr<const policies::NodeEvaluation>>;
  void Attach(const std::shared_ptr<const policies::FlatNameIndex>& index);
  // Starts a new set of owned evaluations holding only those the slots still refer to, one per
  // slot. The old set lives on for the cycles that pinned it.
  void Compact();

  std::mutex mutex_;
  // All guarded by mutex_, reached only through Locked. (Not checked by the compiler: clang's
  // analysis cannot follow a lock held by a view returned from a function.)
  std::shared_ptr<const policies::FlatNameIndex> index_;
  std::vector<Slot> slots_;
  // Every evaluation a slot refers to (with repeats: one per Store), and some no slot refers to
  // any more, until the next Compact. Append-only: pinned sets are never changed after they are
  // replaced.
  std::shared_ptr<Owned> owned_ = std::make_shared<Owned>();
  std::shared_ptr<const void> borrowed_;  // SeedFrom's base evaluations; never changed here
};

// The pod shape: the part of a pod's requirements and preset an evaluation depends on, apart
// from the group. The preset is named by its address: EvaluationCache::ShapeId keeps every
// preset it is given alive, so an address never comes to mean another preset.
std::string EvaluationShape(const policies::PodRequirements& pod, const policies::Preset& preset);

// How a caller takes the node answers' lock.
// - kWait: waits for it (the background refresh, tests).
// - kSkipWhenBusy: never waits; a lookup that finds the lock held is a miss, and answers that
//   find it held are not kept. For the request path: the background refresh holds the lock for a
//   moment at a time, but at a low CPU priority, and preempted while holding it, it may wait for
//   the CPU for milliseconds (when it ran in SCHED_IDLE, cycles waited for it up to 450 ms on a
//   loaded machine; bench/HISTORY.md, 2026-12-06). A miss costs one node's evaluation.
enum class CacheAccess { kWait, kSkipWhenBusy };

class EvaluationCache {
 public:
  // A small integer for the pod shape of `pod` with `preset`, the same for equal shapes
  // (interned; call once per cycle). Keeps `preset` alive for the cache's lifetime.
  uint64_t ShapeId(const policies::PodRequirements& pod,
                   const std::shared_ptr<const policies::Preset>& preset);

  static constexpr size_t kNodeAnswers = 1 << 16;
  std::shared_ptr<const policies::NodeEvaluation> Find(const policies::NodeState& node,
                                                       policies::GpuMask group_gpus,
                                                       uint64_t shape_id,
                                                       CacheAccess access = CacheAccess::kWait);
  void Insert(const policies::NodeState& node, policies::GpuMask group_gpus, uint64_t shape_id,
              std::shared_ptr<const policies::NodeEvaluation> evaluation);
  // Insert for many answers of one pod shape: one lock per kInsertBatch answers (so that no
  // holder keeps the lock for long), and each answer's slot fetched ahead (one cache miss per
  // answer otherwise, a tenth of a new pod shape's cycle at 5000 nodes). With kSkipWhenBusy, a
  // batch that finds the lock held is not kept.
  struct NodeAnswer {
    uint64_t version = 0;  // the NodeState's
    policies::GpuMask group_gpus = 0;
    std::shared_ptr<const policies::NodeEvaluation> evaluation;
  };
  static constexpr size_t kInsertBatch = 64;
  void InsertAll(uint64_t shape_id, std::vector<NodeAnswer> answers,
                 CacheAccess access = CacheAccess::kWait);
  size_t node_answers() const;   // entries in both generations
  size_t answer_arrays() const;  // generations (newer, older, retired) with their array allocated
  // False when no node answer of `shape_id` is kept (a pod shape seen for the first time, or
  // not lately): its cycle need not look for any. With kSkipWhenBusy, also false when the lock
  // is held (the cycle then evaluates what its table lacks).
  bool MayHoldAnswers(uint64_t shape_id, CacheAccess access = CacheAccess::kWait) const;
  // Frees the generation the last Insert()s dropped. Dropping tens of thousands of answers at
  // once takes milliseconds, so Insert (on the request path) only sets them aside, and then
  // frees kReleasedPerInsert of them per Insert: they are gone before it drops the next
  // generation, and no cycle pays for them all. The background refresh frees what is left.
  void ReleaseRetired();
  static constexpr size_t kReleasedPerInsert = 2;
  // Allocates now the arrays that the newer, older and retired generations take in turn (three
  // of 2.6 MB once two generations have been dropped), each zeroed, so that no cycle pays for
  // their first touch: the first Insert and the first two drops would otherwise allocate one
  // each on the request path, milliseconds of page faults on some machines. For a server to
  // call at startup (App::Create); without it they are allocated as needed. Keeps what is there.
  void ReserveAnswerArrays();

  // The table of `shape_id` for pods of `pod`'s group (TableGroup), made (and the least
  // recently used one dropped) when there is none. `pod` and `preset` are what its evaluations
  // are made with, so that the table can be refreshed without a pod asking (RefreshableShapes).
  static constexpr size_t kShapeTables = 32;
  std::shared_ptr<ShapeTable> Table(uint64_t shape_id, const policies::PodRequirements& pod,
                                    std::shared_ptr<const policies::Preset> preset);
  // The group a table of `pod`'s shape is kept for: the pod's group when it spreads, else empty
  // (the group changes no answer). An empty group names the shape's base table.
  static std::string_view TableGroup(const policies::PodRequirements& pod);

  // What each table used in the last kRecentUses table lookups is evaluated with: a
  // PodEvaluator made from one (with this cache and its shape_id) brings its table up to date
  // with PodEvaluator::RefreshTable. Tables no pod has asked about lately are left to the next
  // cycle that needs them. The pod shapes' lock, which every cycle takes too, is held only to
  // copy pointers.
  static constexpr uint64_t kRecentUses = 64;
  struct TableShape {
    std::shared_ptr<ShapeTable> table;
    // Of the table's group (TableGroup); empty for a base table. Never null.
    std::shared_ptr<const policies::PodRequirements> pod;
    std::shared_ptr<const policies::Preset> preset;
    uint64_t shape_id = 0;  // ShapeId(*pod, preset)
  };
  std::vector<TableShape> RefreshableShapes() const;

  uint64_t hits() const { return hits_.load(std::memory_order_relaxed); }
  uint64_t misses() const { return misses_.load(std::memory_order_relaxed); }
  // Lookups and answers that kSkipWhenBusy skipped because the lock was held (lookups are also
  // counted as misses).
  uint64_t skipped_when_busy() const { return skipped_.load(std::memory_order_relaxed); }

  // For tests: holds the node answers' lock for as long as it lives, as a background refresh
  // that has been preempted does.
  class AnswersLockHolder {
   public:
    explicit AnswersLockHolder(EvaluationCache& cache) : lock_(cache.answers_mutex_) {}

   private:
    MutexLock lock_;
  };

 private:
  mutable Mutex shapes_mutex_;
  std::unordered_map<std::string, uint64_t> shapes_ GPUTOPO_GUARDED_BY(shapes_mutex_);
  // Every preset ShapeId was given, so that none is freed and its address reused while a shape
  // names it.
  std::vector<std::shared_ptr<const policies::Preset>> presets_ GPUTOPO_GUARDED_BY(shapes_mutex_);
  struct TableEntry {
    uint64_t shape_id = 0;
    std::string group;  // TableGroup
    uint64_t last_used = 0;
    std::shared_ptr<ShapeTable> table;
    std::shared_ptr<const policies::PodRequirements> pod;
    std::shared_ptr<const policies::Preset> preset;
  };
  std::vector<TableEntry> tables_ GPUTOPO_GUARDED_BY(shapes_mutex_);  // at most kShapeTables
  uint64_t uses_ GPUTOPO_GUARDED_BY(shapes_mutex_) = 0;
  mutable Mutex answers_mutex_;
  AnswerGeneration newer_ GPUTOPO_GUARDED_BY(answers_mutex_){kNodeAnswers / 2};
  AnswerGeneration older_ GPUTOPO_GUARDED_BY(answers_mutex_);
  // Dropped, not yet freed (Insert and ReleaseRetired free it).
  AnswerGeneration retired_ GPUTOPO_GUARDED_BY(answers_mutex_);
  // Generations started (newer_ is generation_'s, older_ the one before), and for each shape id
  // the generation of its latest Insert (0: none).
  uint64_t generation_ GPUTOPO_GUARDED_BY(answers_mutex_) = 1;
  std::vector<uint64_t> inserted_in_ GPUTOPO_GUARDED_BY(answers_mutex_);
  bool MayHoldAnswersLocked(uint64_t shape_id) const GPUTOPO_REQUIRES(answers_mutex_);
  std::shared_ptr<const policies::NodeEvaluation> FindLocked(const AnswerGeneration::Key& key)
      GPUTOPO_REQUIRES(answers_mutex_);
  void InsertLocked(const AnswerGeneration::Key& key,
                    std::shared_ptr<const policies::NodeEvaluation> evaluation)
      GPUTOPO_REQUIRES(answers_mutex_);
  // answers[begin, end) of `shape_id`, under the lock.
  void InsertBatchLocked(uint64_t shape_id, std::vector<NodeAnswer>& answers, size_t begin,
                         size_t end) GPUTOPO_REQUIRES(answers_mutex_);
  std::atomic<uint64_t> hits_{0};
  std::atomic<uint64_t> misses_{0};
  mutable std::atomic<uint64_t> skipped_{0};
};

}  // namespace gputopo::evaluation

#endif  // GPUTOPO_EVALUATION_EVALUATION_CACHE_H_
