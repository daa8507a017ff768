// The device plugin against the fake kubelet: registration, ListAndWatch, steering through
// GetPreferredAllocation, Allocate's answer, the races of issue #12 and kubelet restarts. Waits
// are on events (the fake's condition variables) with long deadlines that never decide a result.
#include "src/agent/device_plugin.h"

#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <thread>

#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "src/agent/pod_resources_client.h"
#include "src/agent/time_slicing_config.h"
#include "test/src/agent/agent_test_support.h"
#include "test/support/fake_kubelet.h"
#include "test/support/machines.h"

namespace gputopo::agent {
namespace {

namespace dp = ::v1beta1;
using gputopo::testing::FakeKubelet;
using std::chrono::seconds;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

constexpr std::chrono::seconds kWait{60};  // only ever reached when something is broken
constexpr char kResource[] = "nvidia.com/gpu";
const std::chrono::system_clock::time_point kT0{seconds(1'700'000'000)};

// The pods bound to the node, as the API server would list them. `on_read`, when set, runs
// before each answer (a pod deleted while kubelet admits it).
class FakePodSource final : public PodSource {
 public:
  Result<std::vector<BoundPod>> CurrentPods() override {
    std::lock_guard<std::mutex> lock(mu_);
    ++reads_;
    if (on_read_) on_read_(pods_);
    return pods_;
  }
  void Add(BoundPod pod) {
    std::lock_guard<std::mutex> lock(mu_);
    pods_.push_back(std::move(pod));
  }
  void Remove(const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    std::erase_if(pods_, [&](const BoundPod& p) { return p.name == name; });
  }
  void OnRead(std::function<void(std::vector<BoundPod>&)> hook) {
    std::lock_guard<std::mutex> lock(mu_);
    on_read_ = std::move(hook);
  }
  int reads() const {
    std::lock_guard<std::mutex> lock(mu_);
    return reads_;
  }
  // As a watched cache: CurrentPods() answers pods_, ListNow() the API server's `live` pods.
  void ActAsCache(std::vector<BoundPod> live) {
    std::lock_guard<std::mutex> lock(mu_);
    cached_ = true;
    live_ = std::move(live);
  }
  bool cached() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return cached_;
  }
  Result<std::vector<BoundPod>> ListNow() override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!cached_) return pods_;
    ++live_reads_;
    return live_;
  }
  int live_reads() const {
    std::lock_guard<std::mutex> lock(mu_);
    return live_reads_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<BoundPod> pods_;
  std::function<void(std::vector<BoundPod>&)> on_read_;
  int reads_ = 0;
  bool cached_ = false;
  std::vector<BoundPod> live_;
  int live_reads_ = 0;
};

// A pod with one container requesting `request`, bound by gputopo with `assigned`.
BoundPod Bound(const std::string& name, const std::string& assigned, int64_t request,
               std::chrono::system_clock::time_point created = kT0) {
  BoundPod pod;
  pod.namespace_name = "default";
  pod.name = name;
  pod.uid = "uid-" + name;
  pod.created = created;
  pod.scheduler_name = "gputopo-scheduler";
  pod.assigned_gpus = assigned;
  pod.containers = {{"main", request, false}};
  return pod;
}

// Polls `done` until it holds; false after kWait (only when something is broken).
bool WaitUntil(const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + kWait;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

FakeKubelet::Pod KubeletPod(const BoundPod& pod) {
  FakeKubelet::Pod out;
  out.namespace_name = pod.namespace_name;
  out.name = pod.name;
  out.uid = pod.uid;
  for (const BoundContainer& c : pod.containers)
    out.containers.push_back({c.name, c.request, c.init});
  return out;
}

class DevicePluginTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(kubelet_.Start()); }

