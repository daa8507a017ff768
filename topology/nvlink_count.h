// NVLink counts per GPU pair, from what each GPU's active links reach.
//
// The node agent reads, for every active NVLink of every GPU, the PCI bus ID at the link's far
// end and what kind of device that is; this turns those facts into bonded-link counts per pair:
// - a link whose far end is another GPU counts for that pair; a pair's count is the smaller of
//   the two GPUs' counts toward each other (a link both ends report);
// - on NVSwitch systems (HGX/DGX H100 and A100) every link ends at a switch and any GPU reaches
//   any other through the switches: a pair's count is min(a's switch links, b's switch links).
//   (Counting the switch links as if they joined the pair directly gives wrong counts:
//   NVIDIA/k8s-device-plugin #546.)
// - a far end that is neither (an IBM NPU) is not counted.
// No NVML types here: the agent (src/agent/) translates.
//
// Thread safety: pure functions.
#ifndef GPUTOPO_TOPOLOGY_NVLINK_COUNT_H_
#define GPUTOPO_TOPOLOGY_NVLINK_COUNT_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gputopo::topology {

enum class NvLinkPeer : uint8_t {
  kGpu,      // the far end is a GPU
  kSwitch,   // an NVSwitch
  kOther,    // something else (an IBM NPU): not counted
  kUnknown,  // not known: counted as a GPU link when its bus ID is one of the GPUs'
};

struct NvLinkEnd {
  NvLinkPeer peer = NvLinkPeer::kUnknown;
  std::string remote_pci_bus_id;  // any form NormalizePciBusId reads
};

struct GpuNvLinks {
  std::string pci_bus_id;         // this GPU's; empty when unknown (no GPU link can name it)
  bool known = true;              // false: its links could not be read; its pairs stay unknown
  std::vector<NvLinkEnd> active;  // one entry per active link
};

struct NvLinkCounts {
  int gpu_count = 0;
  std::vector<int> counts;  // row-major gpu_count x gpu_count, symmetric, 0 on the diagonal
  // Pairs whose count is not known because a GPU's links could not be read.
  std::vector<bool> unknown;
  // Links toward a GPU (or of unknown kind) whose far bus ID is none of the GPUs'.
  int unmatched_links = 0;

  int count(int a, int b) const { return counts[Offset(a, b)]; }
  bool known(int a, int b) const { return !unknown[Offset(a, b)]; }

 private:
  size_t Offset(int a, int b) const {
    return static_cast<size_t>(a) * static_cast<size_t>(gpu_count) + static_cast<size_t>(b);
  }
};

NvLinkCounts CountNvLinks(const std::vector<GpuNvLinks>& gpus);

// "00000000:07:00.0", "0000:07:00.0" or "07:00.0", any case -> "0000:07:00.0" (sysfs's form:
// lower-case hex, a 4-digit domain, as in /sys/bus/pci/devices). "" when it is not a bus ID or
// the domain does not fit in 16 bits.
std::string NormalizePciBusId(std::string_view bus_id);

}  // namespace gputopo::topology

#endif  // GPUTOPO_TOPOLOGY_NVLINK_COUNT_H_
