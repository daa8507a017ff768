// The best set of n GPUs by total pairwise bandwidth.
//
// Exact (every combination is tried) while the number of combinations is at most
// kExactSearchLimit; above that, a greedy search grown from every seed GPU, which is exact on
// the symmetric machines seen in practice and never worse than any single greedy growth.
//
// Thread safety: pure functions.
#ifndef GPUTOPO_TOPOLOGY_BEST_SET_H_
#define GPUTOPO_TOPOLOGY_BEST_SET_H_

#include <cstdint>

#include "topology/gpu_mask.h"
#include "topology/topology_shape.h"

namespace gputopo::topology {

inline constexpr uint64_t kExactSearchLimit = 20000;

struct BestSet {
  GpuMask gpus = 0;     // 0 when fewer than n GPUs are eligible
  double weight = 0.0;  // PairwiseWeight(gpus)
};

// Among subsets of `eligible` with `n` GPUs, the one with the largest pairwise weight; ties go
// to the lexicographically smallest index list.
BestSet FindBestSetByBandwidth(const TopologyShape& shape, GpuMask eligible, int n);

// Greedy growth from `seed`: repeatedly adds the eligible GPU that adds the most weight (lowest
// index on ties) until the set has n GPUs. Precondition: seed is in eligible.
BestSet GrowGreedily(const TopologyShape& shape, GpuMask eligible, int seed, int n);

}  // namespace gputopo::topology

#endif  // GPUTOPO_TOPOLOGY_BEST_SET_H_
