// Device IDs as kubelet reports them (PodResources, device plugin calls), mapped to the node's
// physical GPUs.
//
// The forms NVIDIA's device plugin and gputopo's agent use:
//   "GPU-<uuid>"        one physical GPU (deviceIDStrategy=uuid, no sharing)
//   "GPU-<uuid>::<n>"   replica n of that GPU (time-slicing or MPS)
//   "<index>"           the GPU nvidia-smi numbers <index> (deviceIDStrategy=index)
//   "<index>::<n>"      replica n of that GPU
//   "MIG-<uuid>", "MIG-GPU-<uuid>/<gi>/<ci>", "<index>:<mig>"   MIG devices: recognised, not
//                       handled (a MIG slice is not a whole GPU)
// Anything else is an unknown form, with the reason.
//
// Pure functions; thread-safe.
#ifndef GPUTOPO_SRC_AGENT_DEVICE_IDS_H_
#define GPUTOPO_SRC_AGENT_DEVICE_IDS_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "gputopo/enum_names.h"
#include "gputopo/machine_topology.h"

namespace gputopo::agent {

enum class DeviceIdForm : uint8_t {
  kUuid,     // GPU-<uuid>, optionally ::<n>
  kIndex,    // <index>, optionally ::<n>
  kMig,      // a MIG device: not handled
  kUnknown,  // not a form we know
};

inline constexpr EnumNames<DeviceIdForm, 4> kDeviceIdFormNames = {{
    {DeviceIdForm::kUuid, "uuid"},
    {DeviceIdForm::kIndex, "index"},
    {DeviceIdForm::kMig, "mig"},
    {DeviceIdForm::kUnknown, "unknown"},
}};
std::string_view DeviceIdFormName(DeviceIdForm form);

struct MappedDeviceId {
  DeviceIdForm form = DeviceIdForm::kUnknown;
  // The physical GPU, as gputopo.io/assigned-gpus names GPUs: its UUID when known, else its
  // index. Empty when the ID does not map to a GPU (see `reason`). A UUID form maps to its UUID
  // even when the topology does not list it (then gpu_index is -1 and `reason` says so).
  std::string gpu;
  int gpu_index = -1;  // the GPU's index in the topology; -1 when not found there
  int replica = -1;    // n of "::<n>"; -1 when there is none
  std::string reason;  // why the ID is not (fully) mapped; empty when it is

  // True when `gpu` names a GPU (a UUID or an index on this node).
  bool mapped() const { return !gpu.empty(); }
};

// Maps one device ID. `topology` is the node's discovered topology: it resolves index forms and
// tells whether a UUID is on this node.
MappedDeviceId MapDeviceId(std::string_view id, const MachineTopology& topology);

}  // namespace gputopo::agent

#endif  // GPUTOPO_SRC_AGENT_DEVICE_IDS_H_
