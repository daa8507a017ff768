// PodRequirements: what a pod asks of its GPUs, from its request and gputopo.io/* annotations.
//
// | annotation               | values                                  | default            |
// |--------------------------|-----------------------------------------|--------------------|
// | gputopo.io/group         | any name (namespaced: "<ns>/<name>")    | owning workload    |
// | gputopo.io/spread        | required, preferred, none               | preferred          |
// | gputopo.io/locality      | nvlink, numa, none                      | nvlink for N > 1   |
// | gputopo.io/locality-mode | required, preferred                     | preferred          |
// | gputopo.io/exclusive     | true/false (Go strconv.ParseBool forms) | false              |
// | gputopo.io/gpu-milli     | 1..1000                                 | 1000 / replicas    |
// | gputopo.io/policy        | a preset name                           | the server's       |
//
// The default group is the owning workload: a ReplicaSet owner with its pod-template-hash
// suffix stripped names the Deployment; a StatefulSet, Job or other controller names itself;
// a pod with no owner is a group of its own.
//
// Thread safety: pure functions and values.
#ifndef GPUTOPO_POLICIES_REQUIREMENTS_POD_REQUIREMENTS_H_
#define GPUTOPO_POLICIES_REQUIREMENTS_POD_REQUIREMENTS_H_

#include <optional>
#include <string>
#include <string_view>

#include "gputopo/enum_names.h"
#include "gputopo/pod_info.h"
#include "gputopo/status.h"

namespace gputopo::policies {

// The most GPU replicas one pod may request before the request is called absurd.
inline constexpr int64_t kMaxGpuRequest = 4096;
inline constexpr int kWholeGpuMilli = 1000;

enum class SpreadMode : uint8_t { kNone, kPreferred, kRequired };
enum class Locality : uint8_t { kNone, kNvLink, kNuma };
enum class ConstraintMode : uint8_t { kPreferred, kRequired };

// The annotation values, one table per enum (enum_names.h).
inline constexpr EnumNames<SpreadMode, 3> kSpreadModeNames = {{
    {SpreadMode::kRequired, "required"},
    {SpreadMode::kPreferred, "preferred"},
    {SpreadMode::kNone, "none"},
}};
inline constexpr EnumNames<Locality, 3> kLocalityNames = {{
    {Locality::kNvLink, "nvlink"},
    {Locality::kNuma, "numa"},
    {Locality::kNone, "none"},
}};
inline constexpr EnumNames<ConstraintMode, 2> kConstraintModeNames = {{
    {ConstraintMode::kRequired, "required"},
    {ConstraintMode::kPreferred, "preferred"},
}};
inline std::string_view SpreadModeName(SpreadMode mode) { return NameOf(kSpreadModeNames, mode); }
inline std::string_view LocalityName(Locality locality) { return NameOf(kLocalityNames, locality); }
inline std::string_view ConstraintModeName(ConstraintMode mode) {
  return NameOf(kConstraintModeNames, mode);
}

struct PodRequirements {
  int gpus = 0;                  // nvidia.com/gpu replicas requested; N > 1 means N distinct GPUs
  std::optional<int> gpu_milli;  // declared share of each GPU; nullopt: 1000 / replicas
  bool exclusive = false;        // no other pod may share these GPUs, before or after
  Locality locality = Locality::kNone;
  ConstraintMode locality_mode = ConstraintMode::kPreferred;
  SpreadMode spread = SpreadMode::kPreferred;
  std::string group;         // spread group id, namespaced
  std::string group_source;  // how the group was chosen, for people
  std::string policy;        // preset name; empty: the server's default
  // The pod's cpu (millicores) and memory (bytes) requests: what it takes of the node besides
  // GPUs, which decides the GPU capacity it leaves usable (fragmentation's host dimension).
  int64_t cpu_milli = 0;
  int64_t memory_bytes = 0;

  // The pod's share of each of its GPUs on a node whose GPUs have `replicas` slots.
  int ShareMilli(int replicas) const;

  friend bool operator==(const PodRequirements&, const PodRequirements&) = default;
};

// Error (message names the annotation and the allowed values) when an annotation is invalid or
// the request is absurd: outside 0..kMaxGpuRequest, or kGpuRequestOverflow (a sum that did not
// fit in int64_t).
Result<PodRequirements> RequirementsOf(const PodInfo& pod);

// The default spread group of a pod and how it was derived (annotation ignored).
std::pair<std::string, std::string> DefaultGroupOf(const PodInfo& pod);

}  // namespace gputopo::policies

#endif  // GPUTOPO_POLICIES_REQUIREMENTS_POD_REQUIREMENTS_H_
