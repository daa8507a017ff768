// The placement engine on whole nodes: time-slicing scenarios, locality, constraints, verdicts.
#include "policies/engine/evaluation.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "policies/engine/evaluation_cache.h"
#include "test/support/builders.h"
#include "test/support/machines.h"
#include "test/support/test_cluster.h"
#include "topology/link_type.h"

namespace gputopo::policies {
namespace {

using testing::ExpectSameAsEvaluateNode;
using testing::MakeNode;
using testing::MakePod;
using testing::PositionsOf;
using testing::TestCluster;
using topology::Bit;
using topology::Count;
using topology::ToIndices;

PodInfo Replica(const std::string& deployment, int i, int gpus = 1) {
  return MakePod()
      .Namespace("ml")
      .Name(deployment + "-5d8f7c9b6d-" + std::to_string(i))
      .Gpus(gpus)
      .OwnedByDeployment(deployment)
      .Obj();
}

bool AllPairsNvLink(const topology::TopologyShape& shape, GpuMask gpus) {
  for (int a : ToIndices(gpus)) {
    for (int b : ToIndices(gpus)) {
      if (a != b && !shape.link(a, b).IsNvLink()) return false;
    }
  }
  return true;
}

TEST(EvaluationTest, ReplicasLandOnDistinctGpusWhileDistinctGpusRemain) {
  TestCluster cluster;
  // A DGX-1 time-sliced 2 ways: 16 nvidia.com/gpu, 8 physical GPUs.
  cluster.Add(MakeNode().Name("dgx").Profile("dgx1").Replicas(2).Allocatable(16).Obj());
  std::set<int> used;
  for (int i = 0; i < 8; ++i) {
    NodeEvaluation e = cluster.Place(Replica("web", i), "dgx");
    ASSERT_TRUE(e.fits()) << i << ": " << e.detail;
    ASSERT_EQ(Count(e.gpus), 1);
    EXPECT_TRUE(used.insert(ToIndices(e.gpus).front()).second)
        << "replica " << i << " shares GPU " << ToIndices(e.gpus).front();
  }
  EXPECT_EQ(used.size(), 8u);
  // A 9th replica must share a GPU with a sibling: it still fits (spread is preferred), but the
  // spread component says so.
  NodeEvaluation ninth = cluster.Evaluate(Replica("web", 8), "dgx");
  ASSERT_TRUE(ninth.fits());
  EXPECT_EQ(cluster.preset().components()[0].component->Name(), "replica-spread");
  EXPECT_LT(ninth.component_scores[0], 1.0);
  // Another workload's pod is not held back by web's replicas.
  NodeEvaluation other = cluster.Evaluate(Replica("api", 0), "dgx");
  ASSERT_TRUE(other.fits());
  EXPECT_EQ(other.component_scores[0], 10.0);
}

TEST(EvaluationTest, RequiredSpreadFiltersGpusHoldingTheGroup) {
  TestCluster cluster;
  cluster.Add(MakeNode().Name("n").Profile("pcie8").Replicas(4).Allocatable(32).Obj());
  auto replica = [](int i) {
    return MakePod()
        .Name("db-" + std::to_string(i))
        .Gpus(1)
        .Group("db")
        .Annotation("gputopo.io/spread", "required")
        .Obj();
  };
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(cluster.Place(replica(i), "n").fits()) << i;
  // 24 slots are still free, but every GPU holds the group.
  NodeEvaluation e = cluster.Evaluate(replica(8), "n");
  EXPECT_EQ(e.verdict, Verdict::kUnschedulable);
  EXPECT_EQ(e.reason, "gputopo: spread required and the free GPUs hold the pod's group");
  EXPECT_NE(e.detail.find("8 already hold group default/db"), std::string::npos) << e.detail;
}

TEST(EvaluationTest, FourGpuPodOnDgx1GetsAFullyNvLinkedQuad) {
  TestCluster cluster;
  cluster.Add(MakeNode().Name("dgx").Profile("dgx1").Replicas(1).Allocatable(8).Obj());
  const auto node = cluster.Node("dgx");
  NodeEvaluation e = cluster.Evaluate(MakePod().Name("train").Gpus(4).Obj(), "dgx");
  ASSERT_TRUE(e.fits());
  EXPECT_TRUE(AllPairsNvLink(node->shape(), e.gpus)) << ToIndices(e.gpus).size();
  EXPECT_EQ(e.gpus, topology::FirstN(4));  // ties with {4..7}: lowest indices
  EXPECT_EQ(cluster.preset().components()[1].component->Name(), "locality");
  EXPECT_DOUBLE_EQ(e.component_scores[1], 10.0);

  // With GPU 2 taken, the only fully NVLinked quad left is {4,5,6,7}.
  cluster.Add(MakePod().Name("busy").Gpus(1).OnNode("dgx").Assigned("2").Obj());
  e = cluster.Evaluate(MakePod().Name("train").Gpus(4).Obj(), "dgx");
  ASSERT_TRUE(e.fits());
  EXPECT_EQ(e.gpus, Bit(4) | Bit(5) | Bit(6) | Bit(7));
  EXPECT_TRUE(AllPairsNvLink(cluster.Node("dgx")->shape(), e.gpus));
}

TEST(EvaluationTest, MultiGpuPodOnNvSwitchMachineStaysOnOneNumaNode) {
  TestCluster cluster;
  cluster.Add(MakeNode().Name("hgx").Profile("hgx-h100").Replicas(1).Allocatable(8).Obj());
  cluster.Add(MakePod().Name("a").Gpus(1).OnNode("hgx").Assigned("0").Obj());
  // Every pair is NV18, so bandwidth ties; GPUs 1-3 and 4-7 both offer NUMA-local sets.
  NodeEvaluation e = cluster.Evaluate(MakePod().Name("train").Gpus(3).Obj(), "hgx");
  ASSERT_TRUE(e.fits());
  EXPECT_TRUE(cluster.Node("hgx")->shape().InOneNuma(e.gpus)) << ToIndices(e.gpus).front();
}

TEST(EvaluationTest, RequiredLocalityIsUnresolvableWhereTheMachineCannotProvideIt) {
  TestCluster cluster;
  cluster.Add(MakeNode().Name("pcie").Profile("pcie8").Replicas(1).Allocatable(8).Obj());
  cluster.Add(MakeNode().Name("pairs").Profile("pairs").Replicas(1).Allocatable(8).Obj());
  cluster.Add(MakeNode().Name("plain").GpuCount(8).Allocatable(8).Obj());
  auto pod = [](int gpus, const char* locality) {
    return MakePod()
        .Name("p")
        .Gpus(gpus)
        .Annotation("gputopo.io/locality", locality)
        .Annotation("gputopo.io/locality-mode", "required")
        .Obj();
  };
  NodeEvaluation e = cluster.Evaluate(pod(2, "nvlink"), "pcie");
  EXPECT_EQ(e.verdict, Verdict::kUnresolvable);
  EXPECT_EQ(e.reason, "gputopo: no NVLink island large enough");
  e = cluster.Evaluate(pod(2, "nvlink"), "pairs");
  ASSERT_TRUE(e.fits());
  EXPECT_TRUE(cluster.Node("pairs")->shape().InOneIsland(e.gpus));
  e = cluster.Evaluate(pod(4, "nvlink"), "pairs");
  EXPECT_EQ(e.verdict, Verdict::kUnresolvable);
  EXPECT_NE(e.detail.find("largest has 2"), std::string::npos) << e.detail;
  e = cluster.Evaluate(pod(4, "numa"), "pcie");
  ASSERT_TRUE(e.fits());
  EXPECT_TRUE(cluster.Node("pcie")->shape().InOneNuma(e.gpus));
  EXPECT_EQ(cluster.Evaluate(pod(5, "numa"), "pcie").verdict, Verdict::kUnresolvable);
  e = cluster.Evaluate(pod(2, "nvlink"), "plain");
  EXPECT_EQ(e.verdict, Verdict::kUnresolvable);
  EXPECT_NE(e.detail.find("links are unknown"), std::string::npos) << e.detail;
}

TEST(EvaluationTest, RequiredIslandWithoutEnoughFreeGpusIsUnschedulable) {
  TestCluster cluster;
  cluster.Add(MakeNode().Name("pairs").Profile("pairs").Replicas(1).Allocatable(8).Obj());
  // One GPU of every NVLink pair busy: 4 GPUs free, but no free pair.
  for (int g : {0, 2, 4, 6}) {
    cluster.Add(MakePod()
                    .Name("busy-" + std::to_string(g))
                    .Gpus(1)
                    .OnNode("pairs")
                    .Assigned(std::to_string(g))
                    .Obj());
  }
  NodeEvaluation e = cluster.Evaluate(
      MakePod().Name("p").Gpus(2).Annotation("gputopo.io/locality-mode", "required").Obj(),
      "pairs");
  EXPECT_EQ(e.verdict, Verdict::kUnschedulable);
  EXPECT_EQ(e.reason, "gputopo: no NVLink island with enough free GPUs");
  // Preferred locality still places it, with a capped locality score.
  e = cluster.Evaluate(MakePod().Name("p").Gpus(2).Obj(), "pairs");
  ASSERT_TRUE(e.fits());
  EXPECT_LE(e.component_scores[1], 4.0);
  const auto explained = ExplainPlacement(*RequirementsOf(MakePod().Name("p").Gpus(2).Obj()),
                                          *cluster.Node("pairs"), cluster.preset(), e.gpus);
  ASSERT_EQ(explained.size(), cluster.preset().components().size());
  EXPECT_EQ(explained[1].name, "locality");
  EXPECT_DOUBLE_EQ(explained[1].score, e.component_scores[1]);
  EXPECT_NE(explained[1].detail.find("NOT inside one NVLink island"), std::string::npos);
}

TEST(EvaluationTest, PreferredLocalityRanksNvLinkNodesAbovePcieNodes) {
  TestCluster cluster;
  cluster.Add(MakeNode().Name("pcie").Profile("pcie8").Replicas(1).Allocatable(8).Obj());
  cluster.Add(MakeNode().Name("hgx").Profile("hgx-h100").Replicas(1).Allocatable(8).Obj());
  const PodInfo pod = MakePod().Name("train").Gpus(4).Obj();
  NodeEvaluation pcie = cluster.Evaluate(pod, "pcie");
  NodeEvaluation hgx = cluster.Evaluate(pod, "hgx");
  ASSERT_TRUE(pcie.fits() && hgx.fits());
  EXPECT_GT(hgx.weighted_score, pcie.weighted_score);
  EXPECT_GT(hgx.component_scores[1], pcie.component_scores[1]);
}

TEST(EvaluationTest, ExclusivePodsNeitherShareNorGetShared) {
  TestCluster cluster;
  cluster.Add(MakeNode().Name("n").Profile("pcie8").Replicas(4).Allocatable(32).Obj());
  for (int g = 0; g < 7; ++g) {
    cluster.Add(MakePod()
                    .Name("s" + std::to_string(g))
                    .Gpus(1)
                    .OnNode("n")
                    .Assigned(std::to_string(g))
                    .Obj());
  }
  const PodInfo exclusive =
      MakePod().Name("solo").Gpus(1).Annotation("gputopo.io/exclusive", "true").Obj();
  NodeEvaluation e = cluster.Place(exclusive, "n");
  ASSERT_TRUE(e.fits());
  EXPECT_EQ(e.gpus, Bit(7));  // the only GPU nobody holds
  EXPECT_TRUE(cluster.Node("n")->gpu(7).exclusive);
  // Nobody joins GPU 7 afterwards, although it has 3 of its 4 slots unused.
  for (int i = 0; i < 21; ++i) {
    NodeEvaluation next = cluster.Place(MakePod().Name("x" + std::to_string(i)).Gpus(1).Obj(), "n");
    ASSERT_TRUE(next.fits()) << i;
    EXPECT_NE(next.gpus, Bit(7));
  }
  // 7 GPUs x 4 slots are now used; 3 slots remain only on the exclusive GPU.
  NodeEvaluation full = cluster.Evaluate(MakePod().Name("late").Gpus(1).Obj(), "n");
  EXPECT_EQ(full.verdict, Verdict::kUnschedulable);
  EXPECT_NE(full.detail.find("1 held exclusively"), std::string::npos) << full.detail;
  // A second exclusive pod finds no empty GPU.
  NodeEvaluation second = cluster.Evaluate(
      MakePod().Name("solo2").Gpus(1).Annotation("gputopo.io/exclusive", "true").Obj(), "n");
  EXPECT_EQ(second.verdict, Verdict::kUnschedulable);
}

TEST(EvaluationTest, DeclaredSharesNeverExceedOneGpu) {
  TestCluster cluster;
  cluster.Add(MakeNode().Name("n").Profile("pcie8").Replicas(4).Allocatable(32).Obj());
  auto pod = [](const std::string& name, int milli) {
    return MakePod()
        .Name(name)
        .Gpus(1)
        .Group(name)
        .Annotation("gputopo.io/gpu-milli", std::to_string(milli))
        .Obj();
  };
  for (int g = 0; g < 8; ++g) {
    ASSERT_TRUE(cluster.Place(pod("big" + std::to_string(g), 800), "n").fits());
  }
  for (int g = 0; g < 8; ++g) EXPECT_EQ(cluster.Node("n")->gpu(g).milli_used, 800) << g;
  // 300 more milli fits nowhere (800 + 300 > 1000), although 24 slots are free.
  NodeEvaluation e = cluster.Evaluate(pod("medium", 300), "n");
  EXPECT_EQ(e.verdict, Verdict::kUnschedulable);
  EXPECT_EQ(e.reason, "gputopo: not enough GPUs with free capacity");
  EXPECT_NE(e.detail.find("8 full"), std::string::npos) << e.detail;
  EXPECT_TRUE(cluster.Evaluate(pod("small", 200), "n").fits());
}

TEST(EvaluationTest, SlotsComeFromAllocatableAndUnplacedPodsCount) {
  TestCluster cluster;
  // 8 GPUs, but the device plugin advertises only 6 (two unhealthy).
  cluster.Add(MakeNode().Name("n").Profile("dgx1").Replicas(1).Allocatable(6).Obj());
  // A pod bound without gputopo.io/assigned-gpus holds 3 slots somewhere unknown.
  cluster.Add(MakePod().Name("legacy").Gpus(3).OnNode("n").Obj());
  EXPECT_EQ(cluster.Node("n")->free_slots(), 3);
  NodeEvaluation e = cluster.Evaluate(MakePod().Name("p").Gpus(4).Obj(), "n");
  EXPECT_EQ(e.verdict, Verdict::kUnschedulable);
  EXPECT_EQ(e.reason, "gputopo: not enough free GPU slots");
  EXPECT_NE(e.detail.find("3 held by pods on unknown GPUs"), std::string::npos) << e.detail;
  EXPECT_TRUE(cluster.Evaluate(MakePod().Name("p").Gpus(3).Obj(), "n").fits());
  // More than the node could ever offer is unresolvable.
  EXPECT_EQ(cluster.Evaluate(MakePod().Name("p").Gpus(7).Obj(), "n").verdict,
            Verdict::kUnresolvable);
  EXPECT_EQ(cluster.Evaluate(MakePod().Name("p").Gpus(9).Obj(), "n").verdict,
            Verdict::kUnresolvable);
}

TEST(EvaluationTest, CorruptOrUnknownTopology) {
  TestCluster cluster;
  cluster.Add(MakeNode().Name("bad").CorruptTopology("not valid JSON").Allocatable(8).Obj());
  cluster.Add(MakeNode().Name("plain").GpuCount(4).Allocatable(4).Obj());
  NodeEvaluation e = cluster.Evaluate(MakePod().Name("p").Gpus(1).Obj(), "bad");
  EXPECT_EQ(e.verdict, Verdict::kUnresolvable);
  EXPECT_EQ(e.reason, "gputopo: node topology invalid");
  EXPECT_NE(e.detail.find("not valid JSON"), std::string::npos) << e.detail;
  // Unknown links: schedulable, with the locality component's unknown score.
  e = cluster.Evaluate(MakePod().Name("p").Gpus(2).Obj(), "plain");
  ASSERT_TRUE(e.fits());
  EXPECT_EQ(e.component_scores[1], 5.0);
}

TEST(EvaluationTest, DeterministicWithLowestIndexTieBreak) {
  TestCluster cluster;
  cluster.Add(MakeNode().Name("hgx").Profile("hgx-h100").Replicas(4).Allocatable(32).Obj());
  const PodInfo pod = MakePod().Name("p").Gpus(1).Obj();
  NodeEvaluation a = cluster.Evaluate(pod, "hgx");
  NodeEvaluation b = cluster.Evaluate(pod, "hgx");
  EXPECT_EQ(a.gpus, Bit(0));  // all 8 GPUs are equal: GPU 0
  EXPECT_EQ(a.gpus, b.gpus);
  EXPECT_EQ(a.weighted_score, b.weighted_score);
  EXPECT_EQ(a.candidates, 8u);
}

TEST(EvaluationTest, ReservationsAreSeenByTheNextEvaluation) {
  TestCluster cluster;
  cluster.Add(MakeNode().Name("n").Profile("dgx1").Replicas(1).Allocatable(8).Obj());
  NodeEvaluation first = cluster.Evaluate(MakePod().Name("a").Gpus(1).Obj(), "n");
  Reservation r{MakePod().Name("a").Gpus(1).Obj(), "n", ToIndices(first.gpus),
                cluster.Node("n")->version()};
  ASSERT_TRUE(cluster.state().Reserve(r).ok());
  NodeEvaluation second = cluster.Evaluate(MakePod().Name("b").Gpus(1).Obj(), "n");
  ASSERT_TRUE(second.fits());
  EXPECT_NE(second.gpus, first.gpus);
  EXPECT_TRUE(cluster.Node("n")->gpu(ToIndices(first.gpus).front()).occupants.front().reserved);
}

TEST(EvaluationTest, LargeMachinesUseTheHeuristicSearchAndStayInAnIsland) {
  TestCluster cluster;
  // 32 GPUs in four NV12 all-to-all groups of 8; SYS between groups.
  MachineTopology m(32);
  for (int a = 0; a < 32; ++a) {
    m.gpu(a).numa_node = a / 16;
    for (int b = a + 1; b < 32; ++b) {
      m.SetLink(a, b, *topology::ParseLink(a / 8 == b / 8 ? "NV12" : "SYS"));
    }
  }
  cluster.Add(MakeNode().Name("big").Topology(m).Replicas(1).Allocatable(32).Obj());
  NodeEvaluation e = cluster.Evaluate(MakePod().Name("p").Gpus(8).Obj(), "big");
  ASSERT_TRUE(e.fits());
  EXPECT_TRUE(e.heuristic);  // C(32, 8) = 10,518,300 sets is above the exact limit
  EXPECT_TRUE(cluster.Node("big")->shape().InOneIsland(e.gpus));
  EXPECT_DOUBLE_EQ(e.component_scores[1], 10.0);
}

TEST(PodEvaluatorTest, IdenticalNodesAreSearchedOnce) {
  TestCluster cluster;
  for (int i = 0; i < 50; ++i) {
    cluster.Add(
        MakeNode().Name("n" + std::to_string(i)).Profile("dgx1").Replicas(2).Allocatable(16).Obj());
  }
  cluster.Add(Replica("web", 0, 1));  // pending: holds nothing
  cluster.Add(MakePod()
                  .Namespace("ml")
                  .Name("web-5d8f7c9b6d-x")
                  .Gpus(1)
                  .OwnedByDeployment("web")
                  .OnNode("n7")
                  .Assigned("0")
                  .Obj());
  const PodRequirements req = *RequirementsOf(Replica("web", 1, 2));
  PodEvaluator evaluator(req, cluster.preset());
  auto snapshot = cluster.state().Snapshot();
  std::vector<uint32_t> results;
  for (const auto& node : snapshot->nodes()) results.push_back(evaluator.Evaluate(*node));
  // 49 empty nodes share one search; n7 (a replica of the group on GPU 0) gets its own.
  EXPECT_EQ(evaluator.memo_hits(), 48u);
  EXPECT_EQ(evaluator.evaluation_count(), 50u);
  EXPECT_EQ(&evaluator.evaluation(results[3]), &evaluator.evaluation(results[0]));  // shared
  const size_t n7 = snapshot->FindIndex("n7");
  EXPECT_NE(results[n7], results[0]);
  EXPECT_FALSE(topology::Has(evaluator.evaluation(results[n7]).gpus, 0));
  // Same answer as evaluating the node on its own.
  EXPECT_EQ(evaluator.evaluation(results[3]).gpus,
            EvaluateNode(req, *snapshot->nodes()[3], cluster.preset()).gpus);
}

}  // namespace
}  // namespace gputopo::policies

