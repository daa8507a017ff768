#include "src/http/http_server.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

namespace gputopo::http {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = net::ip::tcp;
using error_code = boost::system::error_code;

// simdjson reads up to this many bytes past the end of a body (SIMDJSON_PADDING); a body whose
// capacity leaves them is parsed in place.
constexpr size_t kBodyPadding = 64;
// After an error reply to a request whose body was not read, the client may still be sending
// it: read and discard this much, for at most kLingerTime, so that the close does not turn
// into a reset that loses the reply.
constexpr size_t kLingerBytes = 1u << 20;
constexpr auto kLingerTime = std::chrono::seconds(1);
constexpr size_t kReadChunk = 16u << 10;
constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";

using SslStream = beast::ssl_stream<beast::tcp_stream>;

bool IsHttpError(const error_code& ec) {
  return ec.category() == bhttp::make_error_code(bhttp::error::end_of_stream).category();
}

// A worker pool for one lane. A task goes to the worker that became idle last (a stack, not a
// queue), so that a client sending one request at a time, as kube-scheduler's scheduling loop
// does, is served by the same thread every time, with its caches, its malloc arena and its core
// warm: handing successive requests to the workers in turn made filter's p99 twice as long at
// 5000 nodes. With every worker busy, tasks wait in FIFO order.
class LanePool {
 public:
  explicit LanePool(int threads) {
    for (int i = 0; i < std::max(1, threads); ++i) workers_.push_back(std::make_unique<Worker>());
    for (auto& worker : workers_) threads_.emplace_back([this, w = worker.get()] { Run(*w); });
  }
  ~LanePool() { Stop(); }
  LanePool(const LanePool&) = delete;
  LanePool& operator=(const LanePool&) = delete;

  // Dropped once stopping.
  void Post(std::function<void()> task) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return;
    if (!idle_.empty()) {
      Worker* worker = idle_.back();
      idle_.pop_back();
      worker->task = std::move(task);
      worker->wake.notify_one();
      return;
    }
    queue_.push_back(std::move(task));
  }

  // Tasks running finish; queued ones are dropped (destroyed here, outside the lock).
  void Stop() {
    std::deque<std::function<void()>> dropped;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
      dropped.swap(queue_);
      for (auto& worker : workers_) worker->wake.notify_one();
    }
    for (std::thread& t : threads_) {
      if (t.joinable()) t.join();
    }
  }

 private:
  struct Worker {
    std::condition_variable wake;
    std::function<void()> task;  // GUARDED_BY(mutex_)
  };

  void Run(Worker& w) {
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      if (!w.task && !queue_.empty()) {
        w.task = std::move(queue_.front());
        queue_.pop_front();
      }
      if (!w.task) {
        if (stopping_) return;
        idle_.push_back(&w);
        w.wake.wait(lock, [&] { return w.task != nullptr || stopping_; });
        if (!w.task) return;  // stopping
      }
      std::function<void()> task = std::move(w.task);
      w.task = nullptr;
      lock.unlock();
      task();
      task = nullptr;  // what it holds goes before the next task starts
      lock.lock();
    }
  }

  std::mutex mutex_;
  std::vector<std::unique_ptr<Worker>> workers_;  // constant after construction
  std::vector<Worker*> idle_;                     // GUARDED_BY(mutex_): last idle at the back
  std::deque<std::function<void()>> queue_;       // GUARDED_BY(mutex_)
  bool stopping_ = false;                         // GUARDED_BY(mutex_)
  std::vector<std::thread> threads_;              // last: start once the members above exist
};

}  // namespace

class SessionBase : public std::enable_shared_from_this<SessionBase> {
 public:
  virtual ~SessionBase() = default;
  // Closes the connection unless a request is being handled or answered (then it closes after
  // the answer). Thread-safe: posts onto the session's strand.
  virtual void Drain() = 0;
};

struct HttpServer::Impl {
  Impl(HttpServerOptions o, Router r, ErrorRenderer e)
      : options(std::move(o)), router(std::move(r)), errors(std::move(e)) {
    options.max_inflight_body_bytes =
        std::max(options.max_inflight_body_bytes, options.max_body_bytes);
  }

