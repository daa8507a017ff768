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

TestCluster::TestCluster(cluster::ClusterState::PublishListener on_publish) {
  EXPECT_TRUE(profiles_.Add("dgx1", "test", Dgx1()).ok());
  EXPECT_TRUE(profiles_.Add("hgx-h100", "test", HgxH100()).ok());
  EXPECT_TRUE(profiles_.Add("pcie8", "test", PcieTwoNuma(8)).ok());
  EXPECT_TRUE(profiles_.Add("pairs", "test", NvLinkPairs()).ok());
  state_ = std::make_unique<cluster::ClusterState>(resolver_, std::move(on_publish));
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
  cluster::Reservation r;
  r.pod = pod;
  r.node = node;
  r.gpus = topology::ToIndices(e.gpus);
  r.node_version = Node(node)->version();
  Status s = state_->Reserve(r);
  EXPECT_TRUE(s.ok()) << s.ToString();
  state_->ConfirmBinding(pod.uid, node);
  return e;
}

std::vector<size_t> PositionsOf(const policies::ClusterSnapshot& snapshot,
                                const std::vector<std::string>& names) {
  std::vector<std::string_view> views(names.begin(), names.end());
  std::vector<size_t> positions;
  snapshot.FindIndices(views, positions);
  return positions;
}

void ExpectSameAsEvaluateNode(const std::vector<policies::EvaluationRef>& got,
                              const policies::ClusterSnapshot& snapshot,
                              const std::vector<size_t>& positions,
                              const policies::PodRequirements& req,
                              const policies::Preset& preset) {
  ASSERT_EQ(got.size(), positions.size());
  for (size_t i = 0; i < positions.size(); ++i) {
    if (positions[i] == policies::ClusterSnapshot::kNotFound) {
      EXPECT_EQ(got[i].evaluation, nullptr);
      continue;
    }
    const policies::NodeState& node = *snapshot.nodes()[positions[i]];
    const policies::NodeEvaluation want = policies::EvaluateNode(req, node, preset);
    const policies::EvaluationRef& ref = got[i];
    ASSERT_NE(ref.evaluation, nullptr) << node.name();
    EXPECT_EQ(ref.evaluation->verdict, want.verdict) << node.name();
    EXPECT_EQ(ref.verdict, want.verdict) << node.name();
    EXPECT_EQ(ref.evaluation->gpus, want.gpus) << node.name();
    EXPECT_DOUBLE_EQ(ref.weighted_score, want.weighted_score) << node.name();
    EXPECT_EQ(ref.evaluation->reason, want.reason) << node.name();
    EXPECT_DOUBLE_EQ(ref.evaluation->weighted_score, want.weighted_score) << node.name();
    EXPECT_EQ(ref.evaluation->component_scores, want.component_scores) << node.name();
    EXPECT_EQ(ref.evaluation->detail, want.detail) << node.name();
    EXPECT_EQ(ref.evaluation->locality_missed, want.locality_missed) << node.name();
    EXPECT_EQ(ref.locality_missed, want.locality_missed) << node.name();
  }
}

}  // namespace gputopo::testing