namespace gputopo::policies {
namespace {

TEST(EvaluationTest, ExclusivePodsDoNotTrustGpusThatPodsOnUnknownGpusMayHold) {
  TestCluster cluster;
  cluster.Add(MakeNode().Name("n").Profile("pcie8").Replicas(2).Allocatable(16).Obj());
  // Bound before gputopo: 2 replicas on GPUs nobody recorded.
  cluster.Add(MakePod().Name("legacy").Gpus(2).OnNode("n").Obj());
  // 8 GPUs look empty and 14 slots are free, but 2 of the "empty" GPUs may hold the legacy
  // pod: only 8 - 2 = 6 are surely empty.
  const PodInfo seven =
      MakePod().Name("x").Gpus(7).Annotation("gputopo.io/exclusive", "true").Obj();
  NodeEvaluation e = cluster.Evaluate(seven, "n");
  EXPECT_EQ(e.verdict, Verdict::kUnschedulable);
  EXPECT_EQ(e.reason, "gputopo: pods on unknown GPUs may hold the empty GPUs");
  const PodInfo six = MakePod().Name("z").Gpus(6).Annotation("gputopo.io/exclusive", "true").Obj();
  EXPECT_TRUE(cluster.Evaluate(six, "n").fits());
  EXPECT_TRUE(cluster.Evaluate(MakePod().Name("y").Gpus(7).Obj(), "n").fits());
}

}  // namespace
}  // namespace gputopo::policies

