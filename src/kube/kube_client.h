// KubeClient: the Kubernetes API server over HTTPS (libcurl).
//
// Implements KubeApi (read a pod, annotate it under UID and resourceVersion preconditions, bind
// it, record an event) and the two calls the watch-driven cache needs: one page of a list, and a
// watch stream delivered line by line. TLS is always verified unless the kubeconfig says
// insecure-skip-tls-verify.
//
// Errors: 404 NotFound, 409 Conflict, 410 Gone, 401/403 FailedPrecondition, 5xx and connection
// failures Unavailable, timeouts DeadlineExceeded (the effect of the call is then unknown), each
// with the API server's own message when it sent a Status.
//
// Thread safety: thread-safe; each call uses its own curl handle from a small pool. The program
// must have called curl_global_init() before constructing one (main does).
#ifndef GPUTOPO_SRC_KUBE_KUBE_CLIENT_H_
#define GPUTOPO_SRC_KUBE_KUBE_CLIENT_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gputopo/clock.h"
#include "gputopo/kube_api.h"
#include "gputopo/mutex.h"
#include "src/http/access_control.h"
#include "src/kube/kube_config.h"

namespace gputopo::kube {

struct ClientOptions {
  std::chrono::milliseconds request_timeout{10000};
  std::chrono::milliseconds connect_timeout{5000};
  size_t max_response_bytes = size_t{1} << 30;  // a list of 100k pods is hundreds of MiB
  std::string component = "gputopo";            // event source and User-Agent
};

// Also the AccessReviewer of the admin listener: TokenReview and SubjectAccessReview (RBAC
// needs create on tokenreviews.authentication.k8s.io and subjectaccessreviews
// .authorization.k8s.io).
class KubeClient final : public KubeApi, public http::AccessReviewer {
 public:
  // `clock` must outlive the client.
  KubeClient(KubeConfig config, ClientOptions options, const Clock& clock);
  ~KubeClient() override;
  KubeClient(const KubeClient&) = delete;
  KubeClient& operator=(const KubeClient&) = delete;

  Result<PodInfo> GetPod(std::string_view namespace_name, std::string_view name) override;
  Status AnnotatePod(const PodRef& pod, std::string_view resource_version, std::string_view key,
                     std::string_view value) override;
  Status BindPod(const PodRef& pod, std::string_view resource_version, std::string_view node,
                 const AnnotationList& annotations) override;
  Status RecordEvent(const PodRef& pod, std::string_view reason, std::string_view message) override;

  // Sets one annotation on the node (a JSON merge patch, as AnnotatePod), or removes it when
  // `value` is nullopt. NotFound when the node is gone; Conflict when `resource_version` (when
  // not empty) is no longer current; InvalidArgument (the API server's 422: uid is immutable)
  // when `uid` (when not empty) is not the node's. The node agent publishes gputopo.io/topology
  // with it.
  Status AnnotateNode(std::string_view node, std::string_view uid,
                      std::string_view resource_version, std::string_view key,
                      std::optional<std::string_view> value);

  Result<std::optional<http::ReviewedUser>> ReviewToken(std::string_view token) override;
  Result<bool> ReviewAccess(const http::ReviewedUser& user, std::string_view verb,
                            std::string_view path) override;

  // GET `path` (with its query): the body of a 200, else the error. kubectl-gputopo reads
  // gputopo's /debug through this too (a KubeConfig naming gputopo's admin listener, or the API
  // server's pods/proxy). `extra_headers` are whole header lines ("Name: value").
  Result<std::string> Get(std::string_view path,
                          const std::vector<std::string>& extra_headers = {});

  // One page of a list (`path` like "/api/v1/pods"): the raw NodeList/PodList body.
  // `continue_token` is the previous page's metadata.continue; empty for the first page.
  // `field_selector` (like "spec.nodeName=n1") restricts the list when not empty.
  Result<std::string> ListPage(std::string_view path, int limit, std::string_view continue_token,
                               std::string_view field_selector = {});

  // Watches `path` from `resource_version` (bookmarks on, the server ends it after
  // `timeout_seconds`), calling `on_open` once the server has accepted it (HTTP 200) and
  // `on_event` with each complete line (one JSON event) as it arrives. Returns OK when the
  // server ends the stream, an error when it fails (a partly received last line is dropped,
  // never delivered) or Unavailable("stopped") once `stop` is set. `field_selector` (like
  // "spec.nodeName=n1") restricts the watch when not empty.
  Status Watch(std::string_view path, std::string_view resource_version, int timeout_seconds,
               const std::function<void()>& on_open,
               const std::function<void(std::string_view)>& on_event, const std::atomic<bool>& stop,
               std::string_view field_selector = {});

 private:
  struct Response {
    long status = 0;
    std::string body;
  };
  // One request; `body` empty for GET.
  // POSTs the JSON `body` to `path`: the answer when it is 200 or 201 (a create), else the
  // error.
  Result<Response> Create(std::string_view path, std::string_view body);
  Result<Response> Call(std::string_view method, std::string_view path, std::string_view body,
                        std::string_view content_type,
                        const std::vector<std::string>& extra_headers = {});
  // Turns a non-2xx answer into a Status with the API server's message.
  static Status ErrorOf(const Response& response, std::string_view what);

  void* TakeHandle();
  void ReturnHandle(void* handle);
  // Sets URL, TLS and authentication on a reset handle; `headers` receives the header list to
  // free after the transfer.
  Status Prepare(void* handle, const std::string& url, std::string_view content_type,
                 void** headers, const std::vector<std::string>& extra_headers = {});

  const KubeConfig config_;
  const ClientOptions options_;
  const Clock& clock_;
  Mutex pool_mutex_;
  std::vector<void*> pool_ GPUTOPO_GUARDED_BY(pool_mutex_);  // idle CURL easy handles
};

}  // namespace gputopo::kube

#endif  // GPUTOPO_SRC_KUBE_KUBE_CLIENT_H_
