// The fake kubelet behaves as kubelet does: registration and dial-back, admission through
// GetPreferredAllocation and Allocate, PodResources from what it allocated, restart. Waits are
// on events (the fake's condition variables) with generous deadlines that never decide a result.
#include "test/support/fake_kubelet.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "podresources/v1/api.grpc.pb.h"

namespace gputopo::testing {
namespace {

namespace dp = ::v1beta1;
namespace pr = ::v1;

constexpr std::chrono::seconds kWait{30};  // only ever reached when something is broken
constexpr char kResource[] = "nvidia.com/gpu";

// A minimal device plugin, served on <device-plugins>/<endpoint>: advertises `devices`, answers
// GetPreferredAllocation with `prefer` and records what it was asked.
class TestPlugin final : public dp::DevicePlugin::Service {
 public:
  struct Advertised {
    std::string id;
    bool healthy = true;
    int numa = -1;
  };

  TestPlugin(std::string dir, std::string endpoint) : dir_(std::move(dir)), endpoint_(endpoint) {}
  ~TestPlugin() override { StopServing(); }

  dp::DevicePluginOptions options;
  // (available, must_include, size) -> preferred IDs.
  std::function<std::vector<std::string>(const std::vector<std::string>&,
                                         const std::vector<std::string>&, int)>
      prefer;

  bool Serve() {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("unix://" + dir_ + "/" + endpoint_, grpc::InsecureServerCredentials());
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
    return server_ != nullptr;
  }
  void StopServing() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
      cv_.notify_all();
    }
    if (server_ != nullptr) server_->Shutdown(std::chrono::system_clock::now());
    server_.reset();
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = false;
  }

  grpc::Status Register(const std::string& version = "v1beta1",
                        const std::string& resource = kResource) {
    auto channel =
        grpc::CreateChannel("unix://" + dir_ + "/kubelet.sock", grpc::InsecureChannelCredentials());
    auto stub = dp::Registration::NewStub(channel);
    dp::RegisterRequest request;
    request.set_version(version);
    request.set_endpoint(endpoint_);
    request.set_resource_name(resource);
    *request.mutable_options() = options;
    dp::Empty empty;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + kWait);
    context.set_wait_for_ready(true);
    return stub->Register(&context, request, &empty);
  }

  void SetDevices(std::vector<Advertised> devices) {
    std::lock_guard<std::mutex> lock(mu_);
    devices_ = std::move(devices);
    ++generation_;
    cv_.notify_all();
  }

  std::vector<std::vector<std::string>> allocate_calls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return allocate_calls_;
  }
  int preferred_calls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return preferred_calls_;
  }
  int pre_start_calls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return pre_start_calls_;
  }

  grpc::Status GetDevicePluginOptions(grpc::ServerContext*, const dp::Empty*,
                                      dp::DevicePluginOptions* out) override {
    *out = options;
    return grpc::Status::OK;
  }

  grpc::Status ListAndWatch(grpc::ServerContext* context, const dp::Empty*,
                            grpc::ServerWriter<dp::ListAndWatchResponse>* writer) override {
    std::unique_lock<std::mutex> lock(mu_);
    int sent = -1;
    while (!stopping_ && !context->IsCancelled()) {
      if (sent != generation_) {
        sent = generation_;
        dp::ListAndWatchResponse response;
        for (const Advertised& a : devices_) {
          dp::Device* d = response.add_devices();
          d->set_id(a.id);
          d->set_health(a.healthy ? "Healthy" : "Unhealthy");
          if (a.numa >= 0) d->mutable_topology()->add_nodes()->set_id(a.numa);
        }
        lock.unlock();
        const bool written = writer->Write(response);
        lock.lock();
        if (!written) break;
      }
      // Woken by SetDevices or StopServing; the period only bounds how late a cancelled stream
      // is noticed.
      cv_.wait_for(lock, std::chrono::milliseconds(50));
    }
    return grpc::Status::OK;
  }

  grpc::Status GetPreferredAllocation(grpc::ServerContext*,
                                      const dp::PreferredAllocationRequest* request,
                                      dp::PreferredAllocationResponse* response) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++preferred_calls_;
    for (const auto& c : request->container_requests()) {
      std::vector<std::string> available(c.available_deviceids().begin(),
                                         c.available_deviceids().end());
      std::vector<std::string> must(c.must_include_deviceids().begin(),
                                    c.must_include_deviceids().end());
      auto* out = response->add_container_responses();
      if (prefer) {
        for (const std::string& id : prefer(available, must, c.allocation_size())) {
          out->add_deviceids(id);
        }
      }
    }
    return grpc::Status::OK;
  }

  grpc::Status Allocate(grpc::ServerContext*, const dp::AllocateRequest* request,
                        dp::AllocateResponse* response) override {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& c : request->container_requests()) {
      std::vector<std::string> ids(c.devices_ids().begin(), c.devices_ids().end());
      allocate_calls_.push_back(ids);
      auto* out = response->add_container_responses();
      std::string visible;
      for (const std::string& id : ids) visible += (visible.empty() ? "" : ",") + id;
      (*out->mutable_envs())["NVIDIA_VISIBLE_DEVICES"] = visible;
      (*out->mutable_annotations())["test/allocated"] = visible;
      out->add_cdi_devices()->set_name("nvidia.com/gpu=" + visible);
    }
    return grpc::Status::OK;
  }

  grpc::Status PreStartContainer(grpc::ServerContext*, const dp::PreStartContainerRequest*,
                                 dp::PreStartContainerResponse*) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++pre_start_calls_;
    return grpc::Status::OK;
  }

 private:
  const std::string dir_;
  const std::string endpoint_;
  std::unique_ptr<grpc::Server> server_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::vector<Advertised> devices_;
  int generation_ = 0;
  std::vector<std::vector<std::string>> allocate_calls_;
  int preferred_calls_ = 0;
  int pre_start_calls_ = 0;
};

