// FakeKubelet implementation.
//
// Written from kubelet's device manager (pkg/kubelet/cm/devicemanager: plugin/v1beta1/server.go
// for Register, manager.go devicesToAllocate / allocateContainerResources for admission,
// pod_devices.go for what PodResources reports) and its PodResources server
// (pkg/kubelet/apis/podresources/server_v1.go).
//
// Simplified (deliberately):
// - No Topology Manager (kubelet's "none" policy): no NUMA alignment of the devices kubelet picks
//   itself. kubelet fills from a Go set (random order); the fake fills in the order the plugin
//   listed the devices, so tests replay exactly. The stock plugin's distributed policy sorts
//   stably for the same reason (NVIDIA's uses sort.Slice over a map's keys).
// - Admission is serialized (kubelet admits pods one at a time in its pod-addition loop; its
//   device manager also records devices before calling the plugin).
// - Devices of a plugin whose stream ended stay listed (kubelet keeps them for a grace period
//   before marking them unhealthy); a restart forgets them at once.
// - GetAllocatableResources lists every device the plugins advertised, healthy or not (kubelet's
//   GetAllocatableDevices returns its allDevices).
// - No checkpoint file; allocations simply survive Restart() in memory.
#include "test/support/fake_kubelet.h"

#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/grpcpp.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "podresources/v1/api.grpc.pb.h"

namespace gputopo::testing {
namespace {

namespace fs = std::filesystem;
namespace dp = ::v1beta1;
namespace pr = ::v1;

constexpr char kSupportedVersion[] = "v1beta1";
// How long kubelet waits to dial a registering plugin back (its dial uses a 10 s timeout).
constexpr std::chrono::seconds kDialTimeout{10};
// Deadline of a plugin call made during admission: generous, only there so a hung plugin cannot
// hang a test forever.
constexpr std::chrono::seconds kPluginCallDeadline{30};

// v1helper.IsExtendedResourceName, as far as device plugins meet it: a qualified "<domain>/<name>"
// outside the kubernetes.io domains, not a quota "requests." name.
bool IsExtendedResourceName(const std::string& name) {
  const size_t slash = name.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == name.size()) return false;
  if (name.find('/', slash + 1) != std::string::npos) return false;
  const std::string domain = name.substr(0, slash);
  if (domain == "kubernetes.io" || domain.ends_with(".kubernetes.io")) return false;
  if (name.starts_with("requests.")) return false;
  return true;
}

// NVIDIA's AnnotatedID.GetID(): the physical device of a replica "<id>::<n>".
std::string PhysicalId(const std::string& id) {
  const size_t sep = id.find("::");
  return sep == std::string::npos ? id : id.substr(0, sep);
}

std::string Join(const std::vector<std::string>& items, const char* sep) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : sep) + item;
  return out;
}

Status FromGrpc(const grpc::Status& status, const std::string& what) {
  const std::string message = what + ": " + status.error_message();
  switch (status.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
      return Unavailable(message);
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return {StatusCode::kDeadlineExceeded, message};
    default:
      return Internal(message);
  }
}

}  // namespace

class FakeKubelet::Impl {
 public:
  Impl() {
    char pattern[] = "/tmp/fake-kubelet-XXXXXX";
    const char* made = mkdtemp(pattern);
    dir_ = made != nullptr ? made : "/tmp/fake-kubelet-failed";
    fs::create_directories(dir_ + "/device-plugins");
    fs::create_directories(dir_ + "/pod-resources");
  }

  ~Impl() {
    Stop();
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }

  // --- Lifecycle ---
  bool Start() {
    std::lock_guard<std::mutex> lifecycle(lifecycle_mu_);
    if (registration_server_ != nullptr) return true;
    RemoveFile(registration_socket());
    RemoveFile(pod_resources_socket());
    registration_server_ = Serve(registration_socket(), &registration_service_);
    pod_resources_server_ = ServePodResources();
    if (registration_server_ == nullptr || pod_resources_server_ == nullptr) {
      std::cerr << "FakeKubelet: cannot serve on " << dir_ << "\n";
      StopLocked();
      return false;
    }
    return true;
  }

