// The replica count of the resource the agent serves, from NVIDIA k8s-device-plugin's own config
// file format, so operators keep their ConfigMap:
//
//   version: v1
//   sharing:
//     timeSlicing:
//       renameByDefault: false            # optional: advertise "<name>.shared"
//       failRequestsGreaterThanOne: false # optional: refuse requests of more than one replica
//       resources:
//       - name: nvidia.com/gpu            # "gpu" means "nvidia.com/gpu", as in NVIDIA's plugin
//         replicas: 4
//         rename: nvidia.com/gpu.shared   # optional
//
// Other keys (`flags`, ...) are ignored, as the agent has no use for them. What the agent cannot
// honour is an error, not silently dropped: `sharing.mps`, a resource with `devices` other than
// "all", a resource listed twice. No entry for the resource means no sharing (1 replica).
//
// Pure functions (LoadTimeSlicingConfig reads a file); thread-safe.
#ifndef GPUTOPO_SRC_AGENT_TIME_SLICING_CONFIG_H_
#define GPUTOPO_SRC_AGENT_TIME_SLICING_CONFIG_H_

#include <string>
#include <string_view>

#include "gputopo/status.h"

namespace gputopo::agent {

struct SharingConfig {
  int replicas = 1;                 // per physical GPU, 1..kMaxReplicasPerGpu
  std::string advertised_resource;  // the name to register (renamed or the resource itself)
  bool fail_requests_greater_than_one = false;
  friend bool operator==(const SharingConfig&, const SharingConfig&) = default;
};

// The sharing of `resource_name` the config's text states. InvalidArgument, with the file's
// problem in words ("time-slicing config: ..."), when it is not YAML, not version v1, or a field
// has the wrong type or range.
Result<SharingConfig> ParseTimeSlicingConfig(std::string_view yaml, std::string_view resource_name);

// ParseTimeSlicingConfig on the file at `path`; NotFound when it cannot be read. The message
// names the file.
Result<SharingConfig> LoadTimeSlicingConfig(const std::string& path,
                                            std::string_view resource_name);

}  // namespace gputopo::agent

#endif  // GPUTOPO_SRC_AGENT_TIME_SLICING_CONFIG_H_
