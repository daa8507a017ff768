// FakeApiServer::Impl's request pipeline: record the request, apply injected delays, check the
// bearer token, inject failures, route to a handler, choose the response encoding.
#include <thread>

#include "test/support/fake_api_server/impl.h"

namespace gputopo::testing {
namespace {

using fake_api::ApiError;
using fake_api::FaultRule;
using fake_api::json;
using fake_api::Resource;

constexpr size_t kGzipThresholdBytes = 128 * 1024;

bool IsWatchRequest(const httplib::Request& req) {
  if (req.method != "GET" || !req.has_param("watch")) return false;
  return fake_api::ParseBool(req.get_param_value("watch")).value_or(false);
}

bool IsWrite(const std::string& method) {
  return method == "POST" || method == "PATCH" || method == "PUT" || method == "DELETE";
}

}  // namespace

void FakeApiServer::Impl::Reply(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(fake_api::Dump(body), "application/json");
}

void FakeApiServer::Impl::Reply(httplib::Response& res, const ApiError& error) {
  Reply(res, error.code, fake_api::StatusJson(error));
}

void FakeApiServer::Impl::Handle(const httplib::Request& req, httplib::Response& res) {
  RecordedRequest record;
  record.method = req.method;
  record.path = req.path;
  record.target = req.target;
  record.content_type = req.get_header_value("Content-Type");
  record.body = req.body;
  record.watch = IsWatchRequest(req);

  const bool watch = record.watch;
  size_t index = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    index = requests_.size();
    requests_.push_back(std::move(record));
  }

  ApplyDelay(req.method, req.path, watch);
  if (write_latency_.count() > 0 && IsWrite(req.method))
    std::this_thread::sleep_for(write_latency_);
  auto take_failure = [&] {
    std::lock_guard<std::mutex> lock(mu_);
    return fake_api::TakeRule(failures_, req.method, req.path, watch);
  };
  if (!Authorized(req)) {
    Reply(res, ApiError{401, "Unauthorized", "Unauthorized", {}});
  } else if (std::optional<FaultRule> failure = take_failure()) {
    Reply(res, fake_api::InjectedError(failure->status));
    if (failure->status == 429) res.set_header("Retry-After", "1");
  } else {
    Route(req, res);
  }
  ChooseResponseEncoding(req, res, watch);

  std::lock_guard<std::mutex> lock(mu_);
  requests_[index].status = res.status;
}

// httplib compresses whenever the request accepts it; the real server compresses only non-watch
// responses of 128 KiB or more, and only with gzip. httplib reads the request's Accept-Encoding
// after the handler returns, so rewrite it here (the Request object is owned by httplib's
// connection loop and is not const there).
void FakeApiServer::Impl::ChooseResponseEncoding(const httplib::Request& req,
                                                 httplib::Response& res, bool watch) {
  auto& headers = const_cast<httplib::Request&>(req).headers;
  const std::string accepted = fake_api::ToLower(req.get_header_value("Accept-Encoding"));
  const bool gzip = !watch && res.body.size() >= kGzipThresholdBytes &&
                    accepted.find("gzip") != std::string::npos;
  headers.erase("Accept-Encoding");
  if (gzip) headers.emplace("Accept-Encoding", "gzip");
}

void FakeApiServer::Impl::ApplyDelay(const std::string& method, const std::string& path,
                                     bool watch) {
  std::unique_lock<std::mutex> lock(mu_);
  std::optional<FaultRule> delay = fake_api::TakeRule(delays_, method, path, watch);
  if (!delay) return;
  if (delay->hold) {
    const uint64_t generation = release_generation_;
    ++held_;
    state_cv_.wait(lock, [&] { return release_generation_ != generation || stopping_; });
    --held_;
    return;
  }
  state_cv_.wait_for(lock, delay->delay, [&] { return stopping_; });
}

