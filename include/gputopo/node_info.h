// NodeInfo: the part of a Kubernetes Node that gputopo schedules by.
//
// Label values are kept as the raw strings the node carries; the topology resolver
// (topology/topology_resolver.h) validates them, so that a bad value fails that node alone with
// a reason. The `gputopo.io/topology` annotation is decoded by the adapter (it is JSON) and
// arrives here as a MachineTopology or the error that explains why it could not be read.
//
// Thread safety: a value type.
#ifndef GPUTOPO_NODE_INFO_H_
#define GPUTOPO_NODE_INFO_H_

#include <cstdint>
#include <optional>
#include <string>

#include "gputopo/machine_topology.h"
#include "gputopo/status.h"

namespace gputopo {

struct NodeInfo {
  std::string name;
  std::string resource_version;
  // status.allocatable["nvidia.com/gpu"]: the time-slice replicas kubelet can hand out.
  int64_t allocatable_gpus = 0;
  // status.allocatable cpu (millicores) and memory (bytes); 0 when the node does not say. The
  // fragmentation measure counts a GPU as usable by a class of pods only where the node also
  // has that class's CPU and memory free; a node without these figures is not held to them.
  int64_t allocatable_cpu_milli = 0;
  int64_t allocatable_memory_bytes = 0;
  std::optional<std::string> label_gpu_count;     // nvidia.com/gpu.count (GPU Feature Discovery)
  std::optional<std::string> label_gpu_replicas;  // nvidia.com/gpu.replicas (GPU Feature Discovery)
  std::optional<std::string> label_gpu_product;   // nvidia.com/gpu.product
  std::optional<std::string> label_gpu_memory;    // nvidia.com/gpu.memory, MiB
  std::optional<std::string> label_topology_profile;  // gputopo.io/topology-profile
  // The decoded gputopo.io/topology annotation; nullopt when the node has none.
  std::optional<Result<MachineTopology>> annotation_topology;
};

}  // namespace gputopo

#endif  // GPUTOPO_NODE_INFO_H_