  std::unique_ptr<DevicePlugin> StartPlugin(int replicas = 2,
                                            MachineTopology machine = testing::Dgx1WithUuids()) {
    DevicePluginOptions options;
    options.kubelet_dir = kubelet_.kubelet_dir();
    options.replicas = replicas;
    options.poll_period = std::chrono::milliseconds(100);
    auto plugin =
        std::make_unique<DevicePlugin>(options, std::move(machine), pods_, &pod_resources_);
    Status started = plugin->Start();
    EXPECT_TRUE(started.ok()) << started.ToString();
    EXPECT_TRUE(kubelet_.WaitForPlugin(kResource, 1, kWait)) << plugin->last_register_error();
    return plugin;
  }

  // Admits `pod` (already in the pod source) and returns what kubelet allocated per container.
  FakeKubelet::PodAllocation Admit(const BoundPod& pod) {
    Result<FakeKubelet::PodAllocation> admitted = kubelet_.AdmitPod(KubeletPod(pod), kResource);
    EXPECT_TRUE(admitted.ok()) << admitted.status().ToString();
    return admitted.ok() ? *admitted : FakeKubelet::PodAllocation{};
  }

  FakeKubelet kubelet_;
  FakePodSource pods_;
  PodResourcesClient pod_resources_{kubelet_.pod_resources_socket()};
};

TEST_F(DevicePluginTest, RegistersAndAdvertisesReplicasWithNuma) {
  auto plugin = StartPlugin(2);
  EXPECT_TRUE(plugin->registered());
  EXPECT_EQ(plugin->registrations(), 1);
  EXPECT_EQ(plugin->socket_path(), kubelet_.device_plugins_dir() + "/gputopo-nvidia.com_gpu.sock");
  const std::optional<FakeKubelet::PluginInfo> info = kubelet_.Plugin(kResource);
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->endpoint, "gputopo-nvidia.com_gpu.sock");
  EXPECT_TRUE(info->get_preferred_allocation_available);
  EXPECT_FALSE(info->pre_start_required);
  ASSERT_EQ(info->devices.size(), 16u);
  EXPECT_EQ(info->devices[0], (FakeKubelet::Device{"GPU-d0::0", true, 0}));
  EXPECT_EQ(info->devices[1], (FakeKubelet::Device{"GPU-d0::1", true, 0}));
  EXPECT_EQ(info->devices[11], (FakeKubelet::Device{"GPU-d5::1", true, 1}));
  EXPECT_TRUE(kubelet_.refused_registrations().empty());
}

TEST_F(DevicePluginTest, ListAndWatchSendsAgainWhenHealthChanges) {
  auto plugin = StartPlugin(2);
  MachineTopology sick = testing::Dgx1WithUuids();
  sick.gpu(3).healthy = false;
  sick.gpu(3).health_reason = "nvmlDeviceGetUUID: GPU_IS_LOST";
  ASSERT_TRUE(plugin->SetTopology(sick));
  ASSERT_TRUE(kubelet_.WaitForPlugin(kResource, 2, kWait));
  const std::optional<FakeKubelet::PluginInfo> info = kubelet_.Plugin(kResource);
  ASSERT_TRUE(info.has_value());
  for (const FakeKubelet::Device& d : info->devices) {
    EXPECT_EQ(d.healthy, d.id.rfind("GPU-d3::", 0) != 0) << d.id;
  }
  // The same topology again changes nothing; another GPU count is refused.
  EXPECT_TRUE(plugin->SetTopology(sick));
  EXPECT_FALSE(plugin->SetTopology(gputopo::testing::PcieTwoNuma(2)));
}

