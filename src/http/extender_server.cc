#include "src/http/extender_server.h"

#include <spdlog/spdlog.h>

#include <charconv>
#include <cstdio>
#include <optional>

#include "gputopo/excerpt.h"
#include "src/http/access_control.h"
#include "src/http/debug_views.h"
#include "src/http/parser_pool.h"
#include "src/http/request_metrics.h"

namespace gputopo::http {
namespace {

constexpr const char* kJson = "application/json";

// Reply bodies are moved, never copied: filter and prioritize replies at 5000 nodes are
// 100-200 KiB.
void SetJson(HttpResponse& res, std::string&& body) {
  res.body = std::move(body);
  res.content_type = kJson;
}

void SetText(HttpResponse& res, int status, std::string body) {
  res.status = status;
  res.body = std::move(body);
  res.content_type = "text/plain";
}

// Parsers that handled bodies above this are not pooled, but one is kept while such bodies keep
// coming (ParserPool).
constexpr size_t kPooledParserBytes = 8u << 20;
// The admin listener takes no bodies worth the name.
constexpr size_t kAdminMaxBodyBytes = 64u << 10;

long long MicrosSince(const Clock& clock, std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::microseconds>(clock.MonotonicNow() - start)
      .count();
}

// The standard Server-Timing header: the time the handler took, in milliseconds, so that a
// client can tell server time from network time.
void SetServerTiming(HttpResponse& res, long long micros) {
  char value[48];
  std::snprintf(value, sizeof(value), "gputopo;dur=%.3f", static_cast<double>(micros) / 1000.0);
  res.headers.emplace_back("Server-Timing", value);
}

// "/a/b" with prefix "/a/" -> "b"; nullopt when `path` does not start with it.
std::optional<std::string_view> After(std::string_view path, std::string_view prefix) {
  if (path.substr(0, prefix.size()) != prefix) return std::nullopt;
  return path.substr(prefix.size());
}

// The non-negative integer value of `key` in `target`'s query; nullopt when absent or not one.
std::optional<size_t> QueryNumber(std::string_view target, std::string_view key) {
  const size_t question = target.find('?');
  if (question == std::string_view::npos) return std::nullopt;
  std::string_view query = target.substr(question + 1);
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    if (pair.size() > key.size() && pair.substr(0, key.size()) == key && pair[key.size()] == '=') {
      size_t value = 0;
      const std::string_view digits = pair.substr(key.size() + 1);
      auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
      if (ec == std::errc() && ptr == digits.data() + digits.size()) return value;
      return std::nullopt;
    }
    if (amp == std::string_view::npos) break;
    query = query.substr(amp + 1);
  }
  return std::nullopt;
}

// An extender verb: "/<verb>" or "<urlPrefix path>/<verb>".
bool IsVerb(std::string_view path, std::string_view verb) {
  return path.size() > verb.size() && path.substr(path.size() - verb.size()) == verb &&
         path[path.size() - verb.size() - 1] == '/';
}

}  // namespace

struct ExtenderServer::Impl {
  Impl(ServerOptions o, ServerDependencies d)
      : options(std::move(o)),
        deps(std::move(d)),
        parsers(options.http.max_body_bytes, kPooledParserBytes,
                static_cast<size_t>(options.http.verb_threads)),
        server(
            options.http,
            [this](std::string_view method, std::string_view path) {
              return Routes(method, path, Listener::kMain);
            },
            &RenderError) {
    if (deps.metrics != nullptr) metrics.emplace(*deps.metrics);
    if (options.admin_port >= 0) {
      HttpServerOptions admin_options = options.http;
      admin_options.host = options.admin_host;
      admin_options.port = options.admin_port;
      admin_options.tls_cert_file = options.admin_tls_cert_file;
      admin_options.tls_key_file = options.admin_tls_key_file;
      admin_options.max_body_bytes = kAdminMaxBodyBytes;
      admin_options.max_inflight_body_bytes = kAdminMaxBodyBytes;
      admin_options.verb_threads = 1;
      admin_options.bind_threads = 1;
      admin.emplace(
          admin_options,
          [this](std::string_view method, std::string_view path) {
            return Routes(method, path, Listener::kAdmin);
          },
          &RenderError);
    }
  }

