#include "policies/engine/evaluation_cache.h"

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

void EvaluationCache::Insert(const NodeState& node, GpuMask group_gpus, uint64_t shape_id,
                             std::shared_ptr<const NodeEvaluation> evaluation) {
  node.StoreMemo(shape_id, group_gpus, std::move(evaluation));
}

}  // namespace gputopo::policies
