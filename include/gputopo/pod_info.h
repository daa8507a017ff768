// PodInfo: the part of a Kubernetes Pod that gputopo schedules by.
//
// Adapters in src/ build it from a Pod object (a request body, a snapshot file, the API server).
// Only gputopo's own annotations are kept, so that memory stays small with many pods.
//
// Thread safety: a value type.
#ifndef GPUTOPO_POD_INFO_H_
#define GPUTOPO_POD_INFO_H_

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gputopo {

enum class PodPhase : uint8_t { kPending, kRunning, kSucceeded, kFailed, kUnknown };

struct OwnerReference {
  std::string kind;  // "ReplicaSet", "StatefulSet", "Job", ...
  std::string name;
  std::string uid;
  bool controller = false;
  friend bool operator==(const OwnerReference&, const OwnerReference&) = default;
};

// Annotations as (key, value) pairs in the order the object had them.
using AnnotationList = std::vector<std::pair<std::string, std::string>>;

// An object's labels as (key, value) pairs, sorted by key (keys are unique).
using LabelSet = std::vector<std::pair<std::string, std::string>>;

// Returns the value of `key`, or nullopt.
inline std::optional<std::string_view> FindAnnotation(const AnnotationList& list,
                                                      std::string_view key) {
  for (const auto& [k, v] : list) {
    if (k == key) return std::string_view(v);
  }
  return std::nullopt;
}

// PodInfo::gpu_request of a pod whose containers' requests add up to more than int64_t holds.
// No single quantity is that large (the decoder caps each far below), so it means "overflowed".
inline constexpr int64_t kGpuRequestOverflow = std::numeric_limits<int64_t>::max();

struct PodInfo {
  std::string namespace_name;
  std::string name;
  std::string uid;
  std::string resource_version;
  std::string node_name;  // spec.nodeName; empty while pending
  // status.nominatedNodeName: where kube-scheduler's preemption made room for this pending pod.
  std::string nominated_node;
  PodPhase phase = PodPhase::kPending;
  bool deletion_requested = false;  // metadata.deletionTimestamp is set
  // Every container status reports `terminated` (and there is at least one).
  bool containers_terminated = false;
  // Effective `nvidia.com/gpu` request: max(sum over containers, max over init containers),
  // as kube-scheduler computes it. Requests default to limits for extended resources. A sum
  // that does not fit saturates at kGpuRequestOverflow; it never wraps.
  int64_t gpu_request = 0;
  // Effective cpu (millicores) and memory (bytes) requests, computed the same way, plus
  // spec.overhead; saturating at kGpuRequestOverflow.
  int64_t cpu_request_milli = 0;
  int64_t memory_request_bytes = 0;
  // spec.priority: what the Priority admission plugin resolved from priorityClassName (0 when
  // unset). Preemption evicts only pods of lower priority than the preemptor.
  int32_t priority = 0;
  std::string pod_template_hash;  // label pod-template-hash, if any
  // metadata.labels, for PodDisruptionBudget selectors: read by the API server watch only, not
  // from the extender's request bodies. ClusterState does not keep them (the
  // DisruptionBudgetIndex keeps them interned, for GPU pods only).
  LabelSet labels;
  std::vector<OwnerReference> owners;  // metadata.ownerReferences
  AnnotationList annotations;          // only keys with the "gputopo.io/" prefix

  std::string Key() const { return namespace_name + "/" + name; }
  // A pod that will never run again holds no GPU.
  bool IsTerminal() const { return phase == PodPhase::kSucceeded || phase == PodPhase::kFailed; }
  // Its GPUs are free: it finished, or it is being deleted and its containers are gone.
  bool HoldsNothing() const {
    return IsTerminal() || (deletion_requested && containers_terminated);
  }
  friend bool operator==(const PodInfo&, const PodInfo&) = default;
};

}  // namespace gputopo

#endif  // GPUTOPO_POD_INFO_H_
