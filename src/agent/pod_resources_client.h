// PodResourcesClient: a client of kubelet's PodResourcesLister v1 (List,
// GetAllocatableResources) over its unix socket, <kubelet dir>/pod-resources/kubelet.sock.
//
// Answers are reduced to what the agent needs: for one resource name, the device IDs each pod's
// containers hold (kubelet reports one ContainerDevices per device; they are gathered per
// container, in kubelet's order). gRPC and protobuf stay inside pod_resources_client.cc.
//
// Errors (never thrown): the socket missing or not a socket is Unavailable, so is kubelet not
// answering; an answer that cannot be parsed, or that names a pod without a name or namespace,
// is Internal ("unreadable answer"); a call past its deadline is DeadlineExceeded.
//
// Thread safety: thread-safe (one gRPC channel, shared by concurrent calls).
#ifndef GPUTOPO_SRC_AGENT_POD_RESOURCES_CLIENT_H_
#define GPUTOPO_SRC_AGENT_POD_RESOURCES_CLIENT_H_

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gputopo/status.h"

namespace gputopo::agent {

struct ContainerDeviceIds {
  std::string container;
  std::vector<std::string> device_ids;  // of the resource asked for, in kubelet's order
  friend bool operator==(const ContainerDeviceIds&, const ContainerDeviceIds&) = default;
};

struct PodDeviceIds {
  std::string namespace_name;
  std::string name;
  // Only containers that hold at least one device of the resource.
  std::vector<ContainerDeviceIds> containers;
  std::string Key() const { return namespace_name + "/" + name; }
  friend bool operator==(const PodDeviceIds&, const PodDeviceIds&) = default;
};

class PodResourcesClient {
 public:
  struct Options {
    // Per call. kubelet answers from memory; a slow answer means it is in trouble.
    std::chrono::milliseconds deadline{10000};
    // The largest answer accepted (kubelet's own server limit is 16 MiB).
    size_t max_message_bytes = size_t{16} << 20;
  };

  // `socket_path` is the PodResources socket (…/pod-resources/kubelet.sock). Nothing is dialled
  // until the first call.
  PodResourcesClient(std::string socket_path, Options options);
  explicit PodResourcesClient(std::string socket_path);
  ~PodResourcesClient();
  PodResourcesClient(const PodResourcesClient&) = delete;
  PodResourcesClient& operator=(const PodResourcesClient&) = delete;

  // List: the pods whose containers hold devices of `resource_name`, in kubelet's order.
  Result<std::vector<PodDeviceIds>> List(std::string_view resource_name);
  // GetAllocatableResources: every device ID of `resource_name` kubelet can allocate.
  Result<std::vector<std::string>> AllocatableDeviceIds(std::string_view resource_name);

  const std::string& socket_path() const { return socket_path_; }

 private:
  class Impl;
  const std::string socket_path_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gputopo::agent

#endif  // GPUTOPO_SRC_AGENT_POD_RESOURCES_CLIENT_H_
