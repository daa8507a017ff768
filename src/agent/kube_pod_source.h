// The pods bound to this node, from the API server, as the device plugin needs them
// (pod_identification.h's BoundPod): a list with field selector spec.nodeName=<node> on each
// call. kubelet waits on GetPreferredAllocation while this runs, so one list per admission, and
// the pod being admitted is always in it (it was bound before kubelet saw it).
//
// DecodeBoundPod turns one Pod object (JSON) into a BoundPod: metadata (namespace, name, uid,
// creationTimestamp, gputopo.io/assigned-gpus), spec.schedulerName, and every container's and
// init container's request of the resource (requests, else limits, as for extended resources).
//
// Thread safety: DecodeBoundPod is pure; KubePodSource is as thread-safe as KubeClient.
#ifndef GPUTOPO_SRC_AGENT_KUBE_POD_SOURCE_H_
#define GPUTOPO_SRC_AGENT_KUBE_POD_SOURCE_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gputopo/status.h"
#include "src/agent/device_plugin.h"
#include "src/kube/kube_client.h"

namespace gputopo::agent {

// nullopt for a pod that can hold nothing any more (Succeeded, Failed, being deleted). Error
// (InvalidArgument) when the object is not a readable pod, or a request of the resource is not
// a whole non-negative number.
Result<std::optional<BoundPod>> DecodeBoundPod(std::string_view json,
                                               std::string_view resource_name);

// The pods bound to `node_name` (field selector spec.nodeName), every page of 500, decoded; pods
// that cannot be decoded or hold nothing any more are left out. With the list's resourceVersion
// (every page reports the first page's), for a watch to follow.
struct NodePods {
  std::string resource_version;
  std::vector<BoundPod> pods;
};
Result<NodePods> ListNodePods(kube::KubeClient& kube, const std::string& node_name,
                              std::string_view resource_name);

class KubePodSource final : public PodSource {
 public:
  // `kube` must outlive the source.
  KubePodSource(kube::KubeClient& kube, std::string node_name, std::string resource_name);
  // Pods that cannot be decoded are left out (they are never steered).
  Result<std::vector<BoundPod>> CurrentPods() override;

 private:
  kube::KubeClient& kube_;
  const std::string node_name_;
  const std::string resource_name_;
};

}  // namespace gputopo::agent

#endif  // GPUTOPO_SRC_AGENT_KUBE_POD_SOURCE_H_