  static HttpResponse RenderError(int, std::string_view message) {
    HttpResponse res;
    SetJson(res, extender::WriteBindingResult(
                     Excerpt("gputopo: " + std::string(message), kMaxMessageBytes)));
    return res;
  }
  void Record(Verb verb, RequestResult result, std::chrono::steady_clock::time_point start) {
    if (metrics) metrics->Request(verb, result, deps.context.clock.MonotonicNow() - start);
  }

  enum class Listener { kMain, kAdmin };
  Route Routes(std::string_view method, std::string_view path, Listener listener);
  // The admin routes behind AccessControl, when there is one.
  Route Guarded(std::function<void(const HttpRequest&, HttpResponse&)> handler);
  void HandleFilter(const HttpRequest& req, HttpResponse& res);
  void HandlePrioritize(const HttpRequest& req, HttpResponse& res);
  void HandleBind(const HttpRequest& req, HttpResponse& res);
  void HandlePreempt(const HttpRequest& req, HttpResponse& res);
  void HandleDebug(const HttpRequest& req, HttpResponse& res);

  ServerOptions options;
  ServerDependencies deps;
  ParserPool parsers;
  std::optional<RequestMetrics> metrics;
  HttpServer server;  // after everything above: its lanes call into it until it has stopped
  std::optional<HttpServer> admin;  // /metrics and /debug, when they have a listener of their own
};

void ExtenderServer::Impl::HandleFilter(const HttpRequest& req, HttpResponse& res) {
  const Clock& clock = deps.context.clock;
  const auto start = clock.MonotonicNow();
  ParserPool::Lease parser = parsers.Acquire(req.body.size());
  Result<const extender::ExtenderArgs*> args = parser.ParseArgs(req.body);
  if (!args.ok()) {
    spdlog::warn("filter rejected: bad request from {}: {} ({} bytes)", req.remote_addr,
                 Excerpt(args.status().message()), req.body.size());
    SetJson(res, extender::WriteFilterError(Excerpt(
                     "gputopo: bad request: " + args.status().message(), kMaxMessageBytes)));
    Record(Verb::kFilter, RequestResult::kBadRequest, start);
    return;
  }
  const service::FilterReply reply = deps.service.Filter(**args);
  const service::CycleSummary& r = reply.summary;
  if (!reply.error.empty()) {
    spdlog::info("filter pod={} error=\"{}\" took={}us", Excerpt(r.pod_key), Excerpt(reply.error),
                 MicrosSince(clock, start));
    SetJson(res, extender::WriteFilterError(Excerpt(reply.error, kMaxMessageBytes)));
    Record(Verb::kFilter, RequestResult::kError, start);
    return;
  }
  SetJson(res, extender::WriteFilterResult(**args, reply.outcomes));
  Record(Verb::kFilter, RequestResult::kOk, start);
  const long long took = MicrosSince(clock, start);
  SetServerTiming(res, took);
  spdlog::info("filter pod={} mode={} candidates={} passed={} failed={} unresolvable={} took={}us",
               Excerpt(r.pod_key), (*args)->nodes_mode ? "nodes" : "names",
               (*args)->node_names.size(), r.passed, r.failed, r.unresolvable, took);
}