namespace gputopo::policies {
namespace {

TEST(EvaluationCacheTest, ReusesEvaluationsAcrossCyclesUntilTheNodeChanges) {
  TestCluster cluster;
  for (int i = 0; i < 20; ++i) {
    cluster.Add(
        MakeNode().Name("n" + std::to_string(i)).Profile("dgx1").Replicas(2).Allocatable(16).Obj());
  }
  EvaluationCache cache;
  const PodRequirements req = *RequirementsOf(MakePod().Name("p").Gpus(2).Obj());
  auto run = [&](EvaluationCache* c) {
    PodEvaluator evaluator(req, cluster.preset(), c);
    std::vector<GpuMask> gpus;
    for (const auto& node : cluster.state().Snapshot()->nodes()) {
      gpus.push_back(evaluator.evaluation(evaluator.Evaluate(*node)).gpus);
    }
    return std::make_pair(gpus, evaluator.cache_hits());
  };
  auto [first, first_hits] = run(&cache);
  EXPECT_EQ(first_hits, 0u);
  auto [second, second_hits] = run(&cache);
  EXPECT_EQ(second_hits, 20u);  // nothing changed: every node answered from the cache
  EXPECT_EQ(first, second);
  // A pod lands on n3: its new version misses, the other 19 still hit, and the answer for n3
  // is the fresh one (the same as without a cache).
  cluster.Add(MakePod().Name("busy").Gpus(2).OnNode("n3").Assigned("0,1").Obj());
  auto [third, third_hits] = run(&cache);
  EXPECT_EQ(third_hits, 19u);
  EXPECT_EQ(third, run(nullptr).first);
  // Another shape (4 GPUs) is a different key.
  const PodRequirements four = *RequirementsOf(MakePod().Name("q").Gpus(4).Obj());
  PodEvaluator other(four, cluster.preset(), &cache);
  other.Evaluate(*cluster.Node("n0"));
  EXPECT_EQ(other.cache_hits(), 0u);
}

TEST(EvaluationCacheTest, NodeAnswersAreKeyedByNodeVersionShapeAndGroupGpusAndBounded) {
  TestCluster cluster;
  cluster.Add(MakeNode().Name("n").Profile("dgx1").Replicas(2).Allocatable(16).Obj());
  EvaluationCache cache;
  const uint64_t shape = cache.ShapeId("shape");
  EXPECT_EQ(cache.ShapeId("shape"), shape);
  EXPECT_NE(cache.ShapeId("other"), shape);
  auto node = cluster.Node("n");
  auto e = std::make_shared<const NodeEvaluation>();
  cache.Insert(*node, 0, shape, e);
  EXPECT_EQ(cache.Find(*node, 0, shape), e);
  EXPECT_EQ(cache.Find(*node, 1, shape), nullptr);  // group GPUs are part of the key
  EXPECT_EQ(cache.Find(*node, 0, shape + 1), nullptr);
  // A new state of the node is another key: never answered with the old state's evaluation.
  cluster.Add(MakePod().Name("p").Gpus(1).OnNode("n").Assigned("0").Obj());
  auto changed = cluster.Node("n");
  ASSERT_NE(changed->version(), node->version());
  EXPECT_EQ(cache.Find(*changed, 0, shape), nullptr);
  // Bounded: after kNodeAnswers more answers, the first is gone, the newest are kept.
  for (uint64_t s = 0; s < EvaluationCache::kNodeAnswers; ++s) cache.Insert(*changed, 0, s, e);
  EXPECT_LE(cache.node_answers(), EvaluationCache::kNodeAnswers);
  EXPECT_EQ(cache.Find(*node, 0, shape), nullptr);
  EXPECT_EQ(cache.Find(*changed, 0, EvaluationCache::kNodeAnswers - 1), e);
}

}  // namespace
}  // namespace gputopo::policies