// PodResources as a client sees it.
pr::ListPodResourcesResponse ListPodResources(const FakeKubelet& kubelet) {
  auto stub = pr::PodResourcesLister::NewStub(grpc::CreateChannel(
      "unix://" + kubelet.pod_resources_socket(), grpc::InsecureChannelCredentials()));
  pr::ListPodResourcesResponse response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + kWait);
  const grpc::Status status = stub->List(&context, pr::ListPodResourcesRequest(), &response);
  EXPECT_TRUE(status.ok()) << status.error_message();
  return response;
}

std::vector<TestPlugin::Advertised> FourGpus() {
  return {{"GPU-a", true, 0}, {"GPU-b", true, 0}, {"GPU-c", true, 1}, {"GPU-d", true, 1}};
}

FakeKubelet::Pod OnePod(const std::string& name, int64_t gpus) {
  FakeKubelet::Pod pod;
  pod.name = name;
  pod.uid = name + "-uid";
  pod.containers = {{"main", gpus, false}};
  return pod;
}

class FakeKubeletTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(kubelet_.Start());
    plugin_ = std::make_unique<TestPlugin>(kubelet_.device_plugins_dir(), "gputopo.sock");
    plugin_->options.set_get_preferred_allocation_available(true);
    plugin_->SetDevices(FourGpus());
  }
  void TearDown() override {
    plugin_.reset();  // before the kubelet, like a plugin pod ending first
  }

  void RegisterPlugin() {
    ASSERT_TRUE(plugin_->Serve());
    const grpc::Status status = plugin_->Register();
    ASSERT_TRUE(status.ok()) << status.error_message();
    ASSERT_TRUE(kubelet_.WaitForPlugin(kResource, 1, kWait));
  }

  FakeKubelet kubelet_;
  std::unique_ptr<TestPlugin> plugin_;
};

TEST_F(FakeKubeletTest, LaysOutItsDirectoryLikeKubelet) {
  EXPECT_TRUE(std::filesystem::is_socket(kubelet_.registration_socket()));
  EXPECT_TRUE(std::filesystem::is_socket(kubelet_.pod_resources_socket()));
  EXPECT_EQ(kubelet_.registration_socket(),
            kubelet_.kubelet_dir() + "/device-plugins/kubelet.sock");
  EXPECT_EQ(kubelet_.pod_resources_socket(),
            kubelet_.kubelet_dir() + "/pod-resources/kubelet.sock");
}

TEST_F(FakeKubeletTest, RegisterDialsBackReadsOptionsThenTheDeviceList) {
  plugin_->options.set_pre_start_required(true);
  RegisterPlugin();
  std::optional<FakeKubelet::PluginInfo> info = kubelet_.Plugin(kResource);
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->endpoint, "gputopo.sock");
  EXPECT_TRUE(info->get_preferred_allocation_available);
  EXPECT_TRUE(info->pre_start_required);
  EXPECT_TRUE(info->connected);
  ASSERT_EQ(info->devices.size(), 4u);
  EXPECT_EQ(info->devices[2], (FakeKubelet::Device{"GPU-c", true, 1}));
}