TEST_F(DevicePluginTest, SteersPodsOntoTheirAssignedGpus) {
  auto plugin = StartPlugin(2);
  const BoundPod two = Bound("two", "GPU-d6,GPU-d1", 2);
  pods_.Add(two);
  FakeKubelet::PodAllocation a = Admit(two);
  ASSERT_EQ(a.containers.size(), 1u);
  EXPECT_TRUE(a.containers[0].preferred_asked);
  EXPECT_THAT(a.containers[0].device_ids,
              ElementsAre(testing::Dgx1Replica(6, 0), testing::Dgx1Replica(1, 0)));
  EXPECT_EQ(a.containers[0].envs["NVIDIA_VISIBLE_DEVICES"], "GPU-d6,GPU-d1");

  // A second pod on GPU 6 gets its other replica.
  const BoundPod one = Bound("one", "GPU-d6", 1, kT0 + seconds(5));
  pods_.Add(one);
  FakeKubelet::PodAllocation b = Admit(one);
  ASSERT_EQ(b.containers.size(), 1u);
  EXPECT_THAT(b.containers[0].device_ids, ElementsAre(testing::Dgx1Replica(6, 1)));
  EXPECT_EQ(b.containers[0].envs["NVIDIA_VISIBLE_DEVICES"], "GPU-d6");

  const std::vector<AdmissionRecord> admissions = plugin->Admissions();
  ASSERT_EQ(admissions.size(), 2u);
  EXPECT_TRUE(admissions[0].identification.steered());
  EXPECT_EQ(admissions[0].identification.pod_name, "two");
  EXPECT_EQ(admissions[1].identification.pod_name, "one");
}

// A watched cache answers admissions from memory; a pod bound a moment ago, not in the cache
// yet, is found by a live list.
TEST_F(DevicePluginTest, ACachedSourceListsLiveOnlyWhenItsPodsGiveNoSteering) {
  auto plugin = StartPlugin(2);
  const BoundPod early = Bound("early", "GPU-d2", 1);
  const BoundPod late = Bound("late", "GPU-d5", 1, kT0 + seconds(5));
  pods_.Add(early);  // the cache has only `early`
  pods_.ActAsCache({early, late});

  FakeKubelet::PodAllocation a = Admit(early);
  ASSERT_EQ(a.containers.size(), 1u);
  EXPECT_THAT(a.containers[0].device_ids, ElementsAre(testing::Dgx1Replica(2, 0)));
  EXPECT_EQ(pods_.live_reads(), 0) << "steered from the cache: no list";

  FakeKubelet::PodAllocation b = Admit(late);
  ASSERT_EQ(b.containers.size(), 1u);
  EXPECT_THAT(b.containers[0].device_ids, ElementsAre(testing::Dgx1Replica(5, 0)));
  EXPECT_EQ(pods_.live_reads(), 1);
  const std::vector<AdmissionRecord> admissions = plugin->Admissions();
  ASSERT_EQ(admissions.size(), 2u);
  EXPECT_EQ(admissions[1].identification.pod_name, "late");
  EXPECT_TRUE(admissions[1].identification.steered());
}

