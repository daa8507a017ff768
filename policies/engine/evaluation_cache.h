// EvaluationCache: node evaluations kept across scheduling cycles.
//
// kube-scheduler asks about one pod at a time, usually the next replica of the same workload,
// and between two cycles only the node the last pod went to has changed. An evaluation depends
// on the node's state, the pod's requirements apart from its group (the "shape"), the preset,
// and which GPUs of the node hold the pod's group. Evaluations are kept in the NodeState they
// were computed from (NodeState::StoreMemo), keyed by shape and group GPUs: a rebuilt node is a
// new NodeState with an empty memo, so a cached answer is always exactly what evaluating again
// would give, and memory is bounded by kMemoEntries per node.
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

#include "policies/engine/evaluation.h"

namespace gputopo::policies {

// The part of a pod's requirements and preset an evaluation depends on, apart from the group.
std::string EvaluationShape(const PodRequirements& pod, const Preset& preset);

class EvaluationCache {
 public:
  // A small integer for `shape`, the same for equal shapes (interned; call once per cycle).
  uint64_t ShapeId(std::string_view shape);

  std::shared_ptr<const NodeEvaluation> Find(const NodeState& node, GpuMask group_gpus,
                                             uint64_t shape_id);
  void Insert(const NodeState& node, GpuMask group_gpus, uint64_t shape_id,
              std::shared_ptr<const NodeEvaluation> evaluation);

  uint64_t hits() const { return hits_.load(std::memory_order_relaxed); }
  uint64_t misses() const { return misses_.load(std::memory_order_relaxed); }

 private:
  std::mutex shapes_mutex_;
  std::unordered_map<std::string, uint64_t> shapes_;  // GUARDED_BY(shapes_mutex_)
  std::atomic<uint64_t> hits_{0};
  std::atomic<uint64_t> misses_{0};
};

}  // namespace gputopo::policies

#endif  // GPUTOPO_POLICIES_ENGINE_EVALUATION_CACHE_H_