void FakeApiServer::Impl::Route(const httplib::Request& req, httplib::Response& res) {
  const std::vector<std::string> s = fake_api::SplitPath(req.path);
  const std::string& method = req.method;
  const bool get = method == "GET" || method == "HEAD";
  if (s.size() == 1 && s[0] == "version") {
    return Reply(res, 200,
                 json{{"major", "1"},
                      {"minor", "30"},
                      {"gitVersion", "v1.30.0-fake"},
                      {"platform", "linux/amd64"}});
  }
  if (s.size() == 1 && (s[0] == "healthz" || s[0] == "readyz" || s[0] == "livez")) {
    return Reply(res, fake_api::NotImplemented("/" + s[0], "gputopo never probes the API server"));
  }
  if (s.size() == 4 && s[0] == "apis" && s[2] == "v1" && method == "POST") {
    if (s[1] == "authentication.k8s.io" && s[3] == "tokenreviews") return TokenReview(req, res);
    if (s[1] == "authorization.k8s.io" && s[3] == "subjectaccessreviews") {
      return SubjectAccessReview(req, res);
    }
  }
  if (s.size() >= 4 && s[0] == "apis" && s[1] == "policy" && s[2] == "v1") {
    // PodDisruptionBudgets: list and watch, cluster-wide or in one namespace.
    const bool all = s.size() == 4 && s[3] == "poddisruptionbudgets";
    const bool one_namespace =
        s.size() == 6 && s[3] == "namespaces" && s[5] == "poddisruptionbudgets";
    if (!all && !one_namespace) return Reply(res, fake_api::NoSuchPath());
    if (!get) return Reply(res, fake_api::MethodNotAllowed());
    return CollectionGet(req, res, Resource::kDisruptionBudgets, all ? "" : s[4]);
  }
  if (s.size() < 3 || s[0] != "api" || s[1] != "v1") return Reply(res, fake_api::NoSuchPath());
  if (s[2] == "nodes" && s.size() == 3) {
    if (!get) return Reply(res, fake_api::MethodNotAllowed());
    return CollectionGet(req, res, Resource::kNodes, "");
  }
  if (s[2] == "nodes" && s.size() == 4) {
    if (method == "PATCH") return PatchObject(req, res, Resource::kNodes, "", s[3]);
    if (get) {
      return Reply(
          res, fake_api::NotImplemented("GET of one node", "gputopo lists nodes and patches them"));
    }
    return Reply(res, fake_api::MethodNotAllowed());
  }
  if (s[2] == "pods" && s.size() == 3) {
    if (!get) return Reply(res, fake_api::MethodNotAllowed());
    return CollectionGet(req, res, Resource::kPods, "");
  }
  if (s[2] != "namespaces" || s.size() < 5) return Reply(res, fake_api::NoSuchPath());
  const std::string& ns = s[3];
  if (s[4] == "pods") {
    if (s.size() == 5) {
      if (!get) return Reply(res, fake_api::MethodNotAllowed());
      return CollectionGet(req, res, Resource::kPods, ns);
    }
    if (s.size() == 6) {
      if (get) return GetObject(res, Resource::kPods, fake_api::PodKey(ns, s[5]), s[5]);
      if (method == "PATCH") return PatchObject(req, res, Resource::kPods, ns, s[5]);
      return Reply(res, fake_api::MethodNotAllowed());
    }
    if (s.size() >= 7 && s[6] == "proxy") return ProxyToPod(req, res, ns, s[5]);
    if (s.size() == 7 && s[6] == "binding") {
      if (method != "POST") return Reply(res, fake_api::MethodNotAllowed());
      return Bind(req, res, ns, s[5]);
    }
    return Reply(res, fake_api::NoSuchPath());
  }
  if (s.size() == 5 && s[4] == "bindings") {
    return Reply(res, fake_api::NotImplemented("namespaces/{namespace}/bindings",
                                               "gputopo posts pods/{name}/binding"));
  }
  if (s.size() == 5 && s[4] == "events") {
    if (method != "POST") return Reply(res, fake_api::MethodNotAllowed());
    return CreateEvent(req, res, ns);
  }
  Reply(res, fake_api::NoSuchPath());
}

void FakeApiServer::Impl::GetObject(httplib::Response& res, Resource r, const std::string& key,
                                    const std::string& name) {
  std::optional<json> object = Get(r, key);
  if (!object) return Reply(res, fake_api::NotFound(fake_api::Info(r).plural, name));
  Reply(res, 200, *object);
}

}  // namespace gputopo::testing
