// Tests of WorkloadLearner: the decayed histogram of GPU pod classes that fragmentation measures
// against when a preset pins no workload.
#include "cluster/workload_learner.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace gputopo::cluster {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

WorkloadLearnerOptions Every(uint64_t check_every) {
  WorkloadLearnerOptions options;
  options.min_check_every = check_every;
  options.max_check_every = check_every;
  return options;
}

double WeightOf(const policies::ObservedWorkload& mix, int gpus, int milli, int64_t cpu) {
  for (const policies::WorkloadClass& c : mix.classes) {
    if (c.gpus == gpus && c.milli == milli && c.cpu_milli == cpu) return c.weight;
  }
  return 0.0;
}

TEST(WorkloadLearnerTest, PublishesTheObservedFrequenciesAtTheFirstCheck) {
  WorkloadLearnerOptions options = Every(4);
  options.half_life_pods = 1e12;  // no decay: plain frequencies
  WorkloadLearner learner(options);
  EXPECT_FALSE(learner.Observe(1, 500, 4000, 8 * kGiB));
  EXPECT_FALSE(learner.Observe(1, 500, 4000, 8 * kGiB));
  EXPECT_FALSE(learner.Observe(1, 500, 4000, 16 * kGiB));
  EXPECT_EQ(learner.Published(), nullptr);
  EXPECT_TRUE(learner.Observe(4, 1000, 32000, 64 * kGiB));
  ASSERT_NE(learner.Published(), nullptr);
  const policies::ObservedWorkload& mix = *learner.Published();
  EXPECT_EQ(mix.version, 1u);
  ASSERT_EQ(mix.classes.size(), 2u);
  // Heaviest first; memory is the class's mean, not part of its key.
  EXPECT_EQ(mix.classes[0].gpus, 1);
  EXPECT_NEAR(mix.classes[0].weight, 0.75, 1e-9);
  EXPECT_NEAR(static_cast<double>(mix.classes[0].memory_bytes), 32.0 * kGiB / 3.0, 1.0);
  EXPECT_NEAR(WeightOf(mix, 4, 1000, 32000), 0.25, 1e-9);
  EXPECT_EQ(mix.classes[1].memory_bytes, 64 * kGiB);
}

TEST(WorkloadLearnerTest, GpuLessPodsAreNotPartOfTheMix) {
  WorkloadLearner learner(Every(1));
  EXPECT_FALSE(learner.Observe(0, 0, 2000, kGiB));
  EXPECT_EQ(learner.observations(), 0u);
  EXPECT_EQ(learner.Published(), nullptr);
}

TEST(WorkloadLearnerTest, OldClassesFadeWithTheHalfLife) {
  WorkloadLearnerOptions options = Every(1);
  options.half_life_pods = 10;
  options.coverage = 1.0;
  options.republish_distance = 0.0;
  WorkloadLearner learner(options);
  for (int i = 0; i < 10; ++i) learner.Observe(8, 1000, 0, 0);
  for (int i = 0; i < 10; ++i) learner.Observe(1, 250, 0, 0);
  // The ten 8-GPU pods are one half-life older: each weighs half as much as a new one.
  const policies::ObservedWorkload now = learner.Current();
  const double old_weight = WeightOf(now, 8, 1000, 0);
  const double new_weight = WeightOf(now, 1, 250, 0);
  EXPECT_GT(new_weight, old_weight);
  EXPECT_NEAR(old_weight / new_weight, 0.5, 0.05);
  for (int i = 0; i < 100; ++i) learner.Observe(1, 250, 0, 0);
  EXPECT_LT(WeightOf(learner.Current(), 8, 1000, 0), 0.01);
}

TEST(WorkloadLearnerTest, CoverageKeepsTheHeaviestClassesOnly) {
  WorkloadLearnerOptions options = Every(1);
  options.half_life_pods = 1e12;
  options.coverage = 0.9;
  WorkloadLearner learner(options);
  for (int i = 0; i < 95; ++i) learner.Observe(1, 1000, 0, 0);
  for (int i = 0; i < 5; ++i) learner.Observe(2, 1000, 0, 0);
  const policies::ObservedWorkload mix = learner.Current();
  ASSERT_EQ(mix.classes.size(), 1u);
  EXPECT_EQ(mix.classes[0].gpus, 1);
  EXPECT_DOUBLE_EQ(mix.classes[0].weight, 1.0);  // renormalized over what is kept
}

TEST(WorkloadLearnerTest, RepublishesOnlyWhenTheMixHasMoved) {
  WorkloadLearnerOptions options = Every(10);
  options.half_life_pods = 1e12;
  options.republish_distance = 0.1;
  WorkloadLearner learner(options);
  bool published = false;
  for (int i = 0; i < 10; ++i) published = learner.Observe(1, 1000, 0, 0);
  EXPECT_TRUE(published);
  // The same class again: the mix does not move, nothing new is published.
  for (int i = 0; i < 10; ++i) EXPECT_FALSE(learner.Observe(1, 1000, 0, 0));
  EXPECT_EQ(learner.Published()->version, 1u);
  // A new class that soon holds more than 10% of the weight: published at a check.
  int publishes = 0;
  for (int i = 0; i < 10; ++i) publishes += learner.Observe(8, 1000, 0, 0) ? 1 : 0;
  EXPECT_EQ(publishes, 1);
  EXPECT_EQ(learner.Published()->version, 2u);
  EXPECT_GT(WeightOf(*learner.Published(), 8, 1000, 0), 0.3);
}

TEST(WorkloadLearnerTest, BucketsStayBounded) {
  WorkloadLearnerOptions options = Every(1000000);
  options.max_buckets = 16;
  WorkloadLearner learner(options);
  for (int i = 0; i < 1000; ++i) learner.Observe(1, 1000, 1000 + i, 0);  // every CPU distinct
  EXPECT_LE(learner.Current().classes.size(), 17u);
}

TEST(WorkloadLearnerTest, MixDistanceIsTotalVariation) {
  policies::ObservedWorkload a;
  a.classes = {{1, 1000, 0.5}, {2, 1000, 0.5}};
  policies::ObservedWorkload b;
  b.classes = {{1, 1000, 1.0}};
  EXPECT_DOUBLE_EQ(MixDistance(a, a), 0.0);
  EXPECT_DOUBLE_EQ(MixDistance(a, b), 0.5);
  policies::ObservedWorkload c;
  c.classes = {{4, 1000, 1.0}};
  EXPECT_DOUBLE_EQ(MixDistance(b, c), 1.0);
}

}  // namespace
}  // namespace gputopo::cluster

namespace gputopo::cluster {
namespace {

TEST(WorkloadLearnerTest, ChecksComeOftenWhileYoungAndRarelyOnceStable) {
  WorkloadLearnerOptions options;
  options.min_check_every = 8;
  options.max_check_every = 256;
  options.republish_distance = -1.0;  // publish at every check
  WorkloadLearner learner(options);
  int early = 0;
  for (int i = 0; i < 256; ++i) early += learner.Observe(1 + i % 2, 1000, 0, 0) ? 1 : 0;
  int late = 0;
  for (int i = 0; i < 8192; ++i) late += learner.Observe(1 + i % 2, 1000, 0, 0) ? 1 : 0;
  EXPECT_EQ(early, 256 / 8);   // every 8 pods
  EXPECT_LE(late, 8192 / 64);  // every observations/32 pods, at least 8192/32 apart at the end
  EXPECT_GE(late, 8192 / 256);
}

}  // namespace
}  // namespace gputopo::cluster
