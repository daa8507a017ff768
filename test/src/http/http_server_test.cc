// HttpServer over loopback sockets: idle, slow and many clients never starve a probe or a verb,
// binds never delay verbs, byte limits answer at once, framing errors get 400, pipelined
// requests are answered in order, and a stop lets requests in flight finish.
//
// No test depends on timing: handlers that must be "slow" wait on a gate the test opens, the
// server's own deadlines are set far beyond any test's length, and sockets have a long receive
// timeout only so that a broken server fails the test instead of hanging it.
#include "src/http/http_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace gputopo::http {
namespace {

// A gate that handlers wait on until the test opens it.
class Gate {
 public:
  void Wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    ++waiting_;
    changed_.notify_all();
    changed_.wait(lock, [&] { return open_; });
  }
  void Open() {
    std::lock_guard<std::mutex> lock(mutex_);
    open_ = true;
    changed_.notify_all();
  }
  void WaitForWaiters(int n) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return waiting_ >= n; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool open_ = false;
  int waiting_ = 0;
};

// A blocking loopback client socket.
class Socket {
 public:
  explicit Socket(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    timeval tv{120, 0};  // a hang guard only: every answer here comes in milliseconds
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  }
  ~Socket() {
    if (fd_ >= 0) ::close(fd_);
  }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  Socket(Socket&& other) noexcept : fd_(other.fd_), connected_(other.connected_) { other.fd_ = -1; }

  bool connected() const { return connected_; }
  bool Send(std::string_view data) {
    while (!data.empty()) {
      const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      data.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }
  // One response: status line, headers, and a Content-Length body. Empty on EOF or error.
  std::string ReadResponse() {
    while (true) {
      const size_t end = pending_.find("\r\n\r\n");
      if (end != std::string::npos) {
        size_t length = 0;
        const size_t cl = Lower(pending_.substr(0, end)).find("content-length:");
        if (cl != std::string::npos) length = std::stoul(pending_.substr(cl + 15));
        if (pending_.size() >= end + 4 + length) {
          std::string out = pending_.substr(0, end + 4 + length);
          pending_.erase(0, end + 4 + length);
          return out;
        }
      }
      char buffer[65536];
      const ssize_t n = ::recv(fd_, buffer, sizeof(buffer), 0);
      if (n <= 0) return "";
      pending_.append(buffer, static_cast<size_t>(n));
    }
  }
  // True when the server closed the connection (EOF or reset) with nothing more to read.
  bool ClosedByPeer() {
    char c;
    return pending_.empty() && ::recv(fd_, &c, 1, 0) <= 0;
  }

 private:
  static std::string Lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  }
  int fd_ = -1;
  bool connected_ = false;
  std::string pending_;
};