  // The in-flight body budget.
  bool Reserve(size_t bytes) {
    size_t current = inflight.load(std::memory_order_relaxed);
    do {
      if (current + bytes > options.max_inflight_body_bytes) return false;
    } while (!inflight.compare_exchange_weak(current, current + bytes));
    return true;
  }
  // `lane`: the lane that handled the body of `body_bytes`, if a route took it. A body over
  // kReleaseMemoryAfterBytes starts a run of large bodies on its lane, which the next smaller
  // body on that lane ends: memory is released only when no lane is in such a run (see
  // HttpServerOptions::release_memory).
  void Release(size_t bytes, std::optional<Lane> lane = std::nullopt, size_t body_bytes = 0) {
    if (bytes == 0) return;
    if (lane) large_run[static_cast<size_t>(*lane)] = body_bytes > kReleaseMemoryAfterBytes;
    const size_t before = inflight.fetch_sub(bytes);
    const size_t handled = released_since_trim.fetch_add(bytes) + bytes;
    const bool in_large_run =
        std::any_of(large_run.begin(), large_run.end(), [](const auto& run) { return run.load(); });
    // Not once stopping: the admin lane may be gone (sessions are destroyed last).
    if (before == bytes && handled >= kReleaseMemoryAfterBytes && !in_large_run &&
        options.release_memory && !stopping && !trim_pending.exchange(true)) {
      released_since_trim = 0;
      ++memory_releases;
      admin->Post([this] {
        options.release_memory();
        trim_pending = false;
      });
    }
  }

  LanePool& Pool(Lane lane) {
    switch (lane) {
      case Lane::kBind:
        return *bind;
      case Lane::kAdmin:
      case Lane::kVerbs:
      case Lane::kInline:
        break;
    }
    return *admin;
  }

  uint64_t Register(const std::shared_ptr<SessionBase>& session) {
    std::lock_guard<std::mutex> lock(mutex);
    const uint64_t id = next_session++;
    sessions.emplace(id, session);
    return id;
  }
  void Unregister(uint64_t id) {
    std::lock_guard<std::mutex> lock(mutex);
    sessions.erase(id);
    if (sessions.empty()) changed.notify_all();
  }
  size_t open_sessions() const {
    std::lock_guard<std::mutex> lock(mutex);
    return sessions.size();
  }

  void Accept();

  // Constant after construction.
  HttpServerOptions options;
  const Router router;
  const ErrorRenderer errors;

  std::atomic<bool> stopping{false};
  std::atomic<size_t> inflight{0};
  std::atomic<size_t> released_since_trim{0};
  std::atomic<bool> trim_pending{false};
  // By Lane (kAdmin is the last); see Release.
  std::array<std::atomic<bool>, static_cast<size_t>(Lane::kAdmin) + 1> large_run{};
  std::atomic<uint64_t> memory_releases{0};
  std::atomic<uint64_t> accepted{0}, refused{0}, too_large{0}, busy{0}, malformed{0}, timed_out{0};

  mutable std::mutex mutex;
  std::condition_variable changed;  // sessions emptied, or stop requested
  std::unordered_map<uint64_t, std::weak_ptr<SessionBase>> sessions;  // GUARDED_BY(mutex)
  uint64_t next_session = 0;                                          // GUARDED_BY(mutex)
  bool stop_requested = false;                                        // GUARDED_BY(mutex)
  bool waited = false;                                                // GUARDED_BY(mutex)

  // Declared before the io_context: sessions destroyed with it still refer to them.
  std::optional<net::ssl::context> ssl;
  net::io_context io{1};
  std::optional<net::executor_work_guard<net::io_context::executor_type>> io_work;
  tcp::acceptor acceptor{io};
  std::optional<net::steady_timer> accept_retry;
  int port = 0;
  // After the io_context: destroyed first, with the handlers they still hold.
  std::unique_ptr<LanePool> bind, admin;
  std::vector<std::thread> io_threads;
};

namespace {

template <class Stream>
class Connection final : public SessionBase {
 public:
  template <class... Args>
  Connection(HttpServer::Impl& server, std::string remote, Args&&... args)
      : server_(server), remote_(std::move(remote)), stream_(std::forward<Args>(args)...) {}
  ~Connection() override {
    server_.Release(reserved_);
    server_.Unregister(id_);
  }

  void Run() {
    id_ = server_.Register(shared_from_this());
    net::dispatch(stream_.get_executor(), [self = Self()] { self->Begin(); });
  }

  void Drain() override {
    net::post(stream_.get_executor(), [self = Self()] {
      if (self->state_ == State::kIdle || self->state_ == State::kReading) {
        beast::get_lowest_layer(self->stream_).cancel();
      }
    });
  }