// kubelet's PodResources is asked at the first admission; later ones read that answer (kept in
// the shared view) with the plugin's own record of what it steered, and make no call while
// kubelet waits. An allocation the plugin cannot attribute, and an answer naming a pod that was
// deleted and created again under the same name, make it ask kubelet again.
TEST_F(DevicePluginTest, AdmissionsReadPodResourcesFromTheSharedAnswer) {
  auto plugin = StartPlugin(2);
  const BoundPod a = Bound("a", "GPU-d0", 1);
  const BoundPod b = Bound("b", "GPU-d1", 1, kT0 + seconds(1));
  const BoundPod c = Bound("c", "GPU-d2", 1, kT0 + seconds(2));
  pods_.Add(a);
  pods_.Add(b);
  pods_.Add(c);
  for (const BoundPod& pod : {a, b, c}) Admit(pod);
  std::vector<AdmissionRecord> admissions = plugin->Admissions();
  ASSERT_EQ(admissions.size(), 3u);
  EXPECT_TRUE(admissions[0].asked_pod_resources);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(admissions[i].identification.steered()) << i;
    EXPECT_EQ(admissions[i].identification.pod_name, std::string(1, static_cast<char>('a' + i)));
  }
  EXPECT_FALSE(admissions[1].asked_pod_resources);
  EXPECT_FALSE(admissions[2].asked_pod_resources);
  EXPECT_EQ(kubelet_.pod_resources_list_calls(), 1);

  // Another scheduler's pod: not steered (kubelet is asked once more, in case the answer was
  // stale), and its Allocate names no container the plugin knows, so the answer it kept is of
  // no use any more: the next admission asks kubelet, which lists `other`.
  BoundPod other = Bound("other", "", 1, kT0 + seconds(3));
  other.scheduler_name = "default-scheduler";
  pods_.Add(other);
  Admit(other);
  EXPECT_EQ(kubelet_.pod_resources_list_calls(), 2);
  const BoundPod d = Bound("d", "GPU-d3", 1, kT0 + seconds(4));
  pods_.Add(d);
  Admit(d);
  admissions = plugin->Admissions();
  EXPECT_TRUE(admissions.back().identification.steered());
  EXPECT_TRUE(admissions.back().asked_pod_resources);
  EXPECT_EQ(kubelet_.pod_resources_list_calls(), 3);

  // `a` deleted and created again under its name (a StatefulSet's pod), before any new answer:
  // the kept answer still lists default/a's container, so no pod qualifies with it, and
  // kubelet's answer now decides.
  ASSERT_TRUE(kubelet_.RemovePod("default", "a"));
  pods_.Remove("a");
  BoundPod again = Bound("a", "GPU-d4", 1, kT0 + seconds(9));
  again.uid = "uid-a-again";
  pods_.Add(again);
  FakeKubelet::PodAllocation allocation = Admit(again);
  ASSERT_EQ(allocation.containers.size(), 1u);
  EXPECT_THAT(allocation.containers[0].device_ids, ElementsAre(testing::Dgx1Replica(4, 0)));
  admissions = plugin->Admissions();
  EXPECT_TRUE(admissions.back().identification.steered());
  EXPECT_EQ(admissions.back().identification.pod_uid, "uid-a-again");
  EXPECT_TRUE(admissions.back().asked_pod_resources);
}

TEST_F(DevicePluginTest, TwoPodsBoundInTheSameSecond) {
  auto plugin = StartPlugin(2);
  // Both bound before kubelet admits either; kubelet takes them oldest first, then by name.
  const BoundPod a = Bound("a", "GPU-d2", 1);
  const BoundPod b = Bound("b", "GPU-d5,GPU-d7", 2);
  pods_.Add(b);
  pods_.Add(a);
  FakeKubelet::PodAllocation first = Admit(a);
  FakeKubelet::PodAllocation second = Admit(b);
  ASSERT_EQ(first.containers.size(), 1u);
  ASSERT_EQ(second.containers.size(), 1u);
  EXPECT_THAT(first.containers[0].device_ids, ElementsAre(testing::Dgx1Replica(2, 0)));
  EXPECT_THAT(second.containers[0].device_ids,
              ElementsAre(testing::Dgx1Replica(5, 0), testing::Dgx1Replica(7, 0)));
  EXPECT_EQ(second.containers[0].envs["NVIDIA_VISIBLE_DEVICES"], "GPU-d5,GPU-d7");

  // Two more of one size in the same second: each gets its own GPU, in kubelet's order.
  const BoundPod c = Bound("c", "GPU-d3", 1, kT0 + seconds(1));
  const BoundPod d = Bound("d", "GPU-d4", 1, kT0 + seconds(1));
  pods_.Add(d);
  pods_.Add(c);
  EXPECT_THAT(Admit(c).containers[0].device_ids, ElementsAre(testing::Dgx1Replica(3, 0)));
  EXPECT_THAT(Admit(d).containers[0].device_ids, ElementsAre(testing::Dgx1Replica(4, 0)));
  for (const AdmissionRecord& r : plugin->Admissions()) {
    EXPECT_TRUE(r.identification.steered()) << r.identification.reason;
  }
}

