// A new pod shape's searches shared with helper threads (evaluation::ParallelFor through
// CachedEvaluations), on a real thread pool: run again under ThreadSanitizer by ./run test.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "evaluation/cached_evaluations.h"
#include "evaluation/parallel_for.h"
#include "evaluation/pod_evaluator.h"
#include "policies/engine/evaluation.h"
#include "src/service/thread_pool_executor.h"
#include "test/support/builders.h"
#include "test/support/test_cluster.h"

namespace gputopo {
namespace {

TEST(ParallelForTest, EveryItemRunsOnceAcrossThreads) {
  service::ThreadPoolExecutor pool(3);
  for (int round = 0; round < 20; ++round) {
    std::vector<std::atomic<int>> runs(5000);
    std::atomic<int> bad_workers{0};
    evaluation::ParallelFor({&pool, 3}, runs.size(), 7, [&](int worker, size_t begin, size_t end) {
      if (worker < 0 || worker > 3) bad_workers.fetch_add(1);
      for (size_t i = begin; i < end; ++i) runs[i].fetch_add(1);
    });
    for (const auto& n : runs) ASSERT_EQ(n.load(), 1);
    EXPECT_EQ(bad_workers.load(), 0);
  }
}

// A cluster large enough for a new shape's sweep to use helpers, of diverse node states (each
// a search), answered exactly as EvaluateNode answers, for pods of 1 and 2 GPUs and of a group
// held by some nodes; then again after changes, from the tables.
TEST(ParallelEvaluationTest, HelpedCyclesAnswerAsEvaluateNode) {
  testing::TestCluster cluster;
  const int nodes = static_cast<int>(evaluation::PodEvaluator::kHelpedSearches) * 2 + 17;
  for (int i = 0; i < nodes; ++i) {
    cluster.Add(testing::MakeNode()
                    .Name("n" + std::to_string(i))
                    .Profile(i % 3 == 0 ? "dgx1" : "hgx-h100")
                    .Replicas(4)
                    .Allocatable(32)
                    .Host(16000 + i, int64_t{64} << 30)
                    .Obj());
    for (int p = 0; p < i % 5; ++p) {
      cluster.Add(testing::MakePod()
                      .Namespace("ml")
                      .Name("web-" + std::to_string(i) + "-" + std::to_string(p))
                      .Gpus(1)
                      .OwnedByDeployment(p == 0 ? "web" : "other")
                      .OnNode("n" + std::to_string(i))
                      .Assigned(std::to_string((i + p) % 8))
                      .Obj());
    }
  }
  service::ThreadPoolExecutor pool(2);
  evaluation::CachedEvaluations cached(evaluation::EvaluationHelpers{&pool, 2});
  const std::vector<policies::PodRequirements> pods = {
      *policies::RequirementsOf(testing::DeploymentReplica("web", 90, 1)),
      *policies::RequirementsOf(testing::MakePod().Name("pair").Gpus(2).Obj()),
      *policies::RequirementsOf(testing::MakePod().Name("one").Gpus(1).Obj()),
  };
  for (int round = 0; round < 2; ++round) {
    auto snapshot = cluster.state().Snapshot();
    std::vector<std::string_view> candidates;
    for (const auto& node : snapshot->nodes()) candidates.push_back(node->name());
    for (const policies::PodRequirements& pod : pods) {
      const evaluation::Evaluations got =
          cached.Evaluate({pod, cluster.shared_preset(), *snapshot, candidates, ""});
      ASSERT_EQ(got.per_node.size(), candidates.size());
      for (size_t i = 0; i < candidates.size(); ++i) {
        const policies::NodeEvaluation want =
            policies::EvaluateNode(pod, *snapshot->nodes()[i], cluster.preset());
        const policies::NodeEvaluation& have = *got.per_node[i].evaluation;
        ASSERT_EQ(have.verdict, want.verdict) << candidates[i];
        ASSERT_EQ(have.gpus, want.gpus) << candidates[i];
        ASSERT_EQ(have.weighted_score, want.weighted_score) << candidates[i];
      }
    }
    // Some nodes change: the next round reads the tables for the others.
    for (int i = 0; i < nodes; i += 10) {
      cluster.Add(testing::MakePod()
                      .Namespace("ml")
                      .Name("late-" + std::to_string(round) + "-" + std::to_string(i))
                      .Gpus(1)
                      .OwnedByDeployment("web")
                      .OnNode("n" + std::to_string(i))
                      .Assigned(std::to_string((i + 3) % 8))
                      .Obj());
    }
  }
}

}  // namespace
}  // namespace gputopo