 private:
  enum class State : uint8_t { kIdle, kReading, kHandling, kWriting, kClosed };

  std::shared_ptr<Connection> Self() {
    return std::static_pointer_cast<Connection>(shared_from_this());
  }
  beast::tcp_stream& Lowest() { return beast::get_lowest_layer(stream_); }

  void Begin() {
    if constexpr (std::is_same_v<Stream, SslStream>) {
      state_ = State::kReading;
      Lowest().expires_after(server_.options.header_timeout);
      stream_.async_handshake(net::ssl::stream_base::server, [self = Self()](error_code ec) {
        if (ec) return self->Close();
        self->WaitForRequest();
      });
    } else {
      // For Write's attempt to send a reply at once: a synchronous write on this socket
      // returns would_block instead of waiting. Asynchronous operations are not affected.
      error_code ignored;
      Lowest().socket().non_blocking(true, ignored);
      WaitForRequest();
    }
  }

  // Keep-alive: the next request may come much later, or never.
  void WaitForRequest() {
    if (server_.stopping) return Close();
    state_ = State::kIdle;
    if (buffer_.size() > 0) {
      // Pipelined, or left from the last read: served from a fresh handler, so that a run of
      // pipelined requests does not nest one call deeper each.
      return net::post(stream_.get_executor(), [self = Self()] { self->ReadHeader(); });
    }
    Lowest().expires_after(server_.options.idle_timeout);
    stream_.async_read_some(buffer_.prepare(kReadChunk), [self = Self()](error_code ec, size_t n) {
      self->buffer_.commit(n);
      if (ec) return self->Close();
      self->ReadHeader();
    });
  }

  void ReadHeader() {
    state_ = State::kReading;
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(server_.options.max_header_bytes));
    parser_->body_limit(server_.options.max_body_bytes);
    error_code ec;
    ParseBuffered(ec);
    if (ec || parser_->is_header_done()) return OnHeader(ec);
    Lowest().expires_after(server_.options.header_timeout);
    bhttp::async_read_header(stream_, buffer_, *parser_,
                             [self = Self()](error_code e, size_t) { self->OnHeader(e); });
  }

  // Parses what has been read and not parsed yet: as far as the header without eager(), as far
  // as it goes with it. A whole request usually comes in the read that woke the connection;
  // parsing it here saves queueing a completion per step (a system call each, as the I/O
  // thread polls before running queued work). Errors are those beast's reads give.
  void ParseBuffered(error_code& ec) {
    while (buffer_.size() > 0 && !parser_->is_done()) {
      const size_t used = parser_->put(buffer_.data(), ec);
      buffer_.consume(used);
      if (ec == bhttp::error::need_more) {
        ec = {};
        return;
      }
      if (ec || used == 0 || (!parser_->eager() && parser_->is_header_done())) return;
    }
  }

  void OnHeader(error_code ec) {
    if (ec) return OnReadError(ec);
    auto& message = parser_->get();
    if (message.count(bhttp::field::content_length) > 1) {
      ++server_.malformed;  // RFC 9112 6.3: a request smuggling vector; never guess
      return Reject(400, "malformed HTTP request: more than one Content-Length");
    }
    if (message.find(bhttp::field::content_encoding) != message.end()) {
      // kube-scheduler never compresses; refusing compressed bodies closes the door on
      // decompression bombs that the body limit would not see.
      return Reject(415, "compressed bodies are not accepted");
    }
    size_t need = 0;
    if (const auto length = parser_->content_length()) {
      need = static_cast<size_t>(*length);
    } else if (parser_->chunked()) {
      need = server_.options.max_body_bytes;  // unknown until the end: count the most it can be
    }
    if (need > 0 && !server_.Reserve(need)) {
      ++server_.busy;
      return Reject(503, "too many request bodies in flight; retry");
    }
    reserved_ = need;
    if (const auto length = parser_->content_length(); length && *length > 0) {
      message.body().reserve(static_cast<size_t>(*length) + kBodyPadding);
    }
    if (beast::iequals(message[bhttp::field::expect], "100-continue")) {
      Lowest().expires_after(server_.options.write_timeout);
      net::async_write(stream_, net::buffer(kContinue.data(), kContinue.size()),
                       [self = Self()](error_code e, size_t) {
                         if (e) return self->Close();
                         self->ReadBody();
                       });
      return;
    }
    ReadBody();
  }

