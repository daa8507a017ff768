// MachineTopology: what one node's GPU hardware looks like, as plain data.
//
// This is the domain form of every topology source: the `gputopo.io/topology` node annotation,
// a machine profile shipped under topology/profiles/, an `nvidia-smi topo -m` capture, or the
// fallback built from a GPU count. It is validated (see topology/topology.h) and then analysed
// into an immutable Topology. No I/O and no JSON here: adapters in src/ translate.
//
// Thread safety: a value type.
#ifndef GPUTOPO_MACHINE_TOPOLOGY_H_
#define GPUTOPO_MACHINE_TOPOLOGY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "gputopo/enum_names.h"

namespace gputopo {

// The most physical GPUs one node may have. GPU sets are 64-bit masks.
inline constexpr int kMaxGpusPerNode = 64;
// The largest NUMA node id accepted (Linux supports up to 1024 NUMA nodes).
inline constexpr int kMaxNumaNode = 1023;
// The most time-slice replicas one physical GPU may be advertised as.
inline constexpr int kMaxReplicasPerGpu = 1024;

// How two GPUs are connected, in `nvidia-smi topo -m` terms, best last.
enum class LinkType : uint8_t {
  kUnknown = 0,  // not known (fallback topology, or a cell missing from a capture)
  kSys,          // PCIe + the SMP interconnect between NUMA nodes (QPI/UPI)
  kNode,         // PCIe + the interconnect between host bridges inside one NUMA node
  kPhb,          // PCIe + a PCIe host bridge (typically the CPU)
  kPxb,          // multiple PCIe bridges, no host bridge
  kPix,          // at most a single PCIe bridge
  kNvLink,       // a bonded set of NVLinks (`NV<n>`); see Link::nvlinks
};

struct Link {
  LinkType type = LinkType::kUnknown;
  int nvlinks = 0;  // number of bonded NVLinks when type == kNvLink, else 0

  bool IsNvLink() const { return type == LinkType::kNvLink; }
  friend bool operator==(const Link&, const Link&) = default;
};

struct GpuInfo {
  int index = 0;             // the GPU's index as nvidia-smi and the device plugin number it
  std::string uuid;          // "GPU-…" when known, else empty
  std::string model;         // e.g. "NVIDIA H100 80GB HBM3"; empty when unknown
  int64_t memory_mib = 0;    // 0 when unknown
  int numa_node = -1;        // -1 when unknown
  std::string cpu_affinity;  // as nvidia-smi prints it ("0-11,24-35"); informational
  std::string pci_bus_id;    // as NVML prints it ("00000000:07:00.0"); empty when unknown

  // False when the node agent found the GPU not answering NVML, with the failing call.
  bool healthy = true;
  std::string health_reason;
  friend bool operator==(const GpuInfo&, const GpuInfo&) = default;
};

// Where a node's topology came from, in order of precedence.
enum class TopologySource : uint8_t {
  kAnnotation,  // node annotation gputopo.io/topology
  kProfile,     // node label gputopo.io/topology-profile naming a shipped profile
  kFallback,    // only a GPU count is known; links are unknown
};
inline constexpr EnumNames<TopologySource, 3> kTopologySourceNames = {{
    {TopologySource::kAnnotation, "annotation"},
    {TopologySource::kProfile, "profile"},
    {TopologySource::kFallback, "fallback"},
}};

class MachineTopology {
 public:
  MachineTopology() = default;
  // `gpu_count` GPUs with indices 0..gpu_count-1 and every link unknown.
  explicit MachineTopology(int gpu_count) { Resize(gpu_count); }

  void Resize(int gpu_count) {
    gpus_.assign(static_cast<size_t>(gpu_count), GpuInfo{});
    for (int i = 0; i < gpu_count; ++i) gpus_[static_cast<size_t>(i)].index = i;
    links_.assign(static_cast<size_t>(gpu_count) * static_cast<size_t>(gpu_count), Link{});
  }

  int gpu_count() const { return static_cast<int>(gpus_.size()); }
  const std::vector<GpuInfo>& gpus() const { return gpus_; }
  GpuInfo& gpu(int i) { return gpus_[static_cast<size_t>(i)]; }
  const GpuInfo& gpu(int i) const { return gpus_[static_cast<size_t>(i)]; }

  // Precondition: 0 <= a, b < gpu_count(). link(a, a) is unknown by convention.
  const Link& link(int a, int b) const { return links_[Offset(a, b)]; }
  // Sets both directions.
  void SetLink(int a, int b, Link link) {
    links_[Offset(a, b)] = link;
    links_[Offset(b, a)] = link;
  }

  // Time-slice replicas per GPU stated by the source; 0 when it does not say.
  int replicas_per_gpu() const { return replicas_per_gpu_; }
  void set_replicas_per_gpu(int replicas) { replicas_per_gpu_ = replicas; }

  friend bool operator==(const MachineTopology&, const MachineTopology&) = default;

 private:
  size_t Offset(int a, int b) const {
    return static_cast<size_t>(a) * gpus_.size() + static_cast<size_t>(b);
  }

  std::vector<GpuInfo> gpus_;
  std::vector<Link> links_;  // row-major gpu_count x gpu_count
  int replicas_per_gpu_ = 0;
};

}  // namespace gputopo

#endif  // GPUTOPO_MACHINE_TOPOLOGY_H_
