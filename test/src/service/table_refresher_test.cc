// TableRefresher: CachedEvaluations' background refreshes, coalesced into one task, racing with
// scheduling cycles and cluster writes; every answer stays exactly what evaluating the node afresh
// gives.
#include "src/service/table_refresher.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "evaluation/cached_evaluations.h"
#include "policies/engine/evaluation.h"
#include "src/service/thread_pool_executor.h"
#include "test/support/builders.h"
#include "test/support/manual_executor.h"
#include "test/support/test_cluster.h"

namespace gputopo::service {
namespace {

using evaluation::CachedEvaluations;
using evaluation::Evaluations;
using policies::ClusterSnapshot;
using testing::ExpectSameAsEvaluateNode;
using testing::MakeNode;
using testing::MakePod;
using testing::PositionsOf;

TEST(TableRefresherTest, CoalescesSnapshotsIntoOneTaskAgainstTheNewest) {
  CachedEvaluations cache;
  testing::ManualExecutor executor;
  TableRefresher refresher(cache, executor);
  testing::TestCluster cluster([&](const auto& snapshot) { refresher.Notify(snapshot); });
  cluster.Add(MakeNode().Name("n0").Profile("dgx1").Replicas(2).Allocatable(16).Obj());
  const policies::PodRequirements req =
      *policies::RequirementsOf(MakePod().Name("p").Gpus(1).Obj());
  const std::vector<std::string_view> candidates = {"n0", "n1"};
  (void)cache.Evaluate({req, cluster.shared_preset(), *cluster.state().Snapshot(), candidates,
                        ""});  // the shape's table
  executor.RunReady();
  EXPECT_EQ(refresher.nodes_evaluated(), 0u) << "nothing changed since the table was made";
  cluster.Add(MakeNode().Name("n1").Profile("dgx1").Replicas(2).Allocatable(16).Obj());
  cluster.Add(MakePod().Name("w").Gpus(1).OnNode("n0").Assigned("0").Obj());
  EXPECT_EQ(executor.ready(), 1u) << "two snapshots, one refresh";
  EXPECT_EQ(executor.RunReady(), 1);
  EXPECT_EQ(refresher.nodes_evaluated(), 2u) << "n1 and n0, against the newest snapshot";
  refresher.WaitIdle();  // returns at once: everything notified has been refreshed against
  // The cycle now only reads.
  const auto snapshot = cluster.state().Snapshot();
  const Evaluations got = cache.Evaluate({req, cluster.shared_preset(), *snapshot, candidates, ""});
  EXPECT_EQ(got.evaluated, 0u);
  ExpectSameAsEvaluateNode(got.per_node, *snapshot, PositionsOf(*snapshot, {"n0", "n1"}), req,
                           cluster.preset());
}

TEST(TableRefresherTest, RefreshesRacingWithCyclesAndWritesKeepAnswersExact) {
  CachedEvaluations cache;
  ThreadPoolExecutor executor(2);
  TableRefresher refresher(cache, executor);  // outlives the cluster, whose state notifies it
  testing::TestCluster cluster([&](const auto& snapshot) { refresher.Notify(snapshot); });
  std::vector<std::string> names;
  for (int i = 0; i < 16; ++i) {
    names.push_back("n" + std::to_string(i));
    cluster.Add(MakeNode()
                    .Name(names.back())
                    .Profile(i % 2 ? "dgx1" : "hgx-h100")
                    .Replicas(4)
                    .Allocatable(32)
                    .Obj());
  }
  const policies::PodRequirements req =
      *policies::RequirementsOf(MakePod().Name("p").Gpus(2).Obj());
  auto snapshot = cluster.state().Snapshot();
  const std::vector<size_t> positions = PositionsOf(*snapshot, names);
  const std::vector<std::string_view> candidates(names.begin(), names.end());
  (void)cache.Evaluate({req, cluster.shared_preset(), *snapshot, candidates, ""});  // the table
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (int i = 0; i < 150; ++i) {
      const std::string pod = "w" + std::to_string(i);
      cluster.Add(MakePod()
                      .Name(pod)
                      .Gpus(1)
                      .OnNode(names[static_cast<size_t>(i) % names.size()])
                      .Assigned(std::to_string(i % 8))
                      .Obj());
      if (i % 3 == 0) cluster.Add(MakePod().Name(pod).Gpus(1).Phase(PodPhase::kSucceeded).Obj());
    }
    done = true;
  });
  int cycles = 0;
  while (!done || cycles < 20) {
    snapshot = cluster.state().Snapshot();
    ExpectSameAsEvaluateNode(
        cache.Evaluate({req, cluster.shared_preset(), *snapshot, candidates, ""}).per_node,
        *snapshot, positions, req, cluster.preset());
    ++cycles;
  }
  writer.join();
  refresher.WaitIdle();
  EXPECT_GT(refresher.nodes_evaluated(), 0u);
  // Everything the writer changed has been evaluated in the background by now (and cycles on
  // older snapshots did not put older answers back).
  snapshot = cluster.state().Snapshot();
  const Evaluations got = cache.Evaluate({req, cluster.shared_preset(), *snapshot, candidates, ""});
  EXPECT_EQ(got.evaluated, 0u);
  EXPECT_FALSE(got.reused);
  ExpectSameAsEvaluateNode(got.per_node, *snapshot, positions, req, cluster.preset());
}

TEST(TableRefresherTest, WaitIdleReturnsWithNothingNotifiedAndStopsCleanly) {
  CachedEvaluations cache;
  ThreadPoolExecutor executor(1);
  TableRefresher refresher(cache, executor);
  refresher.WaitIdle();
  EXPECT_EQ(refresher.nodes_evaluated(), 0u);
  testing::TestCluster cluster;
  refresher.Notify(cluster.state().Snapshot());  // no tables yet: nothing to evaluate
  refresher.WaitIdle();
  EXPECT_EQ(refresher.nodes_evaluated(), 0u);
}

}  // namespace
}  // namespace gputopo::service
