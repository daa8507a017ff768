// Topology discovery: the node's GPUs and how they are connected, as a topology document
// (docs/topology-document.md), read from NVML or, where NVML cannot be used, from nvidia-smi.
//
// NVML (through NvmlLibrary, opened with dlopen) gives per GPU the UUID, name, memory, PCI bus
// ID and MIG mode, per link the far end's bus ID and kind (counted by topology/nvlink_count.h),
// and per pair the PCIe common ancestor. NUMA nodes come from sysfs. An entry point the library
// lacks, or that answers NOT_SUPPORTED, leaves its fact unknown with a note; a GPU whose calls
// fail otherwise (GPU_IS_LOST, UNKNOWN, ...) is listed unhealthy with the failing call as the
// reason. Neither fails discovery.
//
// Thread safety: functions; the runner is used from the calling thread only.
#ifndef GPUTOPO_SRC_AGENT_TOPOLOGY_DISCOVERY_H_
#define GPUTOPO_SRC_AGENT_TOPOLOGY_DISCOVERY_H_

#include <string>
#include <string_view>
#include <vector>

#include "gputopo/machine_topology.h"
#include "gputopo/status.h"
#include "src/agent/command_runner.h"
#include "src/agent/nvml_library.h"

namespace gputopo::agent {

struct DiscoveryOptions {
  std::string nvml_library = kDefaultNvmlLibrary;  // dlopen's argument
  std::string nvidia_smi = "nvidia-smi";           // searched on PATH when it has no '/'
  std::string sysfs_root = "/sys";                 // numa_node under bus/pci/devices/
  int replicas = 0;                                // recorded in the document when > 0
};

struct Discovery {
  MachineTopology machine;
  std::vector<std::string> notes;  // degraded facts, one line each: the document's "notes"
  std::string source;              // "nvml" or "nvidia-smi"
};

// From an opened, initialised NVML. Error only when NVML cannot count the GPUs or sees none.
Result<Discovery> DiscoverWithNvml(const NvmlLibrary& nvml, const std::string& sysfs_root);

// From `nvidia_smi --query-gpu=index,uuid,name,memory.total,pci.bus_id --format=csv` and
// `nvidia_smi topo -m`, run through `runner`. Error when the query cannot be run or read.
Result<Discovery> DiscoverWithNvidiaSmi(CommandRunner& runner, const std::string& nvidia_smi,
                                        const std::string& sysfs_root);

// NVML first, then nvidia-smi (with a note saying why NVML was not used). When neither works,
// the error says what was tried: "no GPU found: NVML: <why>; nvidia-smi: <why>".
Result<Discovery> DiscoverTopology(const DiscoveryOptions& options, CommandRunner& runner);

// The GPUs of `nvidia-smi --query-gpu=index,uuid,name,memory.total,pci.bus_id --format=csv`
// output (a header line, then "0, GPU-…, NVIDIA H100 80GB HBM3, 81559 MiB, 00000000:18:00.0").
// Error when there is no header or no row, a row is unreadable, or indices are not 0..n-1.
Result<std::vector<GpuInfo>> ParseNvidiaSmiGpuQuery(std::string_view csv);

// The NUMA node of the PCI device `pci_bus_id` (any form topology::NormalizePciBusId reads) from
// <sysfs_root>/bus/pci/devices/<id>/numa_node; -1 when unknown (no file, "-1", unreadable).
int ReadNumaNode(const std::string& sysfs_root, const std::string& pci_bus_id);

}  // namespace gputopo::agent

#endif  // GPUTOPO_SRC_AGENT_TOPOLOGY_DISCOVERY_H_
