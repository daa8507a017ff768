#include "src/agent/enforce_mode.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "src/agent/command_runner.h"
#include "src/agent/device_plugin.h"
#include "src/agent/pod_resources_client.h"
#include "src/agent/watched_pod_source.h"
#include "src/kube/kube_client.h"

namespace gputopo::agent {

Result<SharingConfig> ResolveSharing(const EnforceOptions& options) {
  if (options.replicas != 0 && !options.time_slicing_config.empty()) {
    return InvalidArgument("--replicas and --time-slicing-config are exclusive");
  }
  if (!options.time_slicing_config.empty()) {
    return LoadTimeSlicingConfig(options.time_slicing_config, options.resource_name);
  }
  SharingConfig sharing;
  sharing.advertised_resource = options.resource_name;
  if (options.replicas != 0) {
    if (options.replicas < 1 || options.replicas > kMaxReplicasPerGpu) {
      return InvalidArgument("--replicas must be 1.." + std::to_string(kMaxReplicasPerGpu));
    }
    sharing.replicas = options.replicas;
  }
  return sharing;
}

struct EnforceMode::Impl {
  Impl(EnforceOptions o, SharingConfig s, kube::KubeConfig config, const Clock& clock)
      : options(std::move(o)),
        sharing(std::move(s)),
        kube(
            std::move(config),
            [] {
              kube::ClientOptions client;
              client.component = "gputopo-agent";
              return client;
            }(),
            clock),
        pods(kube, options.node_name, sharing.advertised_resource),  // what pods request
        pod_resources(options.kubelet_dir + "/pod-resources/kubelet.sock") {}

  const EnforceOptions options;
  const SharingConfig sharing;
  kube::KubeClient kube;
  WatchedPodSource pods;
  PodResourcesClient pod_resources;
  std::unique_ptr<DevicePlugin> plugin;
  std::atomic<bool> started{false};  // plugin is set and serving (read by NotReadyReason)

  std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;  // GUARDED_BY(mu)
  std::thread rediscovery;

  void Rediscover() {
    std::unique_lock<std::mutex> lock(mu);
    while (!stopping) {
      cv.wait_for(lock, options.rediscover_period);
      if (stopping) break;
      lock.unlock();
      SubprocessRunner runner;
      Result<Discovery> found = DiscoverTopology(options.discovery, runner);
      if (!found.ok()) {
        spdlog::warn("enforce: discovery: {}", found.status().message());
      } else if (!plugin->SetTopology(std::move(found->machine))) {
        spdlog::warn("enforce: discovery found another GPU count; restart the agent to follow it");
      }
      lock.lock();
    }
  }
};

EnforceMode::EnforceMode(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
EnforceMode::~EnforceMode() { Stop(); }

Result<std::unique_ptr<EnforceMode>> EnforceMode::Create(EnforceOptions options,
                                                         kube::KubeConfig kube,
                                                         const Clock& clock) {
  if (options.node_name.empty()) return InvalidArgument("enforce mode needs --node-name");
  Result<SharingConfig> sharing = ResolveSharing(options);
  if (!sharing.ok()) return sharing.status();
  return std::unique_ptr<EnforceMode>(new EnforceMode(std::make_unique<Impl>(
      std::move(options), std::move(sharing).value(), std::move(kube), clock)));
}

Status EnforceMode::Start() {
  Impl& s = *impl_;
  if (s.plugin != nullptr) return Status::Ok();
  SubprocessRunner runner;
  Result<Discovery> found = DiscoverTopology(s.options.discovery, runner);
  if (!found.ok()) return found.status().WithContext("enforce mode: discovery");
  DevicePluginOptions plugin;
  plugin.kubelet_dir = s.options.kubelet_dir;
  plugin.resource_name = s.sharing.advertised_resource;
  plugin.replicas = s.sharing.replicas;
  plugin.fail_requests_greater_than_one = s.sharing.fail_requests_greater_than_one;
  plugin.trusted_schedulers = s.options.trusted_schedulers;
  s.pods.Start();  // admissions before its first list arrives list the API server themselves
  s.plugin =
      std::make_unique<DevicePlugin>(plugin, std::move(found->machine), s.pods, &s.pod_resources);
  if (Status started = s.plugin->Start(); !started.ok()) {
    s.plugin.reset();
    s.pods.Stop();
    return started.WithContext("enforce mode");
  }
  {
    std::lock_guard<std::mutex> lock(s.mu);
    s.stopping = false;
  }
  s.rediscovery = std::thread([&s] { s.Rediscover(); });
  s.started = true;
  spdlog::info("enforce: device plugin for {} on {} ({} replicas per GPU), {}",
               plugin.resource_name, s.plugin->socket_path(), plugin.replicas,
               s.plugin->registered() ? "registered with kubelet"
                                      : "not yet registered: " + s.plugin->last_register_error());
  return Status::Ok();
}

void EnforceMode::Stop() {
  if (impl_ == nullptr) return;
  impl_->started = false;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stopping = true;
    impl_->cv.notify_all();
  }
  if (impl_->rediscovery.joinable()) impl_->rediscovery.join();
  if (impl_->plugin != nullptr) impl_->plugin->Stop();
  impl_->pods.Stop();
}

const std::string& EnforceMode::advertised_resource() const {
  return impl_->sharing.advertised_resource;
}

std::string EnforceMode::NotReadyReason() const {
  if (!impl_->started) return "the device plugin is not serving";
  if (!impl_->plugin->registered()) {
    return "the device plugin is not registered with kubelet: " +
           impl_->plugin->last_register_error();
  }
  if (!impl_->pods.synced()) return "the pods of node " + impl_->options.node_name + " not listed";
  return "";
}

bool EnforceMode::registered() const {
  return impl_->plugin != nullptr && impl_->plugin->registered();
}

}  // namespace gputopo::agent
