// AgentServer: `gputopo agent run`. It wires the parts and owns them: the API server client,
// kubelet's PodResources client, the Observer on its own thread, in enforce mode the EnforceMode
// (the device plugin), and an HTTP listener for probes and metrics:
//   /healthz  200 while the process serves
//   /readyz   200 once an observe pass has read both the API server and PodResources (and while
//             the latest one did) and, in enforce mode, the plugin is registered with kubelet
//             and the node's pods are listed; else 503 with the reason
//   /metrics  Prometheus text
// The node's topology is discovered (through NVML or nvidia-smi) at Start and again every
// `rediscover`, on one thread, for every part: it resolves index-form device IDs, is published
// on the Node (TopologyPublisher), and in enforce mode is what the plugin advertises (with each
// GPU's health). When discovery fails, observe mode still serves, mapping UUID forms only, and
// says so; enforce mode cannot start.
//
// Thread safety: Start, RequestStop and Wait as HttpServer's (RequestStop from any thread).
#ifndef GPUTOPO_SRC_AGENT_AGENT_SERVER_H_
#define GPUTOPO_SRC_AGENT_AGENT_SERVER_H_

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "gputopo/clock.h"
#include "gputopo/machine_topology.h"
#include "gputopo/status.h"
#include "src/agent/enforce_mode.h"
#include "src/agent/topology_discovery.h"
#include "src/kube/kube_config.h"

namespace gputopo::agent {

struct AgentOptions {
  std::string node_name;                         // required
  std::string kubelet_dir = "/var/lib/kubelet";  // pod-resources/kubelet.sock under it
  std::string resource_name = "nvidia.com/gpu";
  std::string listen_host = "0.0.0.0";
  int listen_port = 8890;                  // 0: any free port; 8890 as the DaemonSet probes
  std::chrono::milliseconds period{1000};  // between observe passes (PodResources polls)
  DiscoveryOptions discovery;
  // When set, used instead of discovery (tests; a node whose discovery is known to fail).
  std::optional<MachineTopology> topology;
  // The topology found is published as the node annotation gputopo.io/topology (written only
  // when it differs), at Start and then after each rediscovery, every `rediscover` (0: only at
  // Start). Rediscovery is what marks a GPU that stopped answering NVML unhealthy.
  // Enforce mode also sends each rediscovery's health to kubelet (ListAndWatch).
  bool publish_topology = true;
  std::chrono::milliseconds rediscover{30000};
  // Enforce mode, when set. Its node name, kubelet dir and resource name are the ones above; the
  // observer then watches the resource as enforce mode advertises it (a time-slicing rename).
  std::optional<EnforceOptions> enforce;
};

class AgentServer {
 public:
  // Error for options that cannot work (no node name; enforce options as EnforceMode::Create).
  // `clock` must outlive the server.
  static Result<std::unique_ptr<AgentServer>> Create(AgentOptions options, kube::KubeConfig kube,
                                                     const Clock& clock);
  ~AgentServer();  // RequestStop(), Wait()
  AgentServer(const AgentServer&) = delete;
  AgentServer& operator=(const AgentServer&) = delete;

  // Discovers the topology (unless given), starts enforce mode, binds the listener and starts
  // observing. Error when the listener cannot be bound, or enforce mode cannot start (no
  // topology, the plugin socket).
  Status Start();
  int port() const;
  bool ready() const;
  void RequestStop();
  // Returns once stopped: RequestStop() was called, the observer has finished its pass and the
  // listener is closed.
  void Wait();

 private:
  struct Impl;
  explicit AgentServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gputopo::agent

#endif  // GPUTOPO_SRC_AGENT_AGENT_SERVER_H_