  void Stop() {
    std::lock_guard<std::mutex> lifecycle(lifecycle_mu_);
    StopLocked();
  }

  bool Restart() {
    {
      std::lock_guard<std::mutex> lifecycle(lifecycle_mu_);
      StopLocked();
      // kubelet removes the contents of device-plugins/ at start: every plugin's socket goes.
      std::error_code ignored;
      for (const fs::directory_entry& entry :
           fs::directory_iterator(device_plugins_dir(), ignored)) {
        fs::remove_all(entry.path(), ignored);
      }
      std::vector<std::shared_ptr<Endpoint>> gone;
      {
        std::lock_guard<std::mutex> lock(mu_);
        for (auto& [resource, endpoint] : plugins_) gone.push_back(endpoint);
        plugins_.clear();
        cv_.notify_all();
      }
      for (const auto& endpoint : gone) EndStream(*endpoint);
    }
    return Start();
  }

  std::string kubelet_dir() const { return dir_; }
  std::string device_plugins_dir() const { return dir_ + "/device-plugins"; }
  std::string registration_socket() const { return dir_ + "/device-plugins/kubelet.sock"; }
  std::string pod_resources_socket() const { return dir_ + "/pod-resources/kubelet.sock"; }

  // --- Registration ---
  void AddStockPlugin(std::string resource_name, std::vector<Device> devices) {
    auto endpoint = std::make_shared<Endpoint>();
    endpoint->info.resource_name = resource_name;
    endpoint->info.stock = true;
    endpoint->info.get_preferred_allocation_available = true;
    endpoint->info.connected = true;
    endpoint->info.device_lists_seen = 1;
    endpoint->info.devices = std::move(devices);
    std::shared_ptr<Endpoint> previous;
    {
      std::lock_guard<std::mutex> lock(mu_);
      previous = std::exchange(plugins_[resource_name], endpoint);
      cv_.notify_all();
    }
    if (previous != nullptr) EndStream(*previous);
  }

