#include "src/agent/agent_server.h"

#include <spdlog/spdlog.h>

#include <condition_variable>
#include <mutex>
#include <thread>
#include <utility>

#include "src/agent/command_runner.h"
#include "src/agent/observer.h"
#include "src/agent/pod_resources_client.h"
#include "src/agent/topology_publisher.h"
#include "src/app/background_priority.h"
#include "src/http/http_server.h"
#include "src/kube/kube_client.h"
#include "src/observability/metrics.h"

namespace gputopo::agent {

struct AgentServer::Impl {
  Impl(AgentOptions o, kube::KubeConfig config, const Clock& c)
      : options(std::move(o)),
        clock(c),
        kube(
            std::move(config),
            [] {
              kube::ClientOptions client;
              client.component = "gputopo-agent";
              return client;
            }(),
            c),
        pod_resources(options.kubelet_dir + "/pod-resources/kubelet.sock") {}

  http::Route Routes(std::string_view method, std::string_view path) {
    if (method != "GET" && method != "HEAD") return {};
    if (path == "/healthz") {
      return {http::Lane::kInline,
              [](const http::HttpRequest&, http::HttpResponse& res) { res.body = "ok\n"; }};
    }
    if (path == "/readyz") {
      return {http::Lane::kInline, [this](const http::HttpRequest&, http::HttpResponse& res) {
                const std::string more = enforce != nullptr ? enforce->NotReadyReason() : "";
                if (observer != nullptr && observer->ready() && more.empty()) {
                  res.body = "ok\n";
                  return;
                }
                res.status = 503;
                std::string why = observer != nullptr ? observer->last_error() : "";
                if (observer != nullptr && observer->ready()) why = more;
                res.body = "not ready: " + (why.empty() ? std::string("no pass yet") : why) + "\n";
              }};
    }
    if (path == "/metrics") {
      return {http::Lane::kAdmin, [this](const http::HttpRequest&, http::HttpResponse& res) {
                res.content_type = "text/plain; version=0.0.4; charset=utf-8";
                res.body = metrics.Render();
              }};
    }
    return {};
  }

  // Publishes `topology` on the Node; failures are logged (the next rediscovery tries again).
  void PublishTopology(const MachineTopology& topology) {
    if (!options.publish_topology || topology.gpu_count() == 0) return;
    Result<PublishOutcome> published = publisher.Publish(topology);
    if (!published.ok()) {
      spdlog::warn("agent: cannot publish the topology on node {}: {}", options.node_name,
                   published.status().message());
    } else if (*published == PublishOutcome::kWritten) {
      spdlog::info("agent: published the topology of node {} ({} GPUs)", options.node_name,
                   topology.gpu_count());
    }
  }

  // Every `options.rediscover`: discovery again, the document published when it changed, and
  // the health advertised to kubelet in enforce mode.
  void RediscoverLoop() {
    std::unique_lock<std::mutex> lock(mu);
    while (!stop) {
      if (cv.wait_for(lock, options.rediscover, [&] { return stop; })) return;
      lock.unlock();
      SubprocessRunner runner;
      Result<Discovery> found = DiscoverTopology(options.discovery, runner);
      if (found.ok()) {
        PublishTopology(found->machine);
        if (enforce != nullptr) enforce->SetTopology(std::move(found->machine));
      } else {
        spdlog::warn("agent: rediscovery failed: {}", found.status().message());
      }
      lock.lock();
    }
  }