TEST_F(FakeKubeletTest, KeepsTheLatestDeviceList) {
  RegisterPlugin();
  std::vector<TestPlugin::Advertised> devices = FourGpus();
  devices[1].healthy = false;
  plugin_->SetDevices(devices);
  ASSERT_TRUE(kubelet_.WaitForPlugin(kResource, 2, kWait));
  std::optional<FakeKubelet::PluginInfo> info = kubelet_.Plugin(kResource);
  ASSERT_TRUE(info.has_value());
  EXPECT_FALSE(info->devices[1].healthy);
  // An unhealthy device is not offered.
  Result<FakeKubelet::PodAllocation> admitted = kubelet_.AdmitPod(OnePod("p", 4), kResource);
  EXPECT_EQ(admitted.status().code(), StatusCode::kResourceExhausted);
}

TEST_F(FakeKubeletTest, RefusesAnUnsupportedVersionOrResourceName) {
  ASSERT_TRUE(plugin_->Serve());
  grpc::Status status = plugin_->Register("v1alpha");
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNKNOWN);
  EXPECT_NE(status.error_message().find("\"v1alpha\" is not supported"), std::string::npos)
      << status.error_message();
  status = plugin_->Register("v1beta1", "gpu");
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNKNOWN);
  status = plugin_->Register("v1beta1", "kubernetes.io/gpu");
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNKNOWN);
  EXPECT_EQ(kubelet_.refused_registrations().size(), 3u);
  EXPECT_FALSE(kubelet_.Plugin(kResource).has_value());
  EXPECT_FALSE(kubelet_.Plugin("gpu").has_value());
}

TEST_F(FakeKubeletTest, AdmissionAsksForAPreferenceAndAllocatesIt) {
  plugin_->options.set_pre_start_required(true);
  std::vector<std::string> seen_available, seen_must;
  int seen_size = 0;
  plugin_->prefer = [&](const std::vector<std::string>& available,
                        const std::vector<std::string>& must, int size) {
    seen_available = available;
    seen_must = must;
    seen_size = size;
    return std::vector<std::string>{"GPU-d", "GPU-b"};
  };
  RegisterPlugin();
  Result<FakeKubelet::PodAllocation> admitted = kubelet_.AdmitPod(OnePod("p", 2), kResource);
  ASSERT_TRUE(admitted.ok()) << admitted.status().ToString();
  ASSERT_EQ(admitted->containers.size(), 1u);
  const FakeKubelet::ContainerAllocation& c = admitted->containers[0];
  EXPECT_EQ(seen_available, (std::vector<std::string>{"GPU-a", "GPU-b", "GPU-c", "GPU-d"}));
  EXPECT_TRUE(seen_must.empty());
  EXPECT_EQ(seen_size, 2);
  EXPECT_EQ(c.device_ids, (std::vector<std::string>{"GPU-d", "GPU-b"}));
  EXPECT_EQ(plugin_->allocate_calls(), (std::vector<std::vector<std::string>>{{"GPU-d", "GPU-b"}}));
  EXPECT_EQ(c.envs.at("NVIDIA_VISIBLE_DEVICES"), "GPU-d,GPU-b");
  EXPECT_EQ(c.annotations.at("test/allocated"), "GPU-d,GPU-b");
  EXPECT_EQ(c.cdi_devices, (std::vector<std::string>{"nvidia.com/gpu=GPU-d,GPU-b"}));
  EXPECT_EQ(plugin_->pre_start_calls(), 1);

  // The next pod is offered only what is free.
  Result<FakeKubelet::PodAllocation> second = kubelet_.AdmitPod(OnePod("q", 1), kResource);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(seen_available, (std::vector<std::string>{"GPU-a", "GPU-c"}));
  // "GPU-d" is taken, so kubelet picks itself from what is free.
  EXPECT_EQ(second->containers[0].device_ids, (std::vector<std::string>{"GPU-a"}));
  EXPECT_EQ(kubelet_.DevicesInUse(kResource),
            (std::vector<std::string>{"GPU-a", "GPU-b", "GPU-d"}));
}