TEST_F(DevicePluginTest, InitContainersThenEachContainerItsShare) {
  auto plugin = StartPlugin(2);
  // kubelet: "setup" (init, 1) first, then "main" (2) reusing setup's device, all on the
  // assignment (setup on its first GPU).
  BoundPod staged = Bound("staged", "GPU-d3,GPU-d0", 2);
  staged.containers = {{"main", 2, false}, {"setup", 1, true}};
  pods_.Add(staged);
  FakeKubelet::PodAllocation a = Admit(staged);
  ASSERT_EQ(a.containers.size(), 2u);
  EXPECT_EQ(a.containers[0].container, "setup");
  EXPECT_THAT(a.containers[0].device_ids, ElementsAre(testing::Dgx1Replica(3, 0)));
  EXPECT_EQ(a.containers[1].container, "main");
  EXPECT_THAT(a.containers[1].preferred_must_include, ElementsAre(testing::Dgx1Replica(3, 0)));
  EXPECT_THAT(a.containers[1].device_ids,
              UnorderedElementsAre(testing::Dgx1Replica(3, 0), testing::Dgx1Replica(0, 0)));

  // Two containers of one each: consecutive slices of the assignment, in spec order.
  BoundPod pair = Bound("pair", "GPU-d1,GPU-d4", 1, kT0 + seconds(1));
  pair.containers = {{"one", 1, false}, {"two", 1, false}};
  pods_.Add(pair);
  FakeKubelet::PodAllocation b = Admit(pair);
  ASSERT_EQ(b.containers.size(), 2u);
  EXPECT_THAT(b.containers[0].device_ids, ElementsAre(testing::Dgx1Replica(1, 0)));
  EXPECT_THAT(b.containers[1].device_ids, ElementsAre(testing::Dgx1Replica(4, 0)));
  EXPECT_EQ(b.containers[1].envs["NVIDIA_VISIBLE_DEVICES"], "GPU-d4");
  for (const AdmissionRecord& r : plugin->Admissions()) {
    EXPECT_TRUE(r.identification.steered()) << r.identification.reason;
  }
}

TEST_F(DevicePluginTest, APodDeletedDuringAdmissionFallsBack) {
  auto plugin = StartPlugin(2);
  const BoundPod gone = Bound("gone", "GPU-d7", 1);
  pods_.Add(gone);
  // Deleted from the API server between kubelet starting its admission and the plugin's read.
  pods_.OnRead([](std::vector<BoundPod>& pods) { pods.clear(); });
  FakeKubelet::PodAllocation a = Admit(gone);
  ASSERT_EQ(a.containers.size(), 1u);
  EXPECT_THAT(a.containers[0].device_ids,
              ElementsAre(testing::Dgx1Replica(0, 0)));  // the fallback's choice
  EXPECT_EQ(a.containers[0].envs["NVIDIA_VISIBLE_DEVICES"], "GPU-d0");
  const std::vector<AdmissionRecord> admissions = plugin->Admissions();
  ASSERT_EQ(admissions.size(), 1u);
  EXPECT_EQ(admissions[0].identification.verdict, IdentificationVerdict::kNoneQualify);
  EXPECT_THAT(admissions[0].identification.reason, HasSubstr("no pod"));
}

TEST_F(DevicePluginTest, AnAnnotationNamingAGpuThisNodeLacksFallsBackWithTheReason) {
  auto plugin = StartPlugin(2);
  // GPU 0 is busy with someone else's pod: the fallback takes the least-loaded pair, NV2 1-2.
  const BoundPod busy = Bound("busy", "GPU-d0", 1);
  pods_.Add(busy);
  Admit(busy);
  const BoundPod stray = Bound("stray", "GPU-d0,GPU-elsewhere", 2, kT0 + seconds(1));
  pods_.Add(stray);
  FakeKubelet::PodAllocation a = Admit(stray);
  ASSERT_EQ(a.containers.size(), 1u);
  EXPECT_EQ(a.containers[0].device_ids.size(), 2u);
  EXPECT_THAT(a.containers[0].device_ids,
              ElementsAre(testing::Dgx1Replica(1, 0), testing::Dgx1Replica(2, 0)));
  const std::vector<AdmissionRecord> admissions = plugin->Admissions();
  ASSERT_EQ(admissions.size(), 2u);
  EXPECT_FALSE(admissions[1].identification.steered());
  EXPECT_THAT(admissions[1].identification.reason,
              HasSubstr("default/stray: assigned-gpus names \"GPU-elsewhere\", not a GPU of "
                        "this node"));
}

