// DevicePlugin implementation: gRPC's synchronous server on a unix socket, one Registration
// client call per (re-)registration.
#include "src/agent/device_plugin.h"

#include <grpcpp/grpcpp.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <utility>

#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "src/agent/replica_choice.h"
#include "topology/topology_shape.h"

namespace gputopo::agent {
namespace {

namespace dp = ::v1beta1;

constexpr char kVersion[] = "v1beta1";
constexpr size_t kAdmissionsKept = 256;
constexpr size_t kPendingKept = 256;
constexpr size_t kAllocatedKept = 8192;
// gputopo_agent_admission_duration_seconds, in seconds: fine around the 2 ms kubelet budget.
constexpr std::array<double, 14> kAdmissionDurationBuckets = {
    0.0001, 0.00025, 0.0005, 0.00075, 0.001, 0.0015, 0.002,
    0.003,  0.005,   0.01,   0.025,   0.1,   0.5,    2.0};
// How long a ListAndWatch handler sleeps between checks that its stream was cancelled.
constexpr std::chrono::milliseconds kStreamCheck{200};
// How long an admission the cached pods could not steer waits for the cache's next change
// before listing the API server (PodSource): a pod's watch event is usually milliseconds away.
constexpr std::chrono::milliseconds kCacheCatchUp{10};

// A file's identity: a socket created again has a new inode or change time.
struct FileId {
  dev_t dev = 0;
  ino_t ino = 0;
  int64_t ctime_ns = 0;
  friend bool operator==(const FileId&, const FileId&) = default;
};

std::optional<FileId> Identify(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return FileId{st.st_dev, st.st_ino,
                static_cast<int64_t>(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec};
}

std::string Sorted(std::vector<std::string> ids) {
  std::sort(ids.begin(), ids.end());
  std::string out;
  for (const std::string& id : ids) out += id + "\n";
  return out;
}

}  // namespace

std::string DevicePluginSocketPath(const std::string& kubelet_dir,
                                   const std::string& resource_name) {
  std::string name = resource_name;
  std::replace(name.begin(), name.end(), '/', '_');
  return kubelet_dir + "/device-plugins/gputopo-" + name + ".sock";
}

class DevicePlugin::Impl {
 public:
  Impl(DevicePluginOptions options, MachineTopology topology, PodSource& pods,
       PodResourcesClient* pod_resources, observability::MetricsRegistry* metrics)
      : options_(std::move(options)),
        socket_path_(DevicePluginSocketPath(options_.kubelet_dir, options_.resource_name)),
        kubelet_socket_(options_.kubelet_dir + "/device-plugins/kubelet.sock"),
        pods_(pods),
        pod_resources_(pod_resources) {
    if (metrics != nullptr) {
      observability::CounterFamily& admissions = metrics->RegisterCounter(
          "gputopo_agent_admissions_total",
          "Container requests kubelet's GetPreferredAllocation asked the agent about, by "
          "result: steered onto gputopo's assigned GPUs, or the agent's own choice and why.",
          {"result"});
      for (size_t i = 0; i < kAdmissionResultLabels.size(); ++i) {
        admissions_by_result_[i] = &admissions.WithLabels({kAdmissionResultLabels[i].second});
      }
      observability::HistogramFamily& durations = metrics->RegisterHistogram(
          "gputopo_agent_admission_duration_seconds",
          "Time the agent's device plugin took to answer kubelet's call during an admission "
          "(kubelet waits on it), from the call's arrival to its answer, by call.",
          {"call"}, kAdmissionDurationBuckets);
      preferred_duration_ = &durations.WithLabels({"GetPreferredAllocation"});
      allocate_duration_ = &durations.WithLabels({"Allocate"});
    }
    SetTopologyLocked(std::move(topology));
  }

  ~Impl() { Stop(); }

