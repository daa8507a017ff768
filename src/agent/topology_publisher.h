// TopologyPublisher: keeps the node annotation gputopo.io/topology equal to what discovery found
// on this node, so that the extender places pods by the real machine (UUIDs, links, NUMA and
// health) instead of a profile or a GPU count.
//
// Publish() reads the Node, compares its annotation with the document (compact JSON, exactly as
// FormatTopologyDocument writes it) and writes only when they differ: one GET per call and no
// write while nothing changes, so a periodic republish (health changes) costs the API server
// little. The write is a merge patch guarded by the Node's uid and resourceVersion; a Conflict
// (the Node changed in between) is answered by reading it again, once.
//
// Thread safety: not thread-safe; one caller (the agent's discovery loop).
#ifndef GPUTOPO_SRC_AGENT_TOPOLOGY_PUBLISHER_H_
#define GPUTOPO_SRC_AGENT_TOPOLOGY_PUBLISHER_H_

#include <string>

#include "gputopo/machine_topology.h"
#include "gputopo/status.h"
#include "src/kube/kube_client.h"

namespace gputopo::agent {

enum class PublishOutcome { kUnchanged, kWritten };

class TopologyPublisher {
 public:
  // `kube` must outlive the publisher.
  TopologyPublisher(kube::KubeClient& kube, std::string node_name);

  // NotFound when the Node does not exist; the API server's errors otherwise.
  Result<PublishOutcome> Publish(const MachineTopology& topology);

  // The annotation value Publish() writes for `topology`.
  static std::string Document(const MachineTopology& topology);

 private:
  struct NodeMeta {
    std::string uid;
    std::string resource_version;
    std::optional<std::string> annotation;  // gputopo.io/topology, when present
  };
  Result<NodeMeta> ReadNode();

  kube::KubeClient& kube_;
  const std::string node_name_;
};

}  // namespace gputopo::agent

#endif  // GPUTOPO_SRC_AGENT_TOPOLOGY_PUBLISHER_H_
