// Observed GPUs: what gputopo.io/observed-gpus should say on each pod of this node, from what
// kubelet's PodResources reports the pod's containers hold.
//
// The value has the shape of gputopo.io/assigned-gpus: the physical GPUs, comma-separated, each
// named by its UUID when known, else by its index; each GPU once (replicas of one GPU are one
// GPU), in index order, GPUs this node's topology does not list last, by name. So when kubelet
// gave a pod the GPUs gputopo assigned, the two annotations are equal.
//
// A pod gets a value only when PodResources lists it with devices of the resource, it is bound
// to this node and not finished, and every device ID it holds maps to a GPU; a device ID that does
// not map (MIG, an unknown form) leaves the pod without a value, and says why, rather than write
// a partial truth. PodResources names pods by namespace and name only: a pod re-created under the
// same name on this node is matched by name, as kubelet itself reports it.
//
// Pure; thread-safe.
#ifndef GPUTOPO_SRC_AGENT_OBSERVED_GPUS_H_
#define GPUTOPO_SRC_AGENT_OBSERVED_GPUS_H_

#include <string>
#include <vector>

#include "gputopo/kube_api.h"
#include "gputopo/machine_topology.h"
#include "gputopo/pod_info.h"
#include "src/agent/pod_resources_client.h"

namespace gputopo::agent {

struct ObservedPod {
  PodRef pod;                    // with the uid of the pod object the value is for
  std::string resource_version;  // of that pod object, for the guarded write
  std::string value;             // the observed-gpus value; empty when none could be computed
  std::string current;           // the pod's annotation now; empty when absent
  // The value differs from the annotation, and should be written.
  bool needs_write = false;
  // Device IDs that did not map, or mapped to GPUs not on this node, each with its reason.
  std::vector<std::string> problems;
};

// The decision for each pod PodResources lists, in PodResources' order. `pods` are the pods
// bound to this node (spec.nodeName), as read from the API server; `devices` is PodResources'
// answer for the resource; `topology` is this node's discovered topology.
std::vector<ObservedPod> ObserveGpus(const std::vector<PodInfo>& pods,
                                     const std::vector<PodDeviceIds>& devices,
                                     const MachineTopology& topology);

}  // namespace gputopo::agent

#endif  // GPUTOPO_SRC_AGENT_OBSERVED_GPUS_H_
