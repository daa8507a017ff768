// AgentServer: `gputopo agent run` in observe mode. It wires the parts and owns them: the API
// server client, kubelet's PodResources client, the Observer on its own thread, and an HTTP
// listener for probes and metrics:
//   /healthz  200 while the process serves
//   /readyz   200 once an observe pass has read both the API server and PodResources (and while
//             the latest one did) and `not_ready` has no reason, else 503 with the reason
//   /metrics  Prometheus text
// The node's topology (discovery, through NVML or nvidia-smi) resolves index-form device IDs and
// is published on the Node (TopologyPublisher), again after each periodic rediscovery; when
// discovery fails the agent still serves, mapping UUID forms only, and says so.
//
// Thread safety: Start, RequestStop and Wait as HttpServer's (RequestStop from any thread).
#ifndef GPUTOPO_SRC_AGENT_AGENT_SERVER_H_
#define GPUTOPO_SRC_AGENT_AGENT_SERVER_H_

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "gputopo/clock.h"
#include "gputopo/machine_topology.h"
#include "gputopo/status.h"
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
  bool publish_topology = true;
  std::chrono::milliseconds rediscover{60000};
  // More to being ready (may be empty): the reason the agent is not, empty when it is as far as
  // this goes. Enforce mode's (EnforceMode::NotReadyReason). Called from the HTTP thread.
  std::function<std::string()> not_ready;
};

class AgentServer {
 public:
  // Error for options that cannot work (no node name). `clock` must outlive the server.
  static Result<std::unique_ptr<AgentServer>> Create(AgentOptions options, kube::KubeConfig kube,
                                                     const Clock& clock);
  ~AgentServer();  // RequestStop(), Wait()
  AgentServer(const AgentServer&) = delete;
  AgentServer& operator=(const AgentServer&) = delete;

  // Discovers the topology (unless given), binds the listener and starts observing. Error when
  // the listener cannot be bound.
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
