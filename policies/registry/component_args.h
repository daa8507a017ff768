// Arguments a preset file gives a score component, after the adapter has decoded them.
//
// Thread safety: value types.
#ifndef GPUTOPO_POLICIES_REGISTRY_COMPONENT_ARGS_H_
#define GPUTOPO_POLICIES_REGISTRY_COMPONENT_ARGS_H_

#include <map>
#include <string>
#include <vector>

namespace gputopo::policies {

// One class of pods in a workload mix: `gpus` GPUs of `milli` each (1000 = whole GPUs).
struct WorkloadClass {
  int gpus = 1;
  int milli = 1000;
  double weight = 1.0;  // relative frequency, > 0
  friend bool operator==(const WorkloadClass&, const WorkloadClass&) = default;
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
  std::string normalization = "minmax";  // how node scores become priorities: minmax | none
};

}  // namespace gputopo::policies

#endif  // GPUTOPO_POLICIES_REGISTRY_COMPONENT_ARGS_H_
