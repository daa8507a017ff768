// The extender and the node agent together, end to end: gputopo (live, against the fake API
// server, driven over HTTP as kube-scheduler drives it) binds a Deployment of 8 replicas and
// some 2- and 4-GPU pods onto a DGX-1; the fake kubelet admits them with NVIDIA's stock plugin
// (which picks replicas itself); the agent's Observer reads PodResources and writes
// gputopo.io/observed-gpus; the extender's watch brings that back. The extender must then count
// every pod on the GPUs it really holds, report each mismatch once, and place the next pods
// away from the GPUs really in use. Observer passes are run by the test (RunOnce); everything
// else is awaited, never timed.
#include <curl/curl.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "src/agent/device_plugin.h"
#include "src/agent/kube_pod_source.h"
#include "src/agent/observer.h"
#include "src/app/app.h"
#include "src/app/system_clock.h"
#include "src/codec/topology_document.h"
#include "test/src/kube/kube_fixtures.h"
#include "test/support/fake_api_server.h"
#include "test/support/fake_kubelet.h"
#include "test/support/machines.h"

namespace gputopo {
namespace {

using nlohmann::json;
using testing::FakeApiServer;
using testing::FakeKubelet;
using testing::WaitFor;

constexpr char kResource[] = "nvidia.com/gpu";
constexpr char kNode[] = "dgx";
constexpr int kReplicas = 4;
constexpr std::chrono::milliseconds kAnswerDeadline = std::chrono::seconds(120);

// A DGX-1 V100 as the agent publishes it: the shipped links, and a UUID per GPU.
MachineTopology Dgx1WithUuids() {
  MachineTopology t = testing::Dgx1();
  for (int g = 0; g < t.gpu_count(); ++g) t.gpu(g).uuid = "GPU-dgx-" + std::to_string(g);
  return t;
}

std::set<std::string> Split(const std::string& value) {
  std::set<std::string> out;
  size_t start = 0;
  while (start < value.size()) {
    const size_t comma = std::min(value.find(',', start), value.size());
    out.insert(value.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

// The physical GPU of a replica device ID (GPU-<uuid>::<n>).
std::string GpuOfDevice(const std::string& id) { return id.substr(0, id.find("::")); }

// A Deployment of 8 single-GPU replicas, a 2-GPU and a 4-GPU pod (name, GPUs).
std::vector<std::pair<std::string, int>> Workload() {
  std::vector<std::pair<std::string, int>> pods;
  for (int i = 0; i < 8; ++i) pods.emplace_back("web-" + std::to_string(i), 1);
  pods.emplace_back("pair", 2);
  pods.emplace_back("quad", 4);
  return pods;
}

class ExtenderAndAgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    curl_global_init(CURL_GLOBAL_DEFAULT);
    ASSERT_TRUE(api_.Start());
    ASSERT_TRUE(kubelet_.Start());
    json node = testing::GpuNode(kNode, kReplicas);
    node["metadata"]["labels"].erase("gputopo.io/topology-profile");
    node["metadata"]["annotations"] = {
        {"gputopo.io/topology",
         codec::FormatTopologyDocument(topology_, {.pretty = false, .comments = {}})}};
    ASSERT_TRUE(api_.CreateNode(node).has_value());

    app::AppOptions options;
    options.server.http.port = 0;
    options.kube = kube::KubeConfig{};
    options.kube->server = api_.base_url();
    options.client.request_timeout = kAnswerDeadline;
    options.watcher.watch_timeout_seconds = 5;
    options.watcher.backoff_initial = std::chrono::milliseconds(20);
    options.watcher.backoff_max = std::chrono::milliseconds(200);
    auto created = app::App::Create(options, clock_);
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    app_ = std::move(created).value();
    ASSERT_TRUE(app_->Start().ok());
    ASSERT_TRUE(WaitFor([&] { return app_->Ready(); }));

    kube::KubeConfig config;
    config.server = api_.base_url();
    kube::ClientOptions client_options;
    client_options.request_timeout = kAnswerDeadline;
    agent_kube_ = std::make_unique<kube::KubeClient>(config, client_options, clock_);
    pod_resources_ = std::make_unique<agent::PodResourcesClient>(kubelet_.pod_resources_socket());
    agent::ObserverOptions observer;
    observer.node_name = kNode;
    observer_ = std::make_unique<agent::Observer>(observer, *agent_kube_, *pod_resources_,
                                                  topology_, clock_, metrics_);
    std::vector<FakeKubelet::Device> devices;
    for (const GpuInfo& gpu : topology_.gpus()) {
      for (int n = 0; n < kReplicas; ++n) {
        devices.push_back({gpu.uuid + "::" + std::to_string(n), true, gpu.numa_node});
      }
    }
    devices_ = devices;
  }
  void TearDown() override {
    plugin_.reset();
    observer_.reset();
    if (app_) app_->Stop();
    kubelet_.Stop();
    api_.Stop();
  }

  // kube-scheduler's round for one pod: filter, prioritize, bind to the node. Returns the
  // bind's Error, or why nothing passed.
  std::string Schedule(const std::string& name) {
    httplib::Client client("127.0.0.1", app_->port());
    client.set_read_timeout(60, 0);
    const auto pod = api_.GetPodObject("ml", name);
    if (!pod) return "no such pod";
    const json args = {{"Pod", *pod}, {"Nodes", nullptr}, {"NodeNames", {kNode}}};
    auto filtered = client.Post("/filter", args.dump(), "application/json");
    if (!filtered || filtered->status != 200) return "filter failed";
    const json reply = json::parse(filtered->body);
    if (reply["NodeNames"].empty()) return reply["FailedNodes"].dump();
    auto scored = client.Post("/prioritize", args.dump(), "application/json");
    if (!scored || scored->status != 200) return "prioritize failed";
    const json bind = {{"PodName", name},
                       {"PodNamespace", "ml"},
                       {"PodUID", (*pod)["metadata"]["uid"]},
                       {"Node", kNode}};
    auto bound = client.Post("/bind", bind.dump(), "application/json");
    if (!bound || bound->status != 200) return "bind failed";
    return json::parse(bound->body)["Error"];
  }

  // Creates `pods` (the web-* ones in group "web"), then for each in turn: kube-scheduler's
  // round through gputopo, and kubelet's admission through whichever plugin is registered.
  void CreateScheduleAndAdmit(const std::vector<std::pair<std::string, int>>& pods) {
    for (const auto& [name, gpus] : pods) {
      json pod = testing::GpuPod("ml", name, gpus);
      if (name.rfind("web-", 0) == 0) pod["metadata"]["annotations"]["gputopo.io/group"] = "web";
      ASSERT_TRUE(api_.CreatePod(pod).has_value());
    }
    ASSERT_TRUE(WaitFor([&] { return app_->state().Counts().pods == pods.size(); }));
    for (const auto& [name, gpus] : pods) {
      ASSERT_EQ(Schedule(name), "") << name;
      ASSERT_NO_FATAL_FAILURE(Admit(name, gpus));
    }
  }

  // kubelet admits the bound pod (one container requesting `gpus`) through the registered plugin.
  void Admit(const std::string& name, int gpus) {
    const auto pod = api_.GetPodObject("ml", name);
    ASSERT_TRUE(pod.has_value());
    FakeKubelet::Pod admitted;
    admitted.namespace_name = "ml";
    admitted.name = name;
    admitted.uid = (*pod)["metadata"]["uid"];
    admitted.containers = {{"main", gpus, false}};
    auto allocation = kubelet_.AdmitPod(admitted, kResource);
    ASSERT_TRUE(allocation.ok()) << allocation.status().ToString();
  }

  std::string Annotation(const std::string& name, const std::string& key) {
    const auto pod = api_.GetPodObject("ml", name);
    if (!pod) return "";
    return (*pod)["metadata"].value("annotations", json::object()).value(key, "");
  }

  // The GPUs (UUIDs) kubelet really gave each pod, by pod name.
  std::map<std::string, std::set<std::string>> Truth() {
    std::map<std::string, std::set<std::string>> out;
    for (const FakeKubelet::PodAllocation& a : kubelet_.Allocations()) {
      for (const auto& c : a.containers) {
        for (const std::string& id : c.device_ids) out[a.pod.name].insert(GpuOfDevice(id));
      }
    }
    return out;
  }

  // The pods gputopo's cache counts on each GPU (UUID), by pod name.
  std::map<std::string, std::set<std::string>> Cached() {
    std::map<std::string, std::set<std::string>> out;
    auto node = app_->state().Snapshot()->FindShared(kNode);
    if (node == nullptr) return out;
    for (int g = 0; g < node->gpu_count(); ++g) {
      for (const policies::Occupant& o : node->gpu(g).occupants) {
        out[o.pod_key.substr(o.pod_key.find('/') + 1)].insert(node->GpuLabel(g));
      }
    }
    return out;
  }

  const MachineTopology topology_ = Dgx1WithUuids();
  FakeApiServer api_;
  FakeKubelet kubelet_;
  app::SystemClock clock_;
  std::unique_ptr<app::App> app_;
  observability::MetricsRegistry metrics_;
  std::unique_ptr<kube::KubeClient> agent_kube_;
  std::unique_ptr<agent::PodResourcesClient> pod_resources_;
  std::unique_ptr<agent::Observer> observer_;
  std::vector<FakeKubelet::Device> devices_;  // NVIDIA's replicas of the node's GPUs
  std::unique_ptr<agent::KubePodSource> pod_source_;
  std::unique_ptr<agent::DevicePlugin> plugin_;
};

TEST_F(ExtenderAndAgentTest, ObserveModeTheExtenderFollowsWhatKubeletReallyGave) {
  kubelet_.AddStockPlugin(kResource, devices_);
  const std::vector<std::pair<std::string, int>> pods = Workload();
  ASSERT_NO_FATAL_FAILURE(CreateScheduleAndAdmit(pods));
  std::set<std::string> assigned_web;
  for (int i = 0; i < 8; ++i) {
    assigned_web.merge(Split(Annotation("web-" + std::to_string(i), "gputopo.io/assigned-gpus")));
  }
  EXPECT_EQ(assigned_web.size(), 8u) << "gputopo put the 8 replicas on 8 distinct GPUs";

  // The agent observes what kubelet really did and writes it on every pod.
  const agent::ObserverPass pass = observer_->RunOnce();
  ASSERT_TRUE(pass.status.ok()) << pass.status.ToString();
  EXPECT_EQ(pass.unmapped, 0);
  const auto truth = Truth();
  ASSERT_EQ(truth.size(), pods.size());
  int mismatched = 0;
  for (const auto& [name, gpus] : pods) {
    SCOPED_TRACE(name);
    EXPECT_EQ(Split(Annotation(name, "gputopo.io/observed-gpus")), truth.at(name));
    if (Split(Annotation(name, "gputopo.io/assigned-gpus")) != truth.at(name)) ++mismatched;
  }
  // The stock plugin knows nothing of gputopo's choice: its own picks differ somewhere.
  EXPECT_GT(mismatched, 0) << "the stock plugin happened to pick gputopo's GPUs for every pod";

  // The extender's cache follows the ground truth, pod by pod and GPU by GPU.
  ASSERT_TRUE(WaitFor([&] { return Cached() == truth; }));
  // Each mismatch was counted once, and a second pass (nothing changed) writes nothing.
  httplib::Client admin("127.0.0.1", app_->port());
  auto metrics = admin.Get("/metrics");
  ASSERT_TRUE(metrics && metrics->status == 200);
  EXPECT_NE(metrics->body.find("gputopo_gpu_mismatches_total " + std::to_string(mismatched)),
            std::string::npos);
  EXPECT_EQ(observer_->RunOnce().writes, 0);

  // Later placements avoid the GPUs really in use: an exclusive pod needs a GPU no pod holds.
  std::set<std::string> used;
  for (const auto& [name, gpus] : truth) used.insert(gpus.begin(), gpus.end());
  json exclusive = testing::GpuPod("ml", "alone", 1, {{"gputopo.io/exclusive", "true"}});
  ASSERT_TRUE(api_.CreatePod(exclusive).has_value());
  ASSERT_TRUE(WaitFor([&] { return app_->state().Counts().pods == pods.size() + 1; }));
  const std::string outcome = Schedule("alone");
  if (used.size() == 8) {
    EXPECT_NE(outcome, "") << "every GPU is really in use; nothing may be free for it";
  } else {
    ASSERT_EQ(outcome, "");
    const std::set<std::string> chosen = Split(Annotation("alone", "gputopo.io/assigned-gpus"));
    ASSERT_EQ(chosen.size(), 1u);
    EXPECT_EQ(used.count(*chosen.begin()), 0u) << *chosen.begin() << " is really in use";
  }
}

// Enforce mode: the agent is kubelet's device plugin and steers every container onto the GPUs
// gputopo assigned, so what kubelet records (and PodResources reports) is gputopo's choice:
// observed-gpus equals assigned-gpus for every pod, and there is no mismatch.
TEST_F(ExtenderAndAgentTest, EnforceModeObservedEqualsAssignedForEveryPod) {
  pod_source_ = std::make_unique<agent::KubePodSource>(*agent_kube_, kNode, kResource);
  agent::DevicePluginOptions options;
  options.kubelet_dir = kubelet_.kubelet_dir();
  options.resource_name = kResource;
  options.replicas = kReplicas;
  plugin_ =
      std::make_unique<agent::DevicePlugin>(options, topology_, *pod_source_, pod_resources_.get());
  ASSERT_TRUE(plugin_->Start().ok());
  ASSERT_TRUE(kubelet_.WaitForPlugin(kResource, 1, kAnswerDeadline));
  const std::vector<std::pair<std::string, int>> pods = Workload();
  ASSERT_NO_FATAL_FAILURE(CreateScheduleAndAdmit(pods));
  const agent::ObserverPass pass = observer_->RunOnce();
  ASSERT_TRUE(pass.status.ok()) << pass.status.ToString();
  const auto truth = Truth();
  for (const auto& [name, gpus] : pods) {
    SCOPED_TRACE(name);
    const std::set<std::string> assigned = Split(Annotation(name, "gputopo.io/assigned-gpus"));
    EXPECT_EQ(assigned.size(), static_cast<size_t>(gpus));
    EXPECT_EQ(truth.at(name), assigned) << "kubelet gave what gputopo assigned";
    EXPECT_EQ(Split(Annotation(name, "gputopo.io/observed-gpus")), assigned);
  }
  for (const agent::AdmissionRecord& admission : plugin_->Admissions()) {
    EXPECT_TRUE(admission.identification.steered()) << admission.identification.reason;
  }
  ASSERT_TRUE(WaitFor([&] { return Cached() == truth; }));
  httplib::Client admin("127.0.0.1", app_->port());
  auto metrics = admin.Get("/metrics");
  ASSERT_TRUE(metrics && metrics->status == 200);
  EXPECT_NE(metrics->body.find("gputopo_gpu_mismatches_total 0"), std::string::npos);
}

}  // namespace
}  // namespace gputopo
