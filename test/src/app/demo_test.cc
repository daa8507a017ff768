// The demo's replay, checked for what it claims to show.
#include "src/app/demo.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <sstream>

#include "src/app/app.h"
#include "test/support/fake_clock.h"

namespace gputopo::app {
namespace {

class DemoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    AppOptions options;
    options.server.http.port = 0;
    options.snapshot_json = DemoClusterJson();
    ASSERT_FALSE(options.snapshot_json.empty());
    auto created = App::Create(options, clock_);
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    app_ = std::move(created).value();
    ASSERT_TRUE(app_->Start().ok());
    std::vector<std::string> names;
    for (const NodeInfo& node : app_->cluster().Nodes()) names.push_back(node.name);
    auto replay =
        ReplayPods("127.0.0.1", app_->port(), app_->cluster().PendingPodObjects(), names, report_);
    ASSERT_TRUE(replay.ok()) << replay.status().ToString();
    for (const DemoPlacement& p : *replay) placements_[p.pod] = p;
  }
  void TearDown() override { app_->Stop(); }

  testing::FakeClock clock_;
  std::unique_ptr<App> app_;
  std::ostringstream report_;
  std::map<std::string, DemoPlacement> placements_;
};

TEST_F(DemoTest, ReplayShowsTheProductsPromises) {
  ASSERT_EQ(placements_.size(), 15u) << report_.str();
  // Every replica of a Deployment got its own physical GPU.
  for (const char* group : {"demo/Deployment/web", "demo/Deployment/embed"}) {
    std::set<std::string> gpus;
    int replicas = 0;
    for (const auto& [pod, p] : placements_) {
      if (p.group != group) continue;
      ++replicas;
      ASSERT_FALSE(p.node.empty()) << pod << ": " << p.why;
      gpus.insert(p.node + "/" + p.gpus.at(0));
    }
    EXPECT_GT(replicas, 1) << group;
    EXPECT_EQ(gpus.size(), static_cast<size_t>(replicas)) << group << "\n" << report_.str();
  }
  // The 4-GPU job (NVLink required) sits inside one NVLink island.
  const DemoPlacement& four = placements_.at("research/train-4gpu-0-c8w2x");
  ASSERT_FALSE(four.node.empty()) << four.why;
  EXPECT_EQ(four.gpus.size(), 4u);
  EXPECT_NE(four.placement.find("NVLink island "), std::string::npos) << four.placement;
  EXPECT_EQ(four.placement.find("islands"), std::string::npos) << four.placement;
  // The 2-GPU job got two distinct GPUs.
  const DemoPlacement& two = placements_.at("research/train-2gpu-0-lz4mn");
  ASSERT_EQ(two.gpus.size(), 2u) << two.why;
  EXPECT_NE(two.gpus[0], two.gpus[1]);
  // The pod with a typo in its annotation stays pending and says why.
  const DemoPlacement& typo = placements_.at("demo/bad-annotation");
  EXPECT_TRUE(typo.node.empty());
  EXPECT_NE(typo.why.find("gputopo.io/gpu-milli"), std::string::npos) << typo.why;
  // Nothing landed on the node with a corrupt topology annotation.
  for (const auto& [pod, p] : placements_) EXPECT_NE(p.node, "broken-a") << pod;
  EXPECT_NE(report_.str().find("distinct GPUs"), std::string::npos);
}

}  // namespace
}  // namespace gputopo::app