  AgentOptions options;
  const Clock& clock;
  kube::KubeClient kube;
  TopologyPublisher publisher{kube, options.node_name};
  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;  // GUARDED_BY(mu)
  std::thread rediscover_thread;
  PodResourcesClient pod_resources;
  observability::MetricsRegistry metrics;
  std::unique_ptr<EnforceMode> enforce;  // enforce mode only; set by Create
  std::unique_ptr<Observer> observer;    // set by Start()
  std::unique_ptr<http::HttpServer> http;
};

Result<std::unique_ptr<AgentServer>> AgentServer::Create(AgentOptions options,
                                                         kube::KubeConfig kube,
                                                         const Clock& clock) {
  if (options.node_name.empty()) return InvalidArgument("--node-name is required");
  if (options.period.count() <= 0) return InvalidArgument("the observe period must be positive");
  std::optional<EnforceOptions> enforce = std::move(options.enforce);
  auto impl = std::make_unique<Impl>(std::move(options), std::move(kube), clock);
  if (enforce) {
    enforce->node_name = impl->options.node_name;
    enforce->kubelet_dir = impl->options.kubelet_dir;
    enforce->resource_name = impl->options.resource_name;
    Result<std::unique_ptr<EnforceMode>> made =
        EnforceMode::Create(std::move(*enforce), impl->kube, impl->metrics);
    if (!made.ok()) return made.status();
    impl->enforce = std::move(made).value();
    impl->options.resource_name = impl->enforce->advertised_resource();  // observed as renamed
  }
  return std::unique_ptr<AgentServer>(new AgentServer(std::move(impl)));
}

AgentServer::AgentServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

AgentServer::~AgentServer() {
  RequestStop();
  Wait();
}

Status AgentServer::Start() {
  Impl& s = *impl_;
  MachineTopology topology;
  if (s.options.topology) {
    topology = *s.options.topology;
  } else {
    SubprocessRunner runner;
    Result<Discovery> found = DiscoverTopology(s.options.discovery, runner);
    if (found.ok()) {
      spdlog::info("agent: {} GPUs discovered through {}", found->machine.gpu_count(),
                   found->source);
      topology = found->machine;
    } else if (s.enforce != nullptr) {
      return found.status().WithContext("enforce mode: discovery");
    } else {
      // Observe mode still works for UUID device IDs (NVIDIA's default); index forms will be
      // reported unmapped.
      spdlog::warn("agent: no topology ({}); only GPU-<uuid> device IDs can be mapped",
                   found.status().message());
    }
  }
  if (s.enforce != nullptr) {
    if (Status started = s.enforce->Start(topology); !started.ok()) return started;
  }
  s.PublishTopology(topology);
  ObserverOptions observe;
  observe.node_name = s.options.node_name;
  observe.resource_name = s.options.resource_name;
  observe.period = s.options.period;
  // In enforce mode the plugin's admissions read PodResources from the observer's polls.
  s.observer = std::make_unique<Observer>(
      observe, s.kube, s.pod_resources, std::move(topology), s.clock, s.metrics,
      s.enforce != nullptr ? s.enforce->pod_resources_view() : nullptr);

  http::HttpServerOptions http;
  http.host = s.options.listen_host;
  http.port = s.options.listen_port;
  http.max_body_bytes = 64u << 10;  // probes and scrapes have no body
  http.max_inflight_body_bytes = 1u << 20;
  http.bind_threads = 1;
  http.admin_threads = 1;
  s.http = std::make_unique<http::HttpServer>(
      http, [&s](std::string_view method, std::string_view path) { return s.Routes(method, path); },
      [](int status, std::string_view message) {
        http::HttpResponse res;
        res.status = status;
        res.body = std::string(message) + "\n";
        return res;
      });
  if (Status started = s.http->Start(); !started.ok()) return started;
  // Passes (a PodResources list, a pod list, PATCHes) yield the CPU to the plugin's admissions,
  // which kubelet waits on (SCHED_BATCH at nice 10, as the extender's background work).
  s.observer->Start(app::StartBackgroundThread);
  if (!s.options.topology && (s.options.publish_topology || s.enforce != nullptr) &&
      s.options.rediscover.count() > 0) {
    s.rediscover_thread = std::thread([&s] { s.RediscoverLoop(); });
  }
  spdlog::info("agent: observing node {} ({} from {}); /healthz /readyz /metrics on {}:{}",
               s.options.node_name, s.options.resource_name, s.pod_resources.socket_path(),
               s.options.listen_host, s.http->port());
  return Status::Ok();
}

int AgentServer::port() const { return impl_->http != nullptr ? impl_->http->port() : -1; }

bool AgentServer::ready() const {
  return impl_->observer != nullptr && impl_->observer->ready() &&
         (impl_->enforce == nullptr || impl_->enforce->NotReadyReason().empty());
}

void AgentServer::RequestStop() {
  if (impl_->http != nullptr) impl_->http->RequestStop();
}

void AgentServer::Wait() {
  if (impl_->http != nullptr) impl_->http->Wait();
  if (impl_->observer != nullptr) impl_->observer->Stop();
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stop = true;
  }
  impl_->cv.notify_all();
  if (impl_->rediscover_thread.joinable()) impl_->rediscover_thread.join();
  if (impl_->enforce != nullptr) impl_->enforce->Stop();
}

}  // namespace gputopo::agent
