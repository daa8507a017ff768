#include "policies/engine/evaluation_cache.h"

#include <algorithm>
#include <functional>

namespace gputopo::policies {

std::string EvaluationShape(const PodRequirements& pod, const Preset& preset) {
  std::string shape = std::to_string(pod.gpus) + "/" + std::to_string(pod.gpu_milli.value_or(0)) +
                      "/" + (pod.exclusive ? "x" : "-") + "/" +
                      std::string(LocalityName(pod.locality)) + "/" +
                      std::string(ConstraintModeName(pod.locality_mode)) + "/" +
                      std::string(SpreadModeName(pod.spread)) + "/";
  // Presets are immutable and live as long as the catalog: the address identifies one.
  shape += std::to_string(reinterpret_cast<std::uintptr_t>(&preset));
  return shape;
}

uint64_t EvaluationCache::ShapeId(std::string_view shape) {
  std::lock_guard<std::mutex> lock(shapes_mutex_);
  auto [it, inserted] = shapes_.try_emplace(std::string(shape), shapes_.size());
  return it->second;
}

std::shared_ptr<const NodeEvaluation> EvaluationCache::Find(const NodeState& node,
                                                            GpuMask group_gpus, uint64_t shape_id) {
  auto value = std::static_pointer_cast<const NodeEvaluation>(node.FindMemo(shape_id, group_gpus));
  (value ? hits_ : misses_).fetch_add(1, std::memory_order_relaxed);
  return value;
}

std::shared_ptr<ShapeTable> EvaluationCache::Table(uint64_t shape_id) {
  std::lock_guard<std::mutex> lock(shapes_mutex_);
  ++uses_;
  for (TableEntry& entry : tables_) {
    if (entry.shape_id == shape_id) {
      entry.last_used = uses_;
      return entry.table;
    }
  }
  auto table = std::make_shared<ShapeTable>();
  if (tables_.size() < kShapeTables) {
    tables_.push_back({shape_id, uses_, table});
  } else {
    auto oldest = std::min_element(
        tables_.begin(), tables_.end(),
        [](const TableEntry& a, const TableEntry& b) { return a.last_used < b.last_used; });
    *oldest = {shape_id, uses_, table};
  }
  return table;
}

void ShapeTable::Attach(const std::shared_ptr<const FlatNameIndex>& index) {
  if (index_ == index) return;
  index_ = index;
  slots_.assign(index_ == nullptr ? 0 : index_->size(), Slot{});
  owned_ = std::make_shared<Owned>();
  owned_at_.clear();
}

const EvaluationRef& ShapeTable::Store(size_t position, uint64_t version,
                                       std::shared_ptr<const NodeEvaluation> evaluation) {
  Slot& slot = slots_[position];
  slot.version = version;
  slot.ref = EvaluationRef::To(*evaluation);
  if (owned_at_.try_emplace(evaluation.get(), owned_->size()).second) {
    owned_->push_back(std::move(evaluation));
  }
  return slot.ref;
}

std::shared_ptr<const void> ShapeTable::Pin() {
  if (owned_->size() > 2 * slots_.size() + 64) Compact();
  return owned_;
}

void ShapeTable::Compact() {
  auto fresh = std::make_shared<Owned>();
  std::unordered_map<const NodeEvaluation*, size_t> fresh_at;
  for (const Slot& slot : slots_) {
    if (slot.ref.evaluation == nullptr) continue;
    if (fresh_at.try_emplace(slot.ref.evaluation, fresh->size()).second) {
      fresh->push_back((*owned_)[owned_at_.at(slot.ref.evaluation)]);
    }
  }
  owned_ = std::move(fresh);
  owned_at_ = std::move(fresh_at);
}

void EvaluationCache::Insert(const NodeState& node, GpuMask group_gpus, uint64_t shape_id,
                             std::shared_ptr<const NodeEvaluation> evaluation) {
  node.StoreMemo(shape_id, group_gpus, std::move(evaluation));
}

}  // namespace gputopo::policies
