// The node agent publishes its discovered topology on the Node, writing only when it changed.
#include "src/agent/topology_publisher.h"

#include <curl/curl.h>
#include <gtest/gtest.h>

#include "src/codec/topology_document.h"
#include "test/src/kube/kube_fixtures.h"
#include "test/support/fake_api_server.h"
#include "test/support/fake_clock.h"
#include "test/support/machines.h"

namespace gputopo::agent {
namespace {

using nlohmann::json;
using testing::FakeApiServer;

class TopologyPublisherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    curl_global_init(CURL_GLOBAL_DEFAULT);
    ASSERT_TRUE(api_.Start());
    kube::KubeConfig config;
    config.server = api_.base_url();
    kube::ClientOptions options;
    options.request_timeout = std::chrono::seconds(120);
    kube_ = std::make_unique<kube::KubeClient>(config, options, clock_);
  }
  std::string Annotation(const std::string& node) {
    const auto object = api_.GetNodeObject(node);
    if (!object) return "";
    return (*object)["metadata"]
        .value("annotations", json::object())
        .value("gputopo.io/topology", "");
  }

  FakeApiServer api_;
  testing::FakeClock clock_;
  std::unique_ptr<kube::KubeClient> kube_;
};

TEST_F(TopologyPublisherTest, WritesOnlyWhenTheDocumentChangesAndTheExtenderCanReadIt) {
  json node = testing::GpuNode("n1");
  node["metadata"]["annotations"] = {{"keep", "me"}};
  ASSERT_TRUE(api_.CreateNode(node).has_value());
  TopologyPublisher publisher(*kube_, "n1");
  MachineTopology topology = testing::Dgx1();
  for (int g = 0; g < topology.gpu_count(); ++g) topology.gpu(g).uuid = "GPU-" + std::to_string(g);

  Result<PublishOutcome> first = publisher.Publish(topology);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(*first, PublishOutcome::kWritten);
  const std::string written = Annotation("n1");
  Result<MachineTopology> parsed = codec::ParseTopologyDocument(written);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->gpu(3).uuid, "GPU-3");
  EXPECT_EQ(parsed->link(0, 3), topology.link(0, 3));
  EXPECT_EQ((*api_.GetNodeObject("n1"))["metadata"]["annotations"]["keep"], "me");
  const std::string version = (*api_.GetNodeObject("n1"))["metadata"]["resourceVersion"];

  // Nothing changed: no write, the Node's resourceVersion stays.
  Result<PublishOutcome> again = publisher.Publish(topology);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, PublishOutcome::kUnchanged);
  EXPECT_EQ((*api_.GetNodeObject("n1"))["metadata"]["resourceVersion"], version);

  // A GPU stopped answering: the document says so, and is written again.
  topology.gpu(5).healthy = false;
  topology.gpu(5).health_reason = "nvmlDeviceGetUUID: GPU is lost";
  Result<PublishOutcome> sick = publisher.Publish(topology);
  ASSERT_TRUE(sick.ok());
  EXPECT_EQ(*sick, PublishOutcome::kWritten);
  Result<MachineTopology> reparsed = codec::ParseTopologyDocument(Annotation("n1"));
  ASSERT_TRUE(reparsed.ok());
  EXPECT_FALSE(reparsed->gpu(5).healthy);
  EXPECT_EQ(reparsed->gpu(5).health_reason, "nvmlDeviceGetUUID: GPU is lost");
}

TEST_F(TopologyPublisherTest, AMissingNodeIsNotFound) {
  TopologyPublisher publisher(*kube_, "nowhere");
  EXPECT_EQ(publisher.Publish(testing::Dgx1()).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace gputopo::agent
