// Observe mode end to end on one node: pods in the fake API server, admitted by the fake
// kubelet's stock (NVIDIA-like) plugin, observed through real PodResources and written back as
// gputopo.io/observed-gpus through the real client. Passes are run one at a time by the test
// (RunOnce), so nothing depends on timing.
#include "src/agent/observer.h"

#include <curl/curl.h>
#include <gtest/gtest.h>

#include "test/src/kube/kube_fixtures.h"
#include "test/support/fake_api_server.h"
#include "test/support/fake_clock.h"
#include "test/support/fake_kubelet.h"

namespace gputopo::agent {
namespace {

using nlohmann::json;
using testing::FakeApiServer;
using testing::FakeKubelet;

constexpr char kResource[] = "nvidia.com/gpu";
constexpr char kObserved[] = "gputopo.io/observed-gpus";

MachineTopology TwoGpus() {
  MachineTopology t(2);
  t.gpu(0).uuid = "GPU-a";
  t.gpu(1).uuid = "GPU-b";
  return t;
}

class ObserverTest : public ::testing::Test {
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
    pod_resources_ = std::make_unique<PodResourcesClient>(kubelet_.pod_resources_socket());
    ObserverOptions options;
    options.node_name = "n1";
    observer_ =
        std::make_unique<Observer>(options, *kube_, *pod_resources_, TwoGpus(), clock_, metrics_);
    // Two GPUs time-sliced 4 ways, as NVIDIA's plugin advertises them.
    std::vector<FakeKubelet::Device> replicas;
    for (const char* gpu : {"GPU-a", "GPU-b"}) {
      for (int n = 0; n < 4; ++n) replicas.push_back({std::string(gpu) + "::" + std::to_string(n)});
    }
    kubelet_.AddStockPlugin(kResource, replicas);
  }

  // A pod bound to `node` with gputopo's assignment, in the API server and admitted by kubelet.
  void BindAndAdmit(const std::string& name, int gpus, const std::string& assigned,
                    const std::string& node = "n1") {
    json pod = testing::GpuPod("default", name, gpus, {{"gputopo.io/assigned-gpus", assigned}});
    pod["spec"]["nodeName"] = node;
    ASSERT_TRUE(api_.CreatePod(pod).has_value());
    if (node != "n1") return;
    FakeKubelet::Pod admitted;
    admitted.name = name;
    admitted.containers = {{"main", gpus, false}};
    Result<FakeKubelet::PodAllocation> result = kubelet_.AdmitPod(admitted, kResource);
    ASSERT_TRUE(result.ok()) << result.status().ToString();
  }

  std::string Observed(const std::string& name) const {
    std::optional<json> pod = api_.GetPodObject("default", name);
    if (!pod) return "<no pod>";
    const json annotations = (*pod)["metadata"].value("annotations", json::object());
    return annotations.value(kObserved, "");
  }

  size_t PatchCount() const {
    size_t n = 0;
    for (const auto& r : api_.Requests()) n += r.method == "PATCH";
    return n;
  }