std::string Get(const std::string& path) { return "GET " + path + " HTTP/1.1\r\nHost: t\r\n\r\n"; }
std::string Post(const std::string& path, const std::string& body,
                 const std::string& content_type = "application/json") {
  return "POST " + path + " HTTP/1.1\r\nHost: t\r\nContent-Type: " + content_type +
         "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}
int StatusOf(const std::string& response) {
  return response.size() > 12 ? std::stoi(response.substr(9, 3)) : 0;
}
std::string BodyOf(const std::string& response) {
  const size_t end = response.find("\r\n\r\n");
  return end == std::string::npos ? "" : response.substr(end + 4);
}

class HttpServerTest : public ::testing::Test {
 protected:
  // Routes: GET /healthz inline; POST /verb (echoes the body) on the verb lane; POST /bind waits
  // on bind_gate_ on the bind lane; POST /slow-verb waits on verb_gate_.
  void StartServer(HttpServerOptions options = {}) {
    options.host = "127.0.0.1";
    options.port = 0;
    // Far beyond any test: a test never depends on a deadline firing or not.
    options.idle_timeout = std::chrono::hours(1);
    options.header_timeout = std::chrono::hours(1);
    options.body_timeout = std::chrono::hours(1);
    server_ = std::make_unique<HttpServer>(
        options,
        [this](std::string_view method, std::string_view path) -> Route {
          if (method == "GET" && path == "/healthz") {
            return {Lane::kInline, [this](const HttpRequest&, HttpResponse& res) {
                      res.body = server_->stopping() ? "stopping" : "ok";
                    }};
          }
          if (method == "POST" && path == "/verb") {
            return {Lane::kVerbs, [](const HttpRequest& req, HttpResponse& res) {
                      res.body = "verb:" + req.content_type + ":" + req.body;
                    }};
          }
          if (method == "POST" && path == "/slow-verb") {
            return {Lane::kVerbs, [this](const HttpRequest&, HttpResponse& res) {
                      verb_gate_.Wait();
                      res.body = "slow";
                    }};
          }
          if (method == "POST" && path == "/bind") {
            return {Lane::kBind, [this](const HttpRequest& req, HttpResponse& res) {
                      bind_gate_.Wait();
                      res.body = "bound:" + req.body;
                    }};
          }
          return {};
        },
        [](int status, std::string_view message) {
          HttpResponse res;
          res.content_type = "application/json";
          res.body = "{\"Error\":\"" + std::to_string(status) + " " + std::string(message) + "\"}";
          return res;
        });
    ASSERT_TRUE(server_->Start().ok());
  }
  void TearDown() override {
    bind_gate_.Open();
    verb_gate_.Open();
    if (server_) {
      server_->RequestStop();
      server_->Wait();
    }
  }
  int port() const { return server_->port(); }
  std::string RoundTrip(const std::string& request) {
    Socket s(port());
    EXPECT_TRUE(s.connected());
    s.Send(request);
    return s.ReadResponse();
  }

  Gate bind_gate_;
  Gate verb_gate_;
  std::unique_ptr<HttpServer> server_;
};

TEST_F(HttpServerTest, IdleSlowAndManyClientsStarveNobody) {
  StartServer();
  // 25 keep-alive connections from one client, each idle after one request (Go's transport).
  std::vector<Socket> keep_alive;
  for (int i = 0; i < 25; ++i) {
    keep_alive.emplace_back(port());
    ASSERT_TRUE(keep_alive.back().Send(Get("/healthz")));
    ASSERT_EQ(StatusOf(keep_alive.back().ReadResponse()), 200);
  }
  // 200 slowloris connections: half a header each, never finished.
  std::vector<Socket> slow;
  for (int i = 0; i < 200; ++i) {
    slow.emplace_back(port());
    ASSERT_TRUE(slow.back().Send("POST /verb HTTP/1.1\r\nHost: t\r\nContent-Le"));
  }
  // 64 concurrent clients, each making requests on its own connection.
  std::atomic<int> answered{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 64; ++c) {
    clients.emplace_back([&, c] {
      Socket s(port());
      for (int i = 0; i < 5; ++i) {
        s.Send(Post("/verb", std::to_string(c)));
        if (BodyOf(s.ReadResponse()) == "verb:application/json:" + std::to_string(c)) ++answered;
      }
    });
  }
  // Meanwhile a probe and a verb on fresh connections are answered.
  EXPECT_EQ(BodyOf(RoundTrip(Get("/healthz"))), "ok");
  EXPECT_EQ(BodyOf(RoundTrip(Post("/verb", "x"))), "verb:application/json:x");
  for (auto& t : clients) t.join();
  EXPECT_EQ(answered.load(), 64 * 5);
  // And the idle keep-alive connections still work.
  for (Socket& s : keep_alive) {
    s.Send(Get("/healthz"));
    EXPECT_EQ(BodyOf(s.ReadResponse()), "ok");
  }
  EXPECT_GE(server_->Stats().connections_open, 225u);
}

TEST_F(HttpServerTest, BindsNeverDelayVerbsOrProbes) {
  HttpServerOptions options;
  options.bind_threads = 4;
  StartServer(options);
  // 16 binds: 4 held in their handlers, 12 queued behind them.
  std::vector<Socket> binds;
  for (int i = 0; i < 16; ++i) {
    binds.emplace_back(port());
    ASSERT_TRUE(binds.back().Send(Post("/bind", std::to_string(i))));
  }
  bind_gate_.WaitForWaiters(4);
  EXPECT_EQ(BodyOf(RoundTrip(Post("/verb", "while binds wait"))),
            "verb:application/json:while binds wait");
  EXPECT_EQ(BodyOf(RoundTrip(Get("/healthz"))), "ok");
  bind_gate_.Open();
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(BodyOf(binds[static_cast<size_t>(i)].ReadResponse()), "bound:" + std::to_string(i));
  }
}

