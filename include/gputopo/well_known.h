// Names that form gputopo's interface with users and with Kubernetes: annotation and label keys,
// the managed resource. Changing one of these breaks users' manifests.
#ifndef GPUTOPO_WELL_KNOWN_H_
#define GPUTOPO_WELL_KNOWN_H_

#include <string_view>

namespace gputopo {

inline constexpr std::string_view kGpuResource = "nvidia.com/gpu";
inline constexpr std::string_view kAnnotationPrefix = "gputopo.io/";

// Pod annotations users set.
inline constexpr std::string_view kAnnotationGroup = "gputopo.io/group";
inline constexpr std::string_view kAnnotationSpread = "gputopo.io/spread";
inline constexpr std::string_view kAnnotationLocality = "gputopo.io/locality";
inline constexpr std::string_view kAnnotationLocalityMode = "gputopo.io/locality-mode";
inline constexpr std::string_view kAnnotationExclusive = "gputopo.io/exclusive";
inline constexpr std::string_view kAnnotationGpuMilli = "gputopo.io/gpu-milli";
inline constexpr std::string_view kAnnotationPolicy = "gputopo.io/policy";
// Pod annotation gputopo writes at bind: the chosen GPUs (UUIDs, or indices when unknown).
inline constexpr std::string_view kAnnotationAssignedGpus = "gputopo.io/assigned-gpus";
// Pod annotation the node agent writes: the GPUs kubelet really gave the pod (PodResources), in
// the shape of assigned-gpus.
inline constexpr std::string_view kAnnotationObservedGpus = "gputopo.io/observed-gpus";

// Node annotation and labels.
inline constexpr std::string_view kAnnotationTopology = "gputopo.io/topology";
inline constexpr std::string_view kLabelTopologyProfile = "gputopo.io/topology-profile";
inline constexpr std::string_view kLabelGpuCount = "nvidia.com/gpu.count";
inline constexpr std::string_view kLabelGpuReplicas = "nvidia.com/gpu.replicas";
inline constexpr std::string_view kLabelGpuProduct = "nvidia.com/gpu.product";
inline constexpr std::string_view kLabelGpuMemory = "nvidia.com/gpu.memory";
inline constexpr std::string_view kLabelPodTemplateHash = "pod-template-hash";

}  // namespace gputopo

#endif  // GPUTOPO_WELL_KNOWN_H_
