// How kubectl-gputopo reaches gputopo's admin listener (/debug): straight to a URL (--server,
// e.g. after `kubectl port-forward`), or through the API server's pods/proxy to each replica of
// the gputopo scheduler Deployment.
//
// Why pods/proxy and not one Service: gputopo runs as two replicas behind kube-scheduler's leader
// election, and only the leader's gputopo records decisions. A Service would send each request
// to either replica, and the standby has no record of the pod; so the plugin lists the replicas
// (the pods of `namespace` whose labels match the selector, Running, with an IP) and asks each.
// The API server authorizes the caller for `get` on pods/proxy in that namespace (RBAC), then
// forwards the request without its Authorization header: it consumed it. So the caller's bearer
// token travels in X-Gputopo-Authorization, which gputopo's admin listener reviews exactly like
// an Authorization header (TokenReview, then a SubjectAccessReview for the /debug path). A
// kubeconfig without a token (client certificates, which the proxy cannot forward) reaches the
// replicas but is answered 401: pass --token, or use --server.
//
// Thread safety: not thread-safe; one per command.
#ifndef GPUTOPO_SRC_KUBECTL_GPUTOPO_ACCESS_H_
#define GPUTOPO_SRC_KUBECTL_GPUTOPO_ACCESS_H_

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "gputopo/status.h"
#include "src/kube/kube_client.h"

namespace gputopo::kubectl {

// The header that carries the caller's "Bearer <token>" through the API server's proxy.
inline constexpr char kProxiedAuthorizationHeader[] = "X-Gputopo-Authorization";

// One replica's answer to a GET.
struct GputopoAnswer {
  std::string source;  // "https://..." or "pod gputopo-system/gputopo-scheduler-..."
  Result<std::string> body;
};

// A gputopo replica the API server can proxy to.
struct GputopoReplica {
  std::string pod;  // name, in the access's namespace
  int port = 0;     // its admin listener
};

// The gputopo scheduler pods in `pod_list` (a PodList body) that the proxy can reach: labels
// matching `selector` (comma-separated key=value pairs, all required), phase Running and an
// IP. Their admin port is `port` when not 0, else the container port named "admin" (the shipped
// Deployment's), else 8889. Ordered by name. Error when `pod_list` is not a PodList.
Result<std::vector<GputopoReplica>> ReplicasIn(std::string_view pod_list, std::string_view selector,
                                               int port);

class GputopoAccess {
 public:
  virtual ~GputopoAccess() = default;
  // GET `path` on every replica reached (one, for --server), in a stable order.
  virtual std::vector<GputopoAnswer> GetAll(std::string_view path) = 0;
  // What is asked, for messages: the URL, or "gputopo's pods in <namespace>".
  virtual std::string Describe() const = 0;
};

// Straight to `client`'s server, `url` (a KubeConfig naming gputopo's admin listener).
std::unique_ptr<GputopoAccess> DirectAccess(std::string url,
                                            std::unique_ptr<kube::KubeClient> client);

// Through the API server `api` (which must outlive the access). `bearer_token` (may be empty) is
// forwarded in X-Gputopo-Authorization. The replicas are listed on the first GetAll.
std::unique_ptr<GputopoAccess> ProxiedAccess(kube::KubeClient& api, std::string namespace_name,
                                             std::string selector, int port,
                                             std::string bearer_token);

// The latest "time" of a /debug/pods record (filter, prioritize, bind, preempt): RFC 3339 UTC
// with microseconds, so later times compare greater as strings. Empty when it has none.
std::string LatestRecordTime(const nlohmann::json& record);

}  // namespace gputopo::kubectl

#endif  // GPUTOPO_SRC_KUBECTL_GPUTOPO_ACCESS_H_
