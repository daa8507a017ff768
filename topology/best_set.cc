#include "topology/best_set.h"

#include <array>
#include <bit>

#include "topology/combinations.h"

namespace gputopo::topology {
namespace {

bool Better(const BestSet& candidate, const BestSet& incumbent) {
  if (incumbent.gpus == 0) return true;
  if (candidate.weight != incumbent.weight) return candidate.weight > incumbent.weight;
  return LexicographicallySmaller(candidate.gpus, incumbent.gpus);
}

}  // namespace

BestSet GrowGreedily(const TopologyShape& shape, GpuMask eligible, int seed, int n) {
  BestSet result{Bit(seed), 0.0};
  // gain[g]: weight GPU g would add to the current set.
  std::array<double, 64> gain{};
  for (GpuMask rest = eligible; rest != 0; rest &= rest - 1) {
    const int g = std::countr_zero(rest);
    gain[static_cast<size_t>(g)] = shape.weight(g, seed);
  }
  while (Count(result.gpus) < n) {
    int best_gpu = -1;
    double best_gain = -1.0;
    for (GpuMask rest = eligible & ~result.gpus; rest != 0; rest &= rest - 1) {
      const int g = std::countr_zero(rest);
      if (gain[static_cast<size_t>(g)] > best_gain) {
        best_gain = gain[static_cast<size_t>(g)];
        best_gpu = g;
      }
    }
    if (best_gpu < 0) return BestSet{};
    result.gpus |= Bit(best_gpu);
    result.weight += best_gain;
    for (GpuMask rest = eligible & ~result.gpus; rest != 0; rest &= rest - 1) {
      const int g = std::countr_zero(rest);
      gain[static_cast<size_t>(g)] += shape.weight(g, best_gpu);
    }
  }
  return result;
}

BestSet FindBestSetByBandwidth(const TopologyShape& shape, GpuMask eligible, int n) {
  eligible &= shape.all_gpus();
  if (n <= 0 || Count(eligible) < n) return BestSet{};
  BestSet best;
  if (Binomial(Count(eligible), n) <= kExactSearchLimit) {
    ForEachCombination(eligible, n, [&](GpuMask subset) {
      const BestSet candidate{subset, shape.PairwiseWeight(subset)};
      if (Better(candidate, best)) best = candidate;
      return true;
    });
    return best;
  }
  for (GpuMask seeds = eligible; seeds != 0; seeds &= seeds - 1) {
    const BestSet candidate = GrowGreedily(shape, eligible, std::countr_zero(seeds), n);
    if (candidate.gpus != 0 && Better(candidate, best)) best = candidate;
  }
  return best;
}

}  // namespace gputopo::topology
