// EnforceMode: what `gputopo agent run --mode enforce` adds to observe mode: the agent is
// kubelet's device plugin for the resource (device_plugin.h). It owns the parts: the node's
// topology (discovered once at Start), an API server client for the pods bound to this node,
// kubelet's PodResources client, and the DevicePlugin; discovery runs again every
// rediscover_period on a thread of its own, for health.
//
// Thread safety: Start and Stop from one thread.
#ifndef GPUTOPO_SRC_AGENT_ENFORCE_MODE_H_
#define GPUTOPO_SRC_AGENT_ENFORCE_MODE_H_

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "gputopo/clock.h"
#include "gputopo/status.h"
#include "src/agent/time_slicing_config.h"
#include "src/agent/topology_discovery.h"
#include "src/kube/kube_config.h"

namespace gputopo::agent {

struct EnforceOptions {
  std::string node_name;                         // required
  std::string kubelet_dir = "/var/lib/kubelet";  // device-plugins/ and pod-resources/ under it
  std::string resource_name = "nvidia.com/gpu";
  int replicas = 0;                 // --replicas; 0: not given
  std::string time_slicing_config;  // --time-slicing-config; empty: not given
  std::vector<std::string> trusted_schedulers = {"gputopo-scheduler"};
  DiscoveryOptions discovery;
  // How often discovery runs again, so that a GPU that stops answering NVML is advertised
  // unhealthy (ListAndWatch sends the new list).
  std::chrono::milliseconds rediscover_period{30000};
};

// The sharing `options` state: --replicas, or the time-slicing config file, or 1 replica.
// InvalidArgument when both are given, or replicas are out of range; the config's own errors.
Result<SharingConfig> ResolveSharing(const EnforceOptions& options);

class EnforceMode {
 public:
  // Error for options that cannot work (no node name, sharing as ResolveSharing).
  static Result<std::unique_ptr<EnforceMode>> Create(EnforceOptions options, kube::KubeConfig kube,
                                                     const Clock& clock);
  ~EnforceMode();  // Stop()s
  EnforceMode(const EnforceMode&) = delete;
  EnforceMode& operator=(const EnforceMode&) = delete;

  // Discovers the topology, serves the device plugin and registers with kubelet (retried until
  // kubelet answers), and starts rediscovering. Error when discovery fails or the plugin socket
  // cannot be served.
  Status Start();
  void Stop();
  bool registered() const;
  // Why the agent cannot steer admissions yet (empty once it can): the plugin not started or
  // not registered with kubelet, or the node's pods not listed yet. For /readyz; thread-safe.
  std::string NotReadyReason() const;
  // The resource registered with kubelet: --resource-name, or the config's rename of it. Pods
  // request it, and PodResources lists it.
  const std::string& advertised_resource() const;

 private:
  struct Impl;
  explicit EnforceMode(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gputopo::agent

#endif  // GPUTOPO_SRC_AGENT_ENFORCE_MODE_H_
