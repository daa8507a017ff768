// Pod identification: which pod and container kubelet is admitting when it asks the device
// plugin's GetPreferredAllocation, and which replicas steer it onto the GPUs gputopo assigned.
//
// kubelet never says which pod it admits. The candidates are the pods bound to this node; a
// container is the one being admitted when:
//   - its pod was scheduled by a trusted scheduler and carries gputopo.io/assigned-gpus, every
//     entry naming a distinct GPU of this node (a UUID, or an index when UUIDs were unknown);
//   - it is the pod's first container, in kubelet's order (init containers first, then the
//     others, each in spec order), that requests the resource and is not yet allocated
//     (PodResources, or this plugin's own record of Allocate calls);
//   - its request equals allocation_size;
//   - each GPU of its share of the assignment has a free replica among available_deviceIDs, and
//     every must_include_deviceIDs replica is on one of those GPUs.
// A container's share: an init container takes the first `request` GPUs of the assignment (it
// runs alone, before the others); the other containers take consecutive slices in spec order.
// With one container (the common case) that is the whole assignment.
// If several pods qualify, kubelet's own order decides: oldest creation time, then the order in
// which they reached the node (`arrival`: kubelet admits the pods of one creation second in the
// order its watch delivers them, which is the order ours does), then name (then namespace).
// Two that tie on time and name with no arrival to tell them apart are ambiguous: no steering.
// (creationTimestamp has a resolution of one second: a Deployment's burst ties on it.)
//
// The chosen device IDs are one replica per GPU of the share: the must_include replica on that
// GPU if there is one, else its free replica with the lowest index.
//
// Pure functions: no gRPC, no I/O; thread-safe.
#ifndef GPUTOPO_SRC_AGENT_POD_IDENTIFICATION_H_
#define GPUTOPO_SRC_AGENT_POD_IDENTIFICATION_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gputopo/enum_names.h"
#include "gputopo/machine_topology.h"

namespace gputopo::agent {

struct BoundContainer {
  std::string name;
  int64_t request = 0;  // of the resource the plugin serves; 0 when none
  bool init = false;
  friend bool operator==(const BoundContainer&, const BoundContainer&) = default;
};

// A pod bound to this node (spec.nodeName), as the plugin needs it.
struct BoundPod {
  std::string namespace_name;
  std::string name;
  std::string uid;
  std::chrono::system_clock::time_point created;  // metadata.creationTimestamp
  std::string scheduler_name;                     // spec.schedulerName
  std::optional<std::string> assigned_gpus;       // gputopo.io/assigned-gpus, raw
  std::vector<BoundContainer> containers;         // in spec order; init ones may be anywhere
  // When this node's pod watch first saw the pod (1, 2, ...: kubelet's watch sees pods in the
  // same order); 0 when unknown (a plain list).
  uint64_t arrival = 0;
  std::string Key() const { return namespace_name + "/" + name; }
  friend bool operator==(const BoundPod&, const BoundPod&) = default;
};

// A container that already holds devices of the resource.
struct AllocatedContainer {
  std::string namespace_name;
  std::string name;
  std::string uid;  // empty: any pod of that name (PodResources does not report uids)
  std::string container;
  friend bool operator==(const AllocatedContainer&, const AllocatedContainer&) = default;
};

// One ContainerPreferredAllocationRequest.
struct PreferredRequest {
  std::vector<std::string> available;     // available_deviceIDs
  std::vector<std::string> must_include;  // must_include_deviceIDs
  int allocation_size = 0;
};

enum class IdentificationVerdict : uint8_t {
  kSteered,            // device_ids are the assigned GPUs' replicas
  kNoneQualify,        // no pod's next container fits the request
  kAmbiguous,          // several pods qualify and kubelet's order does not separate them
  kNotEnoughReplicas,  // a pod fits, but an assigned GPU has no free replica
};

// For people (reasons, logs), and for gputopo_agent_admissions_total's result label.
inline constexpr EnumNames<IdentificationVerdict, 4> kIdentificationVerdictNames = {{
    {IdentificationVerdict::kSteered, "steered"},
    {IdentificationVerdict::kNoneQualify, "no pod qualifies"},
    {IdentificationVerdict::kAmbiguous, "ambiguous"},
    {IdentificationVerdict::kNotEnoughReplicas, "not enough replicas"},
}};
inline constexpr EnumNames<IdentificationVerdict, 4> kAdmissionResultLabels = {{
    {IdentificationVerdict::kSteered, "steered"},
    {IdentificationVerdict::kNoneQualify, "no_pod_qualifies"},
    {IdentificationVerdict::kAmbiguous, "ambiguous"},
    {IdentificationVerdict::kNotEnoughReplicas, "not_enough_replicas"},
}};
std::string_view IdentificationVerdictName(IdentificationVerdict verdict);

struct Identification {
  IdentificationVerdict verdict = IdentificationVerdict::kNoneQualify;
  // Steered: the pod and container, the GPUs (indices in the topology) and the device IDs.
  std::string namespace_name;
  std::string pod_name;
  std::string pod_uid;
  std::string container;
  std::vector<int> gpus;
  std::vector<std::string> device_ids;
  // Not steered: why, in one line (the pods considered and why each did not qualify, cut).
  std::string reason;
  bool steered() const { return verdict == IdentificationVerdict::kSteered; }
};

// The GPUs (indices in `topology`) an assigned-gpus value names, in its order. Error text when
// an entry names no GPU of this node, or a GPU twice.
struct AssignedGpus {
  std::vector<int> gpus;
  std::string error;  // empty when every entry maps
};
AssignedGpus ParseAssignedGpus(std::string_view value, const MachineTopology& topology);

Identification IdentifyAdmission(const std::vector<BoundPod>& pods,
                                 const std::vector<AllocatedContainer>& allocated,
                                 const PreferredRequest& request, const MachineTopology& topology,
                                 const std::vector<std::string>& trusted_schedulers);

}  // namespace gputopo::agent

#endif  // GPUTOPO_SRC_AGENT_POD_IDENTIFICATION_H_
