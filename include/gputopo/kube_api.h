// KubeApi: every write gputopo makes to Kubernetes goes through this interface.
//
// Implementations: an in-memory cluster loaded from a snapshot file (src/in_memory_api/), a libcurl
// client of the real API server, and fakes in tests. Calls may block on I/O; they never throw.
//
// Thread safety: implementations must allow concurrent calls from several threads (binds run
// concurrently with each other).
#ifndef GPUTOPO_KUBE_API_H_
#define GPUTOPO_KUBE_API_H_

#include <string>
#include <string_view>

#include "gputopo/pod_info.h"
#include "gputopo/status.h"

namespace gputopo {

// Identifies one incarnation of a pod: a pod deleted and re-created under the same name has a
// new uid, and a call made for the old one must not touch the new one.
struct PodRef {
  std::string namespace_name;
  std::string name;
  std::string uid;  // empty: any incarnation
  std::string Key() const { return namespace_name + "/" + name; }
};

class KubeApi {
 public:
  virtual ~KubeApi() = default;

  // NotFound when no such pod exists.
  virtual Result<PodInfo> GetPod(std::string_view namespace_name, std::string_view name) = 0;

  // Sets one annotation on the pod. NotFound when the pod is gone, Conflict when its uid is not
  // pod.uid or `resource_version` (when not empty) is no longer current.
  virtual Status AnnotatePod(const PodRef& pod, std::string_view resource_version,
                             std::string_view key, std::string_view value) = 0;

  // Creates the pod's Binding to `node`, carrying `annotations`. The API server (BindingREST)
  // sets spec.nodeName and merges the annotations into the pod's in one write, so a pod is never
  // annotated but unbound. Preconditions: the uid is pod.uid (when set) and the resourceVersion
  // is `resource_version` (when not empty). NotFound when the pod is gone; Conflict when a
  // precondition fails, or the pod is already bound, being deleted or scheduling-gated.
  virtual Status BindPod(const PodRef& pod, std::string_view resource_version,
                         std::string_view node, const AnnotationList& annotations) = 0;

  // Records a Normal event on the pod (what `kubectl describe pod` shows). Best effort; callers
  // on a request path queue it (service::EventQueue) rather than wait for it.
  virtual Status RecordEvent(const PodRef& pod, std::string_view reason,
                             std::string_view message) = 0;
};

}  // namespace gputopo

#endif  // GPUTOPO_KUBE_API_H_
