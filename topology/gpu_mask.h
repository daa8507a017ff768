// GpuMask: a set of GPU indices on one node, as a 64-bit mask (bit i = GPU i).
//
// Thread safety: values.
#ifndef GPUTOPO_TOPOLOGY_GPU_MASK_H_
#define GPUTOPO_TOPOLOGY_GPU_MASK_H_

#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace gputopo::topology {

using GpuMask = uint64_t;

inline constexpr GpuMask Bit(int gpu) { return GpuMask{1} << gpu; }
inline constexpr bool Has(GpuMask mask, int gpu) { return (mask & Bit(gpu)) != 0; }
// The number of GPUs in `mask`. Not std::popcount: for baseline x86-64 (no POPCNT instruction)
// GCC makes that a call into libgcc, about 5% of a multi-GPU pod's search; this inlines to a dozen
// arithmetic instructions (bench/HISTORY.md, 2026-12-07).
inline constexpr int Count(GpuMask mask) {
  mask -= (mask >> 1) & 0x5555555555555555U;
  mask = (mask & 0x3333333333333333U) + ((mask >> 2) & 0x3333333333333333U);
  mask = (mask + (mask >> 4)) & 0x0f0f0f0f0f0f0f0fU;
  return static_cast<int>((mask * 0x0101010101010101U) >> 56);
}
// Mask of GPUs 0..count-1.
inline constexpr GpuMask FirstN(int count) {
  return count >= 64 ? ~GpuMask{0} : (GpuMask{1} << count) - 1;
}
// Indices of the set bits, ascending.
inline std::vector<int> ToIndices(GpuMask mask) {
  std::vector<int> out;
  out.reserve(static_cast<size_t>(Count(mask)));
  while (mask != 0) {
    out.push_back(std::countr_zero(mask));
    mask &= mask - 1;
  }
  return out;
}
// True when `a` lists lower GPU indices first (lexicographic on ascending index lists): the
// deterministic tie-break between equally good sets.
inline bool LexicographicallySmaller(GpuMask a, GpuMask b) {
  while (a != 0 && b != 0) {
    const int ia = std::countr_zero(a);
    const int ib = std::countr_zero(b);
    if (ia != ib) return ia < ib;
    a &= a - 1;
    b &= b - 1;
  }
  return false;
}
inline GpuMask FromIndices(const std::vector<int>& indices) {
  GpuMask mask = 0;
  for (int i : indices) mask |= Bit(i);
  return mask;
}

}  // namespace gputopo::topology

#endif  // GPUTOPO_TOPOLOGY_GPU_MASK_H_
