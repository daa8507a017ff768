// ExtenderServer: gputopo's HTTP face, on HttpServer (event-driven; see http_server.h for the
// lanes, deadlines and byte limits).
//
//   POST <prefix>/filter, <prefix>/prioritize, <prefix>/bind,
//        <prefix>/preempt                                       kube-scheduler extender verbs
//   GET  /healthz, /readyz                                      probes
//   GET  /debug, /debug/decisions, /debug/pods/<ns>/<name>,
//        /debug/nodes, /debug/nodes/<name>, /debug/snapshot     what gputopo sees and decided
//   GET  /metrics                                               Prometheus (request_metrics.h)
//   GET  /ui                                                    the web view (reads /debug)
//
// Bad requests get the protocol's error: the Error field for filter and bind (kube-scheduler
// shows it on the pod), HTTP 400 for prioritize (which has no error field), 413 for a body over
// the limit, 415 for a compressed body, 503 with Retry-After when the bodies in flight would
// exceed their budget; preempt has no error field either, so an undecodable body gets 400 (the
// scheduler then fails that preemption attempt), and a pod gputopo cannot read keeps no node.
// One log line per request. Lanes: probes on the I/O thread, filter and prioritize on I/O
// threads of their own, bind and preempt on the bind pool, /debug and /metrics on the admin
// pool.
//
// Thread safety: Start/Stop from one thread; RequestStop from any; requests are served
// concurrently.
#ifndef GPUTOPO_SRC_HTTP_EXTENDER_SERVER_H_
#define GPUTOPO_SRC_HTTP_EXTENDER_SERVER_H_

#include <functional>
#include <memory>
#include <string>

#include "gputopo/status.h"
#include "src/http/access_control.h"
#include "src/http/http_server.h"
#include "src/observability/metrics.h"
#include "src/service/binder.h"
#include "src/service/decision_recorder.h"
#include "src/service/extender_service.h"
#include "src/service/preemptor.h"

namespace gputopo::http {

struct ServerOptions {
  // The listener of the verbs: address, TLS (extender enableHTTPS), byte limits, deadlines,
  // workers (verb_threads: filter and prioritize; bind_threads: binds), shutdown grace.
  HttpServerOptions http = [] {
    HttpServerOptions o;
    o.port = 8888;
    return o;
  }();
  size_t debug_max_nodes = 200;  // nodes listed per cycle on /debug/pods
  // A listener of their own for /metrics and /debug (port -1: none; they are then served with
  // the verbs). Probes are answered on both. It shares `http`'s deadlines and grace.
  std::string admin_host = "0.0.0.0";
  int admin_port = -1;
  std::string admin_tls_cert_file;
  std::string admin_tls_key_file;
};

// What the server serves besides the verbs.
struct ServerDependencies {
  service::ExtenderService& service;
  // The service's CycleObserver: /debug and /metrics flush it before reading the DecisionLog.
  service::DecisionRecorder& recorder;
  const service::Binder& binder;
  const service::Preemptor& preemptor;
  const service::SchedulingContext& context;
  // The cluster as a kubectl-style List, for /debug/snapshot.
  std::function<std::string()> list_snapshot;
  // True once the cache has synced.
  std::function<bool()> ready;
  // The page GET /ui serves (static storage: the embedded src/http/ui/index.html).
  std::string_view ui_page;
  // Request metrics are recorded here, and GET /metrics renders it; null: no /metrics. Must
  // outlive the server.
  observability::MetricsRegistry* metrics = nullptr;
  // Who may read /metrics and /debug (TokenReview + SubjectAccessReview); null: anyone who
  // reaches the listener. Must outlive the server.
  AccessControl* access = nullptr;
};

class ExtenderServer {
 public:
  ExtenderServer(ServerOptions options, ServerDependencies deps);
  ~ExtenderServer();
  ExtenderServer(const ExtenderServer&) = delete;
  ExtenderServer& operator=(const ExtenderServer&) = delete;

  // Binds the port and serves on a background thread. Error when the port cannot be bound or the
  // TLS certificate or key cannot be loaded.
  Status Start();
  // The ports bound (useful with port 0); admin_port() is -1 without an admin listener.
  int port() const { return port_; }
  int admin_port() const { return admin_port_; }
  // Stops accepting, makes /readyz answer 503, closes idle connections and lets requests in
  // flight finish; safe from any thread (a signal-handling thread, say).
  void RequestStop();
  bool stopping() const;
  // Blocks until the server has stopped (after RequestStop): requests in flight answered, or
  // the grace period over. Call from one thread only.
  void Wait();
  HttpServerStats TransportStats() const;
  // RequestStop() then Wait(). Idempotent.
  void Stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
  int admin_port_ = -1;
};

}  // namespace gputopo::http

#endif  // GPUTOPO_SRC_HTTP_EXTENDER_SERVER_H_
