// The request path never waits for the node answers' lock (CacheAccess::kSkipWhenBusy): with it
// held on another thread, as by a background refresh preempted in the middle of an insert,
// lookups miss, answers are not kept, and cycles answer as evaluating every node does. Run under
// ThreadSanitizer too (label concurrency). A wait would hang a test until ctest's timeout. Also:
// a pod's last call is refilled for another pod only when no cycle still reads it.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "evaluation/cached_evaluations.h"
#include "evaluation/evaluation_cache.h"
#include "test/support/builders.h"
#include "test/support/held_answers_lock.h"
#include "test/support/test_cluster.h"

namespace gputopo::evaluation {
namespace {

using policies::GpuMask;
using policies::NodeEvaluation;
using policies::PodRequirements;
using policies::RequirementsOf;
using testing::HeldAnswersLock;
using testing::MakeNode;
using testing::MakePod;
using testing::TestCluster;

// Adds `count` dgx1 nodes, n0 to n<count - 1>, to `cluster`; returns their names.
std::vector<std::string> AddDgx1Nodes(TestCluster& cluster, int count) {
  std::vector<std::string> names;
  for (int i = 0; i < count; ++i) {
    names.push_back("n" + std::to_string(i));
    cluster.Add(MakeNode().Name(names.back()).Profile("dgx1").Replicas(2).Allocatable(16).Obj());
  }
  return names;
}

// kSkipWhenBusy never waits for the lock (if it did, these calls would wait forever): a lookup
// misses, MayHoldAnswers says no, answers are not kept, and each is counted.
TEST(EvaluationCacheTest, SkipWhenBusyNeverWaitsForTheNodeAnswersLock) {
  TestCluster cluster;
  cluster.Add(MakeNode().Name("n").Profile("dgx1").Replicas(2).Allocatable(16).Obj());
  cluster.Add(MakeNode().Name("m").Profile("hgx-h100").Replicas(2).Allocatable(16).Obj());
  EvaluationCache cache;
  const PodRequirements one = *RequirementsOf(MakePod().Name("p").Gpus(1).Obj());
  const uint64_t shape = cache.ShapeId(one, cluster.shared_preset());
  auto n = cluster.Node("n");
  auto m = cluster.Node("m");
  auto e = std::make_shared<const NodeEvaluation>();
  cache.Insert(*n, 0, shape, e);
  ASSERT_EQ(cache.Find(*n, 0, shape, CacheAccess::kSkipWhenBusy), e);  // free: found
  ASSERT_TRUE(cache.MayHoldAnswers(shape, CacheAccess::kSkipWhenBusy));
  EXPECT_EQ(cache.skipped_when_busy(), 0u);
  {
    HeldAnswersLock held(cache);
    EXPECT_EQ(cache.Find(*n, 0, shape, CacheAccess::kSkipWhenBusy), nullptr);
    EXPECT_FALSE(cache.MayHoldAnswers(shape, CacheAccess::kSkipWhenBusy));
    std::vector<EvaluationCache::NodeAnswer> answers;
    answers.push_back({m->version(), 0, e});
    answers.push_back({m->version(), 1, e});
    cache.InsertAll(shape, std::move(answers), CacheAccess::kSkipWhenBusy);
    EXPECT_EQ(cache.skipped_when_busy(), 4u);
  }
  EXPECT_EQ(cache.Find(*n, 0, shape, CacheAccess::kSkipWhenBusy), e);  // still there
  EXPECT_EQ(cache.Find(*m, 0, shape), nullptr);                        // never kept
  EXPECT_EQ(cache.node_answers(), 1u);
  // Free again, kSkipWhenBusy keeps answers as kWait does, in batches of kInsertBatch.
  std::vector<EvaluationCache::NodeAnswer> many;
  for (GpuMask group = 0; group < 3 * EvaluationCache::kInsertBatch; ++group) {
    many.push_back({m->version(), group, e});
  }
  cache.InsertAll(shape, std::move(many), CacheAccess::kSkipWhenBusy);
  EXPECT_EQ(cache.node_answers(), 1 + 3 * EvaluationCache::kInsertBatch);
  EXPECT_EQ(cache.Find(*m, 3 * EvaluationCache::kInsertBatch - 1, shape), e);
  EXPECT_EQ(cache.skipped_when_busy(), 4u);
}

// CachedEvaluations's cycles take the node answers with kSkipWhenBusy: with the lock held (by a
// preempted background refresh), a cycle still answers, exactly as evaluating every node does.
TEST(EvaluationCacheTest, ACycleAnswersWhileTheNodeAnswersLockIsHeld) {
  TestCluster cluster;
  const std::vector<std::string> names = AddDgx1Nodes(cluster, 8);
  const std::vector<std::string_view> candidates(names.begin(), names.end());
  CachedEvaluations cached;
  const PodRequirements two = *RequirementsOf(MakePod().Name("p").Gpus(2).Obj());
  const PodRequirements four = *RequirementsOf(MakePod().Name("q").Gpus(4).Obj());
  auto ask = [&](EvaluationSource& source, const PodRequirements& req, std::string_view key) {
    auto snapshot = cluster.state().Snapshot();
    Evaluations got = source.Evaluate({req, cluster.shared_preset(), *snapshot, candidates, key});
    testing::ExpectSameAsEvaluateNode(got.per_node, *snapshot, got.positions, req,
                                      cluster.preset());
    return got;
  };
  (void)ask(cached, two, "ml/a/1");  // fills the table and the node answers
  const size_t kept = cached.cache().node_answers();
  ASSERT_GT(kept, 0u);
  cluster.Add(MakePod().Name("busy").Gpus(2).OnNode("n5").Assigned("0,1").Obj());
  {
    HeldAnswersLock held(cached.cache());
    const Evaluations changed = ask(cached, two, "ml/b/2");  // n5's slot is stale
    EXPECT_EQ(changed.evaluated, 1u);
    const Evaluations fresh = ask(cached, four, "ml/c/3");  // a new shape: every node
    EXPECT_GT(fresh.evaluated, 0u);
  }
  EXPECT_GT(cached.cache().skipped_when_busy(), 0u);
  EXPECT_EQ(cached.cache().node_answers(), kept);        // nothing was kept while it was held
  const Evaluations after = ask(cached, two, "ml/d/4");  // the table kept n5's new answer
  EXPECT_EQ(after.evaluated, 0u);
}

// One thread asks one pod's prioritize again and again (Reuse holds that pod's last call while it
// reads it) while another asks filters of ever new pods, which drop calls and refill the dropped
// ones (Remember). A call is refilled only when no Reuse holds it, so every answer is
// EvaluateNode's. Under ThreadSanitizer (label concurrency) a refill of a held call is a
// reported race: with Remember's count check removed, it was reported in each of four runs.
TEST(CachedEvaluationsTest, CallsAreRefilledOnlyWhenNoReuseHoldsThem) {
  TestCluster cluster;
  const std::vector<std::string> names = AddDgx1Nodes(cluster, 48);
  const std::vector<std::string_view> all(names.begin(), names.end());
  const std::vector<std::string_view> some(all.begin() + 1, all.end());
  const auto snapshot = cluster.state().Snapshot();
  CachedEvaluations cached;
  // The pods of the two threads differ in shape, so answers refilled into a call that a Reuse
  // still reads would be another shape's.
  const PodRequirements one = *RequirementsOf(MakePod().Name("p").Gpus(1).Obj());
  const PodRequirements two = *RequirementsOf(MakePod().Name("q").Gpus(2).Obj());
  auto ask = [&](const PodRequirements& pod, const std::vector<std::string_view>& candidates,
                 const std::string& key) {
    Evaluations got = cached.Evaluate({pod, cluster.shared_preset(), *snapshot, candidates, key});
    testing::ExpectSameAsEvaluateNode(got.per_node, *snapshot, got.positions, pod,
                                      cluster.preset());
  };
  constexpr int kRounds = 1500;
  std::thread filters([&] {
    for (int i = 0; i < kRounds; ++i) ask(two, i % 2 ? all : some, "ml/f/" + std::to_string(i));
  });
  for (int i = 0; i < kRounds; ++i) {
    ask(one, all, "ml/same/1");   // kept again once the filters have dropped it
    ask(one, some, "ml/same/1");  // reuses it while it is still kept
  }
  filters.join();
}

}  // namespace
}  // namespace gputopo::evaluation
