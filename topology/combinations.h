// Enumerating the n-element subsets of a GPU mask, and counting them.
//
// Thread safety: pure functions.
#ifndef GPUTOPO_TOPOLOGY_COMBINATIONS_H_
#define GPUTOPO_TOPOLOGY_COMBINATIONS_H_

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>

#include "topology/gpu_mask.h"

namespace gputopo::topology {

// C(m, n), saturating at UINT64_MAX.
uint64_t Binomial(int m, int n);

// Calls visit(subset) for every subset of `pool` with exactly `n` GPUs, in increasing order of
// the subset's compressed bit pattern (so {0,1} before {0,2} before {1,2}). Stops early when
// visit returns false. Cost: Binomial(Count(pool), n) calls.
template <typename Visit>
void ForEachCombination(GpuMask pool, int n, Visit&& visit) {
  const int m = Count(pool);
  if (n < 0 || n > m) return;
  if (n == 0) {
    visit(GpuMask{0});
    return;
  }
  std::array<int, 64> index_of{};  // compressed position -> GPU index
  int k = 0;
  for (GpuMask rest = pool; rest != 0; rest &= rest - 1)
    index_of[static_cast<size_t>(k++)] = std::countr_zero(rest);
  // Gosper's hack over m-bit patterns with n bits set.
  uint64_t pattern = (n == 64) ? ~uint64_t{0} : (uint64_t{1} << n) - 1;
  const uint64_t limit_bit = (m == 64) ? 0 : (uint64_t{1} << m);
  while (true) {
    GpuMask subset = 0;
    for (uint64_t bits = pattern; bits != 0; bits &= bits - 1) {
      subset |= Bit(index_of[static_cast<size_t>(std::countr_zero(bits))]);
    }
    if (!visit(subset)) return;
    const uint64_t lowest = pattern & (~pattern + 1);
    const uint64_t ripple = pattern + lowest;
    if (ripple == 0) return;  // ran past 64 bits
    const uint64_t ones = ((ripple ^ pattern) >> 2) / lowest;
    pattern = ripple | ones;
    if (limit_bit != 0 && pattern >= limit_bit) return;
  }
}

}  // namespace gputopo::topology

#endif  // GPUTOPO_TOPOLOGY_COMBINATIONS_H_
