// The device plugin with the pods read from the (fake) API server, as `gputopo agent run --mode
// enforce` wires it: pods bound to this node with gputopo's assignment are steered; pods of other
// nodes and deleted pods are not.
#include <curl/curl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "src/agent/device_plugin.h"
#include "src/agent/kube_pod_source.h"
#include "src/agent/pod_resources_client.h"
#include "test/src/agent/agent_test_support.h"
#include "test/src/kube/kube_fixtures.h"
#include "test/support/fake_api_server.h"
#include "test/support/fake_clock.h"
#include "test/support/fake_kubelet.h"
#include "test/support/machines.h"

namespace gputopo::agent {
namespace {

using gputopo::testing::FakeApiServer;
using gputopo::testing::FakeKubelet;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr std::chrono::seconds kWait{60};  // only ever reached when something is broken
constexpr char kResource[] = "nvidia.com/gpu";

class EnforceApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    curl_global_init(CURL_GLOBAL_DEFAULT);
    ASSERT_TRUE(api_.Start());
    ASSERT_TRUE(kubelet_.Start());
    kube::KubeConfig config;
    config.server = api_.base_url();
    kube::ClientOptions client_options;
    client_options.request_timeout = std::chrono::seconds(120);
    kube_ = std::make_unique<kube::KubeClient>(config, client_options, clock_);
    pods_ = std::make_unique<KubePodSource>(*kube_, "n1", kResource);
    DevicePluginOptions options;
    options.kubelet_dir = kubelet_.kubelet_dir();
    options.replicas = 2;
    options.poll_period = std::chrono::milliseconds(100);
    plugin_ =
        std::make_unique<DevicePlugin>(options, testing::Dgx1WithUuids(), *pods_, &pod_resources_);
    ASSERT_TRUE(plugin_->Start().ok());
    ASSERT_TRUE(kubelet_.WaitForPlugin(kResource, 1, kWait)) << plugin_->last_register_error();
  }
  void TearDown() override { plugin_->Stop(); }

  // A pod bound to `node` by gputopo with `assigned`, in the API server.
  FakeKubelet::Pod Bind(const std::string& name, int gpus, const std::string& assigned,
                        const std::string& node = "n1") {
    nlohmann::json pod =
        gputopo::testing::GpuPod("default", name, gpus, {{"gputopo.io/assigned-gpus", assigned}});
    pod["spec"]["nodeName"] = node;
    std::optional<nlohmann::json> created = api_.CreatePod(pod);
    EXPECT_TRUE(created.has_value());
    FakeKubelet::Pod out;
    out.name = name;
    out.uid = created.has_value() ? (*created)["metadata"]["uid"].get<std::string>() : "";
    out.containers = {{"main", gpus, false}};
    return out;
  }

  std::vector<std::string> Admit(const FakeKubelet::Pod& pod) {
    Result<FakeKubelet::PodAllocation> admitted = kubelet_.AdmitPod(pod, kResource);
    EXPECT_TRUE(admitted.ok()) << admitted.status().ToString();
    if (!admitted.ok() || admitted->containers.size() != 1) return {};
    return admitted->containers[0].device_ids;
  }

  FakeApiServer api_;
  FakeKubelet kubelet_;
  gputopo::testing::FakeClock clock_;
  std::unique_ptr<kube::KubeClient> kube_;
  std::unique_ptr<KubePodSource> pods_;
  PodResourcesClient pod_resources_{kubelet_.pod_resources_socket()};
  std::unique_ptr<DevicePlugin> plugin_;
};

TEST_F(EnforceApiTest, PodsBoundHereAreSteeredOthersAreNot) {
  // A pod of another node names GPU 1: it must not be mistaken for the one admitted here.
  Bind("elsewhere", 1, "GPU-d1", "n2");
  const FakeKubelet::Pod a = Bind("a", 1, "GPU-d2");
  const FakeKubelet::Pod b = Bind("b", 2, "GPU-d5,GPU-d7");
  EXPECT_THAT(Admit(a), ElementsAre("GPU-d2::0"));
  EXPECT_THAT(Admit(b), ElementsAre("GPU-d5::0", "GPU-d7::0"));
  for (const AdmissionRecord& r : plugin_->Admissions()) {
    EXPECT_TRUE(r.identification.steered()) << r.identification.reason;
  }
  Result<std::vector<BoundPod>> listed = pods_->CurrentPods();
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_EQ((*listed)[0].scheduler_name, "gputopo-scheduler");
  EXPECT_EQ((*listed)[0].containers, (std::vector<BoundContainer>{{"main", 1, false}}));
}

TEST_F(EnforceApiTest, APodDeletedBeforeKubeletAsksFallsBack) {
  const FakeKubelet::Pod gone = Bind("gone", 1, "GPU-d6");
  ASSERT_TRUE(api_.DeletePod("default", "gone"));
  EXPECT_THAT(Admit(gone), ElementsAre("GPU-d0::0"));
  ASSERT_EQ(plugin_->Admissions().size(), 1u);
  EXPECT_THAT(plugin_->Admissions()[0].identification.reason, HasSubstr("no pod"));
}

TEST_F(EnforceApiTest, TheApiServerDownFallsBackWithTheReason) {
  const FakeKubelet::Pod pod = Bind("p", 1, "GPU-d6");
  api_.FailNext("GET", "/api/v1/pods", 500);
  EXPECT_THAT(Admit(pod), ElementsAre("GPU-d0::0"));
  ASSERT_EQ(plugin_->Admissions().size(), 1u);
  EXPECT_THAT(plugin_->Admissions()[0].identification.reason,
              HasSubstr("pods on this node unknown"));
}

}  // namespace
}  // namespace gputopo::agent
