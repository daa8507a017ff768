// FakeApiServer: the public API, forwarded to FakeApiServer::Impl (impl.h), and the contract.
//
// Faithful to kube-apiserver (what a client can observe), where gputopo depends on it:
// - List: {"kind":"PodList"|"NodeList","apiVersion":"v1","metadata":{"resourceVersion"},"items"}
//   (PodDisruptionBudgetList, "policy/v1", for /apis/policy/v1/poddisruptionbudgets)
//   with kind/apiVersion stripped from items; limit/continue pagination over a consistent snapshot
//   taken at the first page (every page reports the first page's resourceVersion); continue tokens
//   in the real format (base64url of {"v":"meta.k8s.io/v1","rv":N,"start":"<key>\u0000"});
//   metadata.remainingItemCount when no selector is used; a token whose snapshot was compacted
//   gets 410 Expired (its body carries the real server's inconsistent-continuation token);
//   resourceVersion with continue is a 400; resourceVersion="0" is served from the "watch cache"
//   and ignores limit (kube-apiserver before 1.33); a resourceVersion newer than the server's
//   waits up to 3 s, then 504 "Too large resource version".
// - fieldSelector (=, ==, !=) on metadata.name (nodes and pods), metadata.namespace and
//   spec.nodeName (pods); a field the real server does not support either: 400 "field label not
//   supported: <f>". Pods are also listed and watched per namespace (namespaces/{ns}/pods), and
//   so are PodDisruptionBudgets (metadata.name and metadata.namespace are their only fields).
// - Watch: chunked JSON lines {"type","object"} with kind/apiVersion on objects. resourceVersion
//   unset or "0": synthetic ADDED for every current object, then changes. resourceVersion=N: the
//   watch cache's rule, per resource: resumable from N >= oldest-1 where "oldest" is the oldest
//   retained event (or, while nothing was evicted since the cache's initial list, list RV + 1);
//   older gets HTTP 200 with one ERROR event carrying a 410 Expired Status "too old resource
//   version: N (M)", then the stream ends. A future N waits for events after N. With a selector,
//   an object that starts matching arrives as ADDED and one that stops matching as DELETED (with
//   the old content at the new resourceVersion), as the watch cache does. BOOKMARKs (only with
//   allowWatchBookmarks=true) carry the current RV in an otherwise empty object shaped like the
//   real one; one is also sent just before timeoutSeconds ends the stream cleanly.
// - GET of one pod; PATCH of pods and nodes (application/merge-patch+json, RFC 7386): a stale
//   metadata.resourceVersion in the patch is a 409 Conflict "the object has been modified...";
//   a different metadata.uid is a 422 Invalid "metadata.uid: Invalid value: ...: field is
//   immutable" (the real server has no UID precondition for PATCH: the patched object fails
//   update validation); name changes, and a pod's namespace changes, are 400 (a node's namespace
//   is cleared); status changes through the main resource are silently dropped (pod and node
//   strategies); a pod's spec changes are 422 Forbidden (pod spec is immutable; a node's spec may
//   change); uid, creationTimestamp, deletionTimestamp and generation are preserved; a patch that
//   changes nothing is a no-op (no resourceVersion bump, no event). Other patch types: 415.
// - pods/binding: name mismatch 400; target validation as a 500 with no reason (the real handler
//   returns a bare aggregate error); missing pod 404; UID and resourceVersion preconditions as
//   409 with the real StorageError text; already assigned, being deleted, or scheduling-gated
//   pods 409 Conflict on "pods/binding"; success sets spec.nodeName, merges the Binding's
//   annotations into the pod's, upserts the PodScheduled condition and answers 201 with a
//   Success Status.
// - Event creation (generateName or a name; a taken name is 409 AlreadyExists).
// - pods/proxy (GET): to the pod's status.podIP and the port in the name (else its first
//   container port); the Authorization header is consumed, the other end-to-end headers and the
//   query are forwarded with X-Forwarded-For; an unreachable backend is a 503 "error trying to
//   reach service: ..." (proxy.cc, which also lists its simplifications: loopback pod IPs
//   allowed, plain http only).
// - TokenReview and SubjectAccessReview creation (what delegated authentication and authorization
//   send): 201 with the review and its status; tokens and non-resource rules set by the test.
// - Status bodies for errors; 401 for a missing/wrong bearer token; 404 "the server could not find
//   the requested resource" for unknown paths and 405 for a known path with an unserved method.
// - Responses are gzip-compressed only for non-watch bodies of 128 KiB or more whose request
//   accepts gzip (APIResponseCompression); watch streams are never compressed.
//
// Not implemented, because gputopo never sends it: each is answered 400 BadRequest with a Status
// whose message reads "fake API server: <what> is not implemented (<why>)", never a silent
// success:
// - labelSelector, resourceVersionMatch and sendInitialEvents on lists and watches;
// - fieldSelector on the other fields the real server supports (pods: spec.restartPolicy,
//   spec.schedulerName, spec.serviceAccountName, spec.hostNetwork, status.phase, status.podIP,
//   status.nominatedNodeName; nodes: spec.unschedulable);
// - continuing a list with the inconsistent-continuation token of a 410;
// - GET of one node; POST namespaces/{ns}/bindings (the older form of pods/binding);
// - /healthz, /readyz and /livez.
//
// Simplified (deliberately):
// - Only core/v1 nodes, pods, pods/binding and event creation, and policy/v1
//   PodDisruptionBudgets to list and watch (set by the test, status included: no disruption
//   controller computes disruptionsAllowed, no eviction API); no namespaces objects (any
//   namespace exists), no admission, no defaulting beyond status.phase=Pending, no validation of
//   object bodies beyond what is listed above, no RBAC, no managedFields.
// - The 410 window is counted in events, not time; continue-token snapshots are kept for the 64
//   most recent paginated lists (and all dropped by CompactHistory()).
// - Watch timeoutSeconds unset means no server-side timeout (the real server picks a random one
//   of 30-60 min).
// - Strategic merge, JSON patch and apply patches are answered 415 with a message that says so.
// - Events are stored for Events() but cannot be listed or watched over HTTP.
// - Responses are always JSON (no protobuf/CBOR negotiation); /version answers a fixed body.
// - Stop() ends watches abruptly and shuts down the accepted sockets it finds in /proc/self/fd
//   (Linux), because httplib would otherwise hold an idle keep-alive connection, and Stop(), for
//   up to keep_alive_timeout_s.
#include "test/support/fake_api_server.h"