TEST_F(DevicePluginTest, KubeletRestartInTheMiddleReRegistersAndKeepsSteering) {
  auto plugin = StartPlugin(2);
  const BoundPod before = Bound("before", "GPU-d4", 1);
  pods_.Add(before);
  EXPECT_THAT(Admit(before).containers[0].device_ids, ElementsAre(testing::Dgx1Replica(4, 0)));

  ASSERT_TRUE(kubelet_.Restart());
  ASSERT_TRUE(kubelet_.WaitForRegisterCalls(2, kWait));
  ASSERT_TRUE(kubelet_.WaitForPlugin(kResource, 1, kWait)) << plugin->last_register_error();
  // kubelet has the plugin before the plugin's Register call returns.
  EXPECT_TRUE(WaitUntil([&] { return plugin->registrations() == 2; }));

  const BoundPod after = Bound("after", "GPU-d4,GPU-d0", 2, kT0 + seconds(1));
  pods_.Add(after);
  FakeKubelet::PodAllocation a = Admit(after);
  ASSERT_EQ(a.containers.size(), 1u);
  // GPU 4's replica 0 survived the restart (kubelet's checkpoint): replica 1 is next.
  EXPECT_THAT(a.containers[0].device_ids,
              ElementsAre(testing::Dgx1Replica(4, 1), testing::Dgx1Replica(0, 0)));
  EXPECT_TRUE(plugin->Admissions().back().identification.steered());

  // A second restart works the same.
  ASSERT_TRUE(kubelet_.Restart());
  ASSERT_TRUE(kubelet_.WaitForRegisterCalls(3, kWait));
  ASSERT_TRUE(kubelet_.WaitForPlugin(kResource, 1, kWait));
  const BoundPod later = Bound("later", "GPU-d7", 1, kT0 + seconds(2));
  pods_.Add(later);
  EXPECT_THAT(Admit(later).containers[0].device_ids, ElementsAre(testing::Dgx1Replica(7, 0)));
}

TEST_F(DevicePluginTest, RegistersOnceKubeletComesUp) {
  kubelet_.Stop();
  DevicePluginOptions options;
  options.kubelet_dir = kubelet_.kubelet_dir();
  options.poll_period = std::chrono::milliseconds(100);
  std::filesystem::create_directories(kubelet_.device_plugins_dir());
  DevicePlugin plugin(options, testing::Dgx1WithUuids(), pods_, nullptr);
  ASSERT_TRUE(plugin.Start().ok());
  EXPECT_FALSE(plugin.registered());
  EXPECT_THAT(plugin.last_register_error(), HasSubstr("register with kubelet"));
  ASSERT_TRUE(kubelet_.Start());
  ASSERT_TRUE(kubelet_.WaitForPlugin(kResource, 1, kWait)) << plugin.last_register_error();
  EXPECT_TRUE(WaitUntil([&] { return plugin.registrations() == 1; }));
}

