// TopologyShape: the analysed interconnect of one machine type.
//
// Built once from a MachineTopology; immutable afterwards. Holds what placement needs and
// nothing about GPU identities (UUIDs, models), so that thousands of nodes of one machine type
// share one shape (see ShapeInterner):
// - the link and bandwidth weight of every GPU pair;
// - NVLink islands: connected components of the graph whose edges are NVLink links
//   (computed with Boost.Graph). An island may span NUMA nodes;
// - NUMA nodes and the GPUs attached to each. Islands and NUMA nodes are separate layers;
// - the best total pairwise bandwidth any n GPUs of the machine can have, for every n.
//
// Thread safety: immutable after Analyze(); safe to share across threads.
#ifndef GPUTOPO_TOPOLOGY_TOPOLOGY_SHAPE_H_
#define GPUTOPO_TOPOLOGY_TOPOLOGY_SHAPE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gputopo/machine_topology.h"
#include "gputopo/status.h"
#include "topology/gpu_mask.h"
#include "topology/shape_symmetry.h"

namespace gputopo::topology {

class TopologyShape {
 public:
  // Validates `machine` (GPU count 1..kMaxGpusPerNode, NUMA ids, replicas) and analyses it.
  static Result<std::shared_ptr<const TopologyShape>> Analyze(const MachineTopology& machine);

  int gpu_count() const { return gpu_count_; }
  GpuMask all_gpus() const { return FirstN(gpu_count_); }

  const Link& link(int a, int b) const { return links_[Offset(a, b)]; }
  // Relative bandwidth of a pair (link_type.h); 0 when unknown or a == b.
  double weight(int a, int b) const { return weights_[Offset(a, b)]; }

  // False when no link at all is known (the fallback topology).
  bool links_known() const { return links_known_; }
  bool has_nvlink() const { return has_nvlink_; }

  // NVLink islands, numbered 0.. in order of their lowest GPU. A GPU without NVLink is an
  // island of its own.
  int island_count() const { return static_cast<int>(islands_.size()); }
  int island_of(int gpu) const { return island_of_[static_cast<size_t>(gpu)]; }
  GpuMask island(int id) const { return islands_[static_cast<size_t>(id)]; }

  // NUMA node of a GPU, -1 when unknown.
  int numa_of(int gpu) const { return numa_of_[static_cast<size_t>(gpu)]; }
  // Known NUMA node ids, ascending, and the GPUs on each.
  const std::vector<int>& numa_ids() const { return numa_ids_; }
  GpuMask numa_gpus(int numa_id) const;
  // True when every GPU of `set` is on one known NUMA node.
  bool InOneNuma(GpuMask set) const;
  // True when every GPU of `set` is in one NVLink island (a single GPU always is).
  bool InOneIsland(GpuMask set) const;

  // The most GPUs of `set` on one known NUMA node (0 when none is known).
  int MostOnOneNuma(GpuMask set) const {
    if (set < most_on_one_numa_.size()) return most_on_one_numa_[set];
    return CountMostOnOneNuma(set);
  }

  // Sum of weight() over all pairs of `set`.
  double PairwiseWeight(GpuMask set) const {
    if (set < set_weight_.size()) return set_weight_[set];
    return SumPairwiseWeight(set);
  }
  // The largest PairwiseWeight() of any `n` GPUs of this machine (all free). 0 for n <= 1.
  double BestPairwiseWeight(int n) const;

  // The relabelings of GPUs that keep this topology (shape_symmetry.h).
  const ShapeSymmetry& symmetry() const { return symmetry_; }

  // Canonical text of links and NUMA nodes: equal fingerprints mean equal shapes.
  const std::string& fingerprint() const { return fingerprint_; }

 private:
  TopologyShape() = default;
  size_t Offset(int a, int b) const {
    return static_cast<size_t>(a) * static_cast<size_t>(gpu_count_) + static_cast<size_t>(b);
  }
  void ComputeIslands();
  void ComputeBestWeights();
  // Fills set_weight_ and most_on_one_numa_ on machines of at most kTabulatedGpus GPUs.
  void TabulateSets();
  double SumPairwiseWeight(GpuMask set) const;
  int CountMostOnOneNuma(GpuMask set) const;
  // A placement search asks about the same sets on every node of a machine type: on machines of
  // up to this many GPUs (4096 sets, 36 KiB) each set's answer is kept, indexed by its mask.
  static constexpr int kTabulatedGpus = 12;

  int gpu_count_ = 0;
  std::vector<Link> links_;
  std::vector<double> weights_;
  bool links_known_ = false;
  bool has_nvlink_ = false;
  std::vector<int> island_of_;
  std::vector<GpuMask> islands_;
  std::vector<int> numa_of_;
  std::vector<int> numa_ids_;
  std::vector<GpuMask> numa_masks_;        // parallel to numa_ids_
  std::vector<double> best_weight_;        // index n = 0..gpu_count
  std::vector<double> set_weight_;         // [set]: SumPairwiseWeight(set); empty past 12 GPUs
  std::vector<uint8_t> most_on_one_numa_;  // [set]: CountMostOnOneNuma(set); likewise
  std::string fingerprint_;
  ShapeSymmetry symmetry_;
};

}  // namespace gputopo::topology

#endif  // GPUTOPO_TOPOLOGY_TOPOLOGY_SHAPE_H_