void ExtenderServer::Impl::HandlePrioritize(const HttpRequest& req, HttpResponse& res) {
  const Clock& clock = deps.context.clock;
  const auto start = clock.MonotonicNow();
  ParserPool::Lease parser = parsers.Acquire(req.body.size());
  Result<const extender::ExtenderArgs*> args = parser.ParseArgs(req.body);
  if (!args.ok()) {
    spdlog::warn("prioritize rejected: bad request from {}: {} ({} bytes)", req.remote_addr,
                 Excerpt(args.status().message()), req.body.size());
    SetText(res, 400,
            Excerpt("gputopo: bad request: " + args.status().message(), kMaxMessageBytes) + "\n");
    Record(Verb::kPrioritize, RequestResult::kBadRequest, start);
    return;
  }
  const service::PrioritizeReply reply = deps.service.Prioritize(**args);
  const service::CycleSummary& r = reply.summary;
  if (!reply.error.empty()) {
    spdlog::info("prioritize pod={} error=\"{}\" took={}us", Excerpt(r.pod_key),
                 Excerpt(reply.error), MicrosSince(clock, start));
    SetText(res, 400, Excerpt(reply.error, kMaxMessageBytes) + "\n");
    Record(Verb::kPrioritize, RequestResult::kError, start);
    return;
  }
  std::string_view best;
  int best_score = -1;
  for (const auto& [host, score] : reply.scores) {
    if (score > best_score) {
      best_score = score;
      best = host;
    }
  }
  SetJson(res, extender::WritePriorityList(**args, reply.scores));
  Record(Verb::kPrioritize, RequestResult::kOk, start);
  const long long took = MicrosSince(clock, start);
  SetServerTiming(res, took);
  spdlog::info("prioritize pod={} candidates={} best={} score={} took={}us", Excerpt(r.pod_key),
               reply.scores.size(), Excerpt(best), best_score, took);
}

void ExtenderServer::Impl::HandleBind(const HttpRequest& req, HttpResponse& res) {
  const Clock& clock = deps.context.clock;
  const auto start = clock.MonotonicNow();
  Result<extender::BindingArgs> args = extender::ParseBindingArgs(req.body);
  if (!args.ok()) {
    spdlog::warn("bind rejected: bad request from {}: {}", req.remote_addr,
                 Excerpt(args.status().message()));
    SetJson(res, extender::WriteBindingResult(Excerpt(
                     "gputopo: bad request: " + args.status().message(), kMaxMessageBytes)));
    Record(Verb::kBind, RequestResult::kBadRequest, start);
    return;
  }
  const Status status = deps.binder.Bind(*args);
  if (metrics) metrics->Bind(status.code());
  const std::string pod = Excerpt(args->pod_namespace + "/" + args->pod_name);
  const std::string node = Excerpt(args->node);
  if (!status.ok()) {
    spdlog::warn("bind pod={} node={} failed: {} took={}us", pod, node, Excerpt(status.ToString()),
                 MicrosSince(clock, start));
    SetJson(res, extender::WriteBindingResult(
                     Excerpt("gputopo: " + status.message(), kMaxMessageBytes)));
    Record(Verb::kBind, RequestResult::kError, start);
    return;
  }
  SetJson(res, extender::WriteBindingResult(""));
  Record(Verb::kBind, RequestResult::kOk, start);
  const long long took = MicrosSince(clock, start);
  SetServerTiming(res, took);
  spdlog::info("bind pod={} node={} ok took={}us", pod, node, took);
}

void ExtenderServer::Impl::HandlePreempt(const HttpRequest& req, HttpResponse& res) {
  const Clock& clock = deps.context.clock;
  const auto start = clock.MonotonicNow();
  Result<extender::PreemptionArgs> args = extender::ParsePreemptionArgs(req.body);
  if (!args.ok()) {
    spdlog::warn("preempt rejected: bad request from {}: {} ({} bytes)", req.remote_addr,
                 Excerpt(args.status().message()), req.body.size());
    // ExtenderPreemptionResult has no error field: a non-200 status is how the scheduler learns.
    SetText(res, 400,
            Excerpt("gputopo: bad request: " + args.status().message(), kMaxMessageBytes) + "\n");
    Record(Verb::kPreempt, RequestResult::kBadRequest, start);
    return;
  }
  service::PreemptReply reply = deps.preemptor.Preempt(*args);
  const service::PreemptRecord& r = *reply.record;
  SetJson(res, extender::WritePreemptionResult(reply.kept));
  const long long took = MicrosSince(clock, start);
  SetServerTiming(res, took);
  if (!r.error.empty()) {
    Record(Verb::kPreempt, RequestResult::kError, start);
    spdlog::warn("preempt pod={} keeps no node: {} took={}us", Excerpt(r.pod_key), Excerpt(r.error),
                 took);
    return;
  }
  Record(Verb::kPreempt, RequestResult::kOk, start);
  size_t victims = 0;
  size_t changed = 0;
  for (const service::PreemptRecord::Node& node : r.nodes) {
    if (!node.choice.possible) continue;
    victims += node.choice.victims.size();
    changed += node.choice.as_proposed ? 0 : 1;
  }
  spdlog::info("preempt pod={} offered={} kept={} changed={} victims={} took={}us",
               Excerpt(r.pod_key), r.nodes.size(), r.kept, changed, victims, took);
}

