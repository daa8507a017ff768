#include "evaluation/pod_evaluator.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <utility>

namespace gputopo::evaluation {

using policies::ClusterSnapshot;
using policies::EvaluateNode;
using policies::EvaluationRef;
using policies::GpuMask;
using policies::NodeEvaluation;
using policies::NodeState;
using policies::NodeSummary;
using policies::PodRequirements;
using policies::Preset;
using policies::SpreadMode;

PodEvaluator::PodEvaluator(const PodRequirements& pod, const Preset& preset)
    : pod_(pod),
      preset_(preset),
      cache_(nullptr),
      group_hash_(std::hash<std::string_view>{}(pod.group)),
      symmetric_(pod, preset) {}

PodEvaluator::PodEvaluator(const PodRequirements& pod, std::shared_ptr<const Preset> preset,
                           EvaluationCache& cache, CacheAccess access)
    : PodEvaluator(pod, preset, cache, cache.ShapeId(pod, preset), access) {}

PodEvaluator::PodEvaluator(const PodRequirements& pod, std::shared_ptr<const Preset> preset,
                           EvaluationCache& cache, uint64_t shape_id, CacheAccess access)
    : pod_(pod),
      shared_preset_(std::move(preset)),
      preset_(*shared_preset_),
      cache_(&cache),
      shape_id_(shape_id),
      group_hash_(std::hash<std::string_view>{}(pod.group)),
      access_(access),
      cache_may_answer_(cache.MayHoldAnswers(shape_id_, access)),
      symmetric_(pod, *shared_preset_) {}

uint32_t PodEvaluator::Add(std::shared_ptr<const NodeEvaluation> evaluation) {
  evaluations_.push_back(std::move(evaluation));
  return static_cast<uint32_t>(evaluations_.size() - 1);
}

GpuMask PodEvaluator::GroupGpusOf(const NodeState& node) const {
  return pod_.spread == SpreadMode::kNone || !node.has_topology()
             ? 0
             : node.GroupGpus(pod_.group, group_hash_);
}

uint32_t PodEvaluator::Evaluate(const NodeState& node) {
  const uint32_t index = Add(EvaluateShared(node, GroupGpusOf(node)));
  InsertAnswers();
  return index;
}

void PodEvaluator::InsertAnswers() {
  if (to_insert_.empty()) return;
  std::vector<EvaluationCache::NodeAnswer> answers;
  answers.reserve(to_insert_.size());
  for (const ToInsert& entry : to_insert_) {
    answers.push_back({entry.version, entry.group, answers_[entry.answer]});
  }
  to_insert_.clear();
  cache_->InsertAll(shape_id_, std::move(answers), access_);
}

std::shared_ptr<const NodeEvaluation> PodEvaluator::EvaluateShared(const NodeState& node,
                                                                   GpuMask group) {
  return answers_[Resolve(node, group, nullptr)];
}

uint32_t PodEvaluator::Resolve(const NodeState& node, GpuMask group, std::vector<Search>* later) {
  const auto next = static_cast<uint32_t>(answers_.size());
  auto search = [&](bool plain) {
    ++evaluated_;
    if (later != nullptr) {
      answers_.emplace_back();
      later->push_back({&node, group, next, plain});
    } else {
      answers_.push_back(std::make_shared<const NodeEvaluation>(
          plain ? EvaluateNode(pod_, node, preset_, 0) : symmetric_.Evaluate(node, group)));
    }
    return next;
  };
  if (!node.has_topology()) return search(true);  // the error text differs per node: not memoised
  if (cache_may_answer_) {
    if (auto cached = cache_->Find(node, group, shape_id_, access_)) {
      ++cache_hits_;
      answers_.push_back(std::move(cached));
      return next;
    }
  }
  uint32_t answer = next;
  if (MemoPays()) {
    const MemoKey key{node.signature(), group,
                      node.signature_hash() ^ (group * 0x9E3779B97F4A7C15ULL)};
    auto [it, inserted] = memo_.try_emplace(key, next);
    if (!inserted) {
      ++memo_hits_;
      answer = it->second;
    } else {
      (void)search(false);
    }
  } else {
    (void)search(false);
  }
  if (cache_ != nullptr) to_insert_.push_back({node.version(), group, answer});
  return answer;
}

uint32_t PodEvaluator::Defer(const NodeState& node, uint64_t version, bool find_group,
                             std::vector<Search>& later) {
  const auto next = static_cast<uint32_t>(answers_.size());
  ++evaluated_;
  answers_.emplace_back();
  later.push_back({.node = &node,
                   .group = 0,
                   .answer = next,
                   .plain = false,
                   .deferred = true,
                   .find_group = find_group,
                   .version = version});
  return next;
}

void PodEvaluator::RunSearches(std::vector<Search>& searches) {
  const EvaluationHelpers helpers =
      searches.size() >= kHelpedSearches ? helpers_ : EvaluationHelpers{};
  while (helper_symmetric_.size() < static_cast<size_t>(std::max(helpers.threads, 0))) {
    helper_symmetric_.push_back(std::make_unique<SymmetricStates>(pod_, preset_));
  }
  // The answers' memory is allocated here, on this thread alone: with one malloc arena
  // (app::TuneAllocator) two threads allocating at once sleep on its lock, which cost a cold
  // cycle far more than these allocations do (bench/HISTORY.md, 2026-12-07).
  std::vector<std::shared_ptr<NodeEvaluation>> made(searches.size());
  for (std::shared_ptr<NodeEvaluation>& answer : made) answer = std::make_shared<NodeEvaluation>();
  // Each search is made by one thread, which alone writes its answer and its Search.
  ParallelFor(helpers, searches.size(), kSearchChunk, [&](int worker, size_t begin, size_t end) {
    SymmetricStates& symmetric =
        worker == 0 ? symmetric_ : *helper_symmetric_[static_cast<size_t>(worker - 1)];
    for (size_t i = begin; i < end; ++i) {
      // The nodes are scattered in memory: fetch the next ones' state while searching this one.
      if (i + 2 < end) searches[i + 2].node->PrefetchObject();
      if (i + 1 < end) searches[i + 1].node->PrefetchParts();
      Search& s = searches[i];
      if (s.deferred) {
        s.plain = !s.node->has_topology();
        if (!s.plain && s.find_group) s.group = GroupGpusOf(*s.node);
      }
      *made[i] =
          s.plain ? EvaluateNode(pod_, *s.node, preset_, 0) : symmetric.Evaluate(*s.node, s.group);
      answers_[s.answer] = std::move(made[i]);
    }
  });
  // As Resolve queues its searches' answers: a node without topology's never.
  for (const Search& s : searches) {
    if (s.deferred && !s.plain && cache_ != nullptr) {
      to_insert_.push_back({s.version, s.group, s.answer});
    }
  }
}

bool PodEvaluator::MemoPays() const {
  const size_t lookups = memo_.size() + memo_hits_;
  return lookups < kMemoTrial || memo_hits_ * kMemoMinShare >= lookups;
}

EvaluationRef PodEvaluator::TableAnswer(ShapeTable::Locked& table, ShapeTable::Locked* base,
                                        const ClusterSnapshot& snapshot, size_t position) {
  PendingAnswer pending{};
  if (auto found = FindTableAnswer(table, base, snapshot, position, pending, nullptr)) {
    return *found;
  }
  return StoreTableAnswer(table, base, snapshot, pending);
}

std::optional<EvaluationRef> PodEvaluator::FindTableAnswer(ShapeTable::Locked& table,
                                                           ShapeTable::Locked* base,
                                                           const ClusterSnapshot& snapshot,
                                                           size_t position, PendingAnswer& pending,
                                                           std::vector<Search>* later) {
  const NodeSummary& summary = snapshot.summary(position);
  if (const EvaluationRef* found = table.Find(position, summary.version)) {
    ++table_hits_;
    return *found;
  }
  const bool may_hold_group =
      pod_.spread != SpreadMode::kNone && summary.groups.MayContain(group_hash_);
  const NodeState& node = *snapshot.nodes()[position];
  const bool defer = later != nullptr && NothingToLookUp();
  if (base != nullptr && !may_hold_group) {
    if (auto seeded = base->FindOwned(position, summary.version)) {
      ++table_hits_;
      return table.Store(position, summary.version, std::move(seeded));
    }
    pending = {position,
               defer ? Defer(node, summary.version, false, *later) : Resolve(node, 0, later), true};
    return std::nullopt;
  }
  pending = {position,
             defer ? Defer(node, summary.version, may_hold_group, *later)
                   : Resolve(node, may_hold_group ? GroupGpusOf(node) : 0, later),
             false};
  return std::nullopt;
}

EvaluationRef PodEvaluator::StoreTableAnswer(ShapeTable::Locked& table, ShapeTable::Locked* base,
                                             const ClusterSnapshot& snapshot,
                                             const PendingAnswer& pending) {
  const uint64_t version = snapshot.summary(pending.position).version;
  const std::shared_ptr<const NodeEvaluation>& evaluation = answers_[pending.answer];
  if (pending.into_base) (void)base->Store(pending.position, version, evaluation);
  return table.Store(pending.position, version, evaluation);
}

size_t PodEvaluator::RefreshTable(ShapeTable& table, const ClusterSnapshot& snapshot,
                                  const std::vector<size_t>* positions) {
  // The table's lock is held only to find the stale slots and to store the new answers, not
  // while evaluating: a cycle of the shape never waits for a refresh's searches.
  std::vector<size_t> stale;
  {
    ShapeTable::Locked locked = table.Lock();
    locked.Attach(snapshot.name_index());
    auto look = [&](size_t position) {
      if (locked.Find(position, snapshot.summary(position).version) == nullptr)
        stale.push_back(position);
    };
    if (positions != nullptr) {
      for (size_t position : *positions) look(position);
    } else {
      for (size_t position = 0; position < snapshot.nodes().size(); ++position) look(position);
    }
  }
  if (stale.empty()) return 0;
  const uint64_t evaluated_before = evaluated_;
  std::vector<std::shared_ptr<const NodeEvaluation>> answers;
  answers.reserve(stale.size());
  for (size_t position : stale) {
    const NodeSummary& summary = snapshot.summary(position);
    const NodeState& node = *snapshot.nodes()[position];
    const bool may_hold_group =
        pod_.spread != SpreadMode::kNone && summary.groups.MayContain(group_hash_);
    answers.push_back(EvaluateShared(node, may_hold_group ? GroupGpusOf(node) : 0));
  }
  InsertAnswers();
  ShapeTable::Locked locked = table.Lock();
  // A cycle on a snapshot with other nodes may have moved the table on: then these positions
  // are not the table's any more, and the next refresh starts again.
  if (locked.attached(snapshot.name_index())) {
    for (size_t i = 0; i < stale.size(); ++i) {
      (void)locked.Store(stale[i], snapshot.summary(stale[i]).version, std::move(answers[i]));
    }
  }
  (void)locked.Pin();  // compacts what the replaced slots no longer need
  return static_cast<size_t>(evaluated_ - evaluated_before);
}

Evaluations PodEvaluator::EvaluateAt(const ClusterSnapshot& snapshot,
                                     const std::vector<size_t>& positions) {
  Evaluations out;
  out.per_node.resize(positions.size());
  const uint64_t evaluated_before = evaluated_;
  if (cache_ == nullptr) {  // every evaluation is owned here
    auto own = std::make_shared<std::vector<std::shared_ptr<const NodeEvaluation>>>();
    for (size_t i = 0; i < positions.size(); ++i) {
      if (positions[i] == ClusterSnapshot::kNotFound) continue;
      const NodeState& node = *snapshot.nodes()[positions[i]];
      own->push_back(EvaluateShared(node, GroupGpusOf(node)));
      out.per_node[i] = EvaluationRef::To(*own->back());
    }
    out.lease.Hold(std::move(own));
    out.evaluated = evaluated_ - evaluated_before;
    return out;
  }
  const std::shared_ptr<ShapeTable> table = cache_->Table(shape_id_, pod_, shared_preset_);
  // A spreading pod's table is its group's; nodes without the group answer as in the shape's
  // base table (locked after the group's: no lock is ever taken the other way round).
  std::shared_ptr<ShapeTable> base;
  if (!EvaluationCache::TableGroup(pod_).empty()) {
    PodRequirements no_group = pod_;
    no_group.group.clear();
    base = cache_->Table(shape_id_, no_group, shared_preset_);
  }
  ShapeTable::Locked locked = table->Lock();
  std::optional<ShapeTable::Locked> base_locked;
  locked.Attach(snapshot.name_index());
  // A new table: every candidate is evaluated (or found equal to one that was).
  const bool fresh = locked.fresh();
  if (fresh) memo_.reserve(std::min(positions.size(), kMemoTrial));
  if (base != nullptr) {
    base_locked.emplace(*base);
    base_locked->Attach(snapshot.name_index());
    if (fresh) {
      // The first cycle of a new group: every node starts with the base table's answer, and
      // only those that may hold the group are answered afresh (copying slot by slot took
      // milliseconds at 5000 nodes).
      locked.SeedFrom(*base_locked);
      for (size_t position = 0; position < snapshot.node_count(); ++position) {
        if (snapshot.summary(position).groups.MayContain(group_hash_)) locked.Forget(position);
      }
    }
  }
  ShapeTable::Locked* base_view = base_locked ? &*base_locked : nullptr;
  auto answer = [&](size_t position) -> EvaluationRef {
    return TableAnswer(locked, base_view, snapshot, position);
  };
  const size_t node_count = snapshot.node_count();
  if (positions.size() >= node_count / kSweepShare && node_count <= UINT32_MAX) {
    // Many of the nodes: answer them in position order, so that the summaries and table slots
    // are read front to back (and streamed in by the CPU) rather than at random. asked[p] is
    // one more than the index of the first request entry naming the node at position p.
    std::vector<uint32_t> asked(node_count, 0);
    std::vector<std::pair<size_t, size_t>> repeats;  // (entry, earlier entry of the same node)
    for (size_t i = 0; i < positions.size(); ++i) {
      const size_t position = positions[i];
      if (position == ClusterSnapshot::kNotFound) continue;
      if (asked[position] != 0) {
        repeats.emplace_back(i, asked[position] - 1);
      } else {
        asked[position] = static_cast<uint32_t>(i + 1);
      }
    }
    // In a new table's sweep, nodes whose slots are stale are evaluated: their scattered state
    // is fetched ahead, the object kFar positions ahead and what it points to kNear ahead. (A
    // table in use has a few stale slots a cycle: looking ahead would cost more than it saves.)
    constexpr size_t kFar = 8;
    constexpr size_t kNear = 4;
    auto stale = [&](size_t position) {
      return position < node_count && asked[position] != 0 &&
             locked.Find(position, snapshot.summary(position).version) == nullptr;
    };
    // TableAnswer in three passes: find each node's answer in the tables, or where it will
    // come from (the node answers, the memo, or a search); run the searches, on helper threads
    // too when there are many (RunSearches); store the new answers, in position order.
    std::vector<PendingAnswer> pending;
    std::vector<Search> searches;
    if (fresh) {
      searches.reserve(positions.size());
      pending.reserve(positions.size());
      answers_.reserve(answers_.size() + positions.size());
    }
    for (size_t position = 0; position < node_count; ++position) {
      // (Deferred searches read their node themselves, on whichever thread makes them.)
      if (fresh && !NothingToLookUp()) {
        if (stale(position + kFar)) snapshot.nodes()[position + kFar]->PrefetchObject();
        if (stale(position + kNear)) snapshot.nodes()[position + kNear]->PrefetchParts();
      }
      if (asked[position] == 0) continue;
      PendingAnswer slot{};
      if (auto found = FindTableAnswer(locked, base_view, snapshot, position, slot, &searches)) {
        out.per_node[asked[position] - 1] = *found;
      } else {
        pending.push_back(slot);
      }
    }
    RunSearches(searches);
    for (const PendingAnswer& slot : pending) {
      out.per_node[asked[slot.position] - 1] = StoreTableAnswer(locked, base_view, snapshot, slot);
    }
    for (const auto& [entry, earlier] : repeats) out.per_node[entry] = out.per_node[earlier];
  } else {
    constexpr size_t kAhead = 8;  // positions are random: fetch what they read early
    for (size_t i = 0; i < positions.size(); ++i) {
      if (i + kAhead < positions.size() && positions[i + kAhead] != ClusterSnapshot::kNotFound) {
        __builtin_prefetch(&snapshot.summary(positions[i + kAhead]));
        locked.Prefetch(positions[i + kAhead]);
      }
      if (positions[i] != ClusterSnapshot::kNotFound) out.per_node[i] = answer(positions[i]);
    }
  }
  InsertAnswers();
  out.lease.Hold(locked.Pin());
  out.lease.Hold(locked.borrowed());
  if (base_locked) (void)base_locked->Pin();  // compacts it now and then
  out.evaluated = evaluated_ - evaluated_before;
  return out;
}

}  // namespace gputopo::evaluation
