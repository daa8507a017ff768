// Enforce mode as `gputopo agent run --mode enforce` starts it (AgentServer with enforce
// options): discovery through real dlopen of the fake NVML, pods from the fake API server, the
// device plugin registered with the fake kubelet, admissions counted on /metrics; a GPU lost
// later is advertised unhealthy under the same device IDs after the agent's one rediscovery.
#include "src/agent/enforce_mode.h"

#include <curl/curl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <fstream>
#include <thread>

#include "src/agent/agent_server.h"
#include "test/src/agent/agent_test_support.h"
#include "test/src/kube/kube_fixtures.h"
#include "test/support/fake_api_server.h"
#include "test/support/fake_clock.h"
#include "test/support/fake_kubelet.h"

namespace gputopo::agent {
namespace {

using gputopo::testing::FakeApiServer;
using gputopo::testing::FakeKubelet;
using ::testing::ElementsAre;

constexpr std::chrono::seconds kWait{60};  // only ever reached when something is broken
constexpr char kResource[] = "nvidia.com/gpu";
constexpr char kGpu1[] = "GPU-l4-0000-4000-8000-000000000001";

std::string Uuid(int gpu) { return "GPU-l4-0000-4000-8000-00000000000" + std::to_string(gpu); }

// `gputopo agent run --mode enforce` on the fake kubelet's directory, discovering through the
// fake NVML; the rest of the options as the test sets them.
AgentOptions EnforceAgent(const FakeKubelet& kubelet, const testing::FakeSysfs& sysfs) {
  AgentOptions options;
  options.node_name = "n1";
  options.kubelet_dir = kubelet.kubelet_dir();
  options.listen_host = "127.0.0.1";
  options.listen_port = 0;
  options.discovery.nvml_library = GPUTOPO_FAKE_NVML;
  options.discovery.sysfs_root = sysfs.root();
  options.discovery.nvidia_smi = "/nonexistent/nvidia-smi";
  options.enforce = EnforceOptions{};
  return options;
}

std::string Metrics(const AgentServer& agent) {
  httplib::Client client("127.0.0.1", agent.port());
  client.set_read_timeout(std::chrono::seconds(60));
  httplib::Result r = client.Get("/metrics");
  return r && r->status == 200 ? r->body : "";
}

TEST(EnforceModeTest, DiscoversRegistersSteersAndFollowsHealth) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  testing::UseMachine("pcie-4gpu-2numa");
  testing::FakeSysfs sysfs("pcie-4gpu-2numa");
  FakeApiServer api;
  ASSERT_TRUE(api.Start());
  FakeKubelet kubelet;
  ASSERT_TRUE(kubelet.Start());
  gputopo::testing::FakeClock clock;

  AgentOptions options = EnforceAgent(kubelet, sysfs);
  options.enforce->replicas = 2;
  options.rediscover = std::chrono::milliseconds(100);
  kube::KubeConfig config;
  config.server = api.base_url();
  Result<std::unique_ptr<AgentServer>> made = AgentServer::Create(options, config, clock);
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  AgentServer& agent = **made;
  EXPECT_FALSE(agent.ready());
  ASSERT_TRUE(agent.Start().ok());
  ASSERT_TRUE(kubelet.WaitForPlugin(kResource, 1, kWait));
  // Ready once the node's pods are listed and an observe pass read PodResources.
  ASSERT_TRUE(gputopo::testing::WaitFor([&] { return agent.ready(); }));
  std::optional<FakeKubelet::PluginInfo> info = kubelet.Plugin(kResource);
  ASSERT_TRUE(info.has_value());
  ASSERT_EQ(info->devices.size(), 8u);
  EXPECT_EQ(info->devices[0], (FakeKubelet::Device{Uuid(0) + "::0", true, 0}));
  EXPECT_EQ(info->devices[7], (FakeKubelet::Device{Uuid(3) + "::1", true, 1}));

  // A pod gputopo bound here on GPU 1 is steered there.
  nlohmann::json pod =
      gputopo::testing::GpuPod("default", "p", 1, {{"gputopo.io/assigned-gpus", kGpu1}});
  pod["spec"]["nodeName"] = "n1";
  std::optional<nlohmann::json> created = api.CreatePod(pod);
  ASSERT_TRUE(created.has_value());
  FakeKubelet::Pod admitted_pod;
  admitted_pod.name = "p";
  admitted_pod.uid = (*created)["metadata"]["uid"].get<std::string>();
  admitted_pod.containers = {{"main", 1, false}};
  Result<FakeKubelet::PodAllocation> admitted = kubelet.AdmitPod(admitted_pod, kResource);
  ASSERT_TRUE(admitted.ok()) << admitted.status().ToString();
  ASSERT_EQ(admitted->containers.size(), 1u);
  EXPECT_THAT(admitted->containers[0].device_ids, ElementsAre(std::string(kGpu1) + "::0"));
  EXPECT_EQ(admitted->containers[0].envs["NVIDIA_VISIBLE_DEVICES"], kGpu1);
  const std::string metrics = Metrics(agent);
  EXPECT_THAT(metrics,
              ::testing::HasSubstr("gputopo_agent_admissions_total{result=\"steered\"} 1\n"));
  EXPECT_THAT(metrics,
              ::testing::HasSubstr("gputopo_agent_admissions_total{result=\"ambiguous\"} 0\n"));
  // The time of each call kubelet waited on, by call: one GetPreferredAllocation, one Allocate.
  EXPECT_THAT(metrics, ::testing::HasSubstr("gputopo_agent_admission_duration_seconds_count{call="
                                            "\"GetPreferredAllocation\"} 1\n"));
  EXPECT_THAT(metrics,
              ::testing::HasSubstr(
                  "gputopo_agent_admission_duration_seconds_count{call=\"Allocate\"} 1\n"));

