// InMemoryCluster: a Kubernetes cluster held in memory, loaded from a `List` of Nodes and Pods
// (what `kubectl get nodes,pods -A -o json` prints). It is the source of truth of
// `gputopo serve --snapshot FILE` and of the demo: bind writes to it as it would to the API
// server (same preconditions, same conflicts), and every change is handed to a listener the
// way a watch would deliver it.
//
// Thread safety: thread-safe. The listener is called with the cluster's lock held, so events
// reach it in the order the writes happened; it must not call back into the cluster.
#ifndef GPUTOPO_SRC_IN_MEMORY_API_IN_MEMORY_CLUSTER_H_
#define GPUTOPO_SRC_IN_MEMORY_API_IN_MEMORY_CLUSTER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "gputopo/kube_api.h"
#include "gputopo/mutex.h"
#include "gputopo/node_info.h"
#include "gputopo/pod_info.h"
#include "gputopo/status.h"
#include "src/codec/k8s_json.h"

namespace gputopo::in_memory_api {

class InMemoryCluster final : public KubeApi {
 public:
  using PodListener = std::function<void(const PodInfo&)>;

  // Error when the text is not a List (or NodeList/PodList) of Node and Pod objects gputopo
  // can read. Items of other kinds are kept and shown, but ignored.
  static Result<std::unique_ptr<InMemoryCluster>> Load(std::string_view list_json);

  // Decoded objects, in the order of the file.
  std::vector<NodeInfo> Nodes() const;
  std::vector<PodInfo> Pods() const;
  void SetPodListener(PodListener listener);

  // Raw JSON of the pods still waiting for a node (no spec.nodeName, phase Pending), in the
  // order of the file.
  std::vector<std::string> PendingPodObjects() const;

  // The cluster now, as a kubectl-style List (bound pods carry spec.nodeName and the
  // gputopo.io/assigned-gpus annotation).
  std::string ListJson() const;

  Result<PodInfo> GetPod(std::string_view namespace_name, std::string_view name) override;
  Status AnnotatePod(const PodRef& pod, std::string_view resource_version, std::string_view key,
                     std::string_view value) override;
  Status BindPod(const PodRef& pod, std::string_view resource_version, std::string_view node,
                 const AnnotationList& annotations) override;
  // Appends a v1 Event to the cluster (ListJson shows it).
  Status RecordEvent(const PodRef& pod, std::string_view reason, std::string_view message) override;

 private:
  struct Item {
    std::string kind;  // "Node", "Pod", or another kind we only carry
    std::string json;  // the object as it is now
  };
  struct PodSlot {
    size_t item = 0;
    PodInfo info;
  };
  InMemoryCluster() = default;
  // Precondition: mutex_ held. The pod's slot, as the API server resolves a write to it:
  // NotFound, or Conflict when the request names another UID than the stored pod's.
  Result<PodSlot*> FindPodLocked(const PodRef& pod) GPUTOPO_REQUIRES(mutex_);
  // Precondition: mutex_ held. Re-encodes a changed pod and tells the listener.
  Status ReplacePodLocked(PodSlot& slot, std::string json) GPUTOPO_REQUIRES(mutex_);
  std::string NextResourceVersionLocked() GPUTOPO_REQUIRES(mutex_);

  mutable Mutex mutex_;
  std::vector<Item> items_ GPUTOPO_GUARDED_BY(mutex_);
  std::vector<NodeInfo> nodes_ GPUTOPO_GUARDED_BY(mutex_);
  std::map<std::string, PodSlot, std::less<>> pods_ GPUTOPO_GUARDED_BY(mutex_);  // by ns/name
  uint64_t resource_version_ GPUTOPO_GUARDED_BY(mutex_) = 0;
  PodListener listener_ GPUTOPO_GUARDED_BY(mutex_);
  codec::K8sDecoder decoder_ GPUTOPO_GUARDED_BY(mutex_);
};

}  // namespace gputopo::in_memory_api

#endif  // GPUTOPO_SRC_IN_MEMORY_API_IN_MEMORY_CLUSTER_H_
