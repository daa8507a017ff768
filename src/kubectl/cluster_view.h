// The cluster as kubectl-gputopo sees it: every Node and every GPU pod, read through the API
// server (as `kubectl get` does), turned into the same NodeStates gputopo's extender builds from
// its watch. So the plugin needs no access to gputopo itself, and what it prints can be compared
// with gputopo's /debug view.
//
// Thread safety: not thread-safe; one per command.
#ifndef GPUTOPO_SRC_KUBECTL_CLUSTER_VIEW_H_
#define GPUTOPO_SRC_KUBECTL_CLUSTER_VIEW_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cluster/cluster_state.h"
#include "gputopo/status.h"
#include "src/kube/kube_client.h"
#include "topology/profile_catalog.h"
#include "topology/shape_interner.h"
#include "topology/topology_resolver.h"

namespace gputopo::kubectl {

class ClusterView {
 public:
  // The shipped machine profiles. Error if they do not load (a build defect).
  static Result<std::unique_ptr<ClusterView>> Create();

  // Lists every Node and Pod (paged) through `client`. The API server's error (401, 403, 404,
  // unreachable) comes back as is, with what was being read.
  Status Load(kube::KubeClient& client);
  // Or from objects already decoded (tests, and the nodes of a List file).
  void Load(const std::vector<NodeInfo>& nodes, const std::vector<PodInfo>& pods);

  std::shared_ptr<const policies::ClusterSnapshot> snapshot() const { return state_->Snapshot(); }
  // The pod as read (GPU pods and pending pods alike), by namespace and name.
  std::optional<PodInfo> FindPod(const std::string& namespace_name, const std::string& name) const;
  const std::vector<PodInfo>& pods() const { return pods_; }

 private:
  ClusterView() = default;

  topology::ShapeInterner interner_;
  std::unique_ptr<topology::ProfileCatalog> profiles_;
  std::unique_ptr<topology::TopologyResolver> resolver_;
  std::unique_ptr<cluster::ClusterState> state_;
  std::vector<PodInfo> pods_;
};

}  // namespace gputopo::kubectl

#endif  // GPUTOPO_SRC_KUBECTL_CLUSTER_VIEW_H_