TEST_F(HttpServerTest, OversizedContentLengthGets413BeforeTheBodyIsSent) {
  HttpServerOptions options;
  options.max_body_bytes = 1u << 20;
  StartServer(options);
  Socket s(port());
  // Only the header: the answer must not wait for a body that never comes.
  s.Send("POST /verb HTTP/1.1\r\nHost: t\r\nContent-Length: 10000000000\r\n\r\n");
  const std::string response = s.ReadResponse();
  EXPECT_EQ(StatusOf(response), 413);
  EXPECT_NE(BodyOf(response).find("larger than 1048576 bytes"), std::string::npos) << response;
  EXPECT_NE(response.find("Connection: close"), std::string::npos);
  EXPECT_EQ(server_->Stats().rejected_too_large, 1u);
}

TEST_F(HttpServerTest, ChunkedBodyOverTheCapGets413) {
  HttpServerOptions options;
  options.max_body_bytes = 64u << 10;
  StartServer(options);
  Socket s(port());
  s.Send("POST /verb HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n");
  const std::string chunk(16u << 10, 'a');
  char size[16];
  std::snprintf(size, sizeof(size), "%zx\r\n", chunk.size());
  for (int i = 0; i < 5; ++i) s.Send(std::string(size) + chunk + "\r\n");  // 80 KiB > 64 KiB
  EXPECT_EQ(StatusOf(s.ReadResponse()), 413);
  // A chunked body under the cap is read whole.
  Socket ok(port());
  ok.Send(
      "POST /verb HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n");
  EXPECT_EQ(BodyOf(ok.ReadResponse()), "verb::abc");
}

TEST_F(HttpServerTest, NegativeOrDuplicateContentLengthGets400) {
  StartServer();
  for (const char* header : {"Content-Length: -5\r\n", "Content-Length: 3\r\nContent-Length: 3\r\n",
                             "Content-Length: 3\r\nContent-Length: 4\r\n"}) {
    SCOPED_TRACE(header);
    Socket s(port());
    s.Send(std::string("POST /verb HTTP/1.1\r\nHost: t\r\n") + header + "\r\nabcd");
    const std::string response = s.ReadResponse();
    EXPECT_EQ(StatusOf(response), 400) << response;
    EXPECT_TRUE(s.ClosedByPeer());
  }
  EXPECT_EQ(server_->Stats().rejected_malformed, 3u);
}

TEST_F(HttpServerTest, PipelinedRequestsAreAnsweredInOrder) {
  StartServer();
  Socket s(port());
  // The first is held in its handler: the second, quicker one must still come second.
  s.Send(Post("/slow-verb", "1") + Get("/healthz") + Post("/verb", "3"));
  verb_gate_.WaitForWaiters(1);
  verb_gate_.Open();
  EXPECT_EQ(BodyOf(s.ReadResponse()), "slow");
  EXPECT_EQ(BodyOf(s.ReadResponse()), "ok");
  EXPECT_EQ(BodyOf(s.ReadResponse()), "verb:application/json:3");
}

TEST_F(HttpServerTest, SmallFormBodyIsHandledNotRejected) {
  StartServer();
  const std::string response =
      RoundTrip(Post("/verb", "a=1&b=2", "application/x-www-form-urlencoded"));
  EXPECT_EQ(StatusOf(response), 200);
  EXPECT_EQ(BodyOf(response), "verb:application/x-www-form-urlencoded:a=1&b=2");
}

TEST_F(HttpServerTest, ExpectContinueGetsTheBodyRead) {
  StartServer();
  Socket s(port());
  s.Send("POST /verb HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n");
  EXPECT_EQ(StatusOf(s.ReadResponse()), 100);
  s.Send("hi");
  EXPECT_EQ(BodyOf(s.ReadResponse()), "verb::hi");
}

