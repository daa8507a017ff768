#include "topology/topology_shape.h"

#include <algorithm>
#include <bit>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/connected_components.hpp>
#include <map>

#include "topology/best_set.h"
#include "topology/link_type.h"
#include "topology/shape_interner.h"

namespace gputopo::topology {
namespace {

Status Validate(const MachineTopology& machine) {
  const int n = machine.gpu_count();
  if (n < 1) return InvalidArgument("topology has no GPUs");
  if (n > kMaxGpusPerNode) {
    return InvalidArgument("topology has " + std::to_string(n) + " GPUs; at most " +
                           std::to_string(kMaxGpusPerNode) + " are supported");
  }
  for (int i = 0; i < n; ++i) {
    const GpuInfo& gpu = machine.gpu(i);
    if (gpu.index != i) {
      return InvalidArgument("GPU indices must be 0.." + std::to_string(n - 1) + " in order");
    }
    if (gpu.numa_node < -1 || gpu.numa_node > kMaxNumaNode) {
      return InvalidArgument("GPU " + std::to_string(i) + " has NUMA node " +
                             std::to_string(gpu.numa_node) + "; expected -1 (unknown) or 0.." +
                             std::to_string(kMaxNumaNode));
    }
    if (gpu.memory_mib < 0) {
      return InvalidArgument("GPU " + std::to_string(i) + " has negative memory");
    }
  }
  if (machine.replicas_per_gpu() < 0 || machine.replicas_per_gpu() > kMaxReplicasPerGpu) {
    return InvalidArgument("replicas per GPU must be 1.." + std::to_string(kMaxReplicasPerGpu));
  }
  for (int a = 0; a < n; ++a) {
    for (int b = a + 1; b < n; ++b) {
      if (!(machine.link(a, b) == machine.link(b, a))) {
        return InvalidArgument("link between GPU " + std::to_string(a) + " and GPU " +
                               std::to_string(b) + " is not symmetric");
      }
    }
  }
  return Status::Ok();
}

}  // namespace

Result<std::shared_ptr<const TopologyShape>> TopologyShape::Analyze(
    const MachineTopology& machine) {
  if (Status status = Validate(machine); !status.ok()) return status;
  std::shared_ptr<TopologyShape> shape(new TopologyShape());
  const int n = machine.gpu_count();
  shape->gpu_count_ = n;
  shape->links_.resize(static_cast<size_t>(n) * static_cast<size_t>(n));
  shape->weights_.resize(shape->links_.size(), 0.0);
  for (int a = 0; a < n; ++a) {
    for (int b = 0; b < n; ++b) {
      if (a == b) continue;
      const Link& link = machine.link(a, b);
      shape->links_[shape->Offset(a, b)] = link;
      shape->weights_[shape->Offset(a, b)] = LinkWeight(link);
      shape->links_known_ |= link.type != LinkType::kUnknown;
      shape->has_nvlink_ |= link.IsNvLink();
    }
  }
  std::map<int, GpuMask> numa;
  for (int g = 0; g < n; ++g) {
    const int id = machine.gpu(g).numa_node;
    shape->numa_of_.push_back(id);
    if (id >= 0) numa[id] |= Bit(g);
  }
  for (const auto& [id, mask] : numa) {
    shape->numa_ids_.push_back(id);
    shape->numa_masks_.push_back(mask);
  }
  shape->ComputeIslands();
  shape->TabulateSets();
  shape->ComputeBestWeights();
  shape->symmetry_ = FindShapeSymmetry(*shape);

  shape->fingerprint_ = ShapeFingerprint(machine);
  return std::shared_ptr<const TopologyShape>(std::move(shape));
}

void TopologyShape::ComputeIslands() {
  using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS>;
  Graph graph(static_cast<size_t>(gpu_count_));
  for (int a = 0; a < gpu_count_; ++a) {
    for (int b = a + 1; b < gpu_count_; ++b) {
      if (link(a, b).IsNvLink())
        boost::add_edge(static_cast<size_t>(a), static_cast<size_t>(b), graph);
    }
  }
  std::vector<int> component(static_cast<size_t>(gpu_count_));
  boost::connected_components(graph, component.data());
  // Renumber so that islands are ordered by their lowest GPU (Boost already visits vertices in
  // order, but the contract should not rest on that).
  std::map<int, int> renumber;
  island_of_.assign(static_cast<size_t>(gpu_count_), 0);
  for (int g = 0; g < gpu_count_; ++g) {
    const int raw = component[static_cast<size_t>(g)];
    auto [it, inserted] = renumber.emplace(raw, static_cast<int>(renumber.size()));
    if (inserted) islands_.push_back(0);
    island_of_[static_cast<size_t>(g)] = it->second;
    islands_[static_cast<size_t>(it->second)] |= Bit(g);
  }
}

void TopologyShape::ComputeBestWeights() {
  best_weight_.assign(static_cast<size_t>(gpu_count_) + 1, 0.0);
  const GpuMask all = all_gpus();
  for (int k = 2; k <= gpu_count_; ++k) {
    best_weight_[static_cast<size_t>(k)] = FindBestSetByBandwidth(*this, all, k).weight;
  }
}

GpuMask TopologyShape::numa_gpus(int numa_id) const {
  auto it = std::lower_bound(numa_ids_.begin(), numa_ids_.end(), numa_id);
  if (it == numa_ids_.end() || *it != numa_id) return 0;
  return numa_masks_[static_cast<size_t>(it - numa_ids_.begin())];
}

bool TopologyShape::InOneNuma(GpuMask set) const {
  if (set == 0) return false;
  const int first = numa_of(std::countr_zero(set));
  if (first < 0) return false;
  return (set & ~numa_gpus(first)) == 0;
}

bool TopologyShape::InOneIsland(GpuMask set) const {
  if (set == 0) return false;
  return (set & ~island(island_of(std::countr_zero(set)))) == 0;
}

void TopologyShape::TabulateSets() {
  if (gpu_count_ > kTabulatedGpus) return;
  const size_t sets = size_t{1} << gpu_count_;
  set_weight_.resize(sets);
  most_on_one_numa_.resize(sets);
  for (size_t set = 0; set < sets; ++set) {
    set_weight_[set] = SumPairwiseWeight(set);
    most_on_one_numa_[set] = static_cast<uint8_t>(CountMostOnOneNuma(set));
  }
}

int TopologyShape::CountMostOnOneNuma(GpuMask set) const {
  int most = 0;
  for (GpuMask mask : numa_masks_) most = std::max(most, Count(set & mask));
  return most;
}

double TopologyShape::SumPairwiseWeight(GpuMask set) const {
  double total = 0.0;
  for (GpuMask a = set; a != 0; a &= a - 1) {
    const int ga = std::countr_zero(a);
    for (GpuMask b = a & (a - 1); b != 0; b &= b - 1) total += weight(ga, std::countr_zero(b));
  }
  return total;
}

double TopologyShape::BestPairwiseWeight(int n) const {
  if (n <= 1 || n > gpu_count_) return 0.0;
  return best_weight_[static_cast<size_t>(n)];
}

}  // namespace gputopo::topology
