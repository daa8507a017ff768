#include "src/kube/kube_client.h"

#include <curl/curl.h>

#include <ctime>
#include <nlohmann/json.hpp>

#include "src/codec/json_text.h"
#include "src/codec/k8s_encode.h"
#include "src/codec/k8s_json.h"

namespace gputopo::kube {
namespace {

using nlohmann::json;

struct Sink {
  std::string* body;
  size_t limit;
  bool overflow = false;
};

size_t WriteBody(char* data, size_t size, size_t count, void* user) {
  auto* sink = static_cast<Sink*>(user);
  const size_t bytes = size * count;
  if (sink->body->size() + bytes > sink->limit) {
    sink->overflow = true;
    return 0;  // aborts the transfer
  }
  sink->body->append(data, bytes);
  return bytes;
}

struct WatchSink {
  const std::function<void()>* on_open;
  const std::function<void(std::string_view)>* on_event;
  const std::atomic<bool>* stop;
  std::string pending;  // bytes of a line not yet complete
  std::string error_body;
  long status = 0;
  CURL* handle = nullptr;
};

size_t WriteWatch(char* data, size_t size, size_t count, void* user) {
  auto* sink = static_cast<WatchSink*>(user);
  const size_t bytes = size * count;
  if (sink->status == 0) curl_easy_getinfo(sink->handle, CURLINFO_RESPONSE_CODE, &sink->status);
  if (sink->status != 200) {
    sink->error_body.append(data, bytes);
    return bytes;
  }
  sink->pending.append(data, bytes);
  size_t start = 0;
  for (size_t nl = sink->pending.find('\n'); nl != std::string::npos;
       nl = sink->pending.find('\n', start)) {
    std::string_view line(sink->pending.data() + start, nl - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!line.empty()) (*sink->on_event)(line);
    start = nl + 1;
  }
  sink->pending.erase(0, start);
  return bytes;
}

// Calls on_open at the end of the headers of a 200 answer.
size_t WatchHeader(char* data, size_t size, size_t count, void* user) {
  auto* sink = static_cast<WatchSink*>(user);
  const size_t bytes = size * count;
  const std::string_view line(data, bytes);
  if (line == "\r\n" || line == "\n") {
    long status = 0;
    curl_easy_getinfo(sink->handle, CURLINFO_RESPONSE_CODE, &status);
    if (status == 200) (*sink->on_open)();
  }
  return bytes;
}

int WatchProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  const auto* sink = static_cast<WatchSink*>(user);
  return sink->stop->load() ? 1 : 0;
}

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// Names and namespaces go into URL paths: they are DNS labels/subdomains in Kubernetes, so
// anything else is refused rather than escaped.
bool SafeForPath(std::string_view text) {
  if (text.empty() || text.size() > 253) return false;
  for (char c : text) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
    if (!ok) return false;
  }
  return true;
}

std::string PodPath(const PodRef& pod) {
  return "/api/v1/namespaces/" + pod.namespace_name + "/pods/" + pod.name;
}

}  // namespace

KubeClient::KubeClient(KubeConfig config, ClientOptions options, const Clock& clock)
    : config_(std::move(config)), options_(std::move(options)), clock_(clock) {}

KubeClient::~KubeClient() {
  for (void* handle : pool_) curl_easy_cleanup(static_cast<CURL*>(handle));
}

void* KubeClient::TakeHandle() {
  {
    MutexLock lock(pool_mutex_);
    if (!pool_.empty()) {
      void* handle = pool_.back();
      pool_.pop_back();
      curl_easy_reset(static_cast<CURL*>(handle));  // keeps the connection cache
      return handle;
    }
  }
  return curl_easy_init();
}

void KubeClient::ReturnHandle(void* handle) {
  MutexLock lock(pool_mutex_);
  if (pool_.size() < 16) {
    pool_.push_back(handle);
  } else {
    curl_easy_cleanup(static_cast<CURL*>(handle));
  }
}

