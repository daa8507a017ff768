// EvaluationCache: node evaluations kept across scheduling cycles.
//
// kube-scheduler asks about one pod at a time, usually the next replica of the same workload,
// and between two cycles only the node the last pod went to has changed. An evaluation depends
// on the node's state, the pod's requirements apart from its group (the "shape"), the preset,
// and which GPUs of the node hold the pod's group. Two layers keep them:
//
// - Per node state: answers keyed by (NodeState version, shape, group GPUs), so that tables of
//   one shape share them (a new group's table, the base table, a bind evaluating its node).
//   Versions are never reused, so a cached answer is always exactly what evaluating again would
//   give. Two generations of at most kNodeAnswers/2 entries each: when the newer fills up, the
//   older is dropped, so answers for node states that no longer exist age out.
// - Per shape and group: a ShapeTable holds, for each node position of a snapshot's name index,
//   the evaluation of that shape for a pod of that group (with the GPUs of the node holding the
//   group, where it has any), tagged with the NodeState version it was computed on. A cycle
//   reads the table and the snapshot's NodeSummary array instead of thousands of scattered
//   NodeStates, whether or not the nodes hold the pod's group (a large Deployment spread over
//   the cluster has a replica on every node); only nodes whose version changed are evaluated
//   again. A spreading shape also has a *base* table, its answers for a group on no node: the
//   first cycle of a new group copies them for every node its Bloom filter rules out. Pods
//   that do not spread share one table per shape (the group changes nothing). The kShapeTables
//   most recently used (shape, group) pairs have a table.
//
// Thread safety: thread-safe.
#ifndef GPUTOPO_POLICIES_ENGINE_EVALUATION_CACHE_H_
#define GPUTOPO_POLICIES_ENGINE_EVALUATION_CACHE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "policies/engine/evaluation.h"
#include "policies/state/name_index.h"

namespace gputopo::policies {

// The evaluations of one shape at each node position of one name index; see above.
//
// Thread safety: callers hold `mutex` for every use.
class ShapeTable {
 public:
  std::mutex mutex;

  // Makes the table describe positions of `index`. When it is another index (nodes came or
  // went), each node's slot moves to the node's new position.
  void Attach(const std::shared_ptr<const FlatNameIndex>& index);
  bool attached(const std::shared_ptr<const FlatNameIndex>& index) const { return index_ == index; }
  // The evaluation at `position` if it was made on NodeState `version`; null otherwise.
  const EvaluationRef* Find(size_t position, uint64_t version) const {
    const Slot& slot = slots_[position];
    return slot.version == version && slot.ref.evaluation != nullptr ? &slot.ref : nullptr;
  }
  void Prefetch(size_t position) const { __builtin_prefetch(&slots_[position]); }
  // Find()'s evaluation, owned: for another table to keep as its own answer.
  std::shared_ptr<const NodeEvaluation> FindOwned(size_t position, uint64_t version) const;
  // True until the table has stored or been seeded with any answer.
  bool fresh() const { return owned_->empty() && borrowed_ == nullptr; }
  // Takes every slot of `base` (attached to the same index; the caller holds both mutexes) and
  // keeps base's evaluations alive for as long as this table lives (borrowed()). The caller
  // then Forget()s the slots whose answers differ for this table (nodes holding its group).
  void SeedFrom(const ShapeTable& base);
  void Forget(size_t position) { slots_[position] = Slot{}; }
  // The evaluations seeded from another table, which cycles reading this one must keep alive
  // too (beside Pin()); null when not seeded.
  const std::shared_ptr<const void>& borrowed() const { return borrowed_; }
  // Keeps `evaluation` as the answer at `position` for NodeState `version`, unless the slot
  // holds a newer version's (versions grow as nodes change: a cycle on an older snapshot, racing
  // a refresh, must not put older answers back). Returns the reference to `evaluation`.
  EvaluationRef Store(size_t position, uint64_t version,
                      std::shared_ptr<const NodeEvaluation> evaluation);
  // Keeps alive every evaluation Find and Store have answered since the last call to Pin()
  // (and possibly more). Call after a cycle's last Store.
  std::shared_ptr<const void> Pin();
  size_t owned() const { return owned_->size(); }

 private:
  struct Slot {
    uint64_t version = 0;
    EvaluationRef ref;
  };
  using Owned = std::vector<std::shared_ptr<const NodeEvaluation>>;
  // Starts a new set of owned evaluations holding only those the slots still refer to. The old
  // set lives on for the cycles that pinned it.
  void Compact();