  std::optional<PluginInfo> Plugin(const std::string& resource_name) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = plugins_.find(resource_name);
    if (it == plugins_.end()) return std::nullopt;
    return it->second->info;
  }

  int register_calls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return register_calls_;
  }

  std::vector<std::string> refused_registrations() const {
    std::lock_guard<std::mutex> lock(mu_);
    return refused_;
  }

  bool WaitForPlugin(const std::string& resource_name, int min_lists,
                     std::chrono::milliseconds timeout) const {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] {
      auto it = plugins_.find(resource_name);
      return it != plugins_.end() && it->second->info.connected &&
             it->second->info.device_lists_seen >= min_lists;
    });
  }

  bool WaitForRegisterCalls(int count, std::chrono::milliseconds timeout) const {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return register_calls_ >= count; });
  }

  // --- Admission ---
  Result<PodAllocation> AdmitPod(const Pod& pod, const std::string& resource_name) {
    std::lock_guard<std::mutex> admission(admission_mu_);
    std::shared_ptr<Endpoint> endpoint;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = plugins_.find(resource_name);
      if (it == plugins_.end()) {
        return FailedPrecondition("can't allocate unregistered device " + resource_name);
      }
      endpoint = it->second;
      PodAllocation& allocation = allocations_[Key(pod)];
      allocation.pod = pod;
      allocation.resource_name = resource_name;
    }

    // kubelet's order: init containers first, then the others, each in spec order.
    std::vector<const Container*> order;
    for (const Container& c : pod.containers) {
      if (c.init) order.push_back(&c);
    }
    for (const Container& c : pod.containers) {
      if (!c.init) order.push_back(&c);
    }

    std::vector<std::string> reusable;  // devicesToReuse[resource]
    for (const Container* container : order) {
      if (container->request <= 0) continue;
      std::optional<ContainerAllocation> existing = FindContainer(pod, container->name);
      ContainerAllocation result;
      if (existing) {
        result = *existing;
      } else {
        Result<ContainerAllocation> admitted = AdmitContainer(*endpoint, pod, *container, reusable);
        if (!admitted.ok()) return admitted.status();
        result = *std::move(admitted);
        std::lock_guard<std::mutex> lock(mu_);
        allocations_[Key(pod)].containers.push_back(result);
      }
      if (container->init) {
        for (const std::string& id : result.device_ids) {
          if (std::find(reusable.begin(), reusable.end(), id) == reusable.end()) {
            reusable.push_back(id);
          }
        }
      } else {
        std::erase_if(reusable, [&](const std::string& id) {
          return std::find(result.device_ids.begin(), result.device_ids.end(), id) !=
                 result.device_ids.end();
        });
      }
    }
    std::lock_guard<std::mutex> lock(mu_);
    return allocations_[Key(pod)];
  }

  Status AllocateDirectly(const Pod& pod, const std::string& resource_name,
                          const std::map<std::string, std::vector<std::string>>& device_ids) {
    std::lock_guard<std::mutex> admission(admission_mu_);
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [name, ids] : device_ids) {
      if (std::none_of(pod.containers.begin(), pod.containers.end(),
                       [&](const Container& c) { return c.name == name; })) {
        return InvalidArgument("pod " + Key(pod) + " has no container " + name);
      }
    }
    PodAllocation& allocation = allocations_[Key(pod)];
    allocation.pod = pod;
    allocation.resource_name = resource_name;
    allocation.containers.clear();
    for (const Container& c : pod.containers) {
      auto it = device_ids.find(c.name);
      if (it == device_ids.end()) continue;
      ContainerAllocation container;
      container.container = c.name;
      container.init = c.init;
      container.device_ids = it->second;
      allocation.containers.push_back(std::move(container));
    }
    return Status::Ok();
  }

  bool RemovePod(const std::string& namespace_name, const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    return allocations_.erase(namespace_name + "/" + name) > 0;
  }

  std::vector<PodAllocation> Allocations() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<PodAllocation> out;
    for (const auto& [key, allocation] : allocations_) out.push_back(allocation);
    return out;
  }

  std::vector<std::string> DevicesInUse(const std::string& resource_name) const {
    std::lock_guard<std::mutex> lock(mu_);
    const std::set<std::string> in_use = InUseLocked(resource_name);
    return {in_use.begin(), in_use.end()};
  }

  int pod_resources_list_calls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return list_calls_;
  }

  bool SetPodResourcesUnreadable(bool unreadable) {
    std::lock_guard<std::mutex> lifecycle(lifecycle_mu_);
    if (pod_resources_server_ == nullptr) {
      unreadable_ = unreadable;
      return true;
    }
    pod_resources_server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
    pod_resources_server_.reset();
    RemoveFile(pod_resources_socket());
    unreadable_ = unreadable;
    pod_resources_server_ = ServePodResources();
    return pod_resources_server_ != nullptr;
  }

 private:
  struct Endpoint {
    PluginInfo info;
    std::shared_ptr<grpc::Channel> channel;
    std::unique_ptr<dp::DevicePlugin::Stub> stub;
    std::unique_ptr<grpc::ClientContext> stream_context;
    std::thread reader;
  };

  class RegistrationService final : public dp::Registration::Service {
   public:
    explicit RegistrationService(Impl& impl) : impl_(impl) {}
    grpc::Status Register(grpc::ServerContext*, const dp::RegisterRequest* request,
                          dp::Empty*) override {
      return impl_.Register(*request);
    }

   private:
    Impl& impl_;
  };

  class PodResourcesService final : public pr::PodResourcesLister::Service {
   public:
    explicit PodResourcesService(Impl& impl) : impl_(impl) {}
    grpc::Status List(grpc::ServerContext*, const pr::ListPodResourcesRequest*,
                      pr::ListPodResourcesResponse* response) override {
      impl_.List(*response);
      return grpc::Status::OK;
    }
    grpc::Status GetAllocatableResources(grpc::ServerContext*,
                                         const pr::AllocatableResourcesRequest*,
                                         pr::AllocatableResourcesResponse* response) override {
      impl_.Allocatable(*response);
      return grpc::Status::OK;
    }
    grpc::Status Get(grpc::ServerContext*, const pr::GetPodResourcesRequest* request,
                     pr::GetPodResourcesResponse* response) override {
      return impl_.Get(*request, *response);
    }

   private:
    Impl& impl_;
  };

  // Answers every call with bytes that do not parse as a protobuf message (a field tag of
  // number 0 is invalid), with status OK.
  class UnreadableService final : public grpc::CallbackGenericService {
   public:
    grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext*) override {
      class Reactor final : public grpc::ServerGenericBidiReactor {
       public:
        Reactor() { StartRead(&request_); }
        void OnReadDone(bool ok) override {
          if (!ok) {
            Finish(grpc::Status::OK);
            return;
          }
          static const char kGarbage[] = "\x00\xff\xff\xff\xff not a protobuf";
          grpc::Slice slice(kGarbage, sizeof(kGarbage) - 1);
          response_ = grpc::ByteBuffer(&slice, 1);
          StartWriteAndFinish(&response_, grpc::WriteOptions(), grpc::Status::OK);
        }
        void OnDone() override { delete this; }

       private:
        grpc::ByteBuffer request_;
        grpc::ByteBuffer response_;
      };
      return new Reactor;
    }
  };

  // Precondition: lifecycle_mu_ held.
  std::unique_ptr<grpc::Server> ServePodResources() {
    if (!unreadable_) return Serve(pod_resources_socket(), &pod_resources_service_);
    grpc::ServerBuilder builder;
    builder.AddListeningPort("unix://" + pod_resources_socket(), grpc::InsecureServerCredentials());
    builder.RegisterCallbackGenericService(&unreadable_service_);
    return builder.BuildAndStart();
  }

  static std::string Key(const Pod& pod) { return pod.namespace_name + "/" + pod.name; }

  static void RemoveFile(const std::string& path) {
    std::error_code ignored;
    fs::remove(path, ignored);
  }

  static std::unique_ptr<grpc::Server> Serve(const std::string& socket, grpc::Service* service) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("unix://" + socket, grpc::InsecureServerCredentials());
    builder.RegisterService(service);
    return builder.BuildAndStart();
  }

  // Precondition: lifecycle_mu_ held.
  void StopLocked() {
    const auto deadline = std::chrono::system_clock::now() + std::chrono::seconds(5);
    if (registration_server_ != nullptr) registration_server_->Shutdown(deadline);
    if (pod_resources_server_ != nullptr) pod_resources_server_->Shutdown(deadline);
    registration_server_.reset();
    pod_resources_server_.reset();
    RemoveFile(registration_socket());
    RemoveFile(pod_resources_socket());
    std::vector<std::shared_ptr<Endpoint>> endpoints;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto& [resource, endpoint] : plugins_) endpoints.push_back(endpoint);
    }
    for (const auto& endpoint : endpoints) EndStream(*endpoint);
  }

  // Cancels the endpoint's ListAndWatch and waits for its reader. Must not hold mu_.
  void EndStream(Endpoint& endpoint) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (endpoint.stream_context != nullptr) endpoint.stream_context->TryCancel();
    }
    if (endpoint.reader.joinable()) endpoint.reader.join();
  }

  grpc::Status Refuse(const std::string& why) {
    std::lock_guard<std::mutex> lock(mu_);
    refused_.push_back(why);
    cv_.notify_all();
    // kubelet answers a plain Go error: gRPC code Unknown.
    return {grpc::StatusCode::UNKNOWN, why};
  }

  grpc::Status Register(const dp::RegisterRequest& request) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++register_calls_;
      cv_.notify_all();
    }
    if (request.version() != kSupportedVersion) {
      return Refuse("requested API version \"" + request.version() +
                    "\" is not supported by kubelet. Supported versions are [\"" +
                    kSupportedVersion + "\"]");
    }
    if (!IsExtendedResourceName(request.resource_name())) {
      return Refuse("the ResourceName \"" + request.resource_name() + "\" is invalid");
    }
    auto endpoint = std::make_shared<Endpoint>();
    endpoint->info.resource_name = request.resource_name();
    endpoint->info.endpoint = request.endpoint();
    const std::string socket = device_plugins_dir() + "/" + request.endpoint();
    endpoint->channel = grpc::CreateChannel("unix://" + socket, grpc::InsecureChannelCredentials());
    if (!endpoint->channel->WaitForConnected(std::chrono::system_clock::now() + kDialTimeout)) {
      return Refuse("failed to dial device plugin: " + socket);
    }
    endpoint->stub = dp::DevicePlugin::NewStub(endpoint->channel);
    dp::DevicePluginOptions options;
    {
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + kDialTimeout);
      const grpc::Status status =
          endpoint->stub->GetDevicePluginOptions(&context, dp::Empty(), &options);
      if (!status.ok()) {
        return Refuse("failed to get device plugin options: " + status.error_message());
      }
    }
    endpoint->info.get_preferred_allocation_available =
        options.get_preferred_allocation_available();
    endpoint->info.pre_start_required = options.pre_start_required();
    endpoint->stream_context = std::make_unique<grpc::ClientContext>();

    std::shared_ptr<Endpoint> previous;
    {
      // The reader starts before the endpoint is published, so whoever removes it joins it.
      std::lock_guard<std::mutex> lock(mu_);
      endpoint->info.connected = true;
      Endpoint* raw = endpoint.get();
      endpoint->reader = std::thread([this, raw] { ReadDevices(*raw); });
      previous = std::exchange(plugins_[request.resource_name()], endpoint);
      cv_.notify_all();
    }
    if (previous != nullptr) EndStream(*previous);
    return grpc::Status::OK;
  }

  // The endpoint's ListAndWatch stream, until it ends or is cancelled.
  void ReadDevices(Endpoint& endpoint) {
    std::unique_ptr<grpc::ClientReader<dp::ListAndWatchResponse>> reader =
        endpoint.stub->ListAndWatch(endpoint.stream_context.get(), dp::Empty());
    dp::ListAndWatchResponse response;
    while (reader->Read(&response)) {
      std::vector<Device> devices;
      for (const dp::Device& d : response.devices()) {
        Device device;
        device.id = d.id();
        device.healthy = d.health() == "Healthy";
        if (d.has_topology() && d.topology().nodes_size() > 0) {
          device.numa_node = static_cast<int>(d.topology().nodes(0).id());
        }
        devices.push_back(std::move(device));
      }
      std::lock_guard<std::mutex> lock(mu_);
      endpoint.info.devices = std::move(devices);
      ++endpoint.info.device_lists_seen;
      cv_.notify_all();
    }
    (void)reader->Finish();
    std::lock_guard<std::mutex> lock(mu_);
    endpoint.info.connected = false;
    cv_.notify_all();
  }

  std::optional<ContainerAllocation> FindContainer(const Pod& pod, const std::string& name) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = allocations_.find(Key(pod));
    if (it == allocations_.end()) return std::nullopt;
    for (const ContainerAllocation& c : it->second.containers) {
      if (c.container == name) return c;
    }
    return std::nullopt;
  }

  // Precondition: mu_ held.
  std::set<std::string> InUseLocked(const std::string& resource_name) const {
    std::set<std::string> in_use;
    for (const auto& [key, allocation] : allocations_) {
      if (allocation.resource_name != resource_name) continue;
      for (const ContainerAllocation& c : allocation.containers) {
        in_use.insert(c.device_ids.begin(), c.device_ids.end());
      }
    }
    return in_use;
  }

  // devicesToAllocate + the plugin's Allocate (+ PreStartContainer), for one container.
  Result<ContainerAllocation> AdmitContainer(Endpoint& endpoint, const Pod& pod,
                                             const Container& container,
                                             const std::vector<std::string>& reusable) {
    ContainerAllocation result;
    result.container = container.name;
    result.init = container.init;
    const auto needed_total = static_cast<size_t>(container.request);
    std::vector<std::string>& chosen = result.device_ids;
    auto take = [&](const std::string& id) {
      if (chosen.size() < needed_total &&
          std::find(chosen.begin(), chosen.end(), id) == chosen.end()) {
        chosen.push_back(id);
      }
    };
    for (const std::string& id : reusable) take(id);

    if (chosen.size() < needed_total) {
      std::vector<std::string> available;  // healthy, not in use, in the plugin's order
      PluginInfo info;
      {
        std::lock_guard<std::mutex> lock(mu_);
        info = endpoint.info;
        const std::set<std::string> in_use = InUseLocked(endpoint.info.resource_name);
        for (const Device& d : endpoint.info.devices) {
          if (d.healthy && !in_use.contains(d.id)) available.push_back(d.id);
        }
      }
      const size_t needed = needed_total - chosen.size();
      if (available.size() < needed) {
        return ResourceExhausted("requested number of devices unavailable for " +
                                 info.resource_name + ". Requested: " + std::to_string(needed) +
                                 ", Available: " + std::to_string(available.size()));
      }
      if (info.get_preferred_allocation_available) {
        result.preferred_asked = true;
        result.preferred_must_include = chosen;
        result.preferred_available = available;
        for (const std::string& id : chosen) {
          if (std::find(available.begin(), available.end(), id) == available.end()) {
            result.preferred_available.push_back(id);
          }
        }
        result.preferred_size =
            container.request > INT32_MAX ? INT32_MAX : static_cast<int>(container.request);
        Result<std::vector<std::string>> preferred =
            info.stock ? StockPreferred(info, result.preferred_available,
                                        result.preferred_must_include, result.preferred_size)
                       : CallPreferred(endpoint, result.preferred_available,
                                       result.preferred_must_include, result.preferred_size);
        if (!preferred.ok()) return preferred.status();
        result.preferred_answer = *preferred;
        for (const std::string& id : result.preferred_answer) {
          if (std::find(available.begin(), available.end(), id) != available.end()) take(id);
        }
      }
      for (const std::string& id : available) take(id);
    }

    if (endpoint.info.stock) {
      std::vector<std::string> physical;
      for (const std::string& id : chosen) physical.push_back(PhysicalId(id));
      result.envs["NVIDIA_VISIBLE_DEVICES"] = Join(physical, ",");
      return result;
    }
    Status allocated = CallAllocate(endpoint, chosen, result);
    if (!allocated.ok())
      return allocated.WithContext("pod " + Key(pod) + " container " + container.name);
    return result;
  }

  Result<std::vector<std::string>> CallPreferred(Endpoint& endpoint,
                                                 const std::vector<std::string>& available,
                                                 const std::vector<std::string>& must_include,
                                                 int size) {
    dp::PreferredAllocationRequest request;
    dp::ContainerPreferredAllocationRequest* c = request.add_container_requests();
    for (const std::string& id : available) c->add_available_deviceids(id);
    for (const std::string& id : must_include) c->add_must_include_deviceids(id);
    c->set_allocation_size(size);
    dp::PreferredAllocationResponse response;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + kPluginCallDeadline);
    const grpc::Status status = endpoint.stub->GetPreferredAllocation(&context, request, &response);
    if (!status.ok()) return FromGrpc(status, "GetPreferredAllocation");
    std::vector<std::string> out;
    // kubelet reads the first container response only.
    if (response.container_responses_size() > 0) {
      for (const std::string& id : response.container_responses(0).deviceids()) out.push_back(id);
    }
    return out;
  }

  Status CallAllocate(Endpoint& endpoint, const std::vector<std::string>& ids,
                      ContainerAllocation& result) {
    dp::AllocateRequest request;
    dp::ContainerAllocateRequest* c = request.add_container_requests();
    for (const std::string& id : ids) c->add_devices_ids(id);
    dp::AllocateResponse response;
    {
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + kPluginCallDeadline);
      const grpc::Status status = endpoint.stub->Allocate(&context, request, &response);
      if (!status.ok()) return FromGrpc(status, "Allocate");
    }
    if (response.container_responses_size() != 1) {
      return Internal("AllocateResponse has " +
                      std::to_string(response.container_responses_size()) +
                      " container responses, want 1");
    }
    const dp::ContainerAllocateResponse& answer = response.container_responses(0);
    result.envs = {answer.envs().begin(), answer.envs().end()};
    result.annotations = {answer.annotations().begin(), answer.annotations().end()};
    for (const dp::CDIDevice& d : answer.cdi_devices()) result.cdi_devices.push_back(d.name());
    if (endpoint.info.pre_start_required) {
      dp::PreStartContainerRequest pre;
      for (const std::string& id : ids) pre.add_devices_ids(id);
      dp::PreStartContainerResponse ignored;
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + kPluginCallDeadline);
      const grpc::Status status = endpoint.stub->PreStartContainer(&context, pre, &ignored);
      if (!status.ok()) return FromGrpc(status, "PreStartContainer");
    }
    return Status::Ok();
  }

  // NVIDIA k8s-device-plugin's distributedAlloc (internal/rm/allocate.go), for replicas: each
  // device in turn from the GPU with the fewest replicas taken, required devices first.
  static Result<std::vector<std::string>> StockPreferred(const PluginInfo& info,
                                                         const std::vector<std::string>& available,
                                                         const std::vector<std::string>& required,
                                                         int size) {
    std::vector<std::string> candidates;
    for (const std::string& id : available) {
      if (std::find(required.begin(), required.end(), id) == required.end()) {
        candidates.push_back(id);
      }
    }
    const int needed = size - static_cast<int>(required.size());
    if (static_cast<int>(candidates.size()) < needed) {
      return InvalidArgument("not enough available devices to satisfy allocation");
    }
    struct Count {
      int total = 0;
      int available = 0;
    };
    std::map<std::string, Count> replicas;
    for (const std::string& c : candidates) ++replicas[PhysicalId(c)].available;
    for (const Device& d : info.devices) {
      auto it = replicas.find(PhysicalId(d.id));
      if (it != replicas.end()) ++it->second.total;
    }
    std::vector<std::string> devices = required;
    for (int i = 0; i < needed; ++i) {
      std::stable_sort(candidates.begin(), candidates.end(),
                       [&](const std::string& a, const std::string& b) {
                         const Count& ca = replicas[PhysicalId(a)];
                         const Count& cb = replicas[PhysicalId(b)];
                         return ca.total - ca.available < cb.total - cb.available;
                       });
      --replicas[PhysicalId(candidates.front())].available;
      devices.push_back(candidates.front());
      candidates.erase(candidates.begin());
    }
    return devices;
  }

  // --- PodResources ---
  std::optional<int> NumaOf(const std::string& resource_name, const std::string& id) const {
    auto it = plugins_.find(resource_name);
    if (it == plugins_.end()) return std::nullopt;
    for (const Device& d : it->second->info.devices) {
      if (d.id == id && d.numa_node >= 0) return d.numa_node;
    }
    return std::nullopt;
  }

  // Precondition: mu_ held.
  void FillDevice(const std::string& resource_name, const std::string& id,
                  pr::ContainerDevices& out) const {
    out.set_resource_name(resource_name);
    out.add_device_ids(id);
    if (std::optional<int> numa = NumaOf(resource_name, id)) {
      out.mutable_topology()->add_nodes()->set_id(*numa);
    }
  }

  // Precondition: mu_ held.
  void FillPod(const PodAllocation& allocation, pr::PodResources& out) const {
    out.set_name(allocation.pod.name);
    out.set_namespace_(allocation.pod.namespace_name);
    for (const Container& c : allocation.pod.containers) {
      if (c.init) continue;
      pr::ContainerResources* container = out.add_containers();
      container->set_name(c.name);
      for (const ContainerAllocation& a : allocation.containers) {
        if (a.container != c.name) continue;
        for (const std::string& id : a.device_ids) {
          FillDevice(allocation.resource_name, id, *container->add_devices());
        }
      }
    }
  }

  void List(pr::ListPodResourcesResponse& response) {
    std::lock_guard<std::mutex> lock(mu_);
    ++list_calls_;
    for (const auto& [key, allocation] : allocations_) {
      FillPod(allocation, *response.add_pod_resources());
    }
  }

  void Allocatable(pr::AllocatableResourcesResponse& response) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [resource, endpoint] : plugins_) {
      for (const Device& d : endpoint->info.devices) {
        FillDevice(resource, d.id, *response.add_devices());
      }
    }
  }

  grpc::Status Get(const pr::GetPodResourcesRequest& request,
                   pr::GetPodResourcesResponse& response) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = allocations_.find(request.namespace_() + "/" + request.name());
    if (it == allocations_.end()) {
      return {grpc::StatusCode::UNKNOWN,
              "pod " + request.name() + " in namespace " + request.namespace_() + " not found"};
    }
    FillPod(it->second, *response.mutable_pod_resources());
    return grpc::Status::OK;
  }

  std::string dir_;
  RegistrationService registration_service_{*this};
  PodResourcesService pod_resources_service_{*this};

  UnreadableService unreadable_service_;

  std::mutex lifecycle_mu_;                             // Start/Stop/Restart
  bool unreadable_ = false;                             // GUARDED_BY(lifecycle_mu_)
  std::unique_ptr<grpc::Server> registration_server_;   // GUARDED_BY(lifecycle_mu_)
  std::unique_ptr<grpc::Server> pod_resources_server_;  // GUARDED_BY(lifecycle_mu_)
  std::mutex admission_mu_;  // one admission at a time, as kubelet's pod-addition loop

  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::map<std::string, std::shared_ptr<Endpoint>> plugins_;  // GUARDED_BY(mu_), by resource
  std::map<std::string, PodAllocation> allocations_;          // GUARDED_BY(mu_), by ns/name
  int register_calls_ = 0;                                    // GUARDED_BY(mu_)
  std::vector<std::string> refused_;                          // GUARDED_BY(mu_)
  int list_calls_ = 0;                                        // GUARDED_BY(mu_)
};

