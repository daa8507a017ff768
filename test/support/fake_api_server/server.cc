// FakeApiServer::Impl lifecycle: construction from Options, Start() on 127.0.0.1, Stop().
#include <algorithm>
#include <exception>

#include "test/support/fake_api_server/accepted_sockets.h"
#include "test/support/fake_api_server/impl.h"

namespace gputopo::testing {
namespace {

constexpr auto kStartWait = std::chrono::seconds(5);

}  // namespace

using fake_api::ApiError;
using fake_api::History;
using fake_api::SteadyClock;

FakeApiServer::Impl::Impl(Options options)
    : now_(options.now ? std::move(options.now) : [] { return std::chrono::system_clock::now(); }),
      worker_threads_(std::max<size_t>(options.worker_threads, 2)),
      keep_alive_timeout_s_(std::max(options.keep_alive_timeout_s, 1)),
      keep_alive_max_count_(std::max<size_t>(options.keep_alive_max_count, 1)),
      too_large_wait_(options.too_large_resource_version_wait),
      write_latency_(options.write_latency),
      history_window_(std::max<size_t>(options.history_window, 1)),
      bookmark_interval_(std::max(options.bookmark_interval, std::chrono::milliseconds(1))) {
  for (History& history : history_) history.list_resource_version = resource_version_;
}

FakeApiServer::Impl::~Impl() { Stop(); }

bool FakeApiServer::Impl::Start() {
  if (listen_thread_.joinable()) return true;
  server_ = std::make_unique<httplib::Server>();
  const size_t threads = worker_threads_;
  server_->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  server_->set_keep_alive_timeout(keep_alive_timeout_s_);
  server_->set_keep_alive_max_count(keep_alive_max_count_);
  server_->set_tcp_nodelay(true);
  httplib::Server::Handler handler = [this](const httplib::Request& req, httplib::Response& res) {
    Handle(req, res);
  };
  const std::string any = ".*";
  server_->Get(any, handler);
  server_->Post(any, handler);
  server_->Put(any, handler);
  server_->Patch(any, handler);
  server_->Delete(any, handler);
  server_->Options(any, handler);
  server_->set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
        Reply(res, ApiError{500, "InternalError", "Internal error occurred: exception", {}});
      });
  int bound_port = port_.load();
  if (bound_port == 0) {
    bound_port = server_->bind_to_any_port("127.0.0.1");
    if (bound_port <= 0) {
      server_.reset();
      return false;
    }
  } else if (!server_->bind_to_port("127.0.0.1", bound_port)) {
    server_.reset();
    return false;
  }
  port_ = bound_port;
  httplib::Server* server = server_.get();
  listen_thread_ = std::thread([server] { server->listen_after_bind(); });
  // stop() is a no-op until the accept loop runs, so wait for it.
  const auto deadline = SteadyClock::now() + kStartWait;
  while (!server_->is_running() && SteadyClock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return server_->is_running();
}

void FakeApiServer::Impl::Stop() {
  if (!listen_thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    for (auto& [id, watcher] : watchers_) watcher->cv.notify_all();
    state_cv_.notify_all();
  }
  server_->stop();
  fake_api::ShutDownAcceptedConnections(port_.load());
  listen_thread_.join();
  server_.reset();
  std::lock_guard<std::mutex> lock(mu_);
  stopping_ = false;
}

}  // namespace gputopo::testing