TEST_F(DevicePluginTest, AllocateAnswersPhysicalUuidsDeduplicated) {
  auto plugin = StartPlugin(2);
  auto channel =
      grpc::CreateChannel("unix://" + plugin->socket_path(), grpc::InsecureChannelCredentials());
  auto stub = dp::DevicePlugin::NewStub(channel);
  auto allocate = [&](std::vector<std::string> ids, dp::AllocateResponse& response) {
    dp::AllocateRequest request;
    dp::ContainerAllocateRequest* c = request.add_container_requests();
    for (const std::string& id : ids) c->add_devices_ids(id);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + kWait);
    return stub->Allocate(&context, request, &response);
  };
  dp::AllocateResponse response;
  ASSERT_TRUE(
      allocate({testing::Dgx1Replica(3, 1), testing::Dgx1Replica(1, 0), testing::Dgx1Replica(3, 0)},
               response)
          .ok());
  ASSERT_EQ(response.container_responses_size(), 1);
  EXPECT_EQ(response.container_responses(0).envs().at("NVIDIA_VISIBLE_DEVICES"), "GPU-d3,GPU-d1");
  dp::AllocateResponse unknown;
  const grpc::Status refused = allocate({"GPU-nope::0"}, unknown);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(refused.error_message(), HasSubstr("unknown device: GPU-nope::0"));
}

TEST_F(DevicePluginTest, FailRequestsGreaterThanOne) {
  DevicePluginOptions options;
  options.kubelet_dir = kubelet_.kubelet_dir();
  options.replicas = 4;
  options.fail_requests_greater_than_one = true;
  DevicePlugin plugin(options, testing::Dgx1WithUuids(), pods_, &pod_resources_);
  ASSERT_TRUE(plugin.Start().ok());
  ASSERT_TRUE(kubelet_.WaitForPlugin(kResource, 1, kWait));
  const BoundPod two = Bound("two", "GPU-d0,GPU-d3", 2);
  pods_.Add(two);
  Result<FakeKubelet::PodAllocation> admitted = kubelet_.AdmitPod(KubeletPod(two), kResource);
  ASSERT_FALSE(admitted.ok());
  EXPECT_THAT(admitted.status().message(),
              HasSubstr("maximum request size for shared resources is 1"));
  const BoundPod one = Bound("one", "GPU-d3", 1, kT0 + seconds(1));
  pods_.Add(one);
  EXPECT_THAT(Admit(one).containers[0].device_ids, ElementsAre(testing::Dgx1Replica(3, 0)));
}

TEST_F(DevicePluginTest, ReplicasFromTheTimeSlicingConfig) {
  const std::string path = kubelet_.kubelet_dir() + "/time-slicing.yaml";
  std::ofstream(path) << "version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
                         "    - name: nvidia.com/gpu\n      replicas: 3\n";
  Result<SharingConfig> config = LoadTimeSlicingConfig(path, kResource);
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  auto plugin = StartPlugin(config->replicas);
  const std::optional<FakeKubelet::PluginInfo> info = kubelet_.Plugin(kResource);
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->devices.size(), 24u);
  EXPECT_EQ(info->devices[2].id, "GPU-d0::2");
}

TEST_F(DevicePluginTest, ACorruptTimeSlicingConfigIsAClearError) {
  const std::string path = kubelet_.kubelet_dir() + "/time-slicing.yaml";
  std::ofstream(path) << "version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
                         "    - name: nvidia.com/gpu\n      replicas: -2\n";
  Result<SharingConfig> config = LoadTimeSlicingConfig(path, kResource);
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().ToString(),
            "INVALID_ARGUMENT: " + path +
                ": time-slicing config: sharing.timeSlicing.resources[0].replicas is -2, want "
                "1..1024");
  // And replicas out of range never reach kubelet.
  DevicePluginOptions options;
  options.kubelet_dir = kubelet_.kubelet_dir();
  options.replicas = 0;
  DevicePlugin plugin(options, testing::Dgx1WithUuids(), pods_, nullptr);
  const Status started = plugin.Start();
  EXPECT_EQ(started.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(started.message(), HasSubstr("replicas must be 1..1024, not 0"));
  EXPECT_EQ(kubelet_.register_calls(), 0);
}

}  // namespace
}  // namespace gputopo::agent
