// Arguments a preset file gives a score component, after the adapter has decoded them.
//
// Thread safety: value types.
#ifndef GPUTOPO_POLICIES_REGISTRY_COMPONENT_ARGS_H_
#define GPUTOPO_POLICIES_REGISTRY_COMPONENT_ARGS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace gputopo::policies {

// One class of pods in a workload mix: `gpus` GPUs of `milli` each (1000 = whole GPUs; 0, in a
// learned mix only: the node's default share, 1000 / replicas), with `cpu_milli` and
// `memory_bytes` of the node besides (0: none asked).
struct WorkloadClass {
  int gpus = 1;
  int milli = 1000;
  double weight = 1.0;  // relative frequency, > 0
  int64_t cpu_milli = 0;
  int64_t memory_bytes = 0;
  friend bool operator==(const WorkloadClass&, const WorkloadClass&) = default;
};

// The workload mix learned from the pods the cluster has seen (cluster/workload_learner.h),
// which fragmentation measures against unless a preset pins a workload. `version` tells mixes
// apart (0: never published).
struct ObservedWorkload {
  uint64_t version = 0;
  std::vector<WorkloadClass> classes;  // heaviest first; weights sum to 1
};

struct ComponentArgs {
  std::map<std::string, double> numbers;  // named numeric arguments
  std::vector<WorkloadClass> workload;    // for components that model future pods
};

struct ComponentSpec {
  std::string name;
  double weight = 1.0;
  ComponentArgs args;
};

struct PresetSpec {
  std::string name;
  std::string description;
  std::vector<ComponentSpec> components;
  std::string normalization = "minmax";  // how node scores become priorities: minmax | rank | none
  // "sharingPodSteps": order pods that take a share of one GPU by FGD's rule, the fragmentation
  // change in this many steps, then smaller machines, then a fixed node order (candidate_order.h);
  // 0: off.
  int sharing_pod_steps = 0;
};

}  // namespace gputopo::policies

#endif  // GPUTOPO_POLICIES_REGISTRY_COMPONENT_ARGS_H_