  void ReadBody() {
    parser_->eager(true);
    error_code ec;
    ParseBuffered(ec);
    if (ec || parser_->is_done()) return OnBody(ec);
    Lowest().expires_after(server_.options.body_timeout);
    bhttp::async_read(stream_, buffer_, *parser_,
                      [self = Self()](error_code e, size_t) { self->OnBody(e); });
  }

  void OnBody(error_code ec) {
    if (ec) return OnReadError(ec);
    bhttp::request<bhttp::string_body> message = parser_->release();
    parser_.reset();
    keep_alive_ = message.keep_alive();
    version_ = message.version();
    HttpRequest request;
    request.method = std::string(message.method_string());
    request.target = std::string(message.target());
    request.path = request.target.substr(0, request.target.find('?'));
    request.content_type = std::string(message[bhttp::field::content_type]);
    request.authorization = std::string(message[bhttp::field::authorization]);
    request.proxied_authorization = std::string(message["X-Gputopo-Authorization"]);
    request.remote_addr = remote_;
    request.body = std::move(message.body());
    Route route = server_.router(request.method, request.path);
    state_ = State::kHandling;
    if (!route.handler) {
      HttpResponse response;
      response.status = 404;
      response.body = "gputopo: 404 " + request.path.substr(0, 200) + "\n";
      ReleaseBody();
      return Write(std::move(response));
    }
    if (route.lane == Lane::kInline || route.lane == Lane::kVerbs) {
      // On this I/O thread, which has the body in its cache (see kVerbs).
      HttpResponse response = Handle(route, request);
      const size_t body_bytes = request.body.size();
      request.body = std::string();
      ReleaseBody(route.lane, body_bytes);
      return Write(std::move(response));
    }
    server_.Pool(route.lane)
        .Post([self = Self(), route = std::move(route), request = std::move(request)]() mutable {
          HttpResponse response = Handle(route, request);
          const size_t body_bytes = request.body.size();
          request.body = std::string();  // freed before its budget is
          self->ReleaseBody(route.lane, body_bytes);
          net::post(self->stream_.get_executor(), [self, response = std::move(response)]() mutable {
            self->Write(std::move(response));
          });
        });
  }

  static HttpResponse Handle(const Route& route, const HttpRequest& request) {
    HttpResponse response;
    try {
      route.handler(request, response);
    } catch (const std::exception& e) {
      spdlog::error("internal error serving {} {}: {}", request.method, request.path.substr(0, 200),
                    e.what());
      response = HttpResponse{500, "text/plain", "gputopo: internal error\n", {}};
    }
    return response;
  }

  // `lane` and `body_bytes`: see Impl::Release.
  void ReleaseBody(std::optional<Lane> lane = std::nullopt, size_t body_bytes = 0) {
    server_.Release(reserved_, lane, body_bytes);
    reserved_ = 0;
  }

  void OnReadError(error_code ec) {
    if (ec == bhttp::error::body_limit) {
      ++server_.too_large;
      return Reject(413, "request body larger than " +
                             std::to_string(server_.options.max_body_bytes) + " bytes");
    }
    if (ec == bhttp::error::header_limit) {
      ++server_.malformed;
      return Reject(431, "request header larger than " +
                             std::to_string(server_.options.max_header_bytes) + " bytes");
    }
    if (ec == beast::error::timeout) {
      ++server_.timed_out;
      spdlog::debug("closed a connection from {}: request not complete in time", remote_);
      return Close();
    }
    if (IsHttpError(ec) && ec != bhttp::error::end_of_stream &&
        ec != bhttp::error::partial_message) {
      ++server_.malformed;
      return Reject(400, "malformed HTTP request: " + ec.message());
    }
    Close();  // the peer went away, or we are stopping
  }

  // An answer given instead of handling the request; the connection closes after it (the
  // request's body, if any, was not read).
  void Reject(int status, const std::string& message) {
    spdlog::warn("rejected a request from {}: {} {}", remote_, status, message);
    HttpResponse response = server_.errors(status, message);
    response.status = status;
    if (status == 503) response.headers.emplace_back("Retry-After", "1");
    keep_alive_ = false;
    linger_ = true;
    parser_.reset();
    ReleaseBody();
    Write(std::move(response));
  }

