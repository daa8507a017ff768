// ExtenderService: a cycle is a function of the request, one snapshot and the candidates; the
// verbs hand its record to the observer (nothing else is written), and the reply stays valid
// whatever the observer does with the record.
#include "src/service/extender_service.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "evaluation/plain_evaluations.h"
#include "policies/engine/candidate_order.h"
#include "policies/registry/component_registry.h"
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
  explicit Service(CycleObserver& observer, ExtenderServiceOptions options = {})
      : service(context, observer, options) {
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
  ASSERT_EQ(again->candidate_evaluations.size(), on_before->candidate_evaluations.size());
  for (size_t i = 0; i < again->candidate_evaluations.size(); ++i) {
    EXPECT_EQ(again->candidate_evaluations[i].verdict, on_before->candidate_evaluations[i].verdict);
    EXPECT_EQ(again->candidate_evaluations[i].weighted_score,
              on_before->candidate_evaluations[i].weighted_score);
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
  EXPECT_TRUE(observer.records[0]->candidate_evaluations.empty());
  const PrioritizeReply prioritize = s.service.Prioritize(args);
  ASSERT_EQ(prioritize.scores.size(), 3u);
  // A node without GPUs is where it strands nothing: the top priority.
  EXPECT_EQ(prioritize.scores[2].first, "ghost");
  EXPECT_EQ(prioritize.scores[2].second, 10);
  // The prioritize evaluated the known nodes itself, as EvaluateNode defines them.
  ASSERT_EQ(observer.records.size(), 2u);
  EXPECT_FALSE(observer.records[1]->GpuLessFilter());
  EXPECT_FALSE(observer.records[1]->from_filter);
  EXPECT_EQ(observer.records[1]->candidate_evaluations.size(), 3u);
  EXPECT_EQ(observer.records[1]->passed, 3u);
}

// Four equal free DGX-1 nodes but for their occupants: c0 and c1 identical and empty, c2 and
// c3 holding pods, and a node gputopo does not know.
extender::ExtenderArgs FourNodes(Service& s, const std::string& pod_uid) {
  for (const char* name : {"c0", "c1", "c2", "c3"}) {
    s.cluster.Add(MakeNode().Name(name).Profile("dgx1").Replicas(1).Allocatable(8).Obj());
  }
  s.cluster.Add(MakePod().Name("c2-0").Gpus(2).OnNode("c2").Assigned("0,1").Obj());
  s.cluster.Add(MakePod().Name("c3-0").Gpus(4).OnNode("c3").Assigned("0,1,2,3").Obj());
  extender::ExtenderArgs args;
  args.pod = MakePod().Name("p").Uid(pod_uid).Gpus(2).Obj();
  args.node_names = {"c0", "c1", "c2", "c3", "ghost"};
  return args;
}

TEST(ExtenderServiceTest, FilterDecidesPassesOnlyTheNodePrioritizeScoresHighest) {
  KeptRecords observer;
  Service plain(observer);
  Service decides(observer, ExtenderServiceOptions{true});
  const extender::ExtenderArgs args = FourNodes(plain, "uid-p");
  (void)FourNodes(decides, "uid-p");

  const PrioritizeReply scored = plain.service.Prioritize(args);
  int top = -1;
  for (const auto& [host, score] : scored.scores) top = std::max(top, score);
  const FilterReply all = plain.service.Filter(args);
  EXPECT_EQ(all.summary.passed, 4u) << "without the option every node that fits passes";

  const FilterReply one = decides.service.Filter(args);
  ASSERT_EQ(one.outcomes.size(), 5u);
  size_t passed = 0, omitted = 0;
  std::string chosen;
  for (size_t i = 0; i < one.outcomes.size(); ++i) {
    const extender::FilterOutcome& o = one.outcomes[i];
    if (o.passed) {
      ++passed;
      chosen = std::string(args.node_names[i]);
      EXPECT_EQ(scored.scores[i].second, top) << chosen << " is not among prioritize's best";
    }
    if (o.omitted) {
      ++omitted;
      EXPECT_TRUE(all.outcomes[i].passed) << "only nodes that fit are left out";
    }
  }
  EXPECT_EQ(passed, 1u);
  EXPECT_EQ(omitted, 3u);
  EXPECT_FALSE(one.outcomes[4].passed);
  EXPECT_FALSE(one.outcomes[4].omitted) << "a node that does not fit keeps its reason";
  ASSERT_FALSE(observer.records.empty());
  EXPECT_EQ(observer.records.back()->decided_node, chosen);
  EXPECT_EQ(observer.records.back()->passed, 4u) << "the record keeps every node that fit";

  // On the wire: the chosen node alone in NodeNames, only ghost among the failed.
  const std::string wire = extender::WriteFilterResult(args, one.outcomes);
  EXPECT_NE(wire.find("\"NodeNames\":[\"" + chosen + "\"]"), std::string::npos) << wire;
  EXPECT_NE(wire.find("\"ghost\":"), std::string::npos) << wire;
  for (const char* name : {"c0", "c1", "c2", "c3"}) {
    if (name == chosen) continue;
    EXPECT_EQ(wire.find(std::string("\"") + name + "\""), std::string::npos) << wire;
  }
}

TEST(ExtenderServiceTest, FilterDecidesSpreadsPodsOverEqualNodesAndLeavesOneFitAlone) {
  KeptRecords observer;
  Service s(observer, ExtenderServiceOptions{true});
  extender::ExtenderArgs args = FourNodes(s, "uid-0");
  args.node_names = {"c0", "c1", "ghost"};
  // c0 and c1 are the same empty machine, so they tie; which one wins depends on the pod, as
  // kube-scheduler's random choice among equal scores does, and not on the request's order.
  std::set<std::string> chosen;
  for (int i = 0; i < 32; ++i) {
    args.pod.uid = "uid-" + std::to_string(i);
    const FilterReply reply = s.service.Filter(args);
    const std::string first = observer.records.back()->decided_node;
    chosen.insert(first);
    std::swap(args.node_names[0], args.node_names[1]);
    (void)s.service.Filter(args);
    EXPECT_EQ(observer.records.back()->decided_node, first) << "the order decided, not the pod";
    std::swap(args.node_names[0], args.node_names[1]);
  }
  EXPECT_EQ(chosen, (std::set<std::string>{"c0", "c1"}));

  // One node that fits: nothing to decide, the reply is the plain one.
  args.node_names = {"c3", "ghost"};
  const FilterReply single = s.service.Filter(args);
  EXPECT_TRUE(single.outcomes[0].passed);
  EXPECT_FALSE(single.outcomes[1].omitted);
  EXPECT_TRUE(observer.records.back()->decided_node.empty());

  // A pod without GPUs passes every node: its prioritize scores them.
  args.pod = MakePod().Name("cpu").Gpus(0).Obj();
  args.node_names = {"c0", "c1", "c2", "ghost"};
  const FilterReply cpu = s.service.Filter(args);
  for (const extender::FilterOutcome& o : cpu.outcomes) EXPECT_TRUE(o.passed);
  EXPECT_TRUE(observer.records.back()->decided_node.empty());
}

// A preset with FGD's order for share pods (policies/engine/candidate_order.h), named "steps".
std::shared_ptr<const policies::Preset> StepsPreset() {
  policies::PresetSpec spec;
  spec.name = "steps";
  spec.normalization = "rank";
  spec.sharing_pod_steps = 100;
  spec.components = {
      {"replica-spread", 3.0, {}}, {"fragmentation", 10.0, {}}, {"packing", 0.3, {}}};
  auto preset = policies::BuildPreset(spec, policies::BuiltinComponents());
  EXPECT_TRUE(preset.ok()) << preset.status().ToString();
  return *preset;
}

TEST(ExtenderServiceTest, SharePodsGoToTheFirstNodeOfTheFixedOrderAmongEqualSteps) {
  KeptRecords observer;
  Service plain(observer);
  Service decides(observer, ExtenderServiceOptions{true});
  extender::ExtenderArgs args;
  for (Service* s : {&plain, &decides}) {
    s->presets.Add(StepsPreset());
    for (const char* name : {"e0", "e1", "e2", "e3", "e4", "e5"}) {
      s->cluster.Add(MakeNode().Name(name).Profile("dgx1").Replicas(4).Allocatable(32).Obj());
    }
  }
  args.node_names = {"e0", "e1", "e2", "e3", "e4", "e5", "ghost"};
  const auto pod = [](const std::string& uid, const char* milli) {
    return MakePod()
        .Name("p-" + uid)
        .Uid(uid)
        .Gpus(1)
        .Annotation("gputopo.io/policy", "steps")
        .Annotation("gputopo.io/gpu-milli", milli)
        .Obj();
  };
  // The six nodes are the same empty machine: one step. The first in the fixed order of names
  // gets the top priority alone, for every pod.
  std::string first;
  for (const char* name : {"e0", "e1", "e2", "e3", "e4", "e5"}) {
    if (first.empty() || policies::FixedNodeOrder(name) > policies::FixedNodeOrder(first)) {
      first = name;
    }
  }
  for (const std::string uid : {"u1", "u2", "u3"}) {
    args.pod = pod(uid, "250");
    const PrioritizeReply reply = plain.service.Prioritize(args);
    std::set<int> distinct;
    for (const auto& [host, score] : reply.scores) {
      if (host == "ghost") continue;
      distinct.insert(score);
      EXPECT_EQ(score == 10, host == first) << host << " " << score;
    }
    EXPECT_EQ(distinct.size(), 6u) << "every node in its own place";
    EXPECT_NE(observer.records.back()->normalization.find("fragmentation step of 100"),
              std::string::npos)
        << observer.records.back()->normalization;
    (void)decides.service.Filter(args);
    EXPECT_EQ(observer.records.back()->decided_node, first) << "the same order, not the pod's";
  }
  // A pod that takes whole GPUs keeps the weighted score: the equal nodes tie at the top.
  args.pod = pod("whole", "1000");
  const PrioritizeReply whole = plain.service.Prioritize(args);
  for (const auto& [host, score] : whole.scores) {
    if (host != "ghost") {
      EXPECT_EQ(score, 10) << host;
    }
  }
  EXPECT_EQ(observer.records.back()->normalization, "rank");
}

}  // namespace
}  // namespace gputopo::service
