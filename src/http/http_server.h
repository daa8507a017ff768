// HttpServer: an event-driven HTTP/1.1 server (Boost.Beast on Asio) that a slow or idle client
// cannot starve.
//
// A connection costs a socket and a small buffer, never a thread. A few I/O threads read and
// write every connection asynchronously, each step under a deadline: waiting for the next
// request on a keep-alive connection (idle_timeout), the request header once its first byte has
// arrived (header_timeout), the body (body_timeout), the reply (write_timeout). A complete
// request runs on the lane its route names:
//   kInline  on the I/O thread that read it: probes, answered at once;
//   kVerbs   filter and prioritize, also on the I/O thread that read them, which has the body
//            in its core's cache (handing them to a pool made filter's p99 twice as long at
//            5000 nodes); the server runs verb_threads I/O threads more for them, so other
//            connections are served while verbs run;
//   kBind    binds, which wait on the API server, on their own pool;
//   kAdmin   /debug and /metrics, on their own pool.
// So a burst of binds never delays a filter. A probe waits only while more than verb_threads
// verbs run at once on the same listener (kube-scheduler sends one at a time); the manifests
// probe the admin listener, where no verb ever runs.
//
// Limits in bytes: a body larger than max_body_bytes gets 413 as soon as its header says so
// (a chunked body once it crosses the limit); the bodies being read or handled at once stay
// within max_inflight_body_bytes together (a request that would not fit gets 503 and
// Retry-After; a chunked body counts as max_body_bytes). Malformed framing (a negative or
// repeated Content-Length, a bad chunk) gets 400, and the connection is closed. Requests on one
// connection are answered in order (pipelining).
//
// Stopping: RequestStop() closes the listener and every connection that is not in the middle
// of a request; requests in flight are finished and answered with `Connection: close`. Wait()
// returns once they are done, or once the grace period has passed.
//
// Thread safety: Start once; RequestStop from any thread (a signal thread); Wait from one
// thread. Handlers run concurrently, on the lanes' threads.
#ifndef GPUTOPO_SRC_HTTP_HTTP_SERVER_H_
#define GPUTOPO_SRC_HTTP_HTTP_SERVER_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gputopo/status.h"

namespace gputopo::http {

// kAdmin stays last: per-lane state is sized by it.
enum class Lane : uint8_t { kInline, kVerbs, kBind, kAdmin };

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string target;  // as sent: path and query
  std::string path;    // target without the query
  std::string content_type;
  std::string authorization;  // the Authorization header, if any
  // X-Gputopo-Authorization: the caller's "Bearer <token>" when the request came through the API
  // server's proxy, which consumes the Authorization header (src/kubectl/gputopo_access.h).
  std::string proxied_authorization;
  std::string remote_addr;
  // Its capacity leaves simdjson's padding past the end when the length was known up front.
  std::string body;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers
};

// A route: where a request runs and what answers it.
struct Route {
  Lane lane = Lane::kInline;
  std::function<void(const HttpRequest&, HttpResponse&)> handler;  // empty: 404
};

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  int port = 0;               // 0: any free port
  std::string tls_cert_file;  // both set: HTTPS
  std::string tls_key_file;
  size_t max_body_bytes = 64u << 20;
  size_t max_inflight_body_bytes = 96u << 20;
  size_t max_header_bytes = 16u << 10;
  size_t max_connections = 4096;  // more are closed as soon as they are accepted
  std::chrono::milliseconds idle_timeout{std::chrono::seconds(120)};
  std::chrono::milliseconds header_timeout{std::chrono::seconds(10)};
  std::chrono::milliseconds body_timeout{std::chrono::seconds(30)};
  std::chrono::milliseconds write_timeout{std::chrono::seconds(30)};
  // How long Wait() lets requests in flight finish after RequestStop().
  std::chrono::milliseconds grace_period{std::chrono::seconds(10)};
  int io_threads = 1;  // besides the verb_threads ones
  // I/O threads that may run filter and prioritize at once (kube-scheduler sends one at a time;
  // more threads only churned on a 2-core machine: filter's p99 grew with each).
  int verb_threads = 1;
  int bind_threads = 32;
  int admin_threads = 2;
  // Runs on the admin lane when the bodies in flight drop to none after at least
  // kReleaseMemoryAfterBytes of them were handled (the application returns freed heap memory to
  // the system there); may be empty. Not while bodies over kReleaseMemoryAfterBytes keep coming
  // to a lane (full Node objects at thousands of nodes make every filter and prioritize that
  // large; releasing after each would make the next fault its buffers in again): such a run ends
  // at the lane's next smaller body.
  std::function<void()> release_memory;
};

constexpr size_t kReleaseMemoryAfterBytes = 8u << 20;

// Answers the server itself gives (413, 415, 503, ...): the protocol's error body for
// `message`. Must be thread-safe.
using ErrorRenderer = std::function<HttpResponse(int status, std::string_view message)>;
// Chooses the route of a request from its method and path, once the header is in. Must be
// thread-safe and quick (it runs on the I/O thread).
using Router = std::function<Route(std::string_view method, std::string_view path)>;

struct HttpServerStats {
  uint64_t connections_accepted = 0;
  uint64_t connections_refused = 0;  // over max_connections
  size_t connections_open = 0;
  size_t inflight_body_bytes = 0;
  uint64_t rejected_too_large = 0;  // 413
  uint64_t rejected_busy = 0;       // 503: the in-flight body budget was spent
  uint64_t rejected_malformed = 0;  // 400 and 431
  uint64_t timed_out = 0;           // a deadline closed the connection mid-request
  uint64_t memory_releases = 0;     // release_memory calls posted
};

class HttpServer {
 public:
  HttpServer(HttpServerOptions options, Router router, ErrorRenderer errors);
  ~HttpServer();  // RequestStop() and Wait()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and starts serving. Error when the address cannot be bound or the TLS certificate or
  // key cannot be loaded.
  Status Start();
  int port() const;
  void RequestStop();
  bool stopping() const;
  // Returns once the server has stopped: RequestStop() was called and the requests in flight
  // are answered, or the grace period has passed.
  void Wait();
  HttpServerStats Stats() const;

  struct Impl;  // http_server.cc only

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace gputopo::http

#endif  // GPUTOPO_SRC_HTTP_HTTP_SERVER_H_