namespace gputopo::policies {
namespace {

TEST(ShapeTableTest, AnswersLikeEvaluatingEachNodeAndOnlyReevaluatesChangedNodes) {
  TestCluster cluster;
  std::vector<std::string> names;
  for (int i = 0; i < 30; ++i) {
    names.push_back("n" + std::to_string(i));
    cluster.Add(MakeNode()
                    .Name(names.back())
                    .Profile(i % 2 ? "dgx1" : "hgx-h100")
                    .Replicas(2)
                    .Allocatable(16)
                    .Obj());
  }
  names.push_back("not-a-node");
  // Replicas of "web" on n4 and n9: those nodes are evaluated with the group's GPUs.
  cluster.Add(Replica("web", 100));
  cluster.Add(MakePod()
                  .Namespace("ml")
                  .Name("web-5d8f7c9b6d-a")
                  .Gpus(1)
                  .OwnedByDeployment("web")
                  .OnNode("n4")
                  .Assigned("0")
                  .Obj());
  cluster.Add(MakePod()
                  .Namespace("ml")
                  .Name("web-5d8f7c9b6d-b")
                  .Gpus(1)
                  .OwnedByDeployment("web")
                  .OnNode("n9")
                  .Assigned("3")
                  .Obj());
  // Other workloads elsewhere: nodes in many states.
  for (int i = 0; i < 30; i += 3) {
    cluster.Add(MakePod()
                    .Name("other-" + std::to_string(i))
                    .Gpus(1)
                    .Group("batch")
                    .OnNode(names[static_cast<size_t>(i)])
                    .Assigned(std::to_string(i % 8))
                    .Obj());
  }
  EvaluationCache cache;
  const PodRequirements req = *RequirementsOf(Replica("web", 1));
  auto snapshot = cluster.state().Snapshot();
  std::vector<size_t> positions = PositionsOf(*snapshot, names);
  ASSERT_EQ(positions.back(), ClusterSnapshot::kNotFound);

  PodEvaluator first(req, cluster.preset(), &cache);
  const CycleEvaluations a = first.EvaluateAt(*snapshot, positions);
  ExpectSameAsEvaluateNode(a, *snapshot, positions, req, cluster.preset());
  EXPECT_EQ(first.table_hits(), 0u);
  // The group's nodes got the group-aware answer: GPU 0 of n4 holds a replica already.
  const size_t n4 = 4;
  EXPECT_FALSE(topology::Has(a.per_node[n4].evaluation->gpus, 0));

  // Next cycle, nothing changed: all 30 nodes come from the group's table, n4 and n9 (which
  // hold the group) included.
  PodEvaluator second(req, cluster.preset(), &cache);
  const CycleEvaluations b = second.EvaluateAt(*snapshot, positions);
  ExpectSameAsEvaluateNode(b, *snapshot, positions, req, cluster.preset());
  EXPECT_EQ(second.table_hits(), 30u);
  EXPECT_EQ(second.evaluated(), 0u);

  // A pod lands on n7 (another group): only n7 is evaluated again, and answered freshly.
  cluster.Add(MakePod().Name("late").Gpus(2).Group("batch").OnNode("n7").Assigned("0,1").Obj());
  snapshot = cluster.state().Snapshot();
  PodEvaluator third(req, cluster.preset(), &cache);
  const CycleEvaluations c = third.EvaluateAt(*snapshot, positions);
  ExpectSameAsEvaluateNode(c, *snapshot, positions, req, cluster.preset());
  EXPECT_EQ(third.table_hits(), 29u);
  EXPECT_EQ(third.evaluated(), 1u);

  // A replica of the group lands on n12: from now on n12 is answered with the group's GPUs.
  cluster.Add(MakePod()
                  .Namespace("ml")
                  .Name("web-5d8f7c9b6d-c")
                  .Gpus(1)
                  .OwnedByDeployment("web")
                  .OnNode("n12")
                  .Assigned("5")
                  .Obj());
  snapshot = cluster.state().Snapshot();
  PodEvaluator fourth(req, cluster.preset(), &cache);
  const CycleEvaluations d = fourth.EvaluateAt(*snapshot, positions);
  ExpectSameAsEvaluateNode(d, *snapshot, positions, req, cluster.preset());
  EXPECT_FALSE(topology::Has(d.per_node[12].evaluation->gpus, 5));

  // A new node makes a new name index: the other nodes keep their slots, only the new node is
  // evaluated, and the answers are still right.
  cluster.Add(MakeNode().Name("a-new-node").Profile("dgx1").Replicas(2).Allocatable(16).Obj());
  names.push_back("a-new-node");
  snapshot = cluster.state().Snapshot();
  positions = PositionsOf(*snapshot, names);
  PodEvaluator fifth(req, cluster.preset(), &cache);
  const CycleEvaluations e = fifth.EvaluateAt(*snapshot, positions);
  ExpectSameAsEvaluateNode(e, *snapshot, positions, req, cluster.preset());
  EXPECT_EQ(fifth.table_hits(), 30u);  // every node but the new one

  // A node leaves and the nodes after it move to new positions: their slots move with them.
  cluster.state().RemoveNode("n20");
  snapshot = cluster.state().Snapshot();
  const std::vector<size_t> old_positions = positions;
  positions = PositionsOf(*snapshot, names);
  ASSERT_NE(positions[25], old_positions[25]) << "the test needs positions to move";
  PodEvaluator sixth(req, cluster.preset(), &cache);
  const CycleEvaluations f = sixth.EvaluateAt(*snapshot, positions);
  ExpectSameAsEvaluateNode(f, *snapshot, positions, req, cluster.preset());
  EXPECT_EQ(sixth.table_hits(), 30u);  // the new node's slot is used now, n20's is gone
}

// Requests naming many of the nodes are answered in position order, others in request order:
// both give every entry its own node's answer, whatever the order, with repeated and unknown
// names among them.
TEST(ShapeTableTest, AnswersInRequestOrderWhetherSweptByPositionOrNot) {
  TestCluster cluster;
  std::vector<std::string> names;
  for (int i = 0; i < 40; ++i) {
    names.push_back("n" + std::to_string(i));
    cluster.Add(MakeNode()
                    .Name(names.back())
                    .Profile(i % 3 ? "dgx1" : "hgx-h100")
                    .Replicas(2)
                    .Allocatable(16)
                    .Obj());
    for (int p = 0; p < i % 5; ++p) {  // nodes in different states: different answers
      cluster.Add(
          MakePod()
              .Name("busy-" + std::to_string(i) + "-" + std::to_string(p))
              .Gpus(1 + p % 2)
              .Group(p % 2 ? "web" : "batch")
              .OnNode(names.back())
              .Assigned(p % 2 ? std::to_string(p) + "," + std::to_string(p + 4) : std::to_string(p))
              .Obj());
    }
  }
  const PodRequirements req =
      *RequirementsOf(MakePod().Namespace("ml").Name("web-1").Gpus(2).Group("web").Obj());
  auto snapshot = cluster.state().Snapshot();
  // Shuffled, with repeats (kube-scheduler sends none, a broken client might) and unknowns.
  std::vector<std::string> asked = names;
  std::mt19937 rng(7);
  std::shuffle(asked.begin(), asked.end(), rng);
  asked.insert(asked.begin() + 3, "n17");
  asked.push_back("nowhere");
  asked.push_back(asked[0]);
  const std::vector<size_t> positions = PositionsOf(*snapshot, asked);
  ASSERT_GE(positions.size(), snapshot->node_count() / PodEvaluator::kSweepShare);

  EvaluationCache cache;
  PodEvaluator swept(req, cluster.preset(), &cache);
  const CycleEvaluations all = swept.EvaluateAt(*snapshot, positions);
  ExpectSameAsEvaluateNode(all, *snapshot, positions, req, cluster.preset());
  EXPECT_EQ(all.per_node.back().evaluation, all.per_node.front().evaluation);

  // One name at a time (under 1/kSweepShare of the nodes): the same answers, from the table.
  for (size_t i = 0; i < positions.size(); ++i) {
    PodEvaluator one(req, cluster.preset(), &cache);
    const CycleEvaluations single = one.EvaluateAt(*snapshot, {positions[i]});
    ExpectSameAsEvaluateNode(single, *snapshot, {positions[i]}, req, cluster.preset());
    if (positions[i] == ClusterSnapshot::kNotFound) continue;
    EXPECT_EQ(single.per_node[0].verdict, all.per_node[i].verdict) << asked[i];
    EXPECT_EQ(single.per_node[0].evaluation->gpus, all.per_node[i].evaluation->gpus) << asked[i];
  }
}

TEST(ShapeTableTest, RefreshEvaluatesChangedNodesSoTheNextCycleOnlyReads) {
  TestCluster cluster;
  std::vector<std::string> names;
  for (int i = 0; i < 12; ++i) {
    names.push_back("n" + std::to_string(i));
    cluster.Add(
        MakeNode().Name(names.back()).Profile("hgx-h100").Replicas(2).Allocatable(16).Obj());
  }
  EvaluationCache cache;
  const PodRequirements req = *RequirementsOf(MakePod().Name("p").Gpus(4).Obj());
  auto snapshot = cluster.state().Snapshot();
  std::vector<size_t> positions = PositionsOf(*snapshot, names);
  {
    PodEvaluator first(req, cluster.shared_preset(), &cache);
    (void)first.EvaluateAt(*snapshot, positions);
  }
  std::vector<EvaluationCache::TableShape> shapes = cache.RefreshableShapes();
  ASSERT_EQ(shapes.size(), 2u) << "the pod's group's table and the shape's base table";
  std::erase_if(shapes, [&](const auto& shape) { return shape.pod.group != req.group; });
  ASSERT_EQ(shapes.size(), 1u);
  EXPECT_EQ(shapes[0].pod.gpus, 4);
  EXPECT_EQ(shapes[0].preset, cluster.shared_preset());

  // Two nodes change, then the table is refreshed: exactly those two are evaluated.
  cluster.Add(MakePod().Name("a").Gpus(2).OnNode("n3").Assigned("0,1").Obj());
  cluster.Add(MakePod().Name("b").Gpus(1).OnNode("n8").Assigned("5").Obj());
  snapshot = cluster.state().Snapshot();
  PodEvaluator refresher(shapes[0].pod, shapes[0].preset, &cache);
  EXPECT_EQ(refresher.RefreshTable(*shapes[0].table, *snapshot), 2u);
  EXPECT_EQ(refresher.RefreshTable(*shapes[0].table, *snapshot), 0u) << "nothing changed since";

  // The next cycle of the shape reads every node from the table, and the answers are fresh.
  PodEvaluator next(req, cluster.shared_preset(), &cache);
  const CycleEvaluations got = next.EvaluateAt(*snapshot, positions);
  EXPECT_EQ(next.table_hits(), 12u);
  ExpectSameAsEvaluateNode(got, *snapshot, positions, req, cluster.preset());
}

// Node versions only grow: an answer for an older version (a cycle on an older snapshot that
// raced a refresh) never replaces a newer one, but is still returned for that cycle to use.
TEST(ShapeTableTest, AnOlderVersionNeverReplacesANewerAnswer) {
  ShapeTable table;
  const std::vector<std::string_view> names = {"a", "b"};
  table.Attach(std::make_shared<const FlatNameIndex>(names));
  auto evaluation = [](double score) {
    NodeEvaluation e;
    e.verdict = Verdict::kFits;
    e.weighted_score = score;
    return std::make_shared<const NodeEvaluation>(e);
  };
  (void)table.Store(1, 7, evaluation(7.0));
  const EvaluationRef older = table.Store(1, 5, evaluation(5.0));
  EXPECT_DOUBLE_EQ(older.weighted_score, 5.0);
  ASSERT_NE(table.Find(1, 7), nullptr);
  EXPECT_DOUBLE_EQ(table.Find(1, 7)->weighted_score, 7.0);
  EXPECT_EQ(table.Find(1, 5), nullptr);
  (void)table.Store(1, 9, evaluation(9.0));
  EXPECT_DOUBLE_EQ(table.Find(1, 9)->weighted_score, 9.0);
}

// A spreading pod's table is its group's: nodes holding the group are answered with the
// group's GPUs from it, and a refresh evaluates the changed ones with those GPUs; the shape's
// base table (a group on no node) is refreshed alongside.
TEST(ShapeTableTest, RefreshEvaluatesChangedNodesOfTheTablesGroupWithItsGpus) {
  TestCluster cluster;
  std::vector<std::string> names;
  for (int i = 0; i < 6; ++i) {
    names.push_back("n" + std::to_string(i));
    cluster.Add(
        MakeNode().Name(names.back()).Profile("hgx-h100").Replicas(4).Allocatable(32).Obj());
  }
  auto replica = [](const std::string& name, int gpus) {
    return MakePod().Namespace("ml").Name(name).Gpus(gpus).OwnedByDeployment("web");
  };
  cluster.Add(replica("web-1", 1).OnNode("n1").Assigned("0").Obj());
  EvaluationCache cache;
  const PodRequirements req = *RequirementsOf(replica("web-new", 2).Obj());
  auto snapshot = cluster.state().Snapshot();
  const std::vector<size_t> positions = PositionsOf(*snapshot, names);
  {
    PodEvaluator first(req, cluster.shared_preset(), &cache);
    (void)first.EvaluateAt(*snapshot, positions);
  }
  const std::vector<EvaluationCache::TableShape> shapes = cache.RefreshableShapes();
  ASSERT_EQ(shapes.size(), 2u) << "the group's table and the shape's base table";
  const auto group_table = std::find_if(shapes.begin(), shapes.end(), [&](const auto& shape) {
    return shape.pod.group == req.group;
  });
  const auto base_table = std::find_if(shapes.begin(), shapes.end(),
                                       [&](const auto& shape) { return shape.pod.group.empty(); });
  ASSERT_NE(group_table, shapes.end());
  ASSERT_NE(base_table, shapes.end());

  // Another replica lands on n3, and a pod of another group on n1: both hold the group now.
  cluster.Add(replica("web-2", 1).OnNode("n3").Assigned("2").Obj());
  cluster.Add(MakePod().Name("other").Gpus(1).Group("batch").OnNode("n1").Assigned("5").Obj());
  snapshot = cluster.state().Snapshot();
  PodEvaluator group_refresher(group_table->pod, group_table->preset, &cache);
  EXPECT_EQ(group_refresher.RefreshTable(*group_table->table, *snapshot), 2u) << "n1 and n3";
  PodEvaluator base_refresher(base_table->pod, base_table->preset, &cache);
  EXPECT_EQ(base_refresher.RefreshTable(*base_table->table, *snapshot), 2u) << "n1 and n3";

  PodEvaluator next(req, cluster.shared_preset(), &cache);
  const CycleEvaluations got = next.EvaluateAt(*snapshot, positions);
  EXPECT_EQ(next.evaluated(), 0u) << "every answer was ready";
  EXPECT_EQ(next.table_hits(), names.size()) << "group nodes included";
  ExpectSameAsEvaluateNode(got, *snapshot, positions, req, cluster.preset());
  EXPECT_FALSE(topology::Has(got.per_node[3].evaluation->gpus, 2));  // the group's GPU avoided
}

// A Deployment with a replica on every node, and the first pod of another group: once the
// refresher has filled the base table, the new group's table takes the base table's answers
// for every node its filter rules out, so only the nodes holding the new group are evaluated;
// both groups' next cycles only read.
TEST(ShapeTableTest, ANewGroupIsSeededFromTheBaseTable) {
  TestCluster cluster;
  std::vector<std::string> names;
  for (int i = 0; i < 8; ++i) {
    names.push_back("n" + std::to_string(i));
    cluster.Add(MakeNode().Name(names.back()).Profile("dgx1").Replicas(4).Allocatable(32).Obj());
    cluster.Add(MakePod()
                    .Namespace("ml")
                    .Name("web-" + std::to_string(i))
                    .Gpus(1)
                    .OwnedByDeployment("web")
                    .OnNode(names.back())
                    .Assigned(std::to_string(i % 8))
                    .Obj());
  }
  cluster.Add(MakePod()
                  .Namespace("ml")
                  .Name("batch-0")
                  .Gpus(1)
                  .OwnedByDeployment("batch")
                  .OnNode("n5")
                  .Assigned("3")
                  .Obj());
  EvaluationCache cache;
  auto snapshot = cluster.state().Snapshot();
  const std::vector<size_t> positions = PositionsOf(*snapshot, names);
  const PodRequirements web = *RequirementsOf(
      MakePod().Namespace("ml").Name("web-new").Gpus(1).OwnedByDeployment("web").Obj());
  const PodRequirements batch = *RequirementsOf(
      MakePod().Namespace("ml").Name("batch-new").Gpus(1).OwnedByDeployment("batch").Obj());
  ASSERT_EQ(EvaluationShape(web, cluster.preset()), EvaluationShape(batch, cluster.preset()));
  {
    PodEvaluator first(web, cluster.shared_preset(), &cache);
    ExpectSameAsEvaluateNode(first.EvaluateAt(*snapshot, positions), *snapshot, positions, web,
                             cluster.preset());
  }
  // What the TableRefresher does next: the base table is filled in the background.
  for (const EvaluationCache::TableShape& shape : cache.RefreshableShapes()) {
    PodEvaluator refresher(shape.pod, shape.preset, &cache);
    (void)refresher.RefreshTable(*shape.table, *snapshot);
  }
  PodEvaluator first_batch(batch, cluster.shared_preset(), &cache);
  ExpectSameAsEvaluateNode(first_batch.EvaluateAt(*snapshot, positions), *snapshot, positions,
                           batch, cluster.preset());
  EXPECT_EQ(first_batch.evaluated(), 1u) << "only n5 holds batch";
  EXPECT_EQ(first_batch.table_hits(), names.size() - 1) << "the rest from the base table";
  for (const PodRequirements* pod : {&web, &batch}) {
    PodEvaluator next(*pod, cluster.shared_preset(), &cache);
    ExpectSameAsEvaluateNode(next.EvaluateAt(*snapshot, positions), *snapshot, positions, *pod,
                             cluster.preset());
    EXPECT_EQ(next.table_hits(), names.size());
    EXPECT_EQ(next.evaluated(), 0u);
  }
}

TEST(ShapeTableTest, OnlyRecentTablesWithASharedPresetAreRefreshable) {
  TestCluster cluster;
  cluster.Add(MakeNode().Name("n0").Profile("dgx1").Replicas(2).Allocatable(16).Obj());
  EvaluationCache cache;
  auto snapshot = cluster.state().Snapshot();
  const std::vector<size_t> positions = PositionsOf(*snapshot, {"n0"});
  const PodRequirements one = *RequirementsOf(MakePod().Name("p").Gpus(1).Obj());
  PodEvaluator plain(one, cluster.preset(), &cache);  // no shared preset: cannot be refreshed
  (void)plain.EvaluateAt(*snapshot, positions);
  EXPECT_TRUE(cache.RefreshableShapes().empty());
  const PodRequirements two = *RequirementsOf(MakePod().Name("p").Gpus(2).Obj());
  PodEvaluator shared(two, cluster.shared_preset(), &cache);
  (void)shared.EvaluateAt(*snapshot, positions);
  ASSERT_EQ(cache.RefreshableShapes().size(), 2u);  // the group's table and the base table
  for (const auto& shape : cache.RefreshableShapes()) EXPECT_EQ(shape.pod.gpus, 2);
  // Other shapes' lookups push it out of the recent ones (its table is kept).
  for (uint64_t i = 0; i < EvaluationCache::kRecentUses; ++i) {
    PodEvaluator again(one, cluster.preset(), &cache);
    (void)again.EvaluateAt(*snapshot, positions);
  }
  EXPECT_TRUE(cache.RefreshableShapes().empty());
}

TEST(ShapeTableTest, ACycleKeepsItsEvaluationsAliveAfterTheCacheForgetsThem) {
  TestCluster cluster;
  std::vector<std::string> names;
  for (int i = 0; i < 4; ++i) {
    names.push_back("n" + std::to_string(i));
    cluster.Add(MakeNode().Name(names.back()).Profile("dgx1").Replicas(4).Allocatable(32).Obj());
  }
  cluster.Add(MakePod().Name("first").Gpus(1).OnNode("n0").Assigned("0").Obj());
  auto cache = std::make_unique<EvaluationCache>();
  const PodRequirements req = *RequirementsOf(MakePod().Name("p").Gpus(2).Obj());
  auto snapshot = cluster.state().Snapshot();
  const std::vector<size_t> positions = PositionsOf(*snapshot, names);
  CycleEvaluations kept;
  {
    PodEvaluator evaluator(req, cluster.preset(), cache.get());
    kept = evaluator.EvaluateAt(*snapshot, positions);
  }
  // Many changes to n0 make the table drop what it held (compaction), then the cache goes.
  for (int i = 0; i < 200; ++i) {
    cluster.Add(MakePod()
                    .Name("x" + std::to_string(i))
                    .Gpus(1)
                    .OnNode("n0")
                    .Assigned(std::to_string(i % 8))
                    .Obj());
    cluster.Add(MakePod().Name("x" + std::to_string(i)).Gpus(1).Phase(PodPhase::kSucceeded).Obj());
    PodEvaluator again(req, cluster.preset(), cache.get());
    (void)again.EvaluateAt(*cluster.state().Snapshot(), positions);
  }
  cache.reset();
  // Still readable (ASan would flag a use after free) and still the answer for that snapshot.
  ExpectSameAsEvaluateNode(kept, *snapshot, positions, req, cluster.preset());
}

TEST(ShapeTableTest, KeepsTablesForTheMostRecentlyUsedShapesOnly) {
  EvaluationCache cache;
  std::vector<std::shared_ptr<ShapeTable>> tables;
  for (uint64_t s = 0; s < EvaluationCache::kShapeTables; ++s)
    tables.push_back(cache.Table(s, PodRequirements{}, nullptr));
  EXPECT_EQ(cache.Table(0, PodRequirements{}, nullptr),
            tables[0]);                                // shape 0 is now the most recent
  (void)cache.Table(100, PodRequirements{}, nullptr);  // evicts shape 1, the least recently used
  EXPECT_EQ(cache.Table(0, PodRequirements{}, nullptr), tables[0]);
  EXPECT_NE(cache.Table(1, PodRequirements{}, nullptr), tables[1]);
}

}  // namespace
}  // namespace gputopo::policies

