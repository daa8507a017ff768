// The replicas the device plugin advertises, and its own choice of replicas when steering does
// not apply (no pod identified, see pod_identification.h).
//
// Advertised: for each GPU of the topology, devices "GPU-<uuid>::<n>", n = 0..R-1 (NVIDIA's own
// format, so PodResources readers such as dcgm-exporter keep working; "<index>::<n>" for a GPU
// whose UUID is unknown), with the GPU's NUMA node and health.
//
// Fallback: the must_include devices first; then distinct GPUs, least-loaded first (load = the
// GPU's replicas not free in the request); for several GPUs, among the least-loaded GPUs that
// can fill the request, the set with the most NVLink bandwidth (topology/best_set.h). When the
// distinct GPUs run out, more replicas of the least-loaded GPUs. It never fails: with too few
// devices it returns what there is (kubelet fills or refuses by itself). Lowest replica index
// first on each GPU; ties to the lowest GPU index.
//
// Pure functions; thread-safe.
#ifndef GPUTOPO_SRC_AGENT_REPLICA_CHOICE_H_
#define GPUTOPO_SRC_AGENT_REPLICA_CHOICE_H_

#include <string>
#include <vector>

#include "gputopo/machine_topology.h"
#include "src/agent/pod_identification.h"
#include "topology/topology_shape.h"

namespace gputopo::agent {

struct AdvertisedDevice {
  std::string id;
  int gpu = 0;      // index in the topology
  int replica = 0;  // n
  int numa_node = -1;
  bool healthy = true;
  friend bool operator==(const AdvertisedDevice&, const AdvertisedDevice&) = default;
};

// The replica's device ID: "GPU-<uuid>::<n>", or "<index>::<n>" without a UUID.
std::string ReplicaId(const GpuInfo& gpu, int replica);

// Every GPU's replicas, GPU by GPU. `replicas` >= 1.
std::vector<AdvertisedDevice> AdvertisedDevices(const MachineTopology& topology, int replicas);

// `shape` may be null (links unknown): then only load and index decide.
std::vector<std::string> ChooseFallback(const PreferredRequest& request,
                                        const MachineTopology& topology,
                                        const topology::TopologyShape* shape, int replicas);

}  // namespace gputopo::agent

#endif  // GPUTOPO_SRC_AGENT_REPLICA_CHOICE_H_