  // A pod no scheduler of ours placed is not steered: counted with the reason.
  FakeKubelet::Pod stranger;
  stranger.name = "q";
  stranger.containers = {{"main", 1, false}};
  ASSERT_TRUE(kubelet.AdmitPod(stranger, kResource).ok());
  EXPECT_THAT(
      Metrics(agent),
      ::testing::HasSubstr("gputopo_agent_admissions_total{result=\"no_pod_qualifies\"} 1\n"));

  // GPUs 2 and 3 stop answering: the next discovery advertises them unhealthy, same IDs.
  testing::UseMachine("pcie-4gpu-lost");
  ASSERT_TRUE(gputopo::testing::WaitFor([&] {
    info = kubelet.Plugin(kResource);
    return info.has_value() && info->devices.size() == 8u && !info->devices[4].healthy;
  }));
  for (int i = 0; i < 8; ++i) {
    const int gpu = i / 2;
    EXPECT_EQ(
        info->devices[static_cast<size_t>(i)],
        (FakeKubelet::Device{Uuid(gpu) + "::" + std::to_string(i % 2), gpu < 2, gpu < 2 ? 0 : 1}))
        << i;
  }
  agent.RequestStop();
  agent.Wait();
}

TEST(EnforceModeTest, ARenamedResourceIsRegisteredAndSteered) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  testing::UseMachine("pcie-4gpu-2numa");
  testing::FakeSysfs sysfs("pcie-4gpu-2numa");
  FakeApiServer api;
  ASSERT_TRUE(api.Start());
  FakeKubelet kubelet;
  ASSERT_TRUE(kubelet.Start());
  gputopo::testing::FakeClock clock;
  const std::string config_path = kubelet.kubelet_dir() + "/time-slicing.yaml";
  std::ofstream(config_path) << "version: v1\nsharing:\n  timeSlicing:\n    renameByDefault: true\n"
                                "    resources:\n    - name: nvidia.com/gpu\n      replicas: 3\n";
  AgentOptions options = EnforceAgent(kubelet, sysfs);
  options.enforce->time_slicing_config = config_path;
  kube::KubeConfig config;
  config.server = api.base_url();
  Result<std::unique_ptr<AgentServer>> made = AgentServer::Create(options, config, clock);
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  ASSERT_TRUE((*made)->Start().ok());
  const std::string shared = "nvidia.com/gpu.shared";
  ASSERT_TRUE(kubelet.WaitForPlugin(shared, 1, kWait));
  EXPECT_EQ(kubelet.Plugin(shared)->devices.size(), 12u);

  nlohmann::json pod =
      gputopo::testing::GpuPod("default", "p", 1, {{"gputopo.io/assigned-gpus", Uuid(3)}});
  pod["spec"]["nodeName"] = "n1";
  nlohmann::json& resources = pod["spec"]["containers"][0]["resources"];
  resources = {{"requests", {{shared, "1"}}}, {"limits", {{shared, "1"}}}};
  ASSERT_TRUE(api.CreatePod(pod).has_value());
  FakeKubelet::Pod admitted_pod;
  admitted_pod.name = "p";
  admitted_pod.containers = {{"main", 1, false}};
  Result<FakeKubelet::PodAllocation> admitted = kubelet.AdmitPod(admitted_pod, shared);
  ASSERT_TRUE(admitted.ok()) << admitted.status().ToString();
  EXPECT_THAT(admitted->containers[0].device_ids, ElementsAre(Uuid(3) + "::0"));
  // The observer follows the renamed resource: observed-gpus is written for the pod.
  ASSERT_TRUE(gputopo::testing::WaitFor([&] {
    std::optional<nlohmann::json> p = api.GetPodObject("default", "p");
    return p && (*p)["metadata"]["annotations"].value("gputopo.io/observed-gpus", "") == Uuid(3);
  }));
  (*made)->RequestStop();
  (*made)->Wait();
}

TEST(EnforceModeTest, DiscoveryThatFindsNothingStopsStart) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  FakeApiServer api;
  ASSERT_TRUE(api.Start());
  FakeKubelet kubelet;
  ASSERT_TRUE(kubelet.Start());
  testing::FakeSysfs sysfs("pcie-4gpu-2numa");
  gputopo::testing::FakeClock clock;
  AgentOptions options = EnforceAgent(kubelet, sysfs);
  options.discovery.nvml_library = "/nonexistent/libnvidia-ml.so.1";
  kube::KubeConfig config;
  config.server = api.base_url();
  Result<std::unique_ptr<AgentServer>> made = AgentServer::Create(options, config, clock);
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  Status started = (*made)->Start();
  ASSERT_FALSE(started.ok());
  EXPECT_THAT(started.message(), ::testing::HasSubstr("enforce mode: discovery"));
  EXPECT_FALSE(kubelet.Plugin(kResource).has_value());
}

}  // namespace
}  // namespace gputopo::agent
