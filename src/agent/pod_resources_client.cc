#include "src/agent/pod_resources_client.h"

#include <grpcpp/grpcpp.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <mutex>

#include "gputopo/excerpt.h"
#include "gputopo/mutex.h"
#include "podresources/v1/api.grpc.pb.h"

namespace gputopo::agent {
namespace {

namespace pr = ::v1;

// The socket is there and is a socket; otherwise why not, as Unavailable.
Status CheckSocket(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return Unavailable("no PodResources socket at " + path + ": " + std::strerror(errno) +
                       " (is kubelet running, and is its pod-resources directory mounted?)");
  }
  if (!S_ISSOCK(st.st_mode)) return Unavailable(path + " is not a socket");
  return Status::Ok();
}

Status FromGrpc(const grpc::Status& status, std::string_view call, const std::string& path) {
  const std::string what = std::string(call) + " on " + path + ": " +
                           Excerpt(status.error_message()) + " (gRPC " +
                           std::to_string(static_cast<int>(status.error_code())) + ")";
  switch (status.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
      return Unavailable(what);
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return {StatusCode::kDeadlineExceeded, what};
    case grpc::StatusCode::INTERNAL:
    case grpc::StatusCode::DATA_LOSS:
      return Internal("unreadable answer from " + what);
    case grpc::StatusCode::UNIMPLEMENTED:
      // gRPC C++ reports an answer that does not parse as a unary call that returned no
      // message; any other UNIMPLEMENTED is a kubelet that does not serve the call.
      if (status.error_message() == "No message returned for unary request") {
        return Internal("unreadable answer from " + what);
      }
      return FailedPrecondition("kubelet does not serve " + what);
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return ResourceExhausted(what);
    default:
      return Internal(what);
  }
}

}  // namespace

class PodResourcesClient::Impl {
 public:
  Impl(const std::string& socket_path, Options options) : path_(socket_path), options_(options) {}

  Result<std::vector<PodDeviceIds>> List(std::string_view resource_name) {
    if (Status s = CheckSocket(path_); !s.ok()) return s;
    pr::ListPodResourcesResponse response;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + options_.deadline);
    const grpc::Status status = Stub().List(&context, pr::ListPodResourcesRequest(), &response);
    if (!status.ok()) return FromGrpc(status, "List", path_);
    std::vector<PodDeviceIds> out;
    for (const pr::PodResources& pod : response.pod_resources()) {
      if (pod.name().empty() || pod.namespace_().empty()) {
        return Internal("unreadable answer from List on " + path_ +
                        ": a pod without a name or namespace (\"" + Excerpt(pod.namespace_()) +
                        "/" + Excerpt(pod.name()) + "\")");
      }
      PodDeviceIds entry;
      entry.namespace_name = pod.namespace_();
      entry.name = pod.name();
      for (const pr::ContainerResources& container : pod.containers()) {
        ContainerDeviceIds ids;
        ids.container = container.name();
        for (const pr::ContainerDevices& devices : container.devices()) {
          if (devices.resource_name() != resource_name) continue;
          for (const std::string& id : devices.device_ids()) ids.device_ids.push_back(id);
        }
        if (!ids.device_ids.empty()) entry.containers.push_back(std::move(ids));
      }
      if (!entry.containers.empty()) out.push_back(std::move(entry));
    }
    return out;
  }

  Result<std::vector<std::string>> Allocatable(std::string_view resource_name) {
    if (Status s = CheckSocket(path_); !s.ok()) return s;
    pr::AllocatableResourcesResponse response;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + options_.deadline);
    const grpc::Status status =
        Stub().GetAllocatableResources(&context, pr::AllocatableResourcesRequest(), &response);
    if (!status.ok()) return FromGrpc(status, "GetAllocatableResources", path_);
    std::vector<std::string> out;
    for (const pr::ContainerDevices& devices : response.devices()) {
      if (devices.resource_name() != resource_name) continue;
      for (const std::string& id : devices.device_ids()) out.push_back(id);
    }
    return out;
  }

 private:
  pr::PodResourcesLister::Stub& Stub() {
    MutexLock lock(mu_);
    if (stub_ == nullptr) {
      grpc::ChannelArguments args;
      args.SetMaxReceiveMessageSize(static_cast<int>(options_.max_message_bytes));
      // After a kubelet restart the channel reconnects within seconds, not gRPC's default of up
      // to two minutes of backoff.
      args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 5000);
      stub_ = pr::PodResourcesLister::NewStub(
          grpc::CreateCustomChannel("unix://" + path_, grpc::InsecureChannelCredentials(), args));
    }
    return *stub_;
  }

  const std::string path_;
  const Options options_;
  Mutex mu_;
  std::unique_ptr<pr::PodResourcesLister::Stub> stub_ GPUTOPO_GUARDED_BY(mu_);  // until set
};

PodResourcesClient::PodResourcesClient(std::string socket_path, Options options)
    : socket_path_(std::move(socket_path)), impl_(std::make_unique<Impl>(socket_path_, options)) {}
PodResourcesClient::PodResourcesClient(std::string socket_path)
    : PodResourcesClient(std::move(socket_path), Options()) {}
PodResourcesClient::~PodResourcesClient() = default;

Result<std::vector<PodDeviceIds>> PodResourcesClient::List(std::string_view resource_name) {
  return impl_->List(resource_name);
}

Result<std::vector<std::string>> PodResourcesClient::AllocatableDeviceIds(
    std::string_view resource_name) {
  return impl_->Allocatable(resource_name);
}

}  // namespace gputopo::agent
