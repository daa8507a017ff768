// ExtenderService: a cycle is a function of the request, one snapshot and the candidates; the
// verbs hand its record to the observer (nothing else is written), and the reply stays valid
// whatever the observer does with the record.
#include "src/service/extender_service.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "evaluation/plain_evaluations.h"
#include "src/service/decision_recorder.h"
#include "test/support/builders.h"
#include "test/support/fake_clock.h"
#include "test/support/manual_executor.h"
#include "test/support/test_cluster.h"

namespace gputopo::service {
namespace {

using testing::MakeNode;
using testing::MakePod;

// Keeps what it observes, untouched.
struct KeptRecords final : CycleObserver {
  void Observe(std::shared_ptr<CycleRecord> record) override { records.push_back(record); }
  std::vector<std::shared_ptr<CycleRecord>> records;
};

struct Service {
  explicit Service(CycleObserver& observer) : service(context, observer) {
    presets.Add(cluster.shared_preset());
    cluster.Add(MakeNode().Name("a").Profile("dgx1").Replicas(2).Allocatable(16).Obj());
    cluster.Add(MakeNode().Name("b").Profile("hgx-h100").Replicas(1).Allocatable(8).Obj());
    cluster.Add(MakePod().Name("w").Gpus(1).OnNode("a").Assigned("0").Obj());
  }
  extender::ExtenderArgs Args(int gpus) {
    extender::ExtenderArgs args;
    args.pod = MakePod().Name("p").Gpus(gpus).Obj();
    args.node_names = {"a", "b", "ghost"};
    return args;
  }

  testing::TestCluster cluster;
  policies::PresetCatalog presets;
  RecentPods recent_pods{16, 1u << 20};
  DecisionLog decisions{16, 16};
  testing::FakeClock clock;
  evaluation::PlainEvaluations evaluations;
  SchedulingContext context{cluster.state(), presets,   cluster.preset().name(),
                            recent_pods,     decisions, clock,
                            evaluations};
  ExtenderService service;
};

TEST(ExtenderServiceTest, ACycleDependsOnlyOnItsSnapshotAndWritesNothing) {
  KeptRecords observer;
  Service s(observer);
  const extender::ExtenderArgs args = s.Args(1);
  const auto before = s.cluster.state().Snapshot();
  s.cluster.Add(MakePod().Name("x").Gpus(8).OnNode("b").Assigned("0,1,2,3,4,5,6,7").Obj());
  const auto after = s.cluster.state().Snapshot();
  auto on_before = s.service.RunCycle(Verb::kFilter, args, before, 7);
  auto on_after = s.service.RunCycle(Verb::kFilter, args, after, 8);
  EXPECT_EQ(on_before->sequence, 7u);
  EXPECT_EQ(on_before->passed, 2u) << "a and b fit on the older snapshot";
  EXPECT_EQ(on_after->passed, 1u) << "b is full on the newer one";
  EXPECT_EQ(on_before->failed, 1u);  // ghost
  auto again = s.service.RunCycle(Verb::kFilter, args, before, 9);
  ASSERT_EQ(again->nodes.size(), on_before->nodes.size());
  for (size_t i = 0; i < again->nodes.size(); ++i) {
    EXPECT_EQ(again->nodes[i].evaluation.verdict, on_before->nodes[i].evaluation.verdict);
    EXPECT_EQ(again->nodes[i].evaluation.weighted_score,
              on_before->nodes[i].evaluation.weighted_score);
  }
  EXPECT_TRUE(observer.records.empty()) << "RunCycle told the observer";
  EXPECT_TRUE(s.decisions.Recent(16).empty());
  EXPECT_FALSE(s.recent_pods.Find(args.pod.uid).has_value());
}

TEST(ExtenderServiceTest, VerbsHandTheirRecordToTheObserverAndRememberThePod) {
  KeptRecords observer;
  Service s(observer);
  const extender::ExtenderArgs args = s.Args(1);
  const FilterReply filter = s.service.Filter(args);
  const PrioritizeReply prioritize = s.service.Prioritize(args);
  ASSERT_EQ(observer.records.size(), 2u);
  EXPECT_EQ(observer.records[0]->verb, Verb::kFilter);
  EXPECT_EQ(observer.records[1]->verb, Verb::kPrioritize);
  EXPECT_LT(observer.records[0]->sequence, observer.records[1]->sequence);
  EXPECT_EQ(observer.records[0].use_count(), 1) << "the observer is the record's only owner";
  ASSERT_EQ(filter.outcomes.size(), 3u);
  EXPECT_TRUE(filter.outcomes[0].passed);
  EXPECT_FALSE(filter.outcomes[2].passed);
  EXPECT_EQ(filter.summary.passed, 2u);
  ASSERT_EQ(prioritize.scores.size(), 3u);
  EXPECT_EQ(prioritize.scores[0].first, "a");
  EXPECT_EQ(prioritize.scores[0].second, observer.records[1]->priorities[0]);
  EXPECT_TRUE(s.recent_pods.Find(args.pod.uid).has_value());
  EXPECT_TRUE(s.decisions.Recent(16).empty()) << "only the observer commits";
}

TEST(ExtenderServiceTest, TheReplyOutlivesTheRecordThroughItsLease) {
  testing::ManualExecutor executor;
  DecisionLog log(16, 16);
  DecisionRecorder recorder(log, nullptr, executor, RecorderOptions{});
  Service s(recorder);
  FilterReply reply = s.service.Filter(s.Args(1));
  recorder.Flush();  // trims and commits the record: the reply must not depend on it
  ASSERT_EQ(log.Recent(16).size(), 1u);
  ASSERT_EQ(reply.outcomes.size(), 3u);
  EXPECT_NE(reply.outcomes[2].reason.find("unknown"), std::string_view::npos)
      << reply.outcomes[2].reason;
}

TEST(ExtenderServiceTest, AGpuLessPodPassesEveryNodeTheGpuNodesAndTheOthers) {
  // All-pod mode: kube-scheduler asks about CPU-only pods too, with nodes gputopo does not keep
  // (no GPUs). None may be filtered out for it.
  KeptRecords observer;
  Service s(observer);
  const extender::ExtenderArgs args = s.Args(0);
  const FilterReply filter = s.service.Filter(args);
  ASSERT_EQ(filter.outcomes.size(), 3u);
  for (const extender::FilterOutcome& o : filter.outcomes) EXPECT_TRUE(o.passed);
  EXPECT_EQ(filter.summary.passed, 3u);
  // The filter evaluated nothing (every node passes a pod without GPUs); the record says so.
  ASSERT_EQ(observer.records.size(), 1u);
  EXPECT_TRUE(observer.records[0]->GpuLessFilter());
  EXPECT_EQ(observer.records[0]->evaluated, 0u);
  EXPECT_TRUE(observer.records[0]->nodes.empty());
  const PrioritizeReply prioritize = s.service.Prioritize(args);
  ASSERT_EQ(prioritize.scores.size(), 3u);
  // A node without GPUs is where it strands nothing: the top priority.
  EXPECT_EQ(prioritize.scores[2].first, "ghost");
  EXPECT_EQ(prioritize.scores[2].second, 10);
  // The prioritize evaluated the known nodes itself, as EvaluateNode defines them.
  ASSERT_EQ(observer.records.size(), 2u);
  EXPECT_FALSE(observer.records[1]->GpuLessFilter());
  EXPECT_FALSE(observer.records[1]->from_filter);
  EXPECT_EQ(observer.records[1]->nodes.size(), 3u);
  EXPECT_EQ(observer.records[1]->passed, 3u);
}

}  // namespace
}  // namespace gputopo::service