  void Write(HttpResponse response) {
    state_ = State::kWriting;
    auto out = std::make_unique<bhttp::response<bhttp::string_body>>(
        static_cast<bhttp::status>(response.status), version_);
    out->set(bhttp::field::content_type, response.content_type);
    for (const auto& [name, value] : response.headers) out->set(name, value);
    out->body() = std::move(response.body);
    out->keep_alive(keep_alive_ && !server_.stopping);
    out->prepare_payload();
    const bool keep = out->keep_alive();
    response_ = std::move(out);
    serializer_.emplace(*response_);
    if constexpr (!std::is_same_v<Stream, SslStream>) {
      // A reply that fits the socket's send buffer (nearly all) is sent here and now: no
      // timer to arm and no completion to queue, each a system call or two on the request
      // path. The rest of a larger one goes asynchronously, under the write deadline.
      error_code ec = net::error::would_block;  // a socket left blocking is not tried
      if (Lowest().socket().non_blocking()) bhttp::write(Lowest().socket(), *serializer_, ec);
      if (!ec) return AfterWrite(keep);
      if (ec != net::error::would_block && ec != net::error::try_again) return Close();
    }
    Lowest().expires_after(server_.options.write_timeout);
    bhttp::async_write(stream_, *serializer_, [self = Self(), keep](error_code ec, size_t) {
      if (ec) return self->Close();
      self->AfterWrite(keep);
    });
  }

  void AfterWrite(bool keep) {
    serializer_.reset();
    response_.reset();
    if (!keep) return linger_ ? Linger() : Close();
    WaitForRequest();
  }

  void Linger() {
    if constexpr (std::is_same_v<Stream, SslStream>) {
      Close();
    } else {
      error_code ignored;
      Lowest().socket().shutdown(tcp::socket::shutdown_send, ignored);
      Lowest().expires_after(kLingerTime);
      Discard();
    }
  }
  void Discard() {
    discard_.resize(kReadChunk);
    stream_.async_read_some(net::buffer(discard_), [self = Self()](error_code ec, size_t n) {
      self->discarded_ += n;
      if (ec || self->discarded_ >= kLingerBytes) return self->Close();
      self->Discard();
    });
  }

  void Close() {
    if (state_ == State::kClosed) return;
    state_ = State::kClosed;
    ReleaseBody();
    if constexpr (std::is_same_v<Stream, SslStream>) {
      Lowest().expires_after(kLingerTime);
      stream_.async_shutdown([self = Self()](error_code) { self->Lowest().close(); });
    } else {
      error_code ignored;
      Lowest().socket().shutdown(tcp::socket::shutdown_both, ignored);
      Lowest().close();
    }
  }

  HttpServer::Impl& server_;
  const std::string remote_;
  Stream stream_;
  uint64_t id_ = 0;
  // Touched on the strand, except reserved_ while a lane handles the request (the post to the
  // lane and back orders those accesses).
  State state_ = State::kIdle;
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  std::unique_ptr<bhttp::response<bhttp::string_body>> response_;
  std::optional<bhttp::response_serializer<bhttp::string_body>> serializer_;  // of *response_
  size_t reserved_ = 0;
  unsigned version_ = 11;
  bool keep_alive_ = true;
  bool linger_ = false;
  std::string discard_;
  size_t discarded_ = 0;
};

}  // namespace

void HttpServer::Impl::Accept() {
  acceptor.async_accept(net::make_strand(io), [this](error_code ec, tcp::socket socket) {
    if (ec) {
      if (ec == net::error::operation_aborted || !acceptor.is_open()) return;
      // Out of descriptors, say: try again shortly instead of spinning.
      spdlog::warn("accept failed: {}", ec.message());
      accept_retry->expires_after(std::chrono::milliseconds(50));
      accept_retry->async_wait([this](error_code e) {
        if (!e && !stopping) Accept();
      });
      return;
    }
    if (stopping) return;
    if (open_sessions() >= options.max_connections) {
      ++refused;
      error_code ignored;
      socket.close(ignored);
    } else {
      ++accepted;
      error_code ignored;
      socket.set_option(tcp::no_delay(true), ignored);  // replies are small and answered at once
      const auto endpoint = socket.remote_endpoint(ignored);
      std::string remote = endpoint.address().to_string();
      if (ssl) {
        std::make_shared<Connection<SslStream>>(*this, std::move(remote), std::move(socket), *ssl)
            ->Run();
      } else {
        std::make_shared<Connection<beast::tcp_stream>>(*this, std::move(remote), std::move(socket))
            ->Run();
      }
    }
    Accept();
  });
}

HttpServer::HttpServer(HttpServerOptions options, Router router, ErrorRenderer errors)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(router), std::move(errors))) {}

