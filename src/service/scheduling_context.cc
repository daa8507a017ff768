#include "src/service/scheduling_context.h"

#include <set>

namespace gputopo::service {

Result<std::shared_ptr<const policies::Preset>> SchedulingContext::PresetFor(
    const policies::PodRequirements& pod) const {
  const std::string& name = pod.policy.empty() ? default_preset : pod.policy;
  std::shared_ptr<const policies::Preset> preset = presets.Find(name);
  if (preset == nullptr) {
    std::string known;
    for (const std::string& n : presets.Names()) known += (known.empty() ? "" : ", ") + n;
    return NotFound("unknown policy preset '" + name + "' (known: " + known + ")");
  }
  return preset;
}

std::string DescribeRequirements(const policies::PodRequirements& pod) {
  using policies::ConstraintModeName;
  std::string out = std::to_string(pod.gpus) + (pod.gpus == 1 ? " GPU" : " GPUs");
  if (pod.gpu_milli) out += " of " + std::to_string(*pod.gpu_milli) + " milli";
  if (pod.exclusive) out += ", exclusive";
  if (pod.gpus > 1) {
    out += ", locality " + std::string(policies::LocalityName(pod.locality)) + " (" +
           std::string(ConstraintModeName(pod.locality_mode)) + ")";
  }
  out += ", spread " + std::string(policies::SpreadModeName(pod.spread)) + ", group " + pod.group;
  if (!pod.policy.empty()) out += ", policy " + pod.policy;
  return out;
}

std::string DescribePlacement(const policies::NodeState& node, policies::GpuMask gpus) {
  if (!node.has_topology() || gpus == 0) return "";
  const topology::TopologyShape& shape = node.shape();
  std::string list;
  std::set<int> islands;
  std::set<int> numa;
  bool numa_unknown = false;
  for (int g : topology::ToIndices(gpus)) {
    list += (list.empty() ? "" : ",") + std::to_string(g);
    islands.insert(shape.island_of(g));
    if (shape.numa_of(g) < 0)
      numa_unknown = true;
    else
      numa.insert(shape.numa_of(g));
  }
  auto join = [](const std::set<int>& values) {
    std::string s;
    for (int v : values) s += (s.empty() ? "" : ",") + std::to_string(v);
    return s;
  };
  std::string out = (topology::Count(gpus) == 1 ? "GPU " : "GPUs ") + list + " (";
  out += shape.has_nvlink()
             ? (islands.size() == 1 ? "NVLink island " : "NVLink islands ") + join(islands)
             : std::string("no NVLink");
  out += numa_unknown ? ", NUMA unknown"
                      : (numa.size() == 1 ? ", NUMA node " : ", NUMA nodes ") + join(numa);
  out += ")";
  return out;
}

}  // namespace gputopo::service
