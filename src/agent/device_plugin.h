// DevicePlugin: the node agent's enforce mode, as kubelet's device plugin (API v1beta1) for one
// resource (nvidia.com/gpu by default).
//
// - Serves DevicePlugin on <kubelet-dir>/device-plugins/gputopo-<resource>.sock ('/' in the
//   resource name becomes '_') and registers with kubelet on
//   <kubelet-dir>/device-plugins/kubelet.sock (version v1beta1, get_preferred_allocation
//   available).
// - ListAndWatch advertises "GPU-<uuid>::<n>" replicas with NUMA topology and health
//   (replica_choice.h), and sends the list again whenever SetTopology() changes it.
// - GetPreferredAllocation steers the container kubelet is admitting onto the GPUs gputopo
//   assigned to its pod (pod_identification.h), identified among PodSource's pods, excluding
//   containers PodResources lists and containers this plugin allocated; when steering does not
//   apply, its own topology-aware choice (ChooseFallback). It never fails for that. It takes no
//   node-wide lock and waits for nothing but the two reads. PodResources is read from the
//   answer the observer polls once a second (pod_resources_view(), pod_resources_view.h) when
//   that can stand in for a call now; kubelet is asked at the admission only when it cannot,
//   or when no pod could be steered with it.
// - Allocate answers NVIDIA_VISIBLE_DEVICES with the physical UUIDs (deduplicated, in request
//   order), as NVIDIA's plugin does, and records which container got the devices when they are
//   the ones GetPreferredAllocation steered.
// - kubelet restarts: kubelet deletes every socket in device-plugins/ and creates kubelet.sock
//   again. CheckKubelet() (run every `poll_period` by the plugin's own thread) notices a new
//   kubelet.sock (inode or change time) or its own socket gone, serves again on a fresh socket
//   and registers again; a registration that failed is retried at each check.
//
// Thread safety: thread-safe. PodSource::CurrentPods() is called from gRPC threads, possibly
// concurrently.
#ifndef GPUTOPO_SRC_AGENT_DEVICE_PLUGIN_H_
#define GPUTOPO_SRC_AGENT_DEVICE_PLUGIN_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gputopo/machine_topology.h"
#include "gputopo/status.h"
#include "src/agent/pod_identification.h"
#include "src/agent/pod_resources_client.h"
#include "src/agent/pod_resources_view.h"
#include "src/observability/metrics.h"

namespace gputopo::agent {

// The pods bound to this node, as the plugin needs them: a live list (KubePodSource) or a
// watched cache (WatchedPodSource); tests fake it.
class PodSource {
 public:
  virtual ~PodSource() = default;
  virtual Result<std::vector<BoundPod>> CurrentPods() = 0;
  // A cache may lag the API server. When a cached answer gives no steering (the pod being
  // admitted may have been bound a moment ago), the plugin waits up to a few milliseconds for
  // the cache's next change (its event is usually in flight) and decides again, then asks the
  // API server itself (ListNow).
  virtual bool cached() const { return false; }
  // Changes applied so far; WaitForChange returns true once there are more than `seen`, false
  // after `at_most`.
  virtual uint64_t changes() const { return 0; }
  virtual bool WaitForChange(uint64_t /*seen*/, std::chrono::milliseconds /*at_most*/) {
    return false;
  }
  virtual Result<std::vector<BoundPod>> ListNow() { return CurrentPods(); }
};

struct DevicePluginOptions {
  std::string kubelet_dir = "/var/lib/kubelet";
  std::string resource_name = "nvidia.com/gpu";  // as registered (after any rename)
  int replicas = 1;                              // per GPU, 1..kMaxReplicasPerGpu
  // time-slicing's failRequestsGreaterThanOne: Allocate refuses more than one replica.
  bool fail_requests_greater_than_one = false;
  std::vector<std::string> trusted_schedulers = {"gputopo-scheduler"};
  // How often kubelet.sock is checked for a kubelet restart.
  std::chrono::milliseconds poll_period{1000};
  // Register's deadline (kubelet dials back within it).
  std::chrono::milliseconds register_deadline{15000};
};

// One GetPreferredAllocation container request, as decided.
struct AdmissionRecord {
  PreferredRequest request;
  Identification identification;     // steered, or why not
  std::vector<std::string> answer;   // the device IDs returned
  bool asked_pod_resources = false;  // kubelet's PodResources was called during the admission
};

class DevicePlugin {
 public:
  // `pods` and `pod_resources` (may be null: then only the plugin's own record of allocations
  // counts) must outlive the plugin, and so must `metrics` when given: each container request
  // GetPreferredAllocation answers counts in gputopo_agent_admissions_total{result}, result
  // being steered, no_pod_qualifies, ambiguous or not_enough_replicas (the last three answered
  // with the plugin's own choice), and the time each GetPreferredAllocation and Allocate call
  // took in gputopo_agent_admission_duration_seconds{call}.
  DevicePlugin(DevicePluginOptions options, MachineTopology topology, PodSource& pods,
               PodResourcesClient* pod_resources,
               observability::MetricsRegistry* metrics = nullptr);
  ~DevicePlugin();  // Stop()s
  DevicePlugin(const DevicePlugin&) = delete;
  DevicePlugin& operator=(const DevicePlugin&) = delete;

  // Serves the plugin socket, registers, and starts the kubelet-restart check thread. Error when
  // the options are invalid or the socket cannot be served; a failed registration is not an
  // error (it is retried at each check; see registered()).
  Status Start();
  void Stop();  // idempotent

  // One check for a kubelet restart (what the thread does every poll_period). True when it
  // (re-)registered.
  bool CheckKubelet();

  // New health (or anything else) from discovery: ListAndWatch sends the list again when the
  // advertised devices change. The GPU count must not change (it returns false and keeps the old
  // one). A GPU the new topology knows no UUID or NUMA node of keeps the ones it had.
  bool SetTopology(MachineTopology topology);

  std::string socket_path() const;
  bool registered() const;
  int registrations() const;  // successful Register calls
  std::string last_register_error() const;
  std::vector<AdmissionRecord> Admissions() const;  // the latest ones, oldest first (bounded)
  // Where PodResources answers polled by others (the observer) go; the plugin's own calls
  // update it too.
  PodResourcesView& pod_resources_view();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// "<kubelet_dir>/device-plugins/gputopo-<resource with '/' as '_'>.sock".
std::string DevicePluginSocketPath(const std::string& kubelet_dir,
                                   const std::string& resource_name);

}  // namespace gputopo::agent

#endif  // GPUTOPO_SRC_AGENT_DEVICE_PLUGIN_H_
