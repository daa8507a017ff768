#include "src/http/extender_server.h"

#include <httplib.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <optional>

#include "src/http/debug_views.h"
#include "src/http/parser_pool.h"
#include "src/http/request_metrics.h"
#include "src/service/decision_recorder.h"

namespace gputopo::http {
namespace {

constexpr const char* kJson = "application/json";

// A reply body moved into the response: Response::set_content copies its argument (cpp-httplib
// 0.11), and filter and prioritize replies at 5000 nodes are 100-200 KiB.
void SetJson(httplib::Response& res, std::string&& body) {
  res.body = std::move(body);
  res.set_header("Content-Type", kJson);
}

// Parsers that handled bodies above this are not pooled (their buffers are freed).
constexpr size_t kPooledParserBytes = 8u << 20;
// Cycle records waiting for the recorder's thread before handlers commit their own.
constexpr size_t kMaxPendingRecords = 64;

long long MicrosSince(const Clock& clock, std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::microseconds>(clock.MonotonicNow() - start)
      .count();
}

// The standard Server-Timing header: the time the handler took, in milliseconds, so that a
// client can tell server time from network time.
void SetServerTiming(httplib::Response& res, long long micros) {
  char value[48];
  std::snprintf(value, sizeof(value), "gputopo;dur=%.3f", static_cast<double>(micros) / 1000.0);
  res.set_header("Server-Timing", value);
}

}  // namespace

struct ExtenderServer::Impl {
  Impl(ServerOptions o, ServerDependencies d)
      : options(std::move(o)),
        deps(std::move(d)),
        parsers(options.max_body_bytes, kPooledParserBytes, static_cast<size_t>(options.threads)),
        server_owner(options.tls_cert_file.empty()
                         ? std::make_unique<httplib::Server>()
                         : std::make_unique<httplib::SSLServer>(options.tls_cert_file.c_str(),
                                                                options.tls_key_file.c_str())),
        server(*server_owner) {
    if (deps.metrics != nullptr) metrics.emplace(*deps.metrics);
    recorder.emplace([this](std::shared_ptr<service::CycleRecord> record) { Commit(record); },
                     kMaxPendingRecords, deps.background_thread_start);
  }
  ~Impl() { recorder.reset(); }  // commits what is pending while everything it uses exists

  // A cycle's bookkeeping, off the request path (DecisionRecorder): its record into the
  // DecisionLog, and the filter metrics that need the record's failures by reason.
  void Commit(const std::shared_ptr<service::CycleRecord>& record) {
    deps.service.Commit(record);  // fills failure_reasons; the record is not changed after
    if (metrics && record->verb == service::Verb::kFilter && record->error.empty()) {
      metrics->FilterNodes(record->passed, record->failed, record->unresolvable);
      metrics->FilterFailures(record->failure_reasons);
    }
  }

  void Record(Verb verb, RequestResult result, std::chrono::steady_clock::time_point start) {
    if (metrics) metrics->Request(verb, result, deps.context.clock.MonotonicNow() - start);
  }

  void Routes();
  void HandleFilter(const httplib::Request& req, httplib::Response& res);
  void HandlePrioritize(const httplib::Request& req, httplib::Response& res);
  void HandleBind(const httplib::Request& req, httplib::Response& res);