FakeKubelet::FakeKubelet() : impl_(std::make_unique<Impl>()) {}
FakeKubelet::~FakeKubelet() = default;
bool FakeKubelet::Start() { return impl_->Start(); }
void FakeKubelet::Stop() { impl_->Stop(); }
bool FakeKubelet::Restart() { return impl_->Restart(); }
std::string FakeKubelet::kubelet_dir() const { return impl_->kubelet_dir(); }
std::string FakeKubelet::device_plugins_dir() const { return impl_->device_plugins_dir(); }
std::string FakeKubelet::registration_socket() const { return impl_->registration_socket(); }
std::string FakeKubelet::pod_resources_socket() const { return impl_->pod_resources_socket(); }
void FakeKubelet::AddStockPlugin(std::string resource_name, std::vector<Device> devices) {
  impl_->AddStockPlugin(std::move(resource_name), std::move(devices));
}
std::optional<FakeKubelet::PluginInfo> FakeKubelet::Plugin(const std::string& resource_name) const {
  return impl_->Plugin(resource_name);
}
int FakeKubelet::register_calls() const { return impl_->register_calls(); }
std::vector<std::string> FakeKubelet::refused_registrations() const {
  return impl_->refused_registrations();
}
bool FakeKubelet::WaitForPlugin(const std::string& resource_name, int min_lists,
                                std::chrono::milliseconds timeout) const {
  return impl_->WaitForPlugin(resource_name, min_lists, timeout);
}
bool FakeKubelet::WaitForRegisterCalls(int count, std::chrono::milliseconds timeout) const {
  return impl_->WaitForRegisterCalls(count, timeout);
}
Result<FakeKubelet::PodAllocation> FakeKubelet::AdmitPod(const Pod& pod,
                                                         const std::string& resource_name) {
  return impl_->AdmitPod(pod, resource_name);
}
Status FakeKubelet::AllocateDirectly(
    const Pod& pod, const std::string& resource_name,
    const std::map<std::string, std::vector<std::string>>& device_ids) {
  return impl_->AllocateDirectly(pod, resource_name, device_ids);
}
bool FakeKubelet::RemovePod(const std::string& namespace_name, const std::string& name) {
  return impl_->RemovePod(namespace_name, name);
}
std::vector<FakeKubelet::PodAllocation> FakeKubelet::Allocations() const {
  return impl_->Allocations();
}
std::vector<std::string> FakeKubelet::DevicesInUse(const std::string& resource_name) const {
  return impl_->DevicesInUse(resource_name);
}
int FakeKubelet::pod_resources_list_calls() const { return impl_->pod_resources_list_calls(); }
bool FakeKubelet::SetPodResourcesUnreadable(bool unreadable) {
  return impl_->SetPodResourcesUnreadable(unreadable);
}

}  // namespace gputopo::testing