Status KubeClient::Prepare(void* raw, const std::string& url, std::string_view content_type,
                           void** headers_out, const std::vector<std::string>& extra_headers) {
  CURL* handle = static_cast<CURL*>(raw);
  curl_easy_setopt(handle, CURLOPT_URL, url.c_str());
  curl_easy_setopt(handle, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(handle, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(options_.connect_timeout.count()));
  curl_easy_setopt(handle, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(handle, CURLOPT_USERAGENT, (options_.component + "/0.1").c_str());
  curl_easy_setopt(handle, CURLOPT_SSL_VERIFYPEER, config_.insecure_skip_tls_verify ? 0L : 1L);
  curl_easy_setopt(handle, CURLOPT_SSL_VERIFYHOST, config_.insecure_skip_tls_verify ? 0L : 2L);
  if (!config_.ca_file.empty()) curl_easy_setopt(handle, CURLOPT_CAINFO, config_.ca_file.c_str());
  if (!config_.ca_pem.empty()) {
    curl_blob blob{const_cast<char*>(config_.ca_pem.data()), config_.ca_pem.size(), CURL_BLOB_COPY};
    curl_easy_setopt(handle, CURLOPT_CAINFO_BLOB, &blob);
  }
  if (!config_.client_cert_file.empty()) {
    curl_easy_setopt(handle, CURLOPT_SSLCERT, config_.client_cert_file.c_str());
  }
  if (!config_.client_key_file.empty()) {
    curl_easy_setopt(handle, CURLOPT_SSLKEY, config_.client_key_file.c_str());
  }
  if (!config_.client_cert_pem.empty()) {
    curl_blob blob{const_cast<char*>(config_.client_cert_pem.data()),
                   config_.client_cert_pem.size(), CURL_BLOB_COPY};
    curl_easy_setopt(handle, CURLOPT_SSLCERT_BLOB, &blob);
    curl_easy_setopt(handle, CURLOPT_SSLCERTTYPE, "PEM");
  }
  if (!config_.client_key_pem.empty()) {
    curl_blob blob{const_cast<char*>(config_.client_key_pem.data()), config_.client_key_pem.size(),
                   CURL_BLOB_COPY};
    curl_easy_setopt(handle, CURLOPT_SSLKEY_BLOB, &blob);
    curl_easy_setopt(handle, CURLOPT_SSLKEYTYPE, "PEM");
  }
  curl_slist* headers = curl_slist_append(nullptr, "Accept: application/json");
  Result<std::string> token = CurrentToken(config_);
  if (!token.ok()) {
    curl_slist_free_all(headers);
    return token.status().WithContext("reading the service account token");
  }
  if (!token->empty()) {
    headers = curl_slist_append(headers, ("Authorization: Bearer " + *token).c_str());
  }
  if (!content_type.empty()) {
    headers = curl_slist_append(headers, ("Content-Type: " + std::string(content_type)).c_str());
  }
  for (const std::string& line : extra_headers) headers = curl_slist_append(headers, line.c_str());
  curl_easy_setopt(handle, CURLOPT_HTTPHEADER, headers);
  *headers_out = headers;
  return Status::Ok();
}

Result<KubeClient::Response> KubeClient::Call(std::string_view method, std::string_view path,
                                              std::string_view body, std::string_view content_type,
                                              const std::vector<std::string>& extra_headers) {
  CURL* handle = static_cast<CURL*>(TakeHandle());
  if (handle == nullptr) return Internal("curl_easy_init failed");
  void* headers = nullptr;
  Response response;
  Sink sink{&response.body, options_.max_response_bytes};
  Status prepared =
      Prepare(handle, config_.server + std::string(path), content_type, &headers, extra_headers);
  if (!prepared.ok()) {
    ReturnHandle(handle);
    return prepared;
  }
  const std::string payload(body);
  curl_easy_setopt(handle, CURLOPT_CUSTOMREQUEST, std::string(method).c_str());
  if (method != "GET") {
    curl_easy_setopt(handle, CURLOPT_POSTFIELDS, payload.c_str());
    curl_easy_setopt(handle, CURLOPT_POSTFIELDSIZE, static_cast<long>(payload.size()));
  }
  curl_easy_setopt(handle, CURLOPT_TIMEOUT_MS, static_cast<long>(options_.request_timeout.count()));
  curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, WriteBody);
  curl_easy_setopt(handle, CURLOPT_WRITEDATA, &sink);
  const CURLcode code = curl_easy_perform(handle);
  curl_easy_getinfo(handle, CURLINFO_RESPONSE_CODE, &response.status);
  curl_slist_free_all(static_cast<curl_slist*>(headers));
  ReturnHandle(handle);
  const std::string what = std::string(method) + " " + std::string(path);
  if (code == CURLE_OPERATION_TIMEDOUT) {
    return Status(StatusCode::kDeadlineExceeded, what + ": timed out");
  }
  if (sink.overflow) return ResourceExhausted(what + ": response larger than allowed");
  if (code != CURLE_OK) return Unavailable(what + ": " + curl_easy_strerror(code));
  return response;
}

Status KubeClient::ErrorOf(const Response& response, std::string_view what) {
  std::string message = std::string(what) + ": HTTP " + std::to_string(response.status);
  const json status = json::parse(response.body, nullptr, false);
  if (status.is_object() && status.contains("message") && status["message"].is_string()) {
    message += ": " + status["message"].get<std::string>();
  }
  switch (response.status) {
    case 404:
      return NotFound(message);
    case 409:
      return Conflict(message);
    case 410:
      return Status(StatusCode::kGone, message);
    case 401:
    case 403:
      return FailedPrecondition(message);
    case 408:
    case 504:
      return Status(StatusCode::kDeadlineExceeded, message);
    case 400:
    case 415:
    case 422:
      return InvalidArgument(message);
    default:
      break;
  }
  if (response.status == 429 || response.status >= 500) return Unavailable(message);
  return Internal(message);
}

Result<KubeClient::Response> KubeClient::Create(std::string_view path, std::string_view body) {
  Result<Response> response = Call("POST", path, body, "application/json");
  if (!response.ok()) return response.status();
  if (response->status != 200 && response->status != 201) {
    return ErrorOf(*response, "POST " + std::string(path));
  }
  return response;
}

Result<PodInfo> KubeClient::GetPod(std::string_view namespace_name, std::string_view name) {
  if (!SafeForPath(namespace_name) || !SafeForPath(name)) {
    return InvalidArgument("not a valid pod name: " + std::string(namespace_name) + "/" +
                           std::string(name));
  }
  const std::string path =
      "/api/v1/namespaces/" + std::string(namespace_name) + "/pods/" + std::string(name);
  Result<Response> response = Call("GET", path, "", "");
  if (!response.ok()) return response.status();
  if (response->status != 200) return ErrorOf(*response, "GET " + path);
  codec::K8sDecoder decoder;
  return decoder.DecodePod(response->body);
}

Status KubeClient::AnnotatePod(const PodRef& pod, std::string_view resource_version,
                               std::string_view key, std::string_view value) {
  if (!SafeForPath(pod.namespace_name) || !SafeForPath(pod.name)) {
    return InvalidArgument("not a valid pod name: " + pod.Key());
  }
  // A JSON merge patch whose uid and resourceVersion guard the write: the API server answers
  // 409 Conflict when the pod changed since we read it, and 422 Invalid ("metadata.uid: field is
  // immutable") when the name now belongs to another incarnation. Either way nothing is written.
  json patch = {{"metadata", {{"annotations", {{std::string(key), std::string(value)}}}}}};
  if (!pod.uid.empty()) patch["metadata"]["uid"] = pod.uid;
  if (!resource_version.empty())
    patch["metadata"]["resourceVersion"] = std::string(resource_version);
  const std::string path = PodPath(pod);
  Result<Response> response = Call("PATCH", path, Dump(patch), "application/merge-patch+json");
  if (!response.ok()) return response.status();
  if (response->status != 200) return ErrorOf(*response, "PATCH " + path);
  return Status::Ok();
}

Status KubeClient::AnnotateNode(std::string_view node, std::string_view uid,
                                std::string_view resource_version, std::string_view key,
                                std::optional<std::string_view> value) {
  if (!SafeForPath(node)) return InvalidArgument("not a valid node name: " + std::string(node));
  // Strategic merge and JSON merge patch agree on metadata.annotations (a map: keys merge, null
  // removes); merge patch is what the fake API server serves too.
  json patch = {{"metadata", {{"annotations", {{std::string(key), nullptr}}}}}};
  if (value) patch["metadata"]["annotations"][std::string(key)] = std::string(*value);
  if (!uid.empty()) patch["metadata"]["uid"] = std::string(uid);
  if (!resource_version.empty()) {
    patch["metadata"]["resourceVersion"] = std::string(resource_version);
  }
  const std::string path = "/api/v1/nodes/" + std::string(node);
  Result<Response> response = Call("PATCH", path, Dump(patch), "application/merge-patch+json");
  if (!response.ok()) return response.status();
  if (response->status != 200) return ErrorOf(*response, "PATCH " + path);
  return Status::Ok();
}

Status KubeClient::BindPod(const PodRef& pod, std::string_view resource_version,
                           std::string_view node, const AnnotationList& annotations) {
  if (!SafeForPath(pod.namespace_name) || !SafeForPath(pod.name)) {
    return InvalidArgument("not a valid pod name: " + pod.Key());
  }
  // BindingREST copies metadata.annotations onto the pod with spec.nodeName, in one update whose
  // preconditions are metadata.uid and metadata.resourceVersion (409 when either moved on).
  json binding = {
      {"apiVersion", "v1"},
      {"kind", "Binding"},
      {"metadata", {{"name", pod.name}, {"namespace", pod.namespace_name}}},
      {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", std::string(node)}}}};
  if (!pod.uid.empty()) binding["metadata"]["uid"] = pod.uid;
  if (!resource_version.empty()) {
    binding["metadata"]["resourceVersion"] = std::string(resource_version);
  }
  if (!annotations.empty()) {
    json& out = binding["metadata"]["annotations"];
    out = json::object();
    for (const auto& [key, value] : annotations) out[key] = value;
  }
  const std::string path = PodPath(pod) + "/binding";
  Result<Response> response = Create(path, Dump(binding));
  if (!response.ok()) return response.status();
  return Status::Ok();
}

Status KubeClient::RecordEvent(const PodRef& pod, std::string_view reason,
                               std::string_view message) {
  if (!SafeForPath(pod.namespace_name)) return InvalidArgument("bad namespace");
  const json event = codec::EncodePodEvent(pod, reason, message, options_.component,
                                           codec::FormatRfc3339(clock_.Now()));
  const std::string path = "/api/v1/namespaces/" + pod.namespace_name + "/events";
  Result<Response> response = Create(path, Dump(event));
  if (!response.ok()) return response.status();
  return Status::Ok();
}

namespace {

// `object[key]` when it is the boolean true; false for anything else (never throws).
bool IsTrue(const json& object, const char* key) {
  if (!object.is_object()) return false;
  auto it = object.find(key);
  return it != object.end() && it->is_boolean() && it->get<bool>();
}

}  // namespace

Result<std::optional<http::ReviewedUser>> KubeClient::ReviewToken(std::string_view token) {
  const json review = {{"apiVersion", "authentication.k8s.io/v1"},
                       {"kind", "TokenReview"},
                       {"spec", {{"token", std::string(token)}}}};
  const std::string path = "/apis/authentication.k8s.io/v1/tokenreviews";
  Result<Response> response = Create(path, Dump(review));
  if (!response.ok()) return response.status();
  const json answer = json::parse(response->body, nullptr, /*allow_exceptions=*/false);
  if (answer.is_discarded() || !answer.is_object()) return Internal("TokenReview: not JSON");
  const json status = answer.value("status", json::object());
  if (!IsTrue(status, "authenticated")) {
    return std::optional<http::ReviewedUser>();
  }
  const json user = status.value("user", json::object());
  if (!user.is_object()) return Internal("TokenReview: status.user is not an object");
  http::ReviewedUser out;
  if (user.contains("username") && user["username"].is_string()) out.username = user["username"];
  if (user.contains("uid") && user["uid"].is_string()) out.uid = user["uid"];
  if (user.contains("groups") && user["groups"].is_array()) {
    for (const json& g : user["groups"]) {
      if (g.is_string()) out.groups.push_back(g.get<std::string>());
    }
  }
  return std::optional<http::ReviewedUser>(std::move(out));
}

Result<bool> KubeClient::ReviewAccess(const http::ReviewedUser& user, std::string_view verb,
                                      std::string_view path) {
  json spec = {
      {"user", user.username},
      {"groups", user.groups},
      {"nonResourceAttributes", {{"path", std::string(path)}, {"verb", std::string(verb)}}}};
  if (!user.uid.empty()) spec["uid"] = user.uid;
  const json review = {
      {"apiVersion", "authorization.k8s.io/v1"}, {"kind", "SubjectAccessReview"}, {"spec", spec}};
  const std::string api = "/apis/authorization.k8s.io/v1/subjectaccessreviews";
  Result<Response> response = Create(api, Dump(review));
  if (!response.ok()) return response.status();
  const json answer = json::parse(response->body, nullptr, /*allow_exceptions=*/false);
  if (answer.is_discarded() || !answer.is_object()) {
    return Internal("SubjectAccessReview: not JSON");
  }
  const json status = answer.value("status", json::object());
  return IsTrue(status, "allowed") && !IsTrue(status, "denied");
}

Result<std::string> KubeClient::Get(std::string_view path,
                                    const std::vector<std::string>& extra_headers) {
  Result<Response> response = Call("GET", path, "", "", extra_headers);
  if (!response.ok()) return response.status();
  if (response->status != 200) return ErrorOf(*response, "GET " + std::string(path));
  return std::move(response->body);
}

Result<std::string> KubeClient::ListPage(std::string_view path, int limit,
                                         std::string_view continue_token,
                                         std::string_view field_selector) {
  std::string url = std::string(path) + "?limit=" + std::to_string(limit);
  for (const auto& [name, value] :
       {std::pair<const char*, std::string_view>{"continue", continue_token},
        {"fieldSelector", field_selector}}) {
    if (value.empty()) continue;
    char* escaped = curl_easy_escape(nullptr, value.data(), static_cast<int>(value.size()));
    url += std::string("&") + name + "=" + escaped;
    curl_free(escaped);
  }
  Result<Response> response = Call("GET", url, "", "");
  if (!response.ok()) return response.status();
  if (response->status != 200) return ErrorOf(*response, "GET " + url);
  return std::move(response->body);
}

Status KubeClient::Watch(std::string_view path, std::string_view resource_version,
                         int timeout_seconds, const std::function<void()>& on_open,
                         const std::function<void(std::string_view)>& on_event,
                         const std::atomic<bool>& stop, std::string_view field_selector) {
  CURL* handle = static_cast<CURL*>(TakeHandle());
  if (handle == nullptr) return Internal("curl_easy_init failed");
  std::string url =
      config_.server + std::string(path) +
      "?watch=true&allowWatchBookmarks=true&resourceVersion=" + std::string(resource_version) +
      "&timeoutSeconds=" + std::to_string(timeout_seconds);
  if (!field_selector.empty()) {
    char* escaped =
        curl_easy_escape(nullptr, field_selector.data(), static_cast<int>(field_selector.size()));
    url += std::string("&fieldSelector=") + escaped;
    curl_free(escaped);
  }
  void* headers = nullptr;
  if (Status s = Prepare(handle, url, "", &headers); !s.ok()) {
    ReturnHandle(handle);
    return s;
  }
  WatchSink sink{&on_open, &on_event, &stop, {}, {}, 0, handle};
  curl_easy_setopt(handle, CURLOPT_HEADERFUNCTION, WatchHeader);
  curl_easy_setopt(handle, CURLOPT_HEADERDATA, &sink);
  curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, WriteWatch);
  curl_easy_setopt(handle, CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(handle, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, WatchProgress);
  curl_easy_setopt(handle, CURLOPT_XFERINFODATA, &sink);
  // No overall timeout: a watch lasts timeout_seconds by design. A connection that goes quiet
  // for longer than that (bookmarks arrive well within it) is dead.
  curl_easy_setopt(handle, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(handle, CURLOPT_LOW_SPEED_TIME, static_cast<long>(timeout_seconds + 30));
  const CURLcode code = curl_easy_perform(handle);
  long status = 0;
  curl_easy_getinfo(handle, CURLINFO_RESPONSE_CODE, &status);
  curl_slist_free_all(static_cast<curl_slist*>(headers));
  ReturnHandle(handle);
  if (stop.load()) return Unavailable("stopped");
  if (status != 0 && status != 200) {
    return ErrorOf(Response{status, sink.error_body}, "watch " + std::string(path));
  }
  if (code != CURLE_OK) {
    return Unavailable("watch " + std::string(path) + " broke: " + curl_easy_strerror(code));
  }
  return Status::Ok();
}

}  // namespace gputopo::kube