Route ExtenderServer::Impl::Guarded(
    std::function<void(const HttpRequest&, HttpResponse&)> handler) {
  if (deps.access == nullptr) return {Lane::kAdmin, std::move(handler)};
  return {Lane::kAdmin, [this, handler = std::move(handler)](const auto& req, auto& res) {
            // A request through the API server's proxy carries its token in
            // X-Gputopo-Authorization; it is reviewed exactly as an Authorization header is.
            const AccessControl::Decision decision = deps.access->Check(
                req.authorization.empty() ? req.proxied_authorization : req.authorization,
                req.path);
            if (decision.verdict != AccessControl::Verdict::kAllowed) {
              spdlog::warn("{} {} from {} refused: {}", req.method, Excerpt(req.path),
                           req.remote_addr, decision.reason);
              SetText(res, decision.http_status(), "gputopo: " + decision.reason + "\n");
              if (decision.http_status() == 401) {
                res.headers.emplace_back("WWW-Authenticate", "Bearer");
              }
              return;
            }
            handler(req, res);
          }};
}

Route ExtenderServer::Impl::Routes(std::string_view method, std::string_view path,
                                   Listener listener) {
  const bool verbs_here = listener == Listener::kMain;
  const bool admin_here = listener == Listener::kAdmin || !admin.has_value();
  if (method == "POST") {
    if (!verbs_here) return {};
    if (IsVerb(path, "filter")) {
      return {Lane::kVerbs, [this](const auto& req, auto& res) { HandleFilter(req, res); }};
    }
    if (IsVerb(path, "prioritize")) {
      return {Lane::kVerbs, [this](const auto& req, auto& res) { HandlePrioritize(req, res); }};
    }
    if (IsVerb(path, "bind")) {
      return {Lane::kBind, [this](const auto& req, auto& res) { HandleBind(req, res); }};
    }
    if (IsVerb(path, "preempt")) {
      return {Lane::kBind, [this](const auto& req, auto& res) { HandlePreempt(req, res); }};
    }
    return {};
  }
  if (method != "GET") return {};
  if (path == "/healthz") {
    return {Lane::kInline, [](const auto&, auto& res) { SetText(res, 200, "ok\n"); }};
  }
  if (path == "/readyz") {
    return {Lane::kInline, [this](const auto&, auto& res) {
              if (server.stopping()) return SetText(res, 503, "shutting down\n");
              if (!deps.ready()) return SetText(res, 503, "cache not synced\n");
              SetText(res, 200, "ok\n");
            }};
  }
  if (!admin_here) return {};
  if (path == "/metrics" && deps.metrics != nullptr) {
    return Guarded([this](const auto&, auto& res) {
      deps.recorder.Flush();
      res.body = deps.metrics->Render();
      res.content_type = std::string(observability::kExpositionContentType);
    });
  }
  if (path == "/debug" || path.substr(0, 7) == "/debug/") {
    return Guarded([this](const auto& req, auto& res) { HandleDebug(req, res); });
  }
  if (path == "/ui" || path == "/ui/") {
    // A static page with no data in it: it reads /debug, where the admin listener's access
    // control applies (the page sends the token it is given; see src/http/ui/index.html).
    return {Lane::kAdmin, [this](const auto&, auto& res) {
              res.body = std::string(deps.ui_page);
              res.content_type = "text/html; charset=utf-8";
              // Nothing is fetched from elsewhere: same origin only, inline script and style.
              res.headers.emplace_back("Content-Security-Policy",
                                       "default-src 'none'; connect-src 'self'; "
                                       "script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
                                       "img-src 'self' data:");
              res.headers.emplace_back("X-Content-Type-Options", "nosniff");
              res.headers.emplace_back("Cache-Control", "no-cache");
            }};
  }
  return {};
}