  std::shared_ptr<const FlatNameIndex> index_;
  std::vector<Slot> slots_;
  // Every evaluation a slot refers to, each once (and some no slot refers to any more, until
  // the next Compact). Append-only: pinned sets are never changed after they are replaced.
  std::shared_ptr<Owned> owned_ = std::make_shared<Owned>();
  std::unordered_map<const NodeEvaluation*, size_t> owned_at_;  // position in *owned_
  std::shared_ptr<const void> borrowed_;  // SeedFrom's base evaluations; never changed here
};

// The part of a pod's requirements and preset an evaluation depends on, apart from the group.
std::string EvaluationShape(const PodRequirements& pod, const Preset& preset);

class EvaluationCache {
 public:
  // A small integer for `shape`, the same for equal shapes (interned; call once per cycle).
  uint64_t ShapeId(std::string_view shape);

  static constexpr size_t kNodeAnswers = 1 << 16;
  std::shared_ptr<const NodeEvaluation> Find(const NodeState& node, GpuMask group_gpus,
                                             uint64_t shape_id);
  void Insert(const NodeState& node, GpuMask group_gpus, uint64_t shape_id,
              std::shared_ptr<const NodeEvaluation> evaluation);
  size_t node_answers() const;  // entries in both generations
  // Frees the generation the last Insert()s dropped. Dropping tens of thousands of answers
  // takes milliseconds, so Insert (on the request path) only sets them aside and the background
  // refresher frees them; with one generation already set aside, Insert frees the older inline.
  void ReleaseRetired();

  // The table of `shape_id` for pods of `pod`'s group (TableGroup), made (and the least
  // recently used one dropped) when there is none. `pod` and `preset` are what its evaluations
  // are made with; with a preset, the table can be refreshed without a pod asking
  // (RefreshableShapes).
  static constexpr size_t kShapeTables = 32;
  std::shared_ptr<ShapeTable> Table(uint64_t shape_id, const PodRequirements& pod,
                                    std::shared_ptr<const Preset> preset);
  // The group a table of `pod`'s shape is kept for: the pod's group when it spreads, else empty
  // (the group changes no answer). An empty group names the shape's base table.
  static std::string_view TableGroup(const PodRequirements& pod);

  // What each table that can be refreshed, and was used in the last kRecentUses table
  // lookups, is evaluated with: a PodEvaluator made from one (with this cache) brings its table
  // up to date with PodEvaluator::RefreshTable. Tables no pod has asked about lately are left
  // to the next cycle that needs them.
  static constexpr uint64_t kRecentUses = 64;
  struct TableShape {
    std::shared_ptr<ShapeTable> table;
    PodRequirements pod;  // of the table's group (TableGroup); empty for a base table
    std::shared_ptr<const Preset> preset;
  };
  std::vector<TableShape> RefreshableShapes() const;

  uint64_t hits() const { return hits_.load(std::memory_order_relaxed); }
  uint64_t misses() const { return misses_.load(std::memory_order_relaxed); }

 private:
  mutable std::mutex shapes_mutex_;
  std::unordered_map<std::string, uint64_t> shapes_;  // GUARDED_BY(shapes_mutex_)
  struct TableEntry {
    uint64_t shape_id = 0;
    std::string group;  // TableGroup
    uint64_t last_used = 0;
    std::shared_ptr<ShapeTable> table;
    PodRequirements pod;
    std::shared_ptr<const Preset> preset;  // null: the table is not refreshed
  };
  std::vector<TableEntry> tables_;  // GUARDED_BY(shapes_mutex_), at most kShapeTables
  uint64_t uses_ = 0;               // GUARDED_BY(shapes_mutex_)
  struct AnswerKey {
    uint64_t version = 0;
    uint64_t shape_id = 0;
    GpuMask group_gpus = 0;
    friend bool operator==(const AnswerKey&, const AnswerKey&) = default;
  };
  struct AnswerKeyHash {
    size_t operator()(const AnswerKey& k) const {
      uint64_t h = k.version * 0x9E3779B97F4A7C15ULL;
      h ^= (k.shape_id + 0x7F4A7C15ULL) * 0xC2B2AE3D27D4EB4FULL;
      h ^= k.group_gpus * 0x165667B19E3779F9ULL;
      return static_cast<size_t>(h ^ (h >> 29));
    }
  };
  using Answers =
      std::unordered_map<AnswerKey, std::shared_ptr<const NodeEvaluation>, AnswerKeyHash>;
  mutable std::mutex answers_mutex_;
  Answers newer_;    // GUARDED_BY(answers_mutex_)
  Answers older_;    // GUARDED_BY(answers_mutex_)
  Answers retired_;  // GUARDED_BY(answers_mutex_): dropped, not yet freed (ReleaseRetired)
  std::atomic<uint64_t> hits_{0};
  std::atomic<uint64_t> misses_{0};
};

}  // namespace gputopo::policies

#endif  // GPUTOPO_POLICIES_ENGINE_EVALUATION_CACHE_H_
