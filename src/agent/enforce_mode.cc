#include "src/agent/enforce_mode.h"

#include <spdlog/spdlog.h>

#include <atomic>

#include "src/agent/device_plugin.h"
#include "src/agent/pod_resources_client.h"
#include "src/agent/watched_pod_source.h"

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
  Impl(EnforceOptions o, SharingConfig s, kube::KubeClient& kube, observability::MetricsRegistry& m)
      : options(std::move(o)),
        sharing(std::move(s)),
        metrics(m),
        pods(kube, options.node_name, sharing.advertised_resource),  // what pods request
        pod_resources(options.kubelet_dir + "/pod-resources/kubelet.sock") {}

  const EnforceOptions options;
  const SharingConfig sharing;
  observability::MetricsRegistry& metrics;
  WatchedPodSource pods;
  PodResourcesClient pod_resources;
  std::unique_ptr<DevicePlugin> plugin;  // set by Start, before `started`
  std::atomic<bool> started{false};      // plugin is set and serving
};

EnforceMode::EnforceMode(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
EnforceMode::~EnforceMode() { Stop(); }

Result<std::unique_ptr<EnforceMode>> EnforceMode::Create(EnforceOptions options,
                                                         kube::KubeClient& kube,
                                                         observability::MetricsRegistry& metrics) {
  if (options.node_name.empty()) return InvalidArgument("enforce mode needs --node-name");
  Result<SharingConfig> sharing = ResolveSharing(options);
  if (!sharing.ok()) return sharing.status();
  return std::unique_ptr<EnforceMode>(new EnforceMode(
      std::make_unique<Impl>(std::move(options), std::move(sharing).value(), kube, metrics)));
}

Status EnforceMode::Start(MachineTopology topology) {
  Impl& s = *impl_;
  if (s.plugin != nullptr) return Status::Ok();
  if (topology.gpu_count() == 0) {
    return FailedPrecondition("enforce mode: no GPU discovered, nothing to advertise");
  }
  DevicePluginOptions plugin;
  plugin.kubelet_dir = s.options.kubelet_dir;
  plugin.resource_name = s.sharing.advertised_resource;
  plugin.replicas = s.sharing.replicas;
  plugin.fail_requests_greater_than_one = s.sharing.fail_requests_greater_than_one;
  plugin.trusted_schedulers = s.options.trusted_schedulers;
  s.pods.Start();  // admissions before its first list arrives list the API server themselves
  s.plugin = std::make_unique<DevicePlugin>(plugin, std::move(topology), s.pods, &s.pod_resources,
                                            &s.metrics);
  if (Status started = s.plugin->Start(); !started.ok()) {
    s.plugin.reset();
    s.pods.Stop();
    return started.WithContext("enforce mode");
  }
  s.started = true;
  spdlog::info("enforce: device plugin for {} on {} ({} replicas per GPU), {}",
               plugin.resource_name, s.plugin->socket_path(), plugin.replicas,
               s.plugin->registered() ? "registered with kubelet"
                                      : "not yet registered: " + s.plugin->last_register_error());
  return Status::Ok();
}

void EnforceMode::SetTopology(MachineTopology topology) {
  if (!impl_->started) return;
  if (!impl_->plugin->SetTopology(std::move(topology))) {
    spdlog::warn("enforce: discovery found another GPU count; restart the agent to follow it");
  }
}

void EnforceMode::Stop() {
  if (impl_ == nullptr) return;
  impl_->started = false;
  if (impl_->plugin != nullptr) impl_->plugin->Stop();
  impl_->pods.Stop();
}

PodResourcesView* EnforceMode::pod_resources_view() {
  return impl_->started ? &impl_->plugin->pod_resources_view() : nullptr;
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
