#include "topology/gpu_mask.h"

#include <gtest/gtest.h>

#include <bit>
#include <random>

namespace gputopo::topology {
namespace {

// Count is hand-written (see gpu_mask.h); the standard library's popcount is its reference.
TEST(GpuMaskTest, CountAgreesWithThePopulationCount) {
  static_assert(Count(0) == 0 && Count(~GpuMask{0}) == 64 && Count(Bit(63)) == 1);
  for (int gpu = 0; gpu < 64; ++gpu) {
    EXPECT_EQ(Count(Bit(gpu)), 1) << gpu;
    EXPECT_EQ(Count(FirstN(gpu)), gpu) << gpu;
    EXPECT_EQ(Count(~Bit(gpu)), 63) << gpu;
  }
  std::mt19937_64 random(7);
  for (int i = 0; i < 10000; ++i) {
    const GpuMask mask = random() & random();  // about 16 bits set
    ASSERT_EQ(Count(mask), std::popcount(mask)) << mask;
  }
  for (GpuMask mask = 0; mask < 4096; ++mask) ASSERT_EQ(Count(mask), std::popcount(mask)) << mask;
}

}  // namespace
}  // namespace gputopo::topology
