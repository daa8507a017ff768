// ParallelFor without threads: the caller runs every chunk when no helper starts, and a helper
// task that starts after ParallelFor returned does nothing. (With real threads, under
// ThreadSanitizer: test/src/service/parallel_evaluation_test.cc.)
#include "evaluation/parallel_for.h"

#include <gtest/gtest.h>

#include <vector>

#include "test/support/manual_executor.h"

namespace gputopo::evaluation {
namespace {

TEST(ParallelForTest, TheCallerRunsEveryChunkWhenNoHelperStarts) {
  testing::ManualExecutor executor;
  std::vector<int> runs(1000, 0);
  std::vector<std::pair<size_t, size_t>> ranges;
  ParallelFor({&executor, 3}, runs.size(), 64, [&](int worker, size_t begin, size_t end) {
    EXPECT_EQ(worker, 0);
    EXPECT_LE(end - begin, 64u);
    ranges.emplace_back(begin, end);
    for (size_t i = begin; i < end; ++i) ++runs[i];
  });
  for (int n : runs) ASSERT_EQ(n, 1);
  EXPECT_EQ(ranges.size(), 16u);  // ceil(1000 / 64)
  // The three helper tasks it posted start now, after it returned: nothing is left to claim,
  // and `work` (gone with the call) is not called.
  EXPECT_EQ(executor.RunReady(), 3);
  for (int n : runs) ASSERT_EQ(n, 1);
}

TEST(ParallelForTest, PostsNoHelperForOneChunkOrNoItems) {
  testing::ManualExecutor executor;
  int calls = 0;
  ParallelFor({&executor, 3}, 64, 64, [&](int, size_t begin, size_t end) {
    EXPECT_EQ(begin, 0u);
    EXPECT_EQ(end, 64u);
    ++calls;
  });
  ParallelFor({&executor, 3}, 0, 64, [&](int, size_t, size_t) { ++calls; });
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(executor.RunReady(), 0);
  // Two chunks: one helper is enough.
  ParallelFor({&executor, 3}, 65, 64, [&](int, size_t, size_t) { ++calls; });
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(executor.RunReady(), 1);
}

}  // namespace
}  // namespace gputopo::evaluation
