// TestCluster: a ClusterState with the pieces it needs (interner, profiles, resolver) and the
// built-in presets, for policy and service tests.
#ifndef GPUTOPO_TEST_SUPPORT_TEST_CLUSTER_H_
#define GPUTOPO_TEST_SUPPORT_TEST_CLUSTER_H_

#include <memory>
#include <string>
#include <vector>

#include "cluster/cluster_state.h"
#include "policies/engine/evaluation.h"
#include "policies/registry/component_registry.h"
#include "topology/profile_catalog.h"
#include "topology/shape_interner.h"
#include "topology/topology_resolver.h"

namespace gputopo::testing {

class TestCluster {
 public:
  // Profiles "dgx1", "hgx-h100", "pcie8", "pairs" (see machines.h); presets as shipped in
  // policies/presets/ are not loaded here (that needs JSON): DefaultPreset() mirrors default.json.
  // `on_publish`: the state's publish listener (see ClusterState).
  explicit TestCluster(cluster::ClusterState::PublishListener on_publish = nullptr);

  cluster::ClusterState& state() { return *state_; }
  void Add(const NodeInfo& node) { state_->UpsertNode(node); }
  void Add(const PodInfo& pod) { state_->UpsertPod(pod); }
  std::shared_ptr<const policies::NodeState> Node(const std::string& name) const {
    return state_->Snapshot()->FindShared(name);
  }

  // Evaluates `pod` on `node` with the default preset and, when it fits, binds it there (as
  // bind would: reserve, then confirm). Returns the evaluation.
  policies::NodeEvaluation Place(const PodInfo& pod, const std::string& node);
  policies::NodeEvaluation Evaluate(const PodInfo& pod, const std::string& node) const;

  const policies::Preset& preset() const { return *preset_; }
  const std::shared_ptr<const policies::Preset>& shared_preset() const { return preset_; }

 private:
  topology::ShapeInterner interner_;
  topology::ProfileCatalog profiles_{interner_};
  topology::TopologyResolver resolver_{profiles_, interner_};
  std::unique_ptr<cluster::ClusterState> state_;
  std::shared_ptr<const policies::Preset> preset_;
};

// The default preset's weights (policies/presets/default.json), built in code.
std::shared_ptr<const policies::Preset> DefaultPreset();

// The positions of `names` in `snapshot` (kNotFound for the unknown).
std::vector<size_t> PositionsOf(const policies::ClusterSnapshot& snapshot,
                                const std::vector<std::string>& names);

// Expects `got` (parallel to `positions`), node for node, to be what evaluating each node on its
// own gives (verdict, reason, detail, GPUs, scores), whatever a cache remembered from earlier
// cycles (unknown positions: no evaluation).
void ExpectSameAsEvaluateNode(const std::vector<policies::EvaluationRef>& got,
                              const policies::ClusterSnapshot& snapshot,
                              const std::vector<size_t>& positions,
                              const policies::PodRequirements& req, const policies::Preset& preset);

}  // namespace gputopo::testing

#endif  // GPUTOPO_TEST_SUPPORT_TEST_CLUSTER_H_