  Status Start() {
    if (options_.replicas < 1 || options_.replicas > kMaxReplicasPerGpu) {
      return InvalidArgument("replicas must be 1.." + std::to_string(kMaxReplicasPerGpu) +
                             ", not " + std::to_string(options_.replicas));
    }
    {
      std::lock_guard<std::mutex> life(life_mu_);
      if (server_ != nullptr) return Status::Ok();
      {
        std::lock_guard<std::mutex> lock(mu_);
        stopping_ = false;
      }
      Status served = ServeLocked();
      if (!served.ok()) return served;
      RegisterLocked();
    }
    thread_ = std::thread([this] { Loop(); });
    return Status::Ok();
  }

  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
      cv_.notify_all();
    }
    if (thread_.joinable()) thread_.join();
    std::lock_guard<std::mutex> life(life_mu_);
    ShutdownLocked();
  }

  bool CheckKubelet() {
    std::lock_guard<std::mutex> life(life_mu_);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return false;
    }
    if (server_ == nullptr) return false;  // never started
    const std::optional<FileId> kubelet = Identify(kubelet_socket_);
    const std::optional<FileId> own = Identify(socket_path_);
    const bool own_gone = !own.has_value() || *own != served_id_;
    const bool kubelet_new =
        kubelet.has_value() && registered_kubelet_.has_value() && *kubelet != *registered_kubelet_;
    if (own_gone || kubelet_new) {
      // kubelet restarted (it deletes every socket here): serve again on a fresh socket.
      SetRegistered(false);
      ShutdownLocked();
      if (!ServeLocked().ok()) return false;
    }
    if (registered() || !kubelet.has_value()) return false;
    return RegisterLocked();
  }

  bool SetTopology(MachineTopology topology) {
    std::lock_guard<std::mutex> lock(mu_);
    if (topology.gpu_count() != topology_->gpu_count()) return false;
    // A GPU that stopped answering may have lost its UUID and NUMA node: it keeps its identity
    // (its device IDs must not change under kubelet), only its health changes.
    for (int i = 0; i < topology.gpu_count(); ++i) {
      if (topology.gpu(i).uuid.empty()) topology.gpu(i).uuid = topology_->gpu(i).uuid;
      if (topology.gpu(i).numa_node < 0) topology.gpu(i).numa_node = topology_->gpu(i).numa_node;
    }
    SetTopologyLocked(std::move(topology));
    return true;
  }

  std::string socket_path() const { return socket_path_; }
  bool registered() const { return registered_.load(); }
  PodResourcesView& pod_resources_view() { return pod_resources_view_; }
  int registrations() const { return registrations_.load(); }
  std::string last_register_error() const {
    std::lock_guard<std::mutex> lock(mu_);
    return last_register_error_;
  }
  std::vector<AdmissionRecord> Admissions() const {
    std::lock_guard<std::mutex> lock(mu_);
    return {admissions_.begin(), admissions_.end()};
  }

  // --- the gRPC methods ---

  grpc::Status ListAndWatch(grpc::ServerContext* context,
                            grpc::ServerWriter<dp::ListAndWatchResponse>* writer) {
    std::unique_lock<std::mutex> lock(mu_);
    const uint64_t epoch = epoch_;
    uint64_t sent = 0;
    while (!stopping_ && epoch_ == epoch) {
      if (devices_version_ != sent) {
        sent = devices_version_;
        dp::ListAndWatchResponse response;
        for (const AdvertisedDevice& d : devices_) {
          dp::Device* device = response.add_devices();
          device->set_id(d.id);
          device->set_health(d.healthy ? "Healthy" : "Unhealthy");
          if (d.numa_node >= 0) device->mutable_topology()->add_nodes()->set_id(d.numa_node);
        }
        lock.unlock();
        const bool written = writer->Write(response);
        lock.lock();
        if (!written) return grpc::Status::OK;  // kubelet went away
        continue;
      }
      cv_.wait_for(lock, kStreamCheck);
      if (context->IsCancelled()) return grpc::Status::CANCELLED;
    }
    return grpc::Status::OK;
  }

  grpc::Status GetPreferredAllocation(const dp::PreferredAllocationRequest& request,
                                      dp::PreferredAllocationResponse& response) {
    for (const dp::ContainerPreferredAllocationRequest& c : request.container_requests()) {
      PreferredRequest preferred;
      preferred.available.assign(c.available_deviceids().begin(), c.available_deviceids().end());
      preferred.must_include.assign(c.must_include_deviceids().begin(),
                                    c.must_include_deviceids().end());
      preferred.allocation_size = c.allocation_size();
      const std::vector<std::string> answer = Decide(preferred);
      dp::ContainerPreferredAllocationResponse* out = response.add_container_responses();
      for (const std::string& id : answer) out->add_deviceids(id);
    }
    return grpc::Status::OK;
  }

  grpc::Status Allocate(const dp::AllocateRequest& request, dp::AllocateResponse& response) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const dp::ContainerAllocateRequest& c : request.container_requests()) {
      std::vector<std::string> ids(c.devices_ids().begin(), c.devices_ids().end());
      if (options_.fail_requests_greater_than_one && options_.replicas > 1 && ids.size() > 1) {
        return {grpc::StatusCode::INVALID_ARGUMENT,
                "request for '" + options_.resource_name + ": " + std::to_string(ids.size()) +
                    "' too large: maximum request size for shared resources is 1"};
      }
      std::vector<std::string> physical;
      for (const std::string& id : ids) {
        auto device = std::find_if(devices_.begin(), devices_.end(),
                                   [&](const AdvertisedDevice& d) { return d.id == id; });
        if (device == devices_.end()) {
          return {grpc::StatusCode::INVALID_ARGUMENT, "invalid allocation request for '" +
                                                          options_.resource_name +
                                                          "': unknown device: " + id};
        }
        const GpuInfo& gpu = topology_->gpu(device->gpu);
        const std::string name = gpu.uuid.empty() ? std::to_string(gpu.index) : gpu.uuid;
        if (std::find(physical.begin(), physical.end(), name) == physical.end()) {
          physical.push_back(name);
        }
      }
      std::string visible;
      for (const std::string& name : physical) visible += (visible.empty() ? "" : ",") + name;
      dp::ContainerAllocateResponse* out = response.add_container_responses();
      (*out->mutable_envs())["NVIDIA_VISIBLE_DEVICES"] = visible;
      // The container this was steered for now holds its devices.
      auto pending = pending_.find(Sorted(ids));
      if (pending != pending_.end()) {
        if (allocated_.size() >= kAllocatedKept) allocated_.pop_front();
        allocated_.push_back(pending->second);
        pending_.erase(pending);
      } else {
        // Devices for a container the plugin cannot name: only kubelet knows which one holds
        // them now, so admissions ask it again (pod_resources_view.h).
        pod_resources_view_.Invalidate();
      }
    }
    return grpc::Status::OK;
  }

 private:
  class Service final : public dp::DevicePlugin::Service {
   public:
    explicit Service(Impl& impl) : impl_(impl) {}
    grpc::Status GetDevicePluginOptions(grpc::ServerContext*, const dp::Empty*,
                                        dp::DevicePluginOptions* options) override {
      options->set_pre_start_required(false);
      options->set_get_preferred_allocation_available(true);
      return grpc::Status::OK;
    }
    grpc::Status ListAndWatch(grpc::ServerContext* context, const dp::Empty*,
                              grpc::ServerWriter<dp::ListAndWatchResponse>* writer) override {
      return impl_.ListAndWatch(context, writer);
    }
    grpc::Status GetPreferredAllocation(grpc::ServerContext*,
                                        const dp::PreferredAllocationRequest* request,
                                        dp::PreferredAllocationResponse* response) override {
      const auto start = std::chrono::steady_clock::now();
      grpc::Status status = impl_.GetPreferredAllocation(*request, *response);
      impl_.Observe(impl_.preferred_duration_, start);
      return status;
    }
    grpc::Status Allocate(grpc::ServerContext*, const dp::AllocateRequest* request,
                          dp::AllocateResponse* response) override {
      const auto start = std::chrono::steady_clock::now();
      grpc::Status status = impl_.Allocate(*request, *response);
      impl_.Observe(impl_.allocate_duration_, start);
      return status;
    }
    grpc::Status PreStartContainer(grpc::ServerContext*, const dp::PreStartContainerRequest*,
                                   dp::PreStartContainerResponse*) override {
      return grpc::Status::OK;
    }

   private:
    Impl& impl_;
  };

  // Precondition: mu_ held (or construction).
  void SetTopologyLocked(MachineTopology topology) {
    auto shape = topology::TopologyShape::Analyze(topology);
    shape_ = shape.ok() ? *shape : nullptr;
    std::vector<AdvertisedDevice> devices = AdvertisedDevices(topology, options_.replicas);
    topology_ = std::make_shared<const MachineTopology>(std::move(topology));
    if (devices != devices_ || devices_version_ == 0) {
      devices_ = std::move(devices);
      ++devices_version_;
      cv_.notify_all();
    }
  }

  void SetRegistered(bool value) { registered_.store(value); }

  // Precondition: life_mu_ held and no server running.
  Status ServeLocked() {
    ::unlink(socket_path_.c_str());
    service_ = std::make_unique<Service>(*this);
    grpc::ServerBuilder builder;
    builder.AddListeningPort("unix:" + socket_path_, grpc::InsecureServerCredentials());
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    if (server_ == nullptr) {
      service_.reset();
      return Unavailable("cannot serve the device plugin on " + socket_path_);
    }
    served_id_ = Identify(socket_path_).value_or(FileId{});
    return Status::Ok();
  }

  // Precondition: life_mu_ held.
  void ShutdownLocked() {
    if (server_ == nullptr) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++epoch_;  // ends the ListAndWatch streams
      cv_.notify_all();
    }
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
    server_->Wait();
    server_.reset();
    service_.reset();
    // Only our own socket: kubelet may already have replaced the directory's contents.
    if (Identify(socket_path_) == std::optional<FileId>(served_id_)) ::unlink(socket_path_.c_str());
    SetRegistered(false);
  }

  // Precondition: life_mu_ held and the server running.
  bool RegisterLocked() {
    const std::optional<FileId> kubelet = Identify(kubelet_socket_);
    auto channel =
        grpc::CreateChannel("unix://" + kubelet_socket_, grpc::InsecureChannelCredentials());
    auto stub = dp::Registration::NewStub(channel);
    dp::RegisterRequest request;
    request.set_version(kVersion);
    const std::string endpoint = socket_path_.substr(socket_path_.rfind('/') + 1);
    request.set_endpoint(endpoint);
    request.set_resource_name(options_.resource_name);
    request.mutable_options()->set_get_preferred_allocation_available(true);
    dp::Empty ignored;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + options_.register_deadline);
    // Until kubelet has switched to this endpoint, another plugin (an earlier agent) may still
    // allocate: PodResources answers asked for before then may miss that (pod_resources_view.h).
    pod_resources_view_.Invalidate();
    const grpc::Status status = stub->Register(&context, request, &ignored);
    pod_resources_view_.Invalidate();
    std::lock_guard<std::mutex> lock(mu_);
    if (!status.ok()) {
      last_register_error_ =
          "register with kubelet at " + kubelet_socket_ + ": " + status.error_message();
      return false;
    }
    last_register_error_.clear();
    registered_kubelet_ = kubelet;
    SetRegistered(true);
    ++registrations_;
    return true;
  }

  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stopping_) {
      cv_.wait_for(lock, options_.poll_period);
      if (stopping_) break;
      lock.unlock();
      CheckKubelet();
      lock.lock();
    }
  }

  // kubelet's PodResources List now, kept in the shared view; null (and a note) when it fails or
  // there is no client.
  PodResourcesView::Answer AskPodResources(AdmissionRecord& record, std::string& notes) {
    if (pod_resources_ == nullptr) return nullptr;
    record.asked_pod_resources = true;
    const uint64_t ticket = pod_resources_view_.Begin();
    Result<std::vector<PodDeviceIds>> answer = pod_resources_->List(options_.resource_name);
    if (!answer.ok()) {
      notes = "; PodResources: " + answer.status().ToString();
      return nullptr;
    }
    return pod_resources_view_.Finish(ticket, std::move(answer).value());
  }

  // The containers kubelet's answer (may be null) lists, then the plugin's own record.
  static std::vector<AllocatedContainer> Holders(const std::vector<PodDeviceIds>* listed,
                                                 const std::vector<AllocatedContainer>& own) {
    std::vector<AllocatedContainer> allocated;
    if (listed != nullptr) {
      for (const PodDeviceIds& pod : *listed) {
        for (const ContainerDeviceIds& c : pod.containers) {
          allocated.push_back({pod.namespace_name, pod.name, "", c.container});
        }
      }
    }
    allocated.insert(allocated.end(), own.begin(), own.end());
    return allocated;
  }

  std::vector<std::string> Decide(const PreferredRequest& request) {
    AdmissionRecord record;
    record.request = request;
    const uint64_t seen = pods_.changes();
    Result<std::vector<BoundPod>> pods = pods_.CurrentPods();
    // Containers that hold devices: kubelet's PodResources answer (the shared one when it can
    // stand in for a call now, pod_resources_view.h; else asked now) and the plugin's own record.
    std::string notes;
    PodResourcesView::Answer holding = pod_resources_view_.Current();
    if (holding == nullptr) holding = AskPodResources(record, notes);
    std::vector<AllocatedContainer> own;
    std::shared_ptr<const MachineTopology> topology;
    std::shared_ptr<const topology::TopologyShape> shape;
    {
      std::lock_guard<std::mutex> lock(mu_);
      topology = topology_;
      shape = shape_;
      if (pods.ok()) {
        // Forget allocations of pods that are gone.
        std::set<std::string> uids;
        for (const BoundPod& pod : *pods) uids.insert(pod.uid);
        std::erase_if(allocated_,
                      [&](const AllocatedContainer& a) { return !uids.contains(a.uid); });
      }
      own.assign(allocated_.begin(), allocated_.end());
    }
    std::vector<AllocatedContainer> allocated = Holders(holding.get(), own);
    if (pods.ok()) {
      record.identification =
          IdentifyAdmission(*pods, allocated, request, *topology, options_.trusted_schedulers);
    }
    if (pods_.cached() && !record.identification.steered() && pods.ok() &&
        pods_.WaitForChange(seen, kCacheCatchUp)) {
      // The cache may not have had the pod yet (bound a moment ago): its next change may be it.
      Result<std::vector<BoundPod>> newer = pods_.CurrentPods();
      if (newer.ok()) {
        pods = std::move(newer);
        record.identification =
            IdentifyAdmission(*pods, allocated, request, *topology, options_.trusted_schedulers);
      }
    }
    if (pods_.cached() && !record.identification.steered()) {
      // Still nothing: a live list decides.
      Result<std::vector<BoundPod>> listed = pods_.ListNow();
      if (listed.ok() || !pods.ok()) pods = std::move(listed);
      if (pods.ok()) {
        record.identification =
            IdentifyAdmission(*pods, allocated, request, *topology, options_.trusted_schedulers);
      }
    }
    if (!record.identification.steered() && pods.ok() && !record.asked_pod_resources &&
        pod_resources_ != nullptr) {
      // Last, since the cache lagging behind a bind is the usual reason: the shared answer may
      // list a container of a pod deleted since and created again under the same name, so
      // kubelet's answer now decides.
      holding = AskPodResources(record, notes);
      allocated = Holders(holding.get(), own);
      record.identification =
          IdentifyAdmission(*pods, allocated, request, *topology, options_.trusted_schedulers);
    }
    if (!pods.ok()) {
      record.identification.verdict = IdentificationVerdict::kNoneQualify;
      record.identification.reason = "pods on this node unknown: " + pods.status().ToString();
    }
    if (!record.identification.steered()) record.identification.reason += notes;
    record.answer = record.identification.steered()
                        ? record.identification.device_ids
                        : ChooseFallback(request, *topology, shape.get(), options_.replicas);
    // One line per request: steering at debug, the fallback (rare, and worth knowing) at info.
    std::string answer_text;
    for (const std::string& id : record.answer)
      answer_text += (answer_text.empty() ? "" : ",") + id;
    if (record.identification.steered()) {
      spdlog::debug("enforce: {}/{} container {} steered to {}",
                    record.identification.namespace_name, record.identification.pod_name,
                    record.identification.container, answer_text);
    } else {
      spdlog::info("enforce: {} of {} not steered ({}); own choice {}", request.allocation_size,
                   options_.resource_name, record.identification.reason, answer_text);
    }
    for (size_t i = 0; i < kAdmissionResultLabels.size(); ++i) {
      if (kAdmissionResultLabels[i].first == record.identification.verdict &&
          admissions_by_result_[i] != nullptr) {
        admissions_by_result_[i]->Increment();
      }
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (record.identification.steered()) {
      if (pending_.size() >= kPendingKept) pending_.erase(pending_.begin());
      const Identification& id = record.identification;
      pending_[Sorted(record.answer)] = {id.namespace_name, id.pod_name, id.pod_uid, id.container};
    }
    if (admissions_.size() >= kAdmissionsKept) admissions_.pop_front();
    admissions_.push_back(record);
    return record.answer;
  }

  // Constant after construction.
  const DevicePluginOptions options_;
  const std::string socket_path_;
  const std::string kubelet_socket_;
  PodSource& pods_;
  PodResourcesClient* const pod_resources_;
  PodResourcesView pod_resources_view_;  // thread-safe on its own
  // By kAdmissionResultLabels' order; null without a registry.
  std::array<observability::Counter*, kAdmissionResultLabels.size()> admissions_by_result_{};
  // gputopo_agent_admission_duration_seconds{call}; null without a registry.
  observability::Histogram* preferred_duration_ = nullptr;
  observability::Histogram* allocate_duration_ = nullptr;

  static void Observe(observability::Histogram* histogram,
                      std::chrono::steady_clock::time_point start) {
    if (histogram == nullptr) return;
    histogram->Observe(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }

  // Serializes serving, shutting down and registering. Never taken by gRPC handlers.
  std::mutex life_mu_;
  std::unique_ptr<Service> service_;          // GUARDED_BY(life_mu_)
  std::unique_ptr<grpc::Server> server_;      // GUARDED_BY(life_mu_)
  FileId served_id_;                          // GUARDED_BY(life_mu_)
  std::optional<FileId> registered_kubelet_;  // GUARDED_BY(life_mu_), written under mu_ too
  std::atomic<bool> registered_{false};
  std::atomic<int> registrations_{0};
  std::thread thread_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;                                 // GUARDED_BY(mu_)
  uint64_t epoch_ = 0;                                    // GUARDED_BY(mu_): server generation
  std::shared_ptr<const MachineTopology> topology_;       // GUARDED_BY(mu_)
  std::shared_ptr<const topology::TopologyShape> shape_;  // GUARDED_BY(mu_); null if unknown
  std::vector<AdvertisedDevice> devices_;                 // GUARDED_BY(mu_)
  uint64_t devices_version_ = 0;                          // GUARDED_BY(mu_)
  std::string last_register_error_;                       // GUARDED_BY(mu_)
  // Steered answers not yet allocated, by their sorted device IDs.
  std::map<std::string, AllocatedContainer> pending_;  // GUARDED_BY(mu_)
  std::deque<AllocatedContainer> allocated_;           // GUARDED_BY(mu_)
  std::deque<AdmissionRecord> admissions_;             // GUARDED_BY(mu_)
};

DevicePlugin::DevicePlugin(DevicePluginOptions options, MachineTopology topology, PodSource& pods,
                           PodResourcesClient* pod_resources,
                           observability::MetricsRegistry* metrics)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(topology), pods, pod_resources,
                                   metrics)) {}
DevicePlugin::~DevicePlugin() = default;
Status DevicePlugin::Start() { return impl_->Start(); }
void DevicePlugin::Stop() { impl_->Stop(); }
bool DevicePlugin::CheckKubelet() { return impl_->CheckKubelet(); }
bool DevicePlugin::SetTopology(MachineTopology topology) {
  return impl_->SetTopology(std::move(topology));
}
std::string DevicePlugin::socket_path() const { return impl_->socket_path(); }
bool DevicePlugin::registered() const { return impl_->registered(); }
int DevicePlugin::registrations() const { return impl_->registrations(); }
std::string DevicePlugin::last_register_error() const { return impl_->last_register_error(); }
PodResourcesView& DevicePlugin::pod_resources_view() { return impl_->pod_resources_view(); }
std::vector<AdmissionRecord> DevicePlugin::Admissions() const { return impl_->Admissions(); }

}  // namespace gputopo::agent