void ExtenderServer::Impl::HandleDebug(const HttpRequest& req, HttpResponse& res) {
  const std::string_view path = req.path;
  if (path == "/debug") {
    const auto [workload, observed] = deps.context.state.Workload();
    return SetJson(res, RenderIndex(deps.context.state.Counts(), deps.context.default_preset,
                                    deps.context.presets.Names(), workload.get(), observed));
  }
  if (path == "/debug/decisions") {
    deps.recorder.Flush();
    return SetJson(res, RenderDecisions(deps.context.decisions.Recent(200)));
  }
  if (path == "/debug/nodes") {
    return SetJson(res, RenderNodes(*deps.context.state.Snapshot(),
                                    QueryNumber(req.target, "offset").value_or(0),
                                    QueryNumber(req.target, "limit").value_or(SIZE_MAX)));
  }
  if (path == "/debug/snapshot") return SetJson(res, deps.list_snapshot());
  if (std::optional<std::string_view> name = After(path, "/debug/nodes/");
      name && !name->empty() && name->find('/') == std::string_view::npos) {
    auto snapshot = deps.context.state.Snapshot();
    const policies::NodeState* node = snapshot->Find(std::string(*name));
    if (node == nullptr) return SetText(res, 404, "unknown node " + std::string(*name) + "\n");
    return SetJson(res, RenderNode(*node, deps.context.state.ReservedPods(*name)));
  }
  if (std::optional<std::string_view> rest = After(path, "/debug/pods/")) {
    const size_t slash = rest->find('/');
    if (slash != std::string_view::npos && slash > 0 && slash + 1 < rest->size() &&
        rest->find('/', slash + 1) == std::string_view::npos) {
      const std::string key(*rest);
      deps.recorder.Flush();
      std::optional<service::PodHistory> history = deps.context.decisions.ForPod(key);
      if (!history) return SetText(res, 404, "no recent decision for pod " + key + "\n");
      const service::CycleRecord* cycle =
          history->prioritize ? history->prioritize.get() : history->filter.get();
      std::optional<PodInfo> current;
      if (cycle != nullptr) current = deps.context.state.FindPod(cycle->pod_uid);
      if (!current && history->bind) current = deps.context.state.FindPod(history->bind->pod_uid);
      if (!current && history->preempt)
        current = deps.context.state.FindPod(history->preempt->pod_uid);
      return SetJson(
          res, RenderPod(key, *history, options.debug_max_nodes, current ? &*current : nullptr));
    }
  }
  SetText(res, 404, "gputopo: 404 " + std::string(path) + "\n");
}

ExtenderServer::ExtenderServer(ServerOptions options, ServerDependencies deps)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(deps))) {}

ExtenderServer::~ExtenderServer() { Stop(); }

Status ExtenderServer::Start() {
  if (Status s = impl_->server.Start(); !s.ok()) return s;
  port_ = impl_->server.port();
  if (impl_->admin) {
    if (Status s = impl_->admin->Start(); !s.ok()) return s.WithContext("the admin listener");
    admin_port_ = impl_->admin->port();
  }
  return Status::Ok();
}

void ExtenderServer::RequestStop() {
  impl_->server.RequestStop();
  if (impl_->admin) impl_->admin->RequestStop();
}

bool ExtenderServer::stopping() const { return impl_->server.stopping(); }

void ExtenderServer::Stop() {
  RequestStop();
  Wait();
}

void ExtenderServer::Wait() {
  impl_->server.Wait();
  if (impl_->admin) impl_->admin->Wait();
  impl_->deps.recorder.Flush();  // every answered cycle is in the DecisionLog
}

HttpServerStats ExtenderServer::TransportStats() const { return impl_->server.Stats(); }

}  // namespace gputopo::http
