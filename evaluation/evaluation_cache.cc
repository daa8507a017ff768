#include "evaluation/evaluation_cache.h"

#include <algorithm>
#include <functional>
#include <utility>

namespace gputopo::evaluation {

using policies::EvaluationRef;
using policies::FlatNameIndex;
using policies::GpuMask;
using policies::NodeEvaluation;
using policies::NodeState;
using policies::PodRequirements;
using policies::Preset;
using policies::SpreadMode;

std::string EvaluationShape(const PodRequirements& pod, const Preset& preset) {
  std::string shape = std::to_string(pod.gpus) + "/" + std::to_string(pod.gpu_milli.value_or(0)) +
                      "/" + (pod.exclusive ? "x" : "-") + "/" +
                      std::string(policies::LocalityName(pod.locality)) + "/" +
                      std::string(policies::ConstraintModeName(pod.locality_mode)) + "/" +
                      std::string(policies::SpreadModeName(pod.spread)) + "/";
  const bool host = std::any_of(
      preset.components().begin(), preset.components().end(),
      [](const policies::WeightedComponent& c) { return c.component->ReadsHostResources(); });
  if (host) {
    shape += std::to_string(pod.cpu_milli) + "c/" + std::to_string(pod.memory_bytes) + "b/";
  }
  // Presets are immutable; ShapeId keeps each alive, so the address identifies one.
  shape += std::to_string(reinterpret_cast<std::uintptr_t>(&preset));
  return shape;
}

uint64_t EvaluationCache::ShapeId(const PodRequirements& pod,
                                  const std::shared_ptr<const Preset>& preset) {
  const std::string shape = EvaluationShape(pod, *preset);
  MutexLock lock(shapes_mutex_);
  auto [it, inserted] = shapes_.try_emplace(shape, shapes_.size());
  if (inserted && std::find(presets_.begin(), presets_.end(), preset) == presets_.end()) {
    presets_.push_back(preset);
  }
  return it->second;
}

std::shared_ptr<const NodeEvaluation> EvaluationCache::FindLocked(
    const AnswerGeneration::Key& key) {
  std::shared_ptr<const NodeEvaluation> value = newer_.Find(key);
  return value != nullptr ? value : older_.Find(key);
}

std::shared_ptr<const NodeEvaluation> EvaluationCache::Find(const NodeState& node,
                                                            GpuMask group_gpus, uint64_t shape_id,
                                                            CacheAccess access) {
  const AnswerGeneration::Key key{node.version(), shape_id, group_gpus};
  std::shared_ptr<const NodeEvaluation> value;
  if (access == CacheAccess::kWait) {
    MutexLock lock(answers_mutex_);
    value = FindLocked(key);
  } else if (answers_mutex_.TryLock()) {
    value = FindLocked(key);
    answers_mutex_.Unlock();
  } else {
    skipped_.fetch_add(1, std::memory_order_relaxed);
  }
  (value ? hits_ : misses_).fetch_add(1, std::memory_order_relaxed);
  return value;
}

void EvaluationCache::Insert(const NodeState& node, GpuMask group_gpus, uint64_t shape_id,
                             std::shared_ptr<const NodeEvaluation> evaluation) {
  MutexLock lock(answers_mutex_);
  InsertLocked({node.version(), shape_id, group_gpus}, std::move(evaluation));
}

void EvaluationCache::InsertAll(uint64_t shape_id, std::vector<NodeAnswer> answers,
                                CacheAccess access) {
  for (size_t begin = 0; begin < answers.size(); begin += kInsertBatch) {
    const size_t end = std::min(answers.size(), begin + kInsertBatch);
    if (access == CacheAccess::kWait) {
      MutexLock lock(answers_mutex_);
      InsertBatchLocked(shape_id, answers, begin, end);
    } else if (answers_mutex_.TryLock()) {
      InsertBatchLocked(shape_id, answers, begin, end);
      answers_mutex_.Unlock();
    } else {
      skipped_.fetch_add(end - begin, std::memory_order_relaxed);
    }
  }
}

void EvaluationCache::InsertBatchLocked(uint64_t shape_id, std::vector<NodeAnswer>& answers,
                                        size_t begin, size_t end) {
  constexpr size_t kAhead = 8;
  for (size_t i = begin; i < end; ++i) {
    if (i + kAhead < end) {
      const NodeAnswer& next = answers[i + kAhead];
      newer_.Prefetch({next.version, shape_id, next.group_gpus});
    }
    NodeAnswer& answer = answers[i];
    InsertLocked({answer.version, shape_id, answer.group_gpus}, std::move(answer.evaluation));
  }
}

void EvaluationCache::InsertLocked(const AnswerGeneration::Key& key,
                                   std::shared_ptr<const NodeEvaluation> evaluation) {
  if (newer_.full() && newer_.Find(key) == nullptr) {
    // kReleasedPerInsert >= 1 has emptied retired_ since the last drop (newer_ took at least
    // kNodeAnswers / 2 inserts to fill): nothing is freed here, and its array is the new
    // generation's.
    AnswerGeneration emptied = std::exchange(retired_, std::exchange(older_, std::move(newer_)));
    emptied.Restart(kNodeAnswers / 2);
    newer_ = std::move(emptied);
    ++generation_;
  }
  newer_.Put(key, std::move(evaluation));
  retired_.ReleaseSome(kReleasedPerInsert);
  if (key.shape_id >= inserted_in_.size()) inserted_in_.resize(key.shape_id + 1, 0);
  inserted_in_[key.shape_id] = generation_;
}

bool EvaluationCache::MayHoldAnswersLocked(uint64_t shape_id) const {
  return shape_id < inserted_in_.size() && inserted_in_[shape_id] != 0 &&
         inserted_in_[shape_id] + 1 >= generation_;
}

bool EvaluationCache::MayHoldAnswers(uint64_t shape_id, CacheAccess access) const {
  if (access == CacheAccess::kWait) {
    MutexLock lock(answers_mutex_);
    return MayHoldAnswersLocked(shape_id);
  }
  if (answers_mutex_.TryLock()) {
    const bool may = MayHoldAnswersLocked(shape_id);
    answers_mutex_.Unlock();
    return may;
  }
  skipped_.fetch_add(1, std::memory_order_relaxed);
  return false;
}

void EvaluationCache::ReleaseRetired() {
  AnswerGeneration retired;
  {
    MutexLock lock(answers_mutex_);
    std::swap(retired, retired_);
  }
  retired.ReleaseSome(retired.size());  // the slow part, outside the lock
  MutexLock lock(answers_mutex_);
  // Its array, all free now, is the next generation's (unless an Insert set another aside).
  if (retired_.size() == 0) retired_ = std::move(retired);
}

void EvaluationCache::ReserveAnswerArrays() {
  // One array per generation without one; each is allocated (the page faults) outside the lock.
  for (bool missing = true; missing;) {
    AnswerGeneration reserved;
    reserved.Reserve(kNodeAnswers / 2);
    MutexLock lock(answers_mutex_);
    missing = false;
    for (AnswerGeneration* generation : {&newer_, &older_, &retired_}) {
      if (generation->allocated()) continue;  // (a generation holding answers is)
      if (reserved.allocated()) {
        *generation = std::move(reserved);
      } else {
        missing = true;
      }
    }
  }
}

size_t EvaluationCache::answer_arrays() const {
  MutexLock lock(answers_mutex_);
  return static_cast<size_t>(newer_.allocated()) + static_cast<size_t>(older_.allocated()) +
         static_cast<size_t>(retired_.allocated());
}

size_t EvaluationCache::node_answers() const {
  MutexLock lock(answers_mutex_);
  return newer_.size() + older_.size();
}

std::string_view EvaluationCache::TableGroup(const PodRequirements& pod) {
  return pod.spread == SpreadMode::kNone ? std::string_view() : std::string_view(pod.group);
}

std::shared_ptr<ShapeTable> EvaluationCache::Table(uint64_t shape_id, const PodRequirements& pod,
                                                   std::shared_ptr<const Preset> preset) {
  const std::string_view group = TableGroup(pod);
  MutexLock lock(shapes_mutex_);
  ++uses_;
  for (TableEntry& entry : tables_) {
    if (entry.shape_id == shape_id && entry.group == group) {
      entry.last_used = uses_;
      return entry.table;
    }
  }
  TableEntry fresh{shape_id,
                   std::string(group),
                   uses_,
                   std::make_shared<ShapeTable>(),
                   std::make_shared<const PodRequirements>(pod),
                   std::move(preset)};
  std::shared_ptr<ShapeTable> table = fresh.table;
  if (tables_.size() < kShapeTables) {
    tables_.push_back(std::move(fresh));
  } else {
    auto oldest = std::min_element(
        tables_.begin(), tables_.end(),
        [](const TableEntry& a, const TableEntry& b) { return a.last_used < b.last_used; });
    *oldest = std::move(fresh);
  }
  return table;
}

std::vector<EvaluationCache::TableShape> EvaluationCache::RefreshableShapes() const {
  std::vector<TableShape> out;
  out.reserve(kShapeTables);  // allocated before the lock
  MutexLock lock(shapes_mutex_);
  for (const TableEntry& entry : tables_) {
    if (uses_ - entry.last_used < kRecentUses) {
      out.push_back({entry.table, entry.pod, entry.preset, entry.shape_id});
    }
  }
  return out;
}

void ShapeTable::Attach(const std::shared_ptr<const FlatNameIndex>& index) {
  if (index_ == index) return;
  // Nodes came or went: carry each remaining node's slot to its new position. A slot stays
  // valid exactly as long as its node keeps the NodeState version it was computed on.
  std::vector<Slot> slots(index == nullptr ? 0 : index->size());
  if (index_ != nullptr && index != nullptr) {
    for (size_t old = 0; old < slots_.size(); ++old) {
      if (slots_[old].ref.evaluation == nullptr) continue;
      const size_t position = index->Find(index_->NameAt(old));
      if (position != FlatNameIndex::kNotFound) slots[position] = slots_[old];
    }
  }
  index_ = index;
  slots_ = std::move(slots);
}

EvaluationRef ShapeTable::Locked::Store(size_t position, uint64_t version,
                                        std::shared_ptr<const NodeEvaluation> evaluation) {
  const EvaluationRef ref = EvaluationRef::To(*evaluation);
  Slot& slot = table_.slots_[position];
  if (slot.version <= version) {  // a cycle on an older snapshot never undoes a newer answer
    slot.version = version;
    slot.ref = ref;
    slot.owned_at = static_cast<uint32_t>(table_.owned_->size());
  }
  // Kept even when the slot keeps a newer answer: the caller reads `ref` until it pins.
  table_.owned_->push_back(std::move(evaluation));
  return ref;
}

std::shared_ptr<const NodeEvaluation> ShapeTable::Locked::FindOwned(size_t position,
                                                                    uint64_t version) const {
  if (Find(position, version) == nullptr) return nullptr;
  const uint32_t at = table_.slots_[position].owned_at;
  return at == kBorrowed ? nullptr : (*table_.owned_)[at];
}

std::shared_ptr<const void> ShapeTable::Locked::Pin() {
  if (table_.owned_->size() > 2 * table_.slots_.size() + 64) table_.Compact();
  return table_.owned_;
}

void ShapeTable::Locked::SeedFrom(const Locked& base) {
  table_.slots_ = base.table_.slots_;
  for (Slot& slot : table_.slots_) slot.owned_at = kBorrowed;
  table_.borrowed_ = base.table_.owned_;
}

void ShapeTable::Compact() {
  auto fresh = std::make_shared<Owned>();
  fresh->reserve(slots_.size());
  for (Slot& slot : slots_) {
    if (slot.ref.evaluation == nullptr || slot.owned_at == kBorrowed) continue;
    fresh->push_back((*owned_)[slot.owned_at]);
    slot.owned_at = static_cast<uint32_t>(fresh->size() - 1);
  }
  owned_ = std::move(fresh);
}

}  // namespace gputopo::evaluation
