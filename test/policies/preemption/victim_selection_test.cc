// Victim selection for the preempt verb, on whole nodes: what the scheduler's replica counting
// gets wrong, what gputopo chooses instead, and what it never evicts.
#include "policies/preemption/victim_selection.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "policies/engine/evaluation.h"
#include "test/support/builders.h"
#include "test/support/test_cluster.h"
#include "topology/gpu_mask.h"

namespace gputopo::policies {
namespace {

using testing::MakeNode;
using testing::MakePod;
using testing::TestCluster;
using topology::Count;
using topology::ToIndices;

constexpr int32_t kLow = 100;
constexpr int32_t kHigh = 1000000;

PodInfo Running(const std::string& name, const std::string& node, const std::string& gpus,
                int32_t priority = kLow, int64_t count = 1) {
  return MakePod()
      .Name(name)
      .Gpus(count)
      .OnNode(node)
      .Assigned(gpus)
      .Priority(priority)
      .Phase(PodPhase::kRunning)
      .Obj();
}

PodRequirements Requirements(int64_t gpus, const std::string& name = "high") {
  Result<PodRequirements> r = RequirementsOf(MakePod().Name(name).Gpus(gpus).Priority(kHigh).Obj());
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return *r;
}

std::set<std::string> AsSet(const std::vector<std::string>& v) { return {v.begin(), v.end()}; }

// A DGX-1 time-sliced 4 ways (32 replicas), every replica held by a 1-replica low pod:
// "p<gpu>-<k>" on GPU <gpu>.
void FillDgx(TestCluster& cluster, const std::string& node) {
  cluster.Add(MakeNode().Name(node).Profile("dgx1").Replicas(4).Allocatable(32).Obj());
  for (int g = 0; g < 8; ++g) {
    for (int k = 0; k < 4; ++k) {
      cluster.Add(
          Running("p" + std::to_string(g) + "-" + std::to_string(k), node, std::to_string(g)));
    }
  }
}

TEST(VictimSelectionTest, FourReplicasOfOneGpuDoNotFreeFourGpus) {
  TestCluster cluster;
  FillDgx(cluster, "dgx");
  // The scheduler's dry run counts replicas: four pods of GPU 0 free "4 GPUs".
  ProposedVictims proposed{{"uid-p0-0", "uid-p0-1", "uid-p0-2", "uid-p0-3"}, 0};
  const NodeState& node = *cluster.Node("dgx");
  const PodRequirements pod = Requirements(4);
  ASSERT_FALSE(EvaluateNode(pod, node.Without({"uid-p0-0", "uid-p0-1", "uid-p0-2", "uid-p0-3"}, 0),
                            cluster.preset())
                   .fits())
      << "the scheduler's proposal should not be enough for a 4-GPU pod";

  VictimChoice choice = ChooseVictims(pod, kHigh, node, cluster.preset(), proposed);
  ASSERT_TRUE(choice.possible) << choice.reason << ": " << choice.detail;
  EXPECT_FALSE(choice.as_proposed);
  // One pod from each of four GPUs is the fewest that frees four distinct GPUs.
  EXPECT_EQ(choice.victims.size(), 4u);
  std::set<int> gpus_freed;
  for (const std::string& uid : choice.victims) gpus_freed.insert(uid[5] - '0');  // "uid-p<g>-k"
  EXPECT_EQ(gpus_freed.size(), 4u);
  EXPECT_EQ(Count(choice.gpus), 4);
  for (int gpu : ToIndices(choice.gpus)) EXPECT_TRUE(gpus_freed.contains(gpu)) << gpu;
  // The four GPUs form an NVLink quad: every pair linked.
  for (int a : ToIndices(choice.gpus)) {
    for (int b : ToIndices(choice.gpus)) {
      if (a != b) {
        EXPECT_TRUE(node.shape().link(a, b).IsNvLink()) << a << "-" << b;
      }
    }
  }
  // The proposal's pods beyond the one on GPU 0 it may keep are spared; the others added.
  EXPECT_EQ(choice.added + (4 - choice.spared), 4);
  EXPECT_GT(choice.added, 0);
  // Evicting exactly these makes the pod pass gputopo's filter, on the GPUs the choice names.
  std::vector<std::string_view> uids(choice.victims.begin(), choice.victims.end());
  NodeEvaluation after = EvaluateNode(pod, node.Without(uids, 0), cluster.preset());
  ASSERT_TRUE(after.fits());
  EXPECT_EQ(after.gpus, choice.gpus);
  // Unproposed pods may break a PDB the scheduler spared: counted as possible violations.
  EXPECT_EQ(choice.pdb_violations, choice.added);
}

TEST(VictimSelectionTest, ClearsAnNvLinkIslandRatherThanTwoHalves) {
  TestCluster cluster;
  // Four NVLink pairs (GPUs 0-1, 2-3, 4-5, 6-7), one 1-GPU low pod on each GPU.
  cluster.Add(MakeNode().Name("n").Profile("pairs").Replicas(1).Allocatable(8).Obj());
  for (int g = 0; g < 8; ++g) cluster.Add(Running("p" + std::to_string(g), "n", std::to_string(g)));
  // The scheduler proposes two pods of different pairs: two GPUs, no NVLink between them.
  ProposedVictims proposed{{"uid-p1", "uid-p2"}, 0};
  const NodeState& node = *cluster.Node("n");
  ASSERT_FALSE(node.shape().InOneIsland(topology::Bit(1) | topology::Bit(2)));
  VictimChoice choice = ChooseVictims(Requirements(2), kHigh, node, cluster.preset(), proposed);
  ASSERT_TRUE(choice.possible) << choice.detail;
  EXPECT_EQ(choice.victims.size(), 2u);
  EXPECT_TRUE(node.shape().InOneIsland(choice.gpus)) << choice.detail;
  // It keeps one proposed pod and adds its NVLink partner.
  EXPECT_EQ(choice.added, 1);
  EXPECT_EQ(choice.spared, 1);
}

TEST(VictimSelectionTest, PrefersAnNvLinkQuadOnADgx1OverAnyFourGpus) {
  TestCluster cluster;
  cluster.Add(MakeNode().Name("n").Profile("dgx1").Replicas(1).Allocatable(8).Obj());
  for (int g = 0; g < 8; ++g) cluster.Add(Running("p" + std::to_string(g), "n", std::to_string(g)));
  const NodeState& node = *cluster.Node("n");
  // The whole DGX-1 is one NVLink island, but GPUs 1 and 4 have no NVLink between them.
  ProposedVictims proposed{{"uid-p0", "uid-p1", "uid-p2", "uid-p4"}, 0};
  ASSERT_FALSE(node.shape().link(1, 4).IsNvLink());
  VictimChoice choice = ChooseVictims(Requirements(4), kHigh, node, cluster.preset(), proposed);
  ASSERT_TRUE(choice.possible) << choice.detail;
  EXPECT_EQ(choice.victims.size(), 4u);
  for (int a : ToIndices(choice.gpus)) {
    for (int b : ToIndices(choice.gpus)) {
      if (a != b) {
        EXPECT_TRUE(node.shape().link(a, b).IsNvLink()) << a << "-" << b;
      }
    }
  }
  EXPECT_FALSE(choice.as_proposed);
}

TEST(VictimSelectionTest, KeepsTheSchedulersProposalWhenItWorks) {
  TestCluster cluster;
  cluster.Add(MakeNode().Name("n").Profile("dgx1").Replicas(1).Allocatable(8).Obj());
  for (int g = 0; g < 8; ++g) cluster.Add(Running("p" + std::to_string(g), "n", std::to_string(g)));
  // GPUs 0-3 are an NVLink quad on a DGX-1.
  ProposedVictims proposed{{"uid-p0", "uid-p1", "uid-p2", "uid-p3"}, 0};
  VictimChoice choice =
      ChooseVictims(Requirements(4), kHigh, *cluster.Node("n"), cluster.preset(), proposed);
  ASSERT_TRUE(choice.possible) << choice.detail;
  EXPECT_TRUE(choice.as_proposed);
  EXPECT_EQ(AsSet(choice.victims), AsSet(proposed.uids));
  EXPECT_EQ(choice.pdb_violations, 0);
  EXPECT_EQ(choice.added, 0);
  EXPECT_EQ(choice.spared, 0);
}

TEST(VictimSelectionTest, NeverEvictsPodsOfEqualOrHigherPriority) {
  TestCluster cluster;
  cluster.Add(MakeNode().Name("n").Profile("dgx1").Replicas(1).Allocatable(8).Obj());
  // Seven GPUs held at the preemptor's own priority, one by a low pod.
  for (int g = 0; g < 7; ++g)
    cluster.Add(Running("peer" + std::to_string(g), "n", std::to_string(g), kHigh));
  cluster.Add(Running("low", "n", "7"));
  VictimChoice two = ChooseVictims(Requirements(2), kHigh, *cluster.Node("n"), cluster.preset(),
                                   {{"uid-low", "uid-peer0"}, 0});
  EXPECT_FALSE(two.possible);
  EXPECT_EQ(two.reason, "gputopo: does not fit even with every lower-priority pod evicted");
  VictimChoice one =
      ChooseVictims(Requirements(1), kHigh, *cluster.Node("n"), cluster.preset(), {{"uid-low"}, 0});
  ASSERT_TRUE(one.possible);
  EXPECT_EQ(one.victims, std::vector<std::string>{"uid-low"});
  EXPECT_EQ(ToIndices(one.gpus), std::vector<int>{7});
}

TEST(VictimSelectionTest, LowerPrioritiesGoFirst) {
  TestCluster cluster;
  cluster.Add(MakeNode().Name("n").Profile("dgx1").Replicas(1).Allocatable(8).Obj());
  for (int g = 0; g < 7; ++g)
    cluster.Add(Running("mid" + std::to_string(g), "n", std::to_string(g), 500));
  cluster.Add(Running("lowest", "n", "7", 10));
  VictimChoice choice = ChooseVictims(Requirements(1), kHigh, *cluster.Node("n"), cluster.preset(),
                                      {{"uid-mid0"}, 0});
  ASSERT_TRUE(choice.possible);
  // Both free one GPU with no PDB at stake; the lower priority wins, and the proposed pod is
  // spared even though the other was not proposed.
  EXPECT_EQ(choice.max_priority, 500);
  EXPECT_EQ(choice.victims, std::vector<std::string>{"uid-mid0"})
      << "a proposed pod (no PDB at stake) goes before an unproposed one that may break a PDB";
  VictimChoice unproposed_only = ChooseVictims(Requirements(1), kHigh, *cluster.Node("n"),
                                               cluster.preset(), {{"uid-lowest"}, 0});
  EXPECT_EQ(unproposed_only.victims, std::vector<std::string>{"uid-lowest"});
  EXPECT_EQ(unproposed_only.max_priority, 10);
}

TEST(VictimSelectionTest, ProposedPdbViolationsBoundTheCount) {
  TestCluster cluster;
  cluster.Add(MakeNode().Name("n").Profile("dgx1").Replicas(1).Allocatable(8).Obj());
  for (int g = 0; g < 8; ++g) cluster.Add(Running("p" + std::to_string(g), "n", std::to_string(g)));
  VictimChoice all = ChooseVictims(
      Requirements(8), kHigh, *cluster.Node("n"), cluster.preset(),
      {{"uid-p0", "uid-p1", "uid-p2", "uid-p3", "uid-p4", "uid-p5", "uid-p6", "uid-p7"}, 1});
  ASSERT_TRUE(all.possible);
  EXPECT_TRUE(all.as_proposed);
  EXPECT_EQ(all.victims.size(), 8u);
  EXPECT_EQ(all.pdb_violations, 1);
}

TEST(VictimSelectionTest, ProposedPodsGputopoDoesNotTrackAreKept) {
  TestCluster cluster;
  cluster.Add(MakeNode().Name("n").Profile("dgx1").Replicas(1).Allocatable(8).Obj());
  for (int g = 0; g < 8; ++g) cluster.Add(Running("p" + std::to_string(g), "n", std::to_string(g)));
  // "cpu-only" holds no GPU (gputopo does not track it): the scheduler needs its CPU.
  VictimChoice choice = ChooseVictims(Requirements(1), kHigh, *cluster.Node("n"), cluster.preset(),
                                      {{"uid-p3", "cpu-only"}, 0});
  ASSERT_TRUE(choice.possible);
  EXPECT_EQ(choice.victims, (std::vector<std::string>{"uid-p3", "cpu-only"}));
  EXPECT_TRUE(choice.as_proposed);
}

TEST(VictimSelectionTest, FitsWithoutEvictionsKeepsTheProposalOrDropsTheNode) {
  TestCluster cluster;
  cluster.Add(MakeNode().Name("n").Profile("dgx1").Replicas(1).Allocatable(8).Obj());
  cluster.Add(Running("p0", "n", "0"));
  VictimChoice kept =
      ChooseVictims(Requirements(1), kHigh, *cluster.Node("n"), cluster.preset(), {{"cpu-hog"}, 0});
  ASSERT_TRUE(kept.possible);
  EXPECT_EQ(kept.victims, std::vector<std::string>{"cpu-hog"});
  VictimChoice none =
      ChooseVictims(Requirements(1), kHigh, *cluster.Node("n"), cluster.preset(), {{}, 0});
  EXPECT_FALSE(none.possible);
  EXPECT_EQ(none.reason, "gputopo: fits without evicting anything");
}

TEST(VictimSelectionTest, UnknownTopologyDropsTheNode) {
  TestCluster cluster;
  cluster.Add(MakeNode().Name("n").CorruptTopology("bad").Allocatable(8).Obj());
  cluster.Add(Running("p0", "n", "0"));
  VictimChoice choice =
      ChooseVictims(Requirements(1), kHigh, *cluster.Node("n"), cluster.preset(), {{"uid-p0"}, 0});
  EXPECT_FALSE(choice.possible);
  EXPECT_EQ(choice.reason, "gputopo: node topology unknown");
}

TEST(VictimSelectionTest, MultiGpuVictimFreesAllItsGpus) {
  TestCluster cluster;
  cluster.Add(MakeNode().Name("n").Profile("dgx1").Replicas(1).Allocatable(8).Obj());
  cluster.Add(Running("quad", "n", "0,1,2,3", kLow, 4));
  for (int g = 4; g < 8; ++g) cluster.Add(Running("p" + std::to_string(g), "n", std::to_string(g)));
  // Evicting the one 4-GPU pod beats evicting the four 1-GPU pods: fewer victims.
  VictimChoice choice = ChooseVictims(Requirements(4), kHigh, *cluster.Node("n"), cluster.preset(),
                                      {{"uid-quad", "uid-p4", "uid-p5", "uid-p6", "uid-p7"}, 0});
  ASSERT_TRUE(choice.possible);
  EXPECT_EQ(choice.victims, std::vector<std::string>{"uid-quad"});
  EXPECT_EQ(choice.spared, 4);
}

TEST(VictimSelectionTest, WatchedBudgetsSpareTheProtectedPairAndCountExactly) {
  TestCluster cluster;
  // Four NVLink pairs, one 1-GPU low pod on each GPU. A budget with no disruption left covers
  // the pods of pair 0-1; the scheduler (which cannot see GPUs) proposes exactly those two.
  cluster.Add(MakeNode().Name("n").Profile("pairs").Replicas(1).Allocatable(8).Obj());
  for (int g = 0; g < 8; ++g) cluster.Add(Running("p" + std::to_string(g), "n", std::to_string(g)));
  const NodeState& node = *cluster.Node("n");
  const ProposedVictims proposed{{"uid-p0", "uid-p1"}, 2};
  BudgetCoverage coverage;
  coverage.allowed = {0};
  coverage.budgets = {"default/keep"};
  coverage.budgets_of = {{"uid-p0", {0}}, {"uid-p1", {0}}};

  // Without budgets, the proposal works and is kept, with the scheduler's count.
  VictimChoice blind = ChooseVictims(Requirements(2), kHigh, node, cluster.preset(), proposed);
  ASSERT_TRUE(blind.possible);
  EXPECT_TRUE(blind.as_proposed);
  EXPECT_EQ(blind.pdb_violations, 2);
  EXPECT_FALSE(blind.pdb_counted);

  // With them, another NVLink pair is cleared and no budget breaks.
  VictimChoice seen =
      ChooseVictims(Requirements(2), kHigh, node, cluster.preset(), proposed, &coverage);
  ASSERT_TRUE(seen.possible) << seen.detail;
  EXPECT_TRUE(seen.pdb_counted);
  EXPECT_EQ(seen.pdb_violations, 0);
  EXPECT_EQ(seen.victims.size(), 2u);
  for (const std::string& uid : seen.victims) {
    EXPECT_NE(uid, "uid-p0");
    EXPECT_NE(uid, "uid-p1");
  }
  EXPECT_TRUE(node.shape().InOneIsland(seen.gpus)) << seen.detail;
  EXPECT_EQ(seen.added, 2);
  EXPECT_EQ(seen.spared, 2);

  // A budget that allows one disruption: taking the whole pair breaks it once, which the
  // count reports; every pair covered, so the fewest violations is 1.
  coverage.allowed = {1};
  for (int g = 2; g < 8; ++g) coverage.budgets_of["uid-p" + std::to_string(g)] = {0};
  VictimChoice one =
      ChooseVictims(Requirements(2), kHigh, node, cluster.preset(), proposed, &coverage);
  ASSERT_TRUE(one.possible);
  EXPECT_EQ(one.pdb_violations, 1);
  EXPECT_EQ(one.victims.size(), 2u);
  EXPECT_TRUE(node.shape().InOneIsland(one.gpus));
}

TEST(VictimSelectionTest, ABudgetWithRoomForEveryCandidateDoesNotSteerTheChoice) {
  TestCluster cluster;
  cluster.Add(MakeNode().Name("n").Profile("pairs").Replicas(1).Allocatable(8).Obj());
  for (int g = 0; g < 8; ++g) cluster.Add(Running("p" + std::to_string(g), "n", std::to_string(g)));
  const NodeState& node = *cluster.Node("n");
  // The budget counts pair 0-1 but allows two disruptions: evicting both breaks nothing, so the
  // scheduler's proposal stands, counted at 0.
  BudgetCoverage coverage;
  coverage.allowed = {2};
  coverage.budgets = {"default/roomy"};
  coverage.budgets_of = {{"uid-p0", {0}}, {"uid-p1", {0}}};
  VictimChoice choice = ChooseVictims(Requirements(2), kHigh, node, cluster.preset(),
                                      {{"uid-p0", "uid-p1"}, 0}, &coverage);
  ASSERT_TRUE(choice.possible);
  EXPECT_TRUE(choice.as_proposed) << choice.detail;
  EXPECT_EQ(choice.pdb_violations, 0);
  // With one disruption left the pair is at risk, and another pair is cleared instead.
  coverage.allowed = {1};
  VictimChoice tight = ChooseVictims(Requirements(2), kHigh, node, cluster.preset(),
                                     {{"uid-p0", "uid-p1"}, 1}, &coverage);
  ASSERT_TRUE(tight.possible);
  EXPECT_FALSE(tight.as_proposed);
  EXPECT_EQ(tight.pdb_violations, 0);
  EXPECT_TRUE(node.shape().InOneIsland(tight.gpus));
}

TEST(VictimSelectionTest, WatchedBudgetsLeaveUntrackedProposedPodsToTheSchedulersCount) {
  TestCluster cluster;
  cluster.Add(MakeNode().Name("n").Profile("dgx1").Replicas(1).Allocatable(8).Obj());
  for (int g = 0; g < 8; ++g) cluster.Add(Running("p" + std::to_string(g), "n", std::to_string(g)));
  BudgetCoverage coverage;  // no budget counts a GPU pod here
  VictimChoice choice = ChooseVictims(Requirements(1), kHigh, *cluster.Node("n"), cluster.preset(),
                                      {{"uid-p3", "cpu-only"}, 1}, &coverage);
  ASSERT_TRUE(choice.possible);
  EXPECT_EQ(choice.victims, (std::vector<std::string>{"uid-p3", "cpu-only"}));
  EXPECT_TRUE(choice.pdb_counted);
  // The GPU pod breaks nothing; the pod without GPUs may be the one the scheduler counted.
  EXPECT_EQ(choice.pdb_violations, 1);
}

TEST(NodeStateWithoutTest, EqualsTheStateBuiltWithoutThePods) {
  TestCluster with;
  TestCluster without;
  with.Add(MakeNode().Name("n").Profile("dgx1").Replicas(2).Allocatable(16).Obj());
  without.Add(MakeNode().Name("n").Profile("dgx1").Replicas(2).Allocatable(16).Obj());
  for (int i = 0; i < 10; ++i) {
    PodInfo pod = Running("p" + std::to_string(i), "n", std::to_string(i % 8));
    pod.annotations.emplace_back("gputopo.io/group", i % 2 == 0 ? "even" : "odd");
    with.Add(pod);
    if (i % 3 != 0) without.Add(pod);
  }
  const NodeState removed = with.Node("n")->Without({"uid-p0", "uid-p3", "uid-p6", "uid-p9"}, 7);
  const NodeState& built = *without.Node("n");
  EXPECT_EQ(removed.version(), 7u);
  EXPECT_EQ(removed.used_slots(), built.used_slots());
  EXPECT_EQ(removed.empty_gpus(), built.empty_gpus());
  EXPECT_EQ(removed.GroupGpus("even"), built.GroupGpus("even"));
  EXPECT_EQ(removed.GroupGpus("odd"), built.GroupGpus("odd"));
  for (int g = 0; g < 8; ++g) {
    EXPECT_EQ(removed.gpu(g).slots_used, built.gpu(g).slots_used) << g;
    EXPECT_EQ(removed.gpu(g).milli_used, built.gpu(g).milli_used) << g;
  }
  // The signature differs only by the shape's address, which both clusters intern apart, and
  // the learned mix's version (eight bytes after the first 40): `with` has seen enough GPU pods
  // to learn one, `without` has not.
  EXPECT_NE(removed.observed_workload(), nullptr);
  EXPECT_EQ(built.observed_workload(), nullptr);
  EXPECT_EQ(removed.signature().substr(8, 32), built.signature().substr(8, 32));
  EXPECT_EQ(removed.signature().substr(48), built.signature().substr(48));
}

}  // namespace
}  // namespace gputopo::policies