TEST_F(FakeKubeletTest, WithoutPreferredAllocationKubeletPicksAlone) {
  plugin_->options.set_get_preferred_allocation_available(false);
  plugin_->prefer = [](const auto&, const auto&, int) { return std::vector<std::string>{"GPU-d"}; };
  RegisterPlugin();
  Result<FakeKubelet::PodAllocation> admitted = kubelet_.AdmitPod(OnePod("p", 2), kResource);
  ASSERT_TRUE(admitted.ok()) << admitted.status().ToString();
  EXPECT_EQ(plugin_->preferred_calls(), 0);
  EXPECT_FALSE(admitted->containers[0].preferred_asked);
  EXPECT_EQ(admitted->containers[0].device_ids, (std::vector<std::string>{"GPU-a", "GPU-b"}));
}

TEST_F(FakeKubeletTest, AnInvalidPreferenceIsFilledByKubelet) {
  // Unknown IDs, a duplicate and too few: kubelet keeps the valid part and fills the rest.
  plugin_->prefer = [](const auto&, const auto&, int) {
    return std::vector<std::string>{"GPU-zzz", "GPU-c", "GPU-c", ""};
  };
  RegisterPlugin();
  Result<FakeKubelet::PodAllocation> admitted = kubelet_.AdmitPod(OnePod("p", 3), kResource);
  ASSERT_TRUE(admitted.ok()) << admitted.status().ToString();
  EXPECT_EQ(admitted->containers[0].device_ids,
            (std::vector<std::string>{"GPU-c", "GPU-a", "GPU-b"}));
  EXPECT_EQ(admitted->containers[0].preferred_answer,
            (std::vector<std::string>{"GPU-zzz", "GPU-c", "GPU-c", ""}));
}

TEST_F(FakeKubeletTest, InitContainerDevicesAreReusedFirst) {
  std::vector<std::vector<std::string>> musts;
  plugin_->prefer = [&](const std::vector<std::string>& available,
                        const std::vector<std::string>& must, int size) {
    musts.push_back(must);
    std::vector<std::string> out = must;
    for (auto it = available.rbegin();
         it != available.rend() && static_cast<int>(out.size()) < size; ++it) {
      if (std::find(out.begin(), out.end(), *it) == out.end()) out.push_back(*it);
    }
    return out;
  };
  RegisterPlugin();
  FakeKubelet::Pod pod;
  pod.name = "p";
  pod.containers = {{"app", 3, false}, {"sidecar", 1, false}, {"setup", 2, true}};
  Result<FakeKubelet::PodAllocation> admitted = kubelet_.AdmitPod(pod, kResource);
  ASSERT_TRUE(admitted.ok()) << admitted.status().ToString();
  ASSERT_EQ(admitted->containers.size(), 3u);
  // The init container first: it takes the last two.
  EXPECT_EQ(admitted->containers[0].container, "setup");
  EXPECT_EQ(admitted->containers[0].device_ids, (std::vector<std::string>{"GPU-d", "GPU-c"}));
  // Then "app" reuses them (must_include) and takes one more.
  EXPECT_EQ(admitted->containers[1].container, "app");
  EXPECT_EQ(admitted->containers[1].preferred_must_include,
            (std::vector<std::string>{"GPU-d", "GPU-c"}));
  EXPECT_EQ(admitted->containers[1].device_ids,
            (std::vector<std::string>{"GPU-d", "GPU-c", "GPU-b"}));
  // "sidecar" gets what is left.
  EXPECT_EQ(admitted->containers[2].device_ids, (std::vector<std::string>{"GPU-a"}));
  EXPECT_EQ(musts.size(), 3u);

  // PodResources lists the app containers only, one ContainerDevices per device.
  pr::ListPodResourcesResponse list = ListPodResources(kubelet_);
  ASSERT_EQ(list.pod_resources_size(), 1);
  const pr::PodResources& p = list.pod_resources(0);
  EXPECT_EQ(p.name(), "p");
  EXPECT_EQ(p.namespace_(), "default");
  ASSERT_EQ(p.containers_size(), 2);
  EXPECT_EQ(p.containers(0).name(), "app");
  ASSERT_EQ(p.containers(0).devices_size(), 3);
  EXPECT_EQ(p.containers(0).devices(0).resource_name(), kResource);
  EXPECT_EQ(p.containers(0).devices(0).device_ids_size(), 1);
  EXPECT_EQ(p.containers(0).devices(0).device_ids(0), "GPU-d");
  EXPECT_EQ(p.containers(0).devices(0).topology().nodes(0).id(), 1);
  EXPECT_EQ(p.containers(1).name(), "sidecar");
}