  ServerOptions options;
  ServerDependencies deps;
  ParserPool parsers;
  std::unique_ptr<httplib::Server> server_owner;  // httplib::SSLServer with TLS
  httplib::Server& server;
  std::optional<RequestMetrics> metrics;
  std::optional<service::DecisionRecorder> recorder;
  std::thread thread;
};

void ExtenderServer::Impl::HandleFilter(const httplib::Request& req, httplib::Response& res) {
  const Clock& clock = deps.context.clock;
  const auto start = clock.MonotonicNow();
  ParserPool::Lease parser = parsers.Acquire();
  Result<const extender::ExtenderArgs*> args = parser.ParseArgs(req.body);
  if (!args.ok()) {
    spdlog::warn("filter rejected: bad request from {}: {} ({} bytes)", req.remote_addr,
                 args.status().message(), req.body.size());
    res.set_content(extender::WriteFilterError("gputopo: bad request: " + args.status().message()),
                    kJson);
    Record(Verb::kFilter, RequestResult::kBadRequest, start);
    return;
  }
  service::FilterReply reply = deps.service.Filter(**args);
  const service::CycleRecord& r = *reply.record;
  if (!reply.error.empty()) {
    spdlog::info("filter pod={} error=\"{}\" took={}us", r.pod_key, reply.error,
                 MicrosSince(clock, start));
    res.set_content(extender::WriteFilterError(reply.error), kJson);
    Record(Verb::kFilter, RequestResult::kError, start);
    recorder->Submit(std::move(reply.record));
    return;
  }
  SetJson(res, extender::WriteFilterResult(**args, reply.outcomes));
  Record(Verb::kFilter, RequestResult::kOk, start);
  const long long took = MicrosSince(clock, start);
  SetServerTiming(res, took);
  spdlog::info("filter pod={} mode={} candidates={} passed={} failed={} unresolvable={} took={}us",
               r.pod_key, (*args)->nodes_mode ? "nodes" : "names", (*args)->node_names.size(),
               r.passed, r.failed, r.unresolvable, took);
  recorder->Submit(std::move(reply.record));  // last: the recorder's thread changes it
}

void ExtenderServer::Impl::HandlePrioritize(const httplib::Request& req, httplib::Response& res) {
  const Clock& clock = deps.context.clock;
  const auto start = clock.MonotonicNow();
  ParserPool::Lease parser = parsers.Acquire();
  Result<const extender::ExtenderArgs*> args = parser.ParseArgs(req.body);
  if (!args.ok()) {
    spdlog::warn("prioritize rejected: bad request from {}: {} ({} bytes)", req.remote_addr,
                 args.status().message(), req.body.size());
    res.status = 400;
    res.set_content("gputopo: bad request: " + args.status().message() + "\n", "text/plain");
    Record(Verb::kPrioritize, RequestResult::kBadRequest, start);
    return;
  }
  service::PrioritizeReply reply = deps.service.Prioritize(**args);
  const service::CycleRecord& r = *reply.record;
  if (!reply.error.empty()) {
    spdlog::info("prioritize pod={} error=\"{}\" took={}us", r.pod_key, reply.error,
                 MicrosSince(clock, start));
    res.status = 400;
    res.set_content(reply.error + "\n", "text/plain");
    Record(Verb::kPrioritize, RequestResult::kError, start);
    recorder->Submit(std::move(reply.record));
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
  spdlog::info("prioritize pod={} candidates={} best={} score={} took={}us", r.pod_key,
               reply.scores.size(), best, best_score, took);
  recorder->Submit(std::move(reply.record));  // last: the recorder's thread changes it
}

void ExtenderServer::Impl::HandleBind(const httplib::Request& req, httplib::Response& res) {
  const Clock& clock = deps.context.clock;
  const auto start = clock.MonotonicNow();
  Result<extender::BindingArgs> args = extender::ParseBindingArgs(req.body);
  if (!args.ok()) {
    spdlog::warn("bind rejected: bad request from {}: {}", req.remote_addr,
                 args.status().message());
    res.set_content(
        extender::WriteBindingResult("gputopo: bad request: " + args.status().message()), kJson);
    Record(Verb::kBind, RequestResult::kBadRequest, start);
    return;
  }
  const Status status = deps.binder.Bind(*args);
  if (metrics) metrics->Bind(status.code());
  const std::string pod = args->pod_namespace + "/" + args->pod_name;
  if (!status.ok()) {
    spdlog::warn("bind pod={} node={} failed: {} took={}us", pod, args->node, status.ToString(),
                 MicrosSince(clock, start));
    res.set_content(extender::WriteBindingResult("gputopo: " + status.message()), kJson);
    Record(Verb::kBind, RequestResult::kError, start);
    return;
  }
  res.set_content(extender::WriteBindingResult(""), kJson);
  Record(Verb::kBind, RequestResult::kOk, start);
  const long long took = MicrosSince(clock, start);
  SetServerTiming(res, took);
  spdlog::info("bind pod={} node={} ok took={}us", pod, args->node, took);
}

void ExtenderServer::Impl::Routes() {
  server.new_task_queue = [n = options.threads] {
    return new httplib::ThreadPool(static_cast<size_t>(n));
  };
  server.set_payload_max_length(options.max_body_bytes);
  server.set_keep_alive_max_count(10000);
  // Replies are small and answered at once: without TCP_NODELAY, Nagle's algorithm and the
  // client's delayed ACK add ~40 ms to each one.
  server.set_tcp_nodelay(true);
  server.set_read_timeout(30, 0);
  // kube-scheduler never compresses; refusing compressed bodies closes the door on
  // decompression bombs that the body limit would not see.
  server.set_pre_routing_handler([](const httplib::Request& req, httplib::Response& res) {
    if (req.has_header("Content-Encoding")) {
      spdlog::warn("rejected {} {}: compressed request body", req.method, req.path);
      res.status = 415;
      res.set_content(extender::WriteBindingResult("gputopo: compressed bodies are not accepted"),
                      kJson);
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  server.set_error_handler(
      [max = options.max_body_bytes](const httplib::Request& req, httplib::Response& res) {
        if (res.status == 413) {
          spdlog::warn("rejected {} {}: body larger than {} bytes", req.method, req.path, max);
          res.set_content(extender::WriteBindingResult("gputopo: request body larger than " +
                                                       std::to_string(max) + " bytes"),
                          kJson);
        } else if (res.body.empty()) {
          res.set_content("gputopo: " + std::to_string(res.status) + " " + req.path + "\n",
                          "text/plain");
        }
      });
  server.set_exception_handler(
      [](const httplib::Request& req, httplib::Response& res, std::exception_ptr) {
        spdlog::error("internal error serving {} {}", req.method, req.path);
        res.status = 500;
        res.set_content("gputopo: internal error\n", "text/plain");
      });

  server.Post(R"((/.*)?/filter)", [this](const auto& req, auto& res) { HandleFilter(req, res); });
  server.Post(R"((/.*)?/prioritize)",
              [this](const auto& req, auto& res) { HandlePrioritize(req, res); });
  server.Post(R"((/.*)?/bind)", [this](const auto& req, auto& res) { HandleBind(req, res); });

  server.Get("/healthz", [](const auto&, auto& res) { res.set_content("ok\n", "text/plain"); });
  server.Get("/readyz", [this](const auto&, auto& res) {
    const bool ready = deps.ready();
    res.status = ready ? 200 : 503;
    res.set_content(ready ? "ok\n" : "cache not synced\n", "text/plain");
  });
  server.Get("/debug", [this](const auto&, auto& res) {
    res.set_content(RenderIndex(deps.context.state.Counts(), deps.context.default_preset,
                                deps.context.presets.Names()),
                    kJson);
  });
  server.Get("/debug/decisions", [this](const auto&, auto& res) {
    recorder->Flush();
    res.set_content(RenderDecisions(deps.context.decisions.Recent(200)), kJson);
  });
  server.Get(R"(/debug/pods/([^/]+)/([^/]+))", [this](const auto& req, auto& res) {
    const std::string key = req.matches[1].str() + "/" + req.matches[2].str();
    recorder->Flush();
    std::optional<service::PodHistory> history = deps.context.decisions.ForPod(key);
    if (!history) {
      res.status = 404;
      res.set_content("no recent decision for pod " + key + "\n", "text/plain");
      return;
    }
    res.set_content(RenderPod(key, *history, options.debug_max_nodes), kJson);
  });
  server.Get("/debug/nodes", [this](const auto&, auto& res) {
    res.set_content(RenderNodes(*deps.context.state.Snapshot()), kJson);
  });
  server.Get(R"(/debug/nodes/([^/]+))", [this](const auto& req, auto& res) {
    auto snapshot = deps.context.state.Snapshot();
    const policies::NodeState* node = snapshot->Find(req.matches[1].str());
    if (node == nullptr) {
      res.status = 404;
      res.set_content("unknown node " + req.matches[1].str() + "\n", "text/plain");
      return;
    }
    res.set_content(RenderNode(*node), kJson);
  });
  if (deps.metrics != nullptr) {
    server.Get("/metrics", [this](const auto&, auto& res) {
      recorder->Flush();
      res.set_content(deps.metrics->Render(), std::string(observability::kExpositionContentType));
    });
  }
  server.Get("/debug/snapshot",
             [this](const auto&, auto& res) { res.set_content(deps.list_snapshot(), kJson); });
}

ExtenderServer::ExtenderServer(ServerOptions options, ServerDependencies deps)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(deps))) {
  impl_->Routes();
}

ExtenderServer::~ExtenderServer() { Stop(); }

Status ExtenderServer::Start() {
  const ServerOptions& o = impl_->options;
  if (!impl_->server.is_valid()) {
    return InvalidArgument("cannot load the TLS certificate " + o.tls_cert_file + " and key " +
                           o.tls_key_file);
  }
  if (o.port == 0) {
    port_ = impl_->server.bind_to_any_port(o.host);
  } else {
    port_ = impl_->server.bind_to_port(o.host, o.port) ? o.port : -1;
  }
  if (port_ <= 0) {
    return Unavailable("cannot listen on " + o.host + ":" + std::to_string(o.port));
  }
  impl_->thread = std::thread([this] { impl_->server.listen_after_bind(); });
  return Status::Ok();
}

void ExtenderServer::RequestStop() { impl_->server.stop(); }

void ExtenderServer::Stop() {
  RequestStop();
  Wait();
}

void ExtenderServer::Wait() {
  if (impl_->thread.joinable()) impl_->thread.join();
}

}  // namespace gputopo::http
