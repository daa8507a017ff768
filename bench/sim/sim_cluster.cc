#include "bench/sim/sim_cluster.h"

#include <algorithm>
#include <set>

namespace gputopo::bench {

SimCluster::SimCluster(std::vector<SimNode> nodes) : nodes_(std::move(nodes)) {
  for (const SimNode& node : nodes_) {
    const auto gpus = static_cast<size_t>(node.shape->gpu_count());
    NodeState state;
    state.milli.assign(gpus, 0);
    state.pods.assign(gpus, 0);
    state.pod_ids.assign(gpus, {});
    states_.push_back(std::move(state));
    capacity_milli_ += static_cast<int64_t>(gpus) * 1000;
  }
}

const std::vector<int>& SimCluster::gpu_groups(int n, int g) const {
  return state(n).pod_ids[static_cast<size_t>(g)];
}

int SimCluster::slots_used(int n) const {
  int used = 0;
  for (int pods : state(n).pods) used += pods;
  return used;
}

bool SimCluster::HostFits(int n, const SimPod& pod) const {
  const SimNode& node = nodes_[static_cast<size_t>(n)];
  const NodeState& s = state(n);
  if (s.cpu + pod.cpu_milli > node.cpu_milli || s.memory + pod.memory_mib > node.memory_mib) {
    return false;
  }
  if (pod.gpus > node.shape->gpu_count()) return false;
  if (!pod.gpu_spec.empty() &&
      std::find(pod.gpu_spec.begin(), pod.gpu_spec.end(), node.model) == pod.gpu_spec.end()) {
    return false;
  }
  return true;
}

std::vector<int> SimCluster::GpusWithRoom(int n, const SimPod& pod) const {
  const int milli = ShareOn(n, pod);
  std::vector<int> out;
  const NodeState& s = state(n);
  for (int g = 0; g < gpu_count(n); ++g) {
    const auto i = static_cast<size_t>(g);
    if (s.pods[i] < node(n).replicas && s.milli[i] + milli <= 1000) out.push_back(g);
  }
  return out;
}

bool SimCluster::GpusFit(int n, const SimPod& pod, const std::vector<int>& gpus) const {
  if (static_cast<int>(gpus.size()) != pod.gpus) return false;
  std::set<int> distinct(gpus.begin(), gpus.end());
  if (static_cast<int>(distinct.size()) != pod.gpus) return false;
  const NodeState& s = state(n);
  const int milli = ShareOn(n, pod);
  for (int g : gpus) {
    if (g < 0 || g >= gpu_count(n)) return false;
    const auto i = static_cast<size_t>(g);
    if (s.pods[i] >= node(n).replicas || s.milli[i] + milli > 1000) return false;
  }
  return true;
}

void SimCluster::Apply(const SimPod& pod, const Placement& placement) {
  NodeState& s = states_[static_cast<size_t>(placement.node)];
  const int milli = ShareOn(placement.node, pod);
  s.cpu += pod.cpu_milli;
  s.memory += pod.memory_mib;
  for (int g : placement.gpus) {
    const auto i = static_cast<size_t>(g);
    s.milli[i] += milli;
    s.pods[i] += 1;
    s.pod_ids[i].push_back(pod.id);
    allocated_milli_ += milli;
  }
  placed_[pod.id] = {pod, placement, milli};
}

Placement SimCluster::Remove(int pod_id) {
  auto it = placed_.find(pod_id);
  if (it == placed_.end()) return {};
  const auto [pod, placement, milli] = it->second;
  placed_.erase(it);
  NodeState& s = states_[static_cast<size_t>(placement.node)];
  s.cpu -= pod.cpu_milli;
  s.memory -= pod.memory_mib;
  for (int g : placement.gpus) {
    const auto i = static_cast<size_t>(g);
    s.milli[i] -= milli;
    s.pods[i] -= 1;
    std::erase(s.pod_ids[i], pod.id);
    allocated_milli_ -= milli;
  }
  return placement;
}

std::optional<Placement> SimCluster::PlacementOf(int pod_id) const {
  auto it = placed_.find(pod_id);
  if (it == placed_.end()) return std::nullopt;
  return it->second.placement;
}

const SimPod* SimCluster::PodOf(int pod_id) const {
  auto it = placed_.find(pod_id);
  return it == placed_.end() ? nullptr : &it->second.pod;
}

double FgdNodeFragment(const WorkloadMix& mix, const std::string& model, int replicas,
                       const std::vector<int>& milli_used, const std::vector<int>& pods,
                       int64_t cpu_free) {
  int free_total = 0;
  for (int used : milli_used) free_total += 1000 - used;
  if (free_total == 0) return 0.0;
  double total = 0.0;
  for (const WorkloadMix::Class& c : mix.classes) {
    const bool stranded = c.gpus == 0 || cpu_free < c.cpu_milli ||
                          (!c.gpu_spec.empty() && std::find(c.gpu_spec.begin(), c.gpu_spec.end(),
                                                            model) == c.gpu_spec.end());
    if (stranded) {
      total += c.weight * free_total;
      continue;
    }
    int usable = 0;
    int unusable = 0;
    for (size_t g = 0; g < milli_used.size(); ++g) {
      const int free = 1000 - milli_used[g];
      if (pods[g] < replicas && free >= c.milli) {
        ++usable;
      } else {
        unusable += free;
      }
    }
    total += c.weight * (usable >= c.gpus ? unusable : free_total);
  }
  return total;
}

double SimCluster::NodeFragment(int n, const WorkloadMix& mix) const {
  const NodeState& s = state(n);
  return FgdNodeFragment(mix, node(n).model, node(n).replicas, s.milli, s.pods,
                         node(n).cpu_milli - s.cpu);
}

double SimCluster::FragmentedMilli(const WorkloadMix& mix) const {
  double total = 0.0;
  for (int n = 0; n < node_count(); ++n) total += NodeFragment(n, mix);
  return total;
}

}  // namespace gputopo::bench