namespace gputopo::policies {
namespace {

// The cached path (shape and group tables, base tables, node memos, background refreshes)
// against evaluating every node afresh, through random clusters, pods, binds, deletes and node
// changes: every verdict, score, GPU set and reason must be the same.
TEST(CachedEvaluationPropertyTest, RandomChangesNeverMakeACachedAnswerDiffer) {
  for (uint32_t seed = 1; seed <= 6; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint32_t>(n)); };
    TestCluster cluster;
    EvaluationCache cache;
    const std::vector<std::string> profiles = {"dgx1", "hgx-h100", "pcie8"};
    const std::vector<std::string> groups = {"web", "batch", "db"};
    const std::vector<std::string> spreads = {"preferred", "required", "none"};
    std::vector<std::string> names;
    auto add_node = [&](const std::string& name) {
      const int replicas = 1 + pick(4);
      cluster.Add(MakeNode()
                      .Name(name)
                      .Profile(profiles[static_cast<size_t>(pick(3))])
                      .Replicas(replicas)
                      .Allocatable(8 * replicas)
                      .Obj());
    };
    for (int i = 0; i < 16; ++i) {
      names.push_back("n" + std::to_string(i));
      add_node(names.back());
    }
    std::vector<std::string> pods;  // bound pods, by name
    int next_pod = 0;
    for (int step = 0; step < 80; ++step) {
      const int action = pick(10);
      if (action < 5 || pods.empty()) {  // a pod lands on a node (a bind seen through the API)
        const std::string name = "p" + std::to_string(next_pod++);
        const int gpus = 1 + pick(2);
        std::string assigned = std::to_string(pick(8));
        if (gpus == 2) assigned += "," + std::to_string(pick(8));
        cluster.Add(MakePod()
                        .Namespace("ml")
                        .Name(name)
                        .Gpus(gpus)
                        .Group(groups[static_cast<size_t>(pick(3))])
                        .OnNode(names[static_cast<size_t>(pick(static_cast<int>(names.size())))])
                        .Assigned(assigned)
                        .Obj());
        pods.push_back(name);
      } else if (action < 7) {  // a pod finishes
        const size_t victim = static_cast<size_t>(pick(static_cast<int>(pods.size())));
        cluster.state().RemovePod("uid-" + pods[victim]);
        pods.erase(pods.begin() + static_cast<long>(victim));
      } else if (action < 8) {  // a node is relabelled (other replicas or machine type)
        add_node(names[static_cast<size_t>(pick(static_cast<int>(names.size())))]);
      } else if (action < 9) {  // a node leaves, another comes
        const size_t gone = static_cast<size_t>(pick(static_cast<int>(names.size())));
        cluster.state().RemoveNode(names[gone]);
        names[gone] = "m" + std::to_string(step);
        add_node(names[gone]);
      } else {  // the background refresher runs, as TableRefresher does
        auto snapshot = cluster.state().Snapshot();
        for (const EvaluationCache::TableShape& shape : cache.RefreshableShapes()) {
          PodEvaluator refresher(shape.pod, shape.preset, &cache);
          (void)refresher.RefreshTable(*shape.table, *snapshot);
        }
      }
      // A pending pod of a random shape and group asks about every node (and one unknown).
      const PodRequirements req = *RequirementsOf(
          MakePod()
              .Namespace("ml")
              .Name("pending-" + std::to_string(step))
              .Gpus(1 << pick(3))
              .Group(groups[static_cast<size_t>(pick(3))])
              .Annotation("gputopo.io/spread", spreads[static_cast<size_t>(pick(3))])
              .Obj());
      auto snapshot = cluster.state().Snapshot();
      std::vector<std::string> asked = names;
      std::shuffle(asked.begin(), asked.end(), rng);
      if (pick(3) == 0) asked.resize(asked.size() / 5);  // a few, answered in request order
      asked.push_back("nowhere");
      const std::vector<size_t> positions = PositionsOf(*snapshot, asked);
      PodEvaluator cached(req, cluster.shared_preset(), &cache);
      ExpectSameAsEvaluateNode(cached.EvaluateAt(*snapshot, positions), *snapshot, positions, req,
                               cluster.preset());
      if (::testing::Test::HasFailure()) return;
    }
  }
}

}  // namespace
}  // namespace gputopo::policies
