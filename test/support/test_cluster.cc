#include "test/support/test_cluster.h"

#include <gtest/gtest.h>

#include "test/support/machines.h"

namespace gputopo::testing {

std::shared_ptr<const policies::Preset> DefaultPreset() {
  policies::PresetSpec spec;
  spec.name = "default";
  spec.components = {
      {"replica-spread", 4, {{{"islandPenalty", 0.25}}, {}}},
      {"locality", 5, {{{"unmetCap", 4}, {"unknownScore", 5}, {"numaWeight", 0.2}}, {}}},
      {"fragmentation", 2, {}},
      {"slot-balance", 1, {}}};
  auto preset = policies::BuildPreset(spec, policies::BuiltinComponents());
  EXPECT_TRUE(preset.ok()) << preset.status().ToString();
  return *preset;
}

TestCluster::TestCluster(policies::ClusterState::PublishListener on_publish) {
  EXPECT_TRUE(profiles_.Add("dgx1", "test", Dgx1()).ok());
  EXPECT_TRUE(profiles_.Add("hgx-h100", "test", HgxH100()).ok());
  EXPECT_TRUE(profiles_.Add("pcie8", "test", PcieTwoNuma(8)).ok());
  EXPECT_TRUE(profiles_.Add("pairs", "test", NvLinkPairs()).ok());
  state_ = std::make_unique<policies::ClusterState>(resolver_, std::move(on_publish));
  preset_ = DefaultPreset();
}

policies::NodeEvaluation TestCluster::Evaluate(const PodInfo& pod, const std::string& node) const {
  auto requirements = policies::RequirementsOf(pod);
  EXPECT_TRUE(requirements.ok()) << requirements.status().ToString();
  auto state = state_->Snapshot()->FindShared(node);
  EXPECT_NE(state, nullptr) << node;
  return policies::EvaluateNode(*requirements, *state, *preset_);
}

policies::NodeEvaluation TestCluster::Place(const PodInfo& pod, const std::string& node) {
  policies::NodeEvaluation e = Evaluate(pod, node);
  if (!e.fits()) return e;
  policies::Reservation r;
  r.pod = pod;
  r.node = node;
  r.gpus = topology::ToIndices(e.gpus);
  r.node_version = Node(node)->version();
  Status s = state_->Reserve(r);
  EXPECT_TRUE(s.ok()) << s.ToString();
  state_->ConfirmBinding(pod.uid, node);
  return e;
}

}  // namespace gputopo::testing
