// KeepAliveConnection: one keep-alive HTTP/1.1 connection of a load generator, for requests that
// are timed. It reads and writes as Go's net/http transport (kube-scheduler's extender client)
// does: the request goes out in as few writes as the kernel takes, and the reply is read in large
// reads, as much as has arrived, with no readiness poll before each. (cpp-httplib's client polls
// before every read and reads a body 4 KiB at a time: about 140 system calls per filter and
// prioritize of 5000 names, charged to the server it measures.)
//
// Thread safety: none; a connection is used by one thread at a time (ConnectionPool hands it
// out). It connects on the first request and again after the server closed it, once per request.
// There are no timeouts: a server that stops answering stops the benchmark.
#ifndef GPUTOPO_BENCH_KEEP_ALIVE_CONNECTION_H_
#define GPUTOPO_BENCH_KEEP_ALIVE_CONNECTION_H_

#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace gputopo::bench {

struct HttpReply {
  int status = 0;
  std::string body;
  std::string server_timing;  // the Server-Timing header, "" when absent
};

class KeepAliveConnection {
 public:
  explicit KeepAliveConnection(int port);  // to 127.0.0.1
  ~KeepAliveConnection();
  KeepAliveConnection(const KeepAliveConnection&) = delete;
  KeepAliveConnection& operator=(const KeepAliveConnection&) = delete;

  // POST with Content-Type application/json. nullopt when the exchange failed twice (a fresh
  // connection after the first failure).
  std::optional<HttpReply> Post(std::string_view target, std::string_view body);
  std::optional<HttpReply> Get(std::string_view target);

 private:
  struct Impl;
  std::optional<HttpReply> Exchange(bool post, std::string_view target, std::string_view body);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gputopo::bench

#endif  // GPUTOPO_BENCH_KEEP_ALIVE_CONNECTION_H_