TEST_F(HttpServerTest, BodiesInFlightStayWithinTheirBudget) {
  HttpServerOptions options;
  options.max_body_bytes = 1u << 20;
  options.max_inflight_body_bytes = 1u << 20;
  StartServer(options);
  // A body that takes the whole budget, arriving slowly.
  Socket first(port());
  first.Send("POST /verb HTTP/1.1\r\nHost: t\r\nContent-Length: 1048576\r\n\r\nabc");
  while (server_->Stats().inflight_body_bytes < (1u << 20)) std::this_thread::yield();
  const std::string busy = RoundTrip(Post("/verb", "small"));
  EXPECT_EQ(StatusOf(busy), 503);
  EXPECT_NE(busy.find("Retry-After: 1"), std::string::npos);
  EXPECT_EQ(server_->Stats().rejected_busy, 1u);
  // Probes carry no body and are never refused.
  EXPECT_EQ(BodyOf(RoundTrip(Get("/healthz"))), "ok");
  // Once the first body is in and answered, its budget is back.
  first.Send(std::string((1u << 20) - 3, 'x'));
  EXPECT_EQ(StatusOf(first.ReadResponse()), 200);
  while (server_->Stats().inflight_body_bytes != 0) std::this_thread::yield();
  EXPECT_EQ(BodyOf(RoundTrip(Post("/verb", "small"))), "verb:application/json:small");
}

TEST_F(HttpServerTest, MemoryIsReleasedOnceLargeBodiesAreDone) {
  std::atomic<int> releases{0};
  HttpServerOptions options;
  options.release_memory = [&] { ++releases; };
  StartServer(options);
  // Small bodies never ask for it. (A release is posted before the reply is written, so the
  // count is final once the reply is in.)
  EXPECT_EQ(StatusOf(RoundTrip(Post("/verb", "small"))), 200);
  EXPECT_EQ(server_->Stats().memory_releases, 0u);
  // Nor do bodies over kReleaseMemoryAfterBytes one after another on a lane (full Node objects
  // at scale): the next one would fault its buffers in again.
  const std::string large(kReleaseMemoryAfterBytes + 1, 'x');
  EXPECT_EQ(StatusOf(RoundTrip(Post("/verb", large))), 200);
  EXPECT_EQ(StatusOf(RoundTrip(Post("/verb", large))), 200);
  EXPECT_EQ(server_->Stats().memory_releases, 0u);
  // A small body on another lane (the cycle's bind) does not end the run.
  bind_gate_.Open();
  EXPECT_EQ(StatusOf(RoundTrip(Post("/bind", "small"))), 200);
  EXPECT_EQ(server_->Stats().memory_releases, 0u);
  // The lane's next smaller body does, once it is answered and nothing else is in flight.
  EXPECT_EQ(StatusOf(RoundTrip(Post("/verb", "small"))), 200);
  EXPECT_EQ(server_->Stats().memory_releases, 1u);
  while (releases.load() == 0) std::this_thread::yield();
  EXPECT_EQ(releases.load(), 1);
}

TEST_F(HttpServerTest, StopFinishesRequestsInFlightAndClosesIdleConnections) {
  StartServer();
  Socket idle(port());
  idle.Send(Get("/healthz"));
  ASSERT_EQ(StatusOf(idle.ReadResponse()), 200);
  Socket busy(port());
  busy.Send(Post("/slow-verb", "x"));
  verb_gate_.WaitForWaiters(1);
  std::thread waiter([&] {
    server_->RequestStop();
    server_->Wait();
  });
  EXPECT_TRUE(idle.ClosedByPeer());  // closed by the stop, not by a deadline (an hour)
  // The request in flight is finished and answered, with Connection: close.
  verb_gate_.Open();
  const std::string response = busy.ReadResponse();
  EXPECT_EQ(BodyOf(response), "slow");
  EXPECT_NE(response.find("Connection: close"), std::string::npos);
  waiter.join();
  EXPECT_FALSE(Socket(port()).connected());
  EXPECT_EQ(server_->Stats().connections_open, 0u);
}

}  // namespace
}  // namespace gputopo::http