#include "test/support/fake_api_server/impl.h"

namespace gputopo::testing {

using fake_api::BreakMode;
using fake_api::PodKey;
using fake_api::Resource;

FakeApiServer::FakeApiServer() : FakeApiServer(Options{}) {}
FakeApiServer::FakeApiServer(Options options) : impl_(std::make_unique<Impl>(std::move(options))) {}
FakeApiServer::~FakeApiServer() = default;

bool FakeApiServer::Start() { return impl_->Start(); }
void FakeApiServer::Stop() { impl_->Stop(); }
int FakeApiServer::port() const { return impl_->port(); }
std::string FakeApiServer::base_url() const {
  return "http://127.0.0.1:" + std::to_string(impl_->port());
}

std::optional<nlohmann::json> FakeApiServer::CreateNode(nlohmann::json node) {
  return impl_->Create(Resource::kNodes, std::move(node));
}
std::optional<nlohmann::json> FakeApiServer::CreatePod(nlohmann::json pod) {
  return impl_->Create(Resource::kPods, std::move(pod));
}
std::optional<nlohmann::json> FakeApiServer::UpdateNode(
    const std::string& name, const std::function<void(nlohmann::json&)>& mutate) {
  return impl_->Update(Resource::kNodes, name, mutate);
}
std::optional<nlohmann::json> FakeApiServer::UpdatePod(
    const std::string& namespace_name, const std::string& name,
    const std::function<void(nlohmann::json&)>& mutate) {
  return impl_->Update(Resource::kPods, PodKey(namespace_name, name), mutate);
}
bool FakeApiServer::DeleteNode(const std::string& name) {
  return impl_->Delete(Resource::kNodes, name);
}
bool FakeApiServer::DeletePod(const std::string& namespace_name, const std::string& name) {
  return impl_->Delete(Resource::kPods, PodKey(namespace_name, name));
}
std::optional<nlohmann::json> FakeApiServer::GetNodeObject(const std::string& name) const {
  return impl_->Get(Resource::kNodes, name);
}
std::optional<nlohmann::json> FakeApiServer::GetPodObject(const std::string& namespace_name,
                                                          const std::string& name) const {
  return impl_->Get(Resource::kPods, PodKey(namespace_name, name));
}
std::optional<nlohmann::json> FakeApiServer::CreateDisruptionBudget(nlohmann::json budget) {
  return impl_->Create(Resource::kDisruptionBudgets, std::move(budget));
}
std::optional<nlohmann::json> FakeApiServer::UpdateDisruptionBudget(
    const std::string& namespace_name, const std::string& name,
    const std::function<void(nlohmann::json&)>& mutate) {
  return impl_->Update(Resource::kDisruptionBudgets, PodKey(namespace_name, name), mutate);
}
bool FakeApiServer::DeleteDisruptionBudget(const std::string& namespace_name,
                                           const std::string& name) {
  return impl_->Delete(Resource::kDisruptionBudgets, PodKey(namespace_name, name));
}
std::vector<nlohmann::json> FakeApiServer::Nodes() const { return impl_->All(Resource::kNodes); }
std::vector<nlohmann::json> FakeApiServer::Pods() const { return impl_->All(Resource::kPods); }
std::vector<nlohmann::json> FakeApiServer::Events() const { return impl_->Events(); }
std::string FakeApiServer::resource_version() const { return impl_->resource_version(); }

void FakeApiServer::SetBearerToken(std::string token) { impl_->SetBearerToken(std::move(token)); }
void FakeApiServer::AddTokenUser(std::string token, std::string user,
                                 std::vector<std::string> groups) {
  impl_->AddTokenUser(std::move(token), std::move(user), std::move(groups));
}
void FakeApiServer::AllowNonResource(std::string subject, std::string verb, std::string path) {
  impl_->AllowNonResource(std::move(subject), std::move(verb), std::move(path));
}

void FakeApiServer::FailNext(std::string method, std::string path_prefix, int http_status,
                             int count) {
  impl_->AddFailure(std::move(method), std::move(path_prefix), http_status, count);
}
void FakeApiServer::DelayNext(std::string method, std::string path_prefix,
                              std::chrono::milliseconds delay, int count) {
  impl_->AddDelay(std::move(method), std::move(path_prefix), delay, count);
}
void FakeApiServer::HoldNext(std::string method, std::string path_prefix, int count) {
  impl_->AddHold(std::move(method), std::move(path_prefix), count);
}
void FakeApiServer::ReleaseHeld() { impl_->ReleaseHeld(); }
size_t FakeApiServer::held_requests() const { return impl_->held_requests(); }
void FakeApiServer::SetHistoryWindow(size_t events) { impl_->SetHistoryWindow(events); }
void FakeApiServer::CompactHistory() { impl_->CompactHistory(); }
void FakeApiServer::SetBookmarkInterval(std::chrono::milliseconds interval) {
  impl_->SetBookmarkInterval(interval);
}
void FakeApiServer::BreakWatches() { impl_->BreakWatches(BreakMode::kAbrupt); }
void FakeApiServer::BreakWatchesMidEvent() { impl_->BreakWatches(BreakMode::kMidEvent); }
void FakeApiServer::SendBookmarks() { impl_->SendBookmarks(); }

size_t FakeApiServer::RequestCount(std::string_view method, std::string_view path) const {
  return impl_->RequestCount(method, path);
}
std::vector<FakeApiServer::RecordedRequest> FakeApiServer::Requests() const {
  return impl_->Requests();
}
size_t FakeApiServer::open_watches() const { return impl_->open_watches(); }
bool FakeApiServer::WaitForOpenWatches(size_t count, std::chrono::milliseconds timeout) const {
  return impl_->WaitForOpenWatches(count, timeout);
}

}  // namespace gputopo::testing
