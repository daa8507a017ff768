// The placement engine on whole nodes: time-slicing scenarios, locality, constraints, verdicts.
#include "policies/engine/evaluation.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <initializer_list>
#include <random>
#include <set>
#include <string>

#include "policies/fragmentation/fragmentation.h"
#include "policies/registry/component_registry.h"
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

bool AllPairsNvLink(const topology::TopologyShape& shape, GpuMask gpus) {
  for (int a : ToIndices(gpus)) {
    for (int b : ToIndices(gpus)) {
      if (a != b && !shape.link(a, b).IsNvLink()) return false;
    }
  }
  return true;
}

// Binds a 1-GPU pod to each of `gpus` (repeats allowed) of `node`, named `prefix`-<gpu>-<k>.
void BindOnePerGpu(TestCluster& cluster, const std::string& node, std::initializer_list<int> gpus,
                   const std::string& prefix) {
  int k = 0;
  for (int g : gpus) {
    cluster.Add(MakePod()
                    .Name(prefix + "-" + std::to_string(g) + "-" + std::to_string(++k))
                    .Gpus(1)
                    .OnNode(node)
                    .Assigned(std::to_string(g))
                    .Obj());
  }
}

TEST(EvaluationTest, ReplicasLandOnDistinctGpusWhileDistinctGpusRemain) {
  TestCluster cluster;
  // A DGX-1 time-sliced 2 ways: 16 nvidia.com/gpu, 8 physical GPUs.
  cluster.Add(MakeNode().Name("dgx").Profile("dgx1").Replicas(2).Allocatable(16).Obj());
  std::set<int> used;
  for (int i = 0; i < 8; ++i) {
    NodeEvaluation e = cluster.Place(testing::DeploymentReplica("web", i), "dgx");
    ASSERT_TRUE(e.fits()) << i << ": " << e.detail;
    ASSERT_EQ(Count(e.gpus), 1);
    EXPECT_TRUE(used.insert(ToIndices(e.gpus).front()).second)
        << "replica " << i << " shares GPU " << ToIndices(e.gpus).front();
  }
  EXPECT_EQ(used.size(), 8u);
  // A 9th replica must share a GPU with a sibling: it still fits (spread is preferred), but the
  // spread component says so.
  NodeEvaluation ninth = cluster.Evaluate(testing::DeploymentReplica("web", 8), "dgx");
  ASSERT_TRUE(ninth.fits());
  EXPECT_EQ(cluster.preset().components()[0].component->Name(), "replica-spread");
  EXPECT_LT(ninth.component_scores[0], 1.0);
  // Another workload's pod is not held back by web's replicas.
  NodeEvaluation other = cluster.Evaluate(testing::DeploymentReplica("api", 0), "dgx");
  ASSERT_TRUE(other.fits());
  EXPECT_EQ(other.component_scores[0], 10.0);
}

