// The node-answer cache's collector reports the cache's own counts: lookups by result, the uses
// a cycle skipped while a background refresh held the lock, and the answers kept.
#include "src/app/metric_collectors.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>

#include "evaluation/evaluation_cache.h"
#include "test/support/builders.h"
#include "test/support/held_answers_lock.h"
#include "test/support/test_cluster.h"

namespace gputopo::app {
namespace {

using evaluation::CacheAccess;
using evaluation::EvaluationCache;
using ::testing::HasSubstr;
using testing::MakeNode;
using testing::MakePod;

TEST(MetricCollectorsTest, NodeAnswersReportTheCacheCounts) {
  testing::TestCluster cluster;
  cluster.Add(MakeNode().Name("n").Profile("dgx1").Replicas(2).Allocatable(16).Obj());
  const auto node = cluster.Node("n");
  EvaluationCache cache;
  observability::MetricsRegistry metrics;
  CollectNodeAnswers(metrics, cache);
  const std::string empty = metrics.Render();
  EXPECT_THAT(empty, HasSubstr("gputopo_node_answer_lookups_total{result=\"hit\"} 0\n"));
  EXPECT_THAT(empty, HasSubstr("gputopo_node_answers_skipped_total 0\n"));
  EXPECT_THAT(empty, HasSubstr("gputopo_node_answers 0\n"));

  const policies::PodRequirements one =
      *policies::RequirementsOf(MakePod().Name("p").Gpus(1).Obj());
  const uint64_t shape = cache.ShapeId(one, cluster.shared_preset());
  cache.Insert(*node, 0, shape, std::make_shared<const policies::NodeEvaluation>());
  ASSERT_NE(cache.Find(*node, 0, shape, CacheAccess::kWait), nullptr);  // hit
  ASSERT_EQ(cache.Find(*node, 1, shape, CacheAccess::kWait), nullptr);  // miss: other group GPUs
  {
    // A refresh holding the lock on another thread: the request path's lookup is skipped.
    testing::HeldAnswersLock held(cache);
    EXPECT_EQ(cache.Find(*node, 0, shape, CacheAccess::kSkipWhenBusy), nullptr);
  }
  const std::string after = metrics.Render();
  EXPECT_THAT(after, HasSubstr("gputopo_node_answer_lookups_total{result=\"hit\"} 1\n"));
  EXPECT_THAT(after, HasSubstr("gputopo_node_answer_lookups_total{result=\"miss\"} 2\n"));
  EXPECT_THAT(after, HasSubstr("gputopo_node_answers_skipped_total 1\n"));
  EXPECT_THAT(after, HasSubstr("gputopo_node_answers 1\n"));
}

}  // namespace
}  // namespace gputopo::app
