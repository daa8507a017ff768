// EnforceMode: what `gputopo agent run --mode enforce` adds to observe mode: the agent is
// kubelet's device plugin for the resource (device_plugin.h). It owns the parts: a watched cache
// of the pods bound to this node (through the agent's API server client), kubelet's PodResources
// client, and the DevicePlugin. AgentServer owns it and discovers the topology for it: once
// before Start, then again at each rediscovery (SetTopology), which is how a GPU that stops
// answering NVML is advertised unhealthy.
//
// Thread safety: Start and Stop from one thread; SetTopology, NotReadyReason, registered and
// advertised_resource from any.
#ifndef GPUTOPO_SRC_AGENT_ENFORCE_MODE_H_
#define GPUTOPO_SRC_AGENT_ENFORCE_MODE_H_

#include <memory>
#include <string>
#include <vector>

#include "gputopo/machine_topology.h"
#include "gputopo/status.h"
#include "src/agent/pod_resources_view.h"
#include "src/agent/time_slicing_config.h"
#include "src/kube/kube_client.h"
#include "src/observability/metrics.h"

namespace gputopo::agent {

struct EnforceOptions {
  std::string node_name;                         // required
  std::string kubelet_dir = "/var/lib/kubelet";  // device-plugins/ and pod-resources/ under it
  std::string resource_name = "nvidia.com/gpu";
  int replicas = 0;                 // --replicas; 0: not given
  std::string time_slicing_config;  // --time-slicing-config; empty: not given
  std::vector<std::string> trusted_schedulers = {"gputopo-scheduler"};
};

// The sharing `options` state: --replicas, or the time-slicing config file, or 1 replica.
// InvalidArgument when both are given, or replicas are out of range; the config's own errors.
Result<SharingConfig> ResolveSharing(const EnforceOptions& options);

class EnforceMode {
 public:
  // Error for options that cannot work (no node name, sharing as ResolveSharing). `kube` and
  // `metrics` must outlive it; the admissions are counted in `metrics`
  // (gputopo_agent_admissions_total, gputopo_agent_admission_duration_seconds).
  static Result<std::unique_ptr<EnforceMode>> Create(EnforceOptions options, kube::KubeClient& kube,
                                                     observability::MetricsRegistry& metrics);
  ~EnforceMode();  // Stop()s
  EnforceMode(const EnforceMode&) = delete;
  EnforceMode& operator=(const EnforceMode&) = delete;

  // Serves the device plugin for the GPUs of `topology` (as discovered) and registers with
  // kubelet (retried until kubelet answers). Error when the topology has no GPU or the plugin
  // socket cannot be served.
  Status Start(MachineTopology topology);
  void Stop();
  // What a rediscovery found: new health is advertised. A changed GPU count is logged and
  // ignored (the agent must restart to follow it).
  void SetTopology(MachineTopology topology);
  bool registered() const;
  // Why the agent cannot steer admissions yet (empty once it can): the plugin not started or
  // not registered with kubelet, or the node's pods not listed yet. For /readyz; thread-safe.
  std::string NotReadyReason() const;
  // The resource registered with kubelet: --resource-name, or the config's rename of it. Pods
  // request it, and PodResources lists it.
  const std::string& advertised_resource() const;
  // Where the observer's PodResources answers go, for the plugin's admissions
  // (pod_resources_view.h); null before Start() succeeded. Lives as long as the EnforceMode.
  PodResourcesView* pod_resources_view();

 private:
  struct Impl;
  explicit EnforceMode(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gputopo::agent

#endif  // GPUTOPO_SRC_AGENT_ENFORCE_MODE_H_