TEST(EvaluationTest, AGpuLessPodFitsEveryNodeAndFragmentationAloneRatesIt) {
  TestCluster cluster;
  cluster.Add(
      MakeNode().Name("tight").Profile("dgx1").Allocatable(8).Host(16000, int64_t{64} << 30).Obj());
  cluster.Add(MakeNode().Name("broken").CorruptTopology("bad document").Allocatable(8).Obj());
  const PodRequirements pod = *RequirementsOf(MakePod().Name("cpu").Requests(12000, 0).Obj());
  WorkloadClass cls{1, 1000, 1};
  cls.cpu_milli = 8000;
  PresetSpec spec;
  spec.name = "p";
  spec.components = {{"replica-spread", 1, {}}, {"fragmentation", 1, {{}, {cls}}}};
  const auto preset = *BuildPreset(spec, BuiltinComponents());
  // On "tight", 12 of 16 cores leave 4: the 8 free GPUs are stranded for the class.
  const NodeEvaluation tight = EvaluateNode(pod, *cluster.Node("tight"), *preset);
  ASSERT_TRUE(tight.fits());
  ASSERT_EQ(tight.component_scores.size(), 2u);
  EXPECT_EQ(tight.component_scores[0], kMaxComponentScore);  // nothing to spread
  EXPECT_DOUBLE_EQ(tight.component_scores[1], FragmentationScore(8000));
  EXPECT_DOUBLE_EQ(tight.weighted_score, (10.0 + FragmentationScore(8000)) / 2);
  EXPECT_EQ(tight.gpus, 0u);
  // A node whose GPUs are not known strands nothing known: it fits with the top score.
  const NodeEvaluation broken = EvaluateNode(pod, *cluster.Node("broken"), *preset);
  EXPECT_TRUE(broken.fits());
  EXPECT_EQ(broken.weighted_score, kMaxComponentScore);
  // The explanation has one line per component, as for GPU pods.
  const std::vector<ComponentResult> explained =
      ExplainPlacement(pod, *cluster.Node("tight"), *preset, 0);
  ASSERT_EQ(explained.size(), 2u);
  EXPECT_EQ(explained[0].detail, "pod requests no GPU");
  EXPECT_DOUBLE_EQ(explained[1].score, tight.component_scores[1]);
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
  BindOnePerGpu(cluster, "pairs", {0, 2, 4, 6}, "busy");
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

// A preferred locality is a tier above the weighted score within a node: a preset that would
// rather put a 2-GPU pod on two half-used GPUs of different NVLink pairs still gives it a
// free pair when the node has one, and says when it has none.
TEST(EvaluationTest, PreferredLocalityOutranksTheWeightedScoreWithinANode) {
  TestCluster cluster;
  cluster.Add(MakeNode().Name("pairs").Profile("pairs").Replicas(2).Allocatable(16).Obj());
  BindOnePerGpu(cluster, "pairs", {0, 2}, "busy");
  PresetSpec spec;
  spec.name = "packs";
  spec.components = {{"fragmentation", 10, {}}, {"locality", 0.01, {}}};
  const auto preset = *BuildPreset(spec, BuiltinComponents());
  const topology::TopologyShape& shape = cluster.Node("pairs")->shape();
  const PodInfo two = MakePod().Name("two").Gpus(2).Obj();
  // Without a locality preference fragmentation takes the half-used GPUs 0 and 2.
  const NodeEvaluation loose = EvaluateNode(
      *RequirementsOf(
          MakePod().Name("two").Gpus(2).Annotation("gputopo.io/locality", "none").Obj()),
      *cluster.Node("pairs"), *preset);
  ASSERT_TRUE(loose.fits());
  ASSERT_EQ(loose.gpus, Bit(0) | Bit(2)) << "the scenario needs a split set to score best";
  EXPECT_FALSE(loose.locality_missed);
  // With the default preference (nvlink for N > 1) it gets a whole pair.
  const NodeEvaluation tiered = EvaluateNode(*RequirementsOf(two), *cluster.Node("pairs"), *preset);
  ASSERT_TRUE(tiered.fits());
  EXPECT_TRUE(shape.InOneIsland(tiered.gpus)) << ToIndices(tiered.gpus).front();
  EXPECT_FALSE(tiered.locality_missed);
  // One GPU of every pair used up (both its slots): no pair has two free GPUs, the pod still
  // fits on the others, and the miss is marked.
  BindOnePerGpu(cluster, "pairs", {0, 2, 4, 4, 6, 6}, "full");
  const NodeEvaluation missed = EvaluateNode(*RequirementsOf(two), *cluster.Node("pairs"), *preset);
  ASSERT_TRUE(missed.fits());
  EXPECT_FALSE(shape.InOneIsland(missed.gpus));
  EXPECT_TRUE(missed.locality_missed);
  EXPECT_TRUE(EvaluationRef::To(missed).locality_missed);
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
  cluster::Reservation r{MakePod().Name("a").Gpus(1).Obj(), "n", ToIndices(first.gpus),
                         cluster.Node("n")->version()};
  ASSERT_TRUE(cluster.state().Reserve(r).ok());
  NodeEvaluation second = cluster.Evaluate(MakePod().Name("b").Gpus(1).Obj(), "n");
  ASSERT_TRUE(second.fits());
  EXPECT_NE(second.gpus, first.gpus);
  EXPECT_TRUE(cluster.state().ReservedPods("n").contains(
      cluster.Node("n")->gpu(ToIndices(first.gpus).front()).occupants.front().pod_uid));
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

// unique_best says whether the chosen set beat every other of its tier by a margin; the
// evaluation of a given placement equals the search's when the search chose it.
TEST(EvaluationTest, TellsWhetherTheBestSetWasUniqueAndEvaluatesAPlacementAlike) {
  TestCluster cluster;
  cluster.Add(MakeNode().Name("empty").Profile("hgx-h100").Replicas(4).Allocatable(32).Obj());
  cluster.Add(MakeNode().Name("busy").Profile("hgx-h100").Replicas(1).Allocatable(8).Obj());
  for (int g = 0; g < 7; ++g) {  // every GPU but 7 full
    cluster.Add(MakePod()
                    .Name("p" + std::to_string(g))
                    .Gpus(1)
                    .OnNode("busy")
                    .Assigned(std::to_string(g))
                    .Obj());
  }
  const PodRequirements req = *RequirementsOf(MakePod().Name("x").Gpus(1).Obj());
  bool unique = true;
  const NodeEvaluation tied =
      EvaluateNode(req, *cluster.Node("empty"), cluster.preset(), 0, &unique);
  EXPECT_TRUE(tied.fits());
  EXPECT_FALSE(unique);  // eight equal GPUs
  const NodeEvaluation alone =
      EvaluateNode(req, *cluster.Node("busy"), cluster.preset(), 0, &unique);
  EXPECT_TRUE(unique);  // one GPU left
  EXPECT_EQ(alone.gpus, Bit(7));
  const NodeEvaluation placed = EvaluatePlacement(req, *cluster.Node("busy"), cluster.preset(), 0,
                                                  alone.gpus, alone.candidates);
  EXPECT_EQ(placed.gpus, alone.gpus);
  EXPECT_EQ(placed.weighted_score, alone.weighted_score);
  EXPECT_EQ(placed.component_scores, alone.component_scores);
  EXPECT_EQ(placed.candidates, alone.candidates);
  EXPECT_EQ(placed.locality_missed, alone.locality_missed);
  EXPECT_TRUE(placed.fits());
  // A pod that does not fit is never unique.
  const PodRequirements two = *RequirementsOf(MakePod().Name("y").Gpus(2).Obj());
  EXPECT_FALSE(EvaluateNode(two, *cluster.Node("busy"), cluster.preset(), 0, &unique).fits());
  EXPECT_FALSE(unique);
}

// Bounding sets (SetBounding::kSkipBoundedOut) gives every answer scoring each set gives: the
// chosen GPUs, each score bit for bit, the candidate count and whether the best was unique. On
// random states of four machine types, for pods of 2-5 GPUs with shares, groups, locality targets
// and exclusivity, under presets that weigh the components differently.
TEST(EvaluationTest, BoundingSetsAnswersAsScoringEverySet) {
  TestCluster cluster;
  std::mt19937 rng(7);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  const char* profiles[] = {"dgx1", "hgx-h100", "pcie8", "pairs"};
  std::vector<std::string> nodes;
  for (int i = 0; i < 24; ++i) {
    const std::string node = "n" + std::to_string(i);
    cluster.Add(MakeNode()
                    .Name(node)
                    .Profile(profiles[i % 4])
                    .Replicas(4)
                    .Allocatable(32)
                    .Host(64000, int64_t{512} << 30)
                    .Obj());
    nodes.push_back(node);
    const int pods = pick(14);
    for (int p = 0; p < pods; ++p) {
      auto pod = MakePod()
                     .Name(node + "-p" + std::to_string(p))
                     .Gpus(1)
                     .Group("g" + std::to_string(pick(3)))
                     .OnNode(node)
                     .Assigned(std::to_string(pick(8)))
                     .Requests(pick(4) * 4000, 0);
      if (pick(2) == 0) pod.Annotation("gputopo.io/gpu-milli", std::to_string(100 * (1 + pick(7))));
      cluster.Add(pod.Obj());
    }
  }
  std::vector<std::shared_ptr<const Preset>> presets = {cluster.shared_preset()};
  for (const std::vector<ComponentSpec>& components : std::vector<std::vector<ComponentSpec>>{
           {{"fragmentation", 3, {}}, {"locality", 1, {}}},
           {{"replica-spread", 1, {}}, {"fragmentation", 1, {}}, {"packing", 2, {}}},
           {{"locality", 5, {}}, {"slot-balance", 1, {}}}}) {
    PresetSpec spec;
    spec.name = "mix";
    spec.components = components;
    auto preset = BuildPreset(spec, BuiltinComponents());
    ASSERT_TRUE(preset.ok()) << preset.status().ToString();
    presets.push_back(*preset);
  }
  int fitted = 0;
  for (int round = 0; round < 120; ++round) {
    auto pod = MakePod().Name("x").Gpus(2 + pick(4)).Group("g" + std::to_string(pick(3)));
    if (pick(2) == 0) pod.Annotation("gputopo.io/gpu-milli", std::to_string(100 * (1 + pick(9))));
    const char* localities[] = {"nvlink", "numa", "none"};
    pod.Annotation("gputopo.io/locality", localities[pick(3)]);
    if (pick(4) == 0) pod.Annotation("gputopo.io/locality-mode", "required");
    if (pick(6) == 0) pod.Annotation("gputopo.io/exclusive", "true");
    if (pick(3) == 0) pod.Annotation("gputopo.io/spread", pick(2) ? "required" : "none");
    const auto req = RequirementsOf(pod.Obj());
    ASSERT_TRUE(req.ok()) << req.status().ToString();
    const Preset& preset = *presets[static_cast<size_t>(round) % presets.size()];
    for (const std::string& name : nodes) {
      const auto node = cluster.Node(name);
      const GpuMask group = node->GroupGpus(req->group);
      bool unique_bounded = false;
      bool unique_every = true;
      const NodeEvaluation bounded =
          EvaluateNode(*req, *node, preset, group, &unique_bounded, SetBounding::kSkipBoundedOut);
      const NodeEvaluation every =
          EvaluateNode(*req, *node, preset, group, &unique_every, SetBounding::kScoreEverySet);
      const std::string where = name + " round " + std::to_string(round);
      EXPECT_EQ(bounded.verdict, every.verdict) << where;
      EXPECT_EQ(bounded.reason, every.reason) << where;
      EXPECT_EQ(bounded.gpus, every.gpus) << where;
      EXPECT_EQ(bounded.weighted_score, every.weighted_score) << where;
      EXPECT_EQ(bounded.component_scores, every.component_scores) << where;
      EXPECT_EQ(bounded.candidates, every.candidates) << where;
      EXPECT_EQ(bounded.heuristic, every.heuristic) << where;
      EXPECT_EQ(bounded.locality_missed, every.locality_missed) << where;
      EXPECT_EQ(unique_bounded, unique_every) << where;
      if (every.fits()) ++fitted;
    }
  }
  EXPECT_GT(fitted, 1000);  // most evaluations searched sets, not rejected the node
}

}  // namespace
}  // namespace gputopo::policies