HttpServer::~HttpServer() {
  RequestStop();
  Wait();
}

Status HttpServer::Start() {
  Impl& s = *impl_;
  if (!s.options.tls_cert_file.empty()) {
    s.ssl.emplace(net::ssl::context::tls_server);
    error_code ec;
    s.ssl->set_options(net::ssl::context::default_workarounds | net::ssl::context::no_sslv2 |
                           net::ssl::context::no_sslv3 | net::ssl::context::no_tlsv1 |
                           net::ssl::context::no_tlsv1_1,
                       ec);
    s.ssl->use_certificate_chain_file(s.options.tls_cert_file, ec);
    if (!ec) s.ssl->use_private_key_file(s.options.tls_key_file, net::ssl::context::pem, ec);
    if (ec) {
      return InvalidArgument("cannot load the TLS certificate " + s.options.tls_cert_file +
                             " and key " + s.options.tls_key_file + ": " + ec.message());
    }
  }
  error_code ec;
  const auto address =
      net::ip::make_address(s.options.host == "localhost" ? "127.0.0.1" : s.options.host, ec);
  const std::string where = s.options.host + ":" + std::to_string(s.options.port);
  if (ec) return InvalidArgument("cannot listen on " + where + ": not an IP address");
  const tcp::endpoint endpoint(address, static_cast<unsigned short>(s.options.port));
  s.acceptor.open(endpoint.protocol(), ec);
  if (!ec) s.acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) s.acceptor.bind(endpoint, ec);
  if (!ec) s.acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) return Unavailable("cannot listen on " + where + ": " + ec.message());
  s.port = s.acceptor.local_endpoint().port();
  s.accept_retry.emplace(s.io);
  s.bind = std::make_unique<LanePool>(s.options.bind_threads);
  s.admin = std::make_unique<LanePool>(s.options.admin_threads);
  s.io_work.emplace(net::make_work_guard(s.io));
  s.Accept();
  // The verbs run on I/O threads (kVerbs): verb_threads more of them.
  const int io_threads = std::max(1, s.options.io_threads) + std::max(1, s.options.verb_threads);
  for (int i = 0; i < io_threads; ++i) {
    s.io_threads.emplace_back([&s] { s.io.run(); });
  }
  return Status::Ok();
}

int HttpServer::port() const { return impl_->port; }

bool HttpServer::stopping() const { return impl_->stopping; }

void HttpServer::RequestStop() {
  Impl& s = *impl_;
  if (s.stopping.exchange(true)) return;
  std::vector<std::shared_ptr<SessionBase>> open;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.stop_requested = true;
    for (auto& [id, weak] : s.sessions) {
      if (auto session = weak.lock()) open.push_back(std::move(session));
    }
    s.changed.notify_all();
  }
  net::post(s.io, [&s] {
    error_code ignored;
    s.acceptor.close(ignored);
    if (s.accept_retry) s.accept_retry->cancel();
  });
  for (const auto& session : open) session->Drain();
}

void HttpServer::Wait() {
  Impl& s = *impl_;
  {
    std::unique_lock<std::mutex> lock(s.mutex);
    s.changed.wait(lock, [&] { return s.stop_requested; });
    if (s.waited) return;
    s.waited = true;
    const auto deadline = std::chrono::steady_clock::now() + s.options.grace_period;
    if (!s.changed.wait_until(lock, deadline, [&] { return s.sessions.empty(); })) {
      spdlog::warn("{} connection(s) still busy after the {} ms grace period; closing them",
                   s.sessions.size(), s.options.grace_period.count());
    }
  }
  if (s.io_work) s.io_work.reset();
  s.io.stop();
  for (std::thread& t : s.io_threads) t.join();
  s.io_threads.clear();
  if (s.bind) s.bind->Stop();
  if (s.admin) s.admin->Stop();
}

HttpServerStats HttpServer::Stats() const {
  const Impl& s = *impl_;
  HttpServerStats out;
  out.connections_accepted = s.accepted;
  out.connections_refused = s.refused;
  out.connections_open = s.open_sessions();
  out.inflight_body_bytes = s.inflight;
  out.rejected_too_large = s.too_large;
  out.rejected_busy = s.busy;
  out.rejected_malformed = s.malformed;
  out.timed_out = s.timed_out;
  out.memory_releases = s.memory_releases;
  return out;
}

}  // namespace gputopo::http