TEST_F(FakeKubeletTest, AdmissionFailsAsKubeletDoes) {
  Result<FakeKubelet::PodAllocation> unregistered = kubelet_.AdmitPod(OnePod("p", 1), kResource);
  EXPECT_EQ(unregistered.status().code(), StatusCode::kFailedPrecondition);
  RegisterPlugin();
  Result<FakeKubelet::PodAllocation> too_many = kubelet_.AdmitPod(OnePod("p", 5), kResource);
  EXPECT_EQ(too_many.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(too_many.status().message().find("Requested: 5, Available: 4"), std::string::npos)
      << too_many.status().message();
  EXPECT_TRUE(kubelet_.DevicesInUse(kResource).empty());
}

TEST_F(FakeKubeletTest, PodResourcesServesAllocatableAndGet) {
  RegisterPlugin();
  ASSERT_TRUE(kubelet_.AdmitPod(OnePod("p", 1), kResource).ok());
  auto stub = pr::PodResourcesLister::NewStub(grpc::CreateChannel(
      "unix://" + kubelet_.pod_resources_socket(), grpc::InsecureChannelCredentials()));
  {
    pr::AllocatableResourcesResponse response;
    grpc::ClientContext context;
    ASSERT_TRUE(
        stub->GetAllocatableResources(&context, pr::AllocatableResourcesRequest(), &response).ok());
    ASSERT_EQ(response.devices_size(), 4);
    EXPECT_EQ(response.devices(3).device_ids(0), "GPU-d");
    EXPECT_EQ(response.devices(3).topology().nodes(0).id(), 1);
  }
  {
    pr::GetPodResourcesRequest request;
    request.set_name("p");
    request.set_namespace_("default");
    pr::GetPodResourcesResponse response;
    grpc::ClientContext context;
    ASSERT_TRUE(stub->Get(&context, request, &response).ok());
    EXPECT_EQ(response.pod_resources().containers(0).devices(0).device_ids(0), "GPU-a");
  }
  {
    pr::GetPodResourcesRequest request;
    request.set_name("nope");
    request.set_namespace_("default");
    pr::GetPodResourcesResponse response;
    grpc::ClientContext context;
    const grpc::Status status = stub->Get(&context, request, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNKNOWN);
    EXPECT_EQ(status.error_message(), "pod nope in namespace default not found");
  }
  EXPECT_TRUE(kubelet_.RemovePod("default", "p"));
  EXPECT_EQ(ListPodResources(kubelet_).pod_resources_size(), 0);
  EXPECT_EQ(kubelet_.pod_resources_list_calls(), 1);
}

TEST_F(FakeKubeletTest, RestartDeletesEverySocketAndPluginsMustRegisterAgain) {
  RegisterPlugin();
  ASSERT_TRUE(kubelet_.AdmitPod(OnePod("p", 1), kResource).ok());
  const std::string plugin_socket = kubelet_.device_plugins_dir() + "/gputopo.sock";
  ASSERT_TRUE(std::filesystem::exists(plugin_socket));

  ASSERT_TRUE(kubelet_.Restart());
  EXPECT_FALSE(std::filesystem::exists(plugin_socket));
  EXPECT_TRUE(std::filesystem::is_socket(kubelet_.registration_socket()));
  EXPECT_FALSE(kubelet_.Plugin(kResource).has_value());
  EXPECT_EQ(kubelet_.AdmitPod(OnePod("q", 1), kResource).status().code(),
            StatusCode::kFailedPrecondition);
  // Allocations survive (kubelet's checkpoint), and PodResources still reports them.
  pr::ListPodResourcesResponse list = ListPodResources(kubelet_);
  ASSERT_EQ(list.pod_resources_size(), 1);
  EXPECT_EQ(list.pod_resources(0).containers(0).devices(0).device_ids(0), "GPU-a");

  // The plugin serves again on a fresh socket and re-registers, as a real one does when it sees
  // kubelet.sock re-created.
  plugin_->StopServing();
  RegisterPlugin();
  Result<FakeKubelet::PodAllocation> admitted = kubelet_.AdmitPod(OnePod("q", 1), kResource);
  ASSERT_TRUE(admitted.ok()) << admitted.status().ToString();
  EXPECT_EQ(admitted->containers[0].device_ids, (std::vector<std::string>{"GPU-b"}));
  EXPECT_EQ(kubelet_.register_calls(), 2);
}

TEST_F(FakeKubeletTest, StockPluginSpreadsReplicasLikeNvidiasPlugin) {
  std::vector<FakeKubelet::Device> replicas;
  for (const char* gpu : {"GPU-a", "GPU-b"}) {
    for (int n = 0; n < 3; ++n) replicas.push_back({std::string(gpu) + "::" + std::to_string(n)});
  }
  kubelet_.AddStockPlugin(kResource, replicas);
  std::vector<std::string> got;
  for (const char* name : {"p1", "p2", "p3"}) {
    Result<FakeKubelet::PodAllocation> admitted = kubelet_.AdmitPod(OnePod(name, 1), kResource);
    ASSERT_TRUE(admitted.ok()) << admitted.status().ToString();
    got.push_back(admitted->containers[0].device_ids[0]);
  }
  // Each from the GPU with the fewest replicas in use; ties in the advertised order.
  EXPECT_EQ(got, (std::vector<std::string>{"GPU-a::0", "GPU-b::0", "GPU-a::1"}));
  Result<FakeKubelet::PodAllocation> two = kubelet_.AdmitPod(OnePod("p4", 2), kResource);
  ASSERT_TRUE(two.ok()) << two.status().ToString();
  // GPU-b has fewer replicas in use, and after one more it ties with GPU-a: both replicas land
  // on one physical GPU, which gputopo's assignment never asked for.
  EXPECT_EQ(two->containers[0].device_ids, (std::vector<std::string>{"GPU-b::1", "GPU-b::2"}));
  EXPECT_EQ(two->containers[0].envs.at("NVIDIA_VISIBLE_DEVICES"), "GPU-b,GPU-b");
}

TEST_F(FakeKubeletTest, AContainerServedByReusedDevicesAloneAsksNoPlugin) {
  RegisterPlugin();
  FakeKubelet::Pod pod;
  pod.name = "p";
  pod.containers = {{"warm", 2, true}, {"run", 1, false}};
  Result<FakeKubelet::PodAllocation> admitted = kubelet_.AdmitPod(pod, kResource);
  ASSERT_TRUE(admitted.ok()) << admitted.status().ToString();
  EXPECT_EQ(plugin_->preferred_calls(), 1);
  EXPECT_EQ(plugin_->allocate_calls().size(), 2u);
  EXPECT_FALSE(admitted->containers[1].preferred_asked);
  EXPECT_EQ(admitted->containers[1].device_ids, (std::vector<std::string>{"GPU-a"}));
  // Admitting the pod again asks nothing more.
  ASSERT_TRUE(kubelet_.AdmitPod(pod, kResource).ok());
  EXPECT_EQ(plugin_->allocate_calls().size(), 2u);
}

TEST_F(FakeKubeletTest, AllocateDirectlyIsReportedByPodResources) {
  FakeKubelet::Pod pod;
  pod.namespace_name = "ml";
  pod.name = "trainer";
  pod.containers = {{"a", 1, false}, {"b", 1, false}};
  ASSERT_TRUE(
      kubelet_
          .AllocateDirectly(pod, kResource, {{"a", {"GPU-x::0"}}, {"b", {"GPU-y::3", "GPU-y::4"}}})
          .ok());
  EXPECT_EQ(kubelet_.AllocateDirectly(pod, kResource, {{"c", {"GPU-x::1"}}}).code(),
            StatusCode::kInvalidArgument);
  pr::ListPodResourcesResponse list = ListPodResources(kubelet_);
  ASSERT_EQ(list.pod_resources_size(), 1);
  EXPECT_EQ(list.pod_resources(0).namespace_(), "ml");
  ASSERT_EQ(list.pod_resources(0).containers_size(), 2);
  EXPECT_EQ(list.pod_resources(0).containers(1).devices_size(), 2);
  EXPECT_EQ(list.pod_resources(0).containers(1).devices(1).device_ids(0), "GPU-y::4");
  EXPECT_FALSE(list.pod_resources(0).containers(1).devices(1).has_topology());
}

}  // namespace
}  // namespace gputopo::testing
