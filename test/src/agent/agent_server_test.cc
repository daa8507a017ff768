// `gputopo agent run` in process: probes and metrics over HTTP, readiness following PodResources
// (and in enforce mode the plugin's registration), and observed-gpus written for a pod kubelet
// admitted.
#include "src/agent/agent_server.h"

#include <curl/curl.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include "test/src/kube/kube_fixtures.h"
#include "test/support/fake_api_server.h"
#include "test/support/fake_clock.h"
#include "test/support/fake_kubelet.h"

namespace gputopo::agent {
namespace {

using nlohmann::json;
using testing::FakeApiServer;
using testing::FakeKubelet;

class AgentServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    curl_global_init(CURL_GLOBAL_DEFAULT);
    ASSERT_TRUE(api_.Start());
    config_.server = api_.base_url();
  }

  AgentOptions Options() const {
    AgentOptions options;
    options.node_name = "n1";
    options.kubelet_dir = kubelet_.kubelet_dir();
    options.listen_host = "127.0.0.1";
    options.listen_port = 0;
    options.period = std::chrono::milliseconds(50);  // faster passes; results do not depend on it
    MachineTopology topology(1);
    topology.gpu(0).uuid = "GPU-a";
    options.topology = topology;
    return options;
  }

  httplib::Result Get(int port, const std::string& path) {
    httplib::Client client("127.0.0.1", port);
    client.set_read_timeout(std::chrono::seconds(60));
    return client.Get(path);
  }

  FakeApiServer api_;
  FakeKubelet kubelet_;  // not started until a test says so
  kube::KubeConfig config_;
  testing::FakeClock clock_;
};

TEST_F(AgentServerTest, ANodeNameIsRequired) {
  AgentOptions options = Options();
  options.node_name.clear();
  EXPECT_EQ(AgentServer::Create(options, config_, clock_).status().code(),
            StatusCode::kInvalidArgument);
}

TEST_F(AgentServerTest, ServesProbesAndIsReadyOnceKubeletAnswers) {
  Result<std::unique_ptr<AgentServer>> created = AgentServer::Create(Options(), config_, clock_);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  AgentServer& agent = **created;
  ASSERT_TRUE(agent.Start().ok());
  const int port = agent.port();

  httplib::Result health = Get(port, "/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  // No kubelet yet: not ready, and the reason says why.
  ASSERT_TRUE(testing::WaitFor([&] {
    httplib::Result r = Get(port, "/readyz");
    return r && r->status == 503 && r->body.find("no PodResources socket") != std::string::npos;
  }));

  ASSERT_TRUE(kubelet_.Start());
  json pod = testing::GpuPod("default", "p", 1, {{"gputopo.io/assigned-gpus", "GPU-a"}});
  pod["spec"]["nodeName"] = "n1";
  ASSERT_TRUE(api_.CreatePod(pod).has_value());
  kubelet_.AddStockPlugin("nvidia.com/gpu", {{"GPU-a::0"}, {"GPU-a::1"}});
  FakeKubelet::Pod admitted;
  admitted.name = "p";
  admitted.containers = {{"main", 1, false}};
  ASSERT_TRUE(kubelet_.AdmitPod(admitted, "nvidia.com/gpu").ok());

  ASSERT_TRUE(testing::WaitFor([&] {
    httplib::Result r = Get(port, "/readyz");
    return r && r->status == 200;
  }));
  ASSERT_TRUE(testing::WaitFor([&] {
    std::optional<json> p = api_.GetPodObject("default", "p");
    return p && (*p)["metadata"]["annotations"].value("gputopo.io/observed-gpus", "") == "GPU-a";
  }));
  httplib::Result metrics = Get(port, "/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
  EXPECT_NE(metrics->body.find("gputopo_agent_ready 1"), std::string::npos) << metrics->body;
  EXPECT_EQ(Get(port, "/nope")->status, 404);

  agent.RequestStop();
  agent.Wait();
}

// Enforce mode adds its own conditions (plugin registered, pods listed): /readyz holds at 503
// with that reason until kubelet is there, then the plugin registers and the agent is ready.
TEST_F(AgentServerTest, EnforceModeIsReadyOnceThePluginIsRegistered) {
  AgentOptions options = Options();
  options.enforce = EnforceOptions{};
  Result<std::unique_ptr<AgentServer>> created = AgentServer::Create(options, config_, clock_);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  AgentServer& agent = **created;
  ASSERT_TRUE(agent.Start().ok());
  const int port = agent.port();
  httplib::Result early = Get(port, "/readyz");
  ASSERT_TRUE(early);
  EXPECT_EQ(early->status, 503);
  EXPECT_FALSE(agent.ready());

  ASSERT_TRUE(kubelet_.Start());  // the plugin's next check registers
  ASSERT_TRUE(kubelet_.WaitForPlugin("nvidia.com/gpu", 1, std::chrono::seconds(60)));
  ASSERT_TRUE(testing::WaitFor([&] {
    httplib::Result r = Get(port, "/readyz");
    return r && r->status == 200;
  }));
  EXPECT_TRUE(agent.ready());
  agent.RequestStop();
  agent.Wait();
}

// Enforce mode advertises the GPUs it found: with none there is nothing to serve, and Start says
// so instead of registering an empty plugin.
TEST_F(AgentServerTest, EnforceModeWithoutGpusCannotStart) {
  AgentOptions options = Options();
  options.topology = MachineTopology{};
  options.enforce = EnforceOptions{};
  Result<std::unique_ptr<AgentServer>> created = AgentServer::Create(options, config_, clock_);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  Status started = (*created)->Start();
  EXPECT_EQ(started.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(started.message().find("no GPU"), std::string::npos) << started.ToString();
}

TEST_F(AgentServerTest, BadEnforceOptionsFailCreate) {
  AgentOptions options = Options();
  options.enforce = EnforceOptions{};
  options.enforce->replicas = 5000;
  EXPECT_EQ(AgentServer::Create(options, config_, clock_).status().code(),
            StatusCode::kInvalidArgument);
}

// The topology the agent knows is on the Node once it has started, for the extender to read.
TEST_F(AgentServerTest, PublishesTheTopologyOnItsNode) {
  ASSERT_TRUE(api_.CreateNode(testing::GpuNode("n1")).has_value());
  Result<std::unique_ptr<AgentServer>> created = AgentServer::Create(Options(), config_, clock_);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  ASSERT_TRUE((*created)->Start().ok());
  std::optional<json> node = api_.GetNodeObject("n1");
  ASSERT_TRUE(node.has_value());
  const std::string document =
      (*node)["metadata"].value("annotations", json::object()).value("gputopo.io/topology", "");
  EXPECT_NE(document.find("\"GPU-a\""), std::string::npos) << document;
  (*created)->RequestStop();
  (*created)->Wait();
}

}  // namespace
}  // namespace gputopo::agent
