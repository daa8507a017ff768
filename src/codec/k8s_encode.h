// Writing what gputopo knows of nodes and pods back as Kubernetes objects: a kubectl-style List
// that `gputopo serve --snapshot` can load again. In live mode gputopo keeps only what it
// schedules by, so the objects are reduced: nodes with their GPU labels, topology annotation and
// allocatable nvidia.com/gpu; pods with identity, owners, gputopo.io/* annotations, node, phase
// and one container requesting the pod's effective nvidia.com/gpu.
//
// Thread safety: pure functions.
#ifndef GPUTOPO_SRC_CODEC_K8S_ENCODE_H_
#define GPUTOPO_SRC_CODEC_K8S_ENCODE_H_

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "gputopo/kube_api.h"
#include "gputopo/node_info.h"
#include "gputopo/pod_info.h"

namespace gputopo::codec {

std::string EncodeList(const std::vector<NodeInfo>& nodes, const std::vector<PodInfo>& pods);

// A core/v1 Event of type Normal about `pod`, named by the API server from generateName
// "<pod>.". `time` (metav1.Time, FormatRfc3339) fills firstTimestamp and lastTimestamp; empty
// leaves them out.
nlohmann::json EncodePodEvent(const PodRef& pod, std::string_view reason, std::string_view message,
                              std::string_view component, std::string_view time);

}  // namespace gputopo::codec

#endif  // GPUTOPO_SRC_CODEC_K8S_ENCODE_H_