  FakeApiServer api_;
  FakeKubelet kubelet_;
  testing::FakeClock clock_;
  observability::MetricsRegistry metrics_;
  std::unique_ptr<kube::KubeClient> kube_;
  std::unique_ptr<PodResourcesClient> pod_resources_;
  std::unique_ptr<Observer> observer_;
};

TEST_F(ObserverTest, WritesWhatKubeletReallyGaveAndOnlyWhenItChanges) {
  BindAndAdmit("p1", 1, "GPU-a");
  BindAndAdmit("p2", 1, "GPU-a");  // gputopo packed both on GPU-a; the stock plugin spreads
  BindAndAdmit("elsewhere", 1, "GPU-a", "n2");
  EXPECT_FALSE(observer_->ready());

  ObserverPass pass = observer_->RunOnce();
  ASSERT_TRUE(pass.status.ok()) << pass.status.ToString();
  EXPECT_TRUE(observer_->ready());
  EXPECT_EQ(pass.pods_listed, 2);
  EXPECT_EQ(pass.writes, 2);
  EXPECT_EQ(Observed("p1"), "GPU-a");
  EXPECT_EQ(Observed("p2"), "GPU-b");  // the mismatch the extender will now follow
  EXPECT_EQ(Observed("elsewhere"), "");
  // Only this node's pods are listed.
  bool selected = false;
  for (const auto& r : api_.Requests()) {
    selected |= r.path == "/api/v1/pods" &&
                r.target.find("fieldSelector=spec.nodeName%3Dn1") != std::string::npos;
  }
  EXPECT_TRUE(selected);

  // Nothing changed: nothing is written, and the API server is not even asked until the resync.
  const size_t patches = PatchCount();
  const size_t lists = api_.RequestCount("GET", "/api/v1/pods");
  pass = observer_->RunOnce();
  EXPECT_TRUE(pass.status.ok());
  EXPECT_FALSE(pass.listed_pods);
  EXPECT_EQ(pass.writes, 0);
  EXPECT_EQ(PatchCount(), patches);
  EXPECT_EQ(api_.RequestCount("GET", "/api/v1/pods"), lists);
  // At the resync the pods are listed again (an annotation someone else changed is put back).
  ASSERT_TRUE(api_.UpdatePod("default", "p2",
                             [](json& p) { p["metadata"]["annotations"][kObserved] = "GPU-a"; }));
  clock_.Advance(std::chrono::seconds(61));
  pass = observer_->RunOnce();
  EXPECT_TRUE(pass.listed_pods);
  EXPECT_EQ(pass.writes, 1);
  EXPECT_EQ(Observed("p2"), "GPU-b");

  // A 2-GPU pod: one replica on each GPU (the least used first), in index order.
  BindAndAdmit("pair", 2, "GPU-b,GPU-a");
  pass = observer_->RunOnce();
  EXPECT_EQ(pass.writes, 1);
  EXPECT_EQ(Observed("pair"), "GPU-a,GPU-b");

  const std::string metrics = metrics_.Render();
  EXPECT_NE(metrics.find("gputopo_agent_observed_gpus_writes_total{result=\"ok\"} 4"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("gputopo_agent_ready 1"), std::string::npos) << metrics;
}

// Each answer also goes to the shared view, where enforce mode's admissions read it; an answer
// that failed leaves the one before.
TEST_F(ObserverTest, SharesEachPodResourcesAnswer) {
  PodResourcesView view;
  ObserverOptions options;
  options.node_name = "n1";
  Observer sharing(options, *kube_, *pod_resources_, TwoGpus(), clock_, metrics_, &view);
  BindAndAdmit("p1", 1, "GPU-a");
  EXPECT_EQ(view.Current(), nullptr);
  sharing.RunOnce();
  PodResourcesView::Answer answer = view.Current();
  ASSERT_NE(answer, nullptr);
  ASSERT_EQ(answer->size(), 1u);
  EXPECT_EQ((*answer)[0].name, "p1");
  BindAndAdmit("p2", 1, "GPU-a");
  sharing.RunOnce();  // unchanged pods are not listed again, but the answer is shared
  ASSERT_NE(view.Current(), nullptr);
  EXPECT_EQ(view.Current()->size(), 2u);
  ASSERT_TRUE(kubelet_.SetPodResourcesUnreadable(true));
  sharing.RunOnce();
  ASSERT_NE(view.Current(), nullptr);
  EXPECT_EQ(view.Current()->size(), 2u);
}

TEST_F(ObserverTest, AnUnmappedDeviceIsReportedAndNotWritten) {
  json pod = testing::GpuPod("default", "mig", 1);
  pod["spec"]["nodeName"] = "n1";
  ASSERT_TRUE(api_.CreatePod(pod).has_value());
  FakeKubelet::Pod admitted;
  admitted.name = "mig";
  admitted.containers = {{"main", 1, false}};
  ASSERT_TRUE(kubelet_.AllocateDirectly(admitted, kResource, {{"main", {"MIG-1234"}}}).ok());
  ObserverPass pass = observer_->RunOnce();
  ASSERT_TRUE(pass.status.ok()) << pass.status.ToString();
  EXPECT_EQ(pass.unmapped, 1);
  EXPECT_EQ(pass.writes, 0);
  EXPECT_EQ(Observed("mig"), "");
  EXPECT_NE(metrics_.Render().find("gputopo_agent_unmapped_pods 1"), std::string::npos);
}

TEST_F(ObserverTest, NotReadyWhilePodResourcesCannotBeReadAndNothingIsLost) {
  BindAndAdmit("p1", 1, "GPU-a");
  ASSERT_TRUE(kubelet_.SetPodResourcesUnreadable(true));
  ObserverPass pass = observer_->RunOnce();
  EXPECT_EQ(pass.status.code(), StatusCode::kInternal) << pass.status.ToString();
  EXPECT_FALSE(observer_->ready());
  EXPECT_NE(observer_->last_error().find("unreadable answer"), std::string::npos)
      << observer_->last_error();
  EXPECT_EQ(Observed("p1"), "");

  kubelet_.Stop();
  pass = observer_->RunOnce();
  EXPECT_EQ(pass.status.code(), StatusCode::kUnavailable) << pass.status.ToString();

  // kubelet is back (allocations kept, as its checkpoint does): the next pass catches up. The
  // channel may meet the old connection's failure once more; a pass is retried, never skipped.
  ASSERT_TRUE(kubelet_.SetPodResourcesUnreadable(false));
  ASSERT_TRUE(kubelet_.Start());
  ASSERT_TRUE(testing::WaitFor([&] { return observer_->RunOnce().status.ok(); }));
  EXPECT_TRUE(observer_->ready());
  EXPECT_EQ(Observed("p1"), "GPU-a");
}

TEST_F(ObserverTest, NotReadyWhileTheApiServerFails) {
  BindAndAdmit("p1", 1, "GPU-a");
  api_.FailNext("GET", "/api/v1/pods", 503);
  ObserverPass pass = observer_->RunOnce();
  EXPECT_FALSE(pass.status.ok());
  EXPECT_FALSE(observer_->ready());
  EXPECT_NE(observer_->last_error().find("listing the pods of node n1"), std::string::npos)
      << observer_->last_error();
  pass = observer_->RunOnce();
  ASSERT_TRUE(pass.status.ok()) << pass.status.ToString();
  EXPECT_EQ(Observed("p1"), "GPU-a");
}

TEST_F(ObserverTest, AFailedWriteIsDoneAgainAtTheNextPass) {
  BindAndAdmit("p1", 1, "GPU-a");
  api_.FailNext("PATCH", "/api/v1/namespaces/default/pods/p1", 500);
  ObserverPass pass = observer_->RunOnce();
  ASSERT_TRUE(pass.status.ok());
  EXPECT_EQ(pass.write_failures, 1);
  EXPECT_EQ(Observed("p1"), "");
  pass = observer_->RunOnce();
  EXPECT_EQ(pass.writes, 1);
  EXPECT_EQ(Observed("p1"), "GPU-a");
}

TEST_F(ObserverTest, APodReCreatedUnderTheSameNameIsNotGivenItsPredecessorsGpus) {
  BindAndAdmit("p1", 1, "GPU-a");
  // The observer listed the old pod; the pod is replaced before its write lands.
  api_.HoldNext("PATCH", "/api/v1/namespaces/default/pods/p1");
  std::thread pass_thread([&] { (void)observer_->RunOnce(); });
  ASSERT_TRUE(testing::WaitFor([&] { return api_.held_requests() == 1; }));
  ASSERT_TRUE(api_.DeletePod("default", "p1"));
  json again = testing::GpuPod("default", "p1", 1);
  again["spec"]["nodeName"] = "n1";
  ASSERT_TRUE(api_.CreatePod(again).has_value());
  api_.ReleaseHeld();
  pass_thread.join();
  EXPECT_EQ(Observed("p1"), "");  // the uid guard refused the write
}

TEST_F(ObserverTest, StartRunsPassesUntilStop) {
  BindAndAdmit("p1", 1, "GPU-a");
  const auto started = std::chrono::steady_clock::now();
  observer_->Start();
  ASSERT_TRUE(testing::WaitFor([&] { return Observed("p1") == "GPU-a"; }));
  // A few more periods go by.
  ASSERT_TRUE(testing::WaitFor([&] { return kubelet_.pod_resources_list_calls() >= 3; }));
  observer_->Stop();
  const double elapsed_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  // At most one PodResources List per period (1 s), however slow or fast the machine: an upper
  // bound only.
  EXPECT_LE(kubelet_.pod_resources_list_calls(), static_cast<int>(elapsed_s) + 1);
  EXPECT_EQ(static_cast<uint64_t>(kubelet_.pod_resources_list_calls()), observer_->passes());
}

}  // namespace
}  // namespace gputopo::agent
