// Scoring maths of each component, table-driven, with the arithmetic worked in the comments.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "policies/fragmentation/fragmentation.h"
#include "policies/locality/locality.h"
#include "policies/packing/packing.h"
#include "policies/replica_spread/replica_spread.h"
#include "policies/slot_balance/slot_balance.h"
#include "test/support/builders.h"
#include "test/support/test_cluster.h"
#include "topology/combinations.h"

namespace gputopo::policies {
namespace {

using testing::MakeNode;
using testing::MakePod;
using topology::Bit;
using topology::GpuMask;

TEST(ReplicaSpreadScoreTest, Table) {
  struct Case {
    int n, same_gpu, same_island;
    double penalty, want;
  };
  const Case cases[] = {
      {1, 0, 0, 0.25, 10.0},  // nobody of the group nearby: 10 * (1 - 0/1)
      {1, 1, 0, 0.25, 0.0},   // the one GPU holds a replica: 10 * (1 - 1/1)
      {1, 0, 1, 0.25, 7.5},   // only the island does: 10 * (1 - 0.25/1)
      {2, 1, 0, 0.25, 5.0},   // one of two GPUs shared: 10 * (1 - 1/2)
      {4, 1, 2, 0.25, 6.25},  // 10 * (1 - (1 + 2*0.25)/4) = 10 * 0.625
      {4, 0, 4, 0.5, 5.0},    // 10 * (1 - 4*0.5/4)
      {2, 3, 0, 0.25, 0.0},   // more penalties than GPUs clamps at 0
      {0, 0, 0, 0.25, 10.0},  // no GPUs requested: neutral
  };
  for (const Case& c : cases) {
    EXPECT_DOUBLE_EQ(ReplicaSpreadScore(c.n, c.same_gpu, c.same_island, c.penalty), c.want)
        << c.n << " " << c.same_gpu << " " << c.same_island;
  }
}

TEST(LocalityScoreTest, Table) {
  struct Case {
    const char* what;
    double weight, best, numa, best_numa, numa_weight;
    bool met;
    double cap, want;
  };
  const Case cases[] = {
      // DGX-1 quad {0,1,2,3}: 9 NVLinks = 225 = best; one NUMA node: 10 * (0.8*1 + 0.2*1).
      {"dgx1 full quad", 225, 225, 1.0, 1.0, 0.2, true, 4, 10.0},
      // DGX-1 {0,1,4,5}: 25+50+6+6+50+25 = 162; half on each NUMA node:
      // 10 * (0.8 * 162/225 + 0.2 * 0.5/1) = 10 * (0.576 + 0.1) = 6.76.
      {"dgx1 split quad", 162, 225, 0.5, 1.0, 0.2, true, 4, 6.76},
      // Target missed caps the score: min(6.76, 4).
      {"dgx1 split quad, target missed", 162, 225, 0.5, 1.0, 0.2, false, 4, 4.0},
      // All-to-all NVSwitch, split over NUMA nodes: 10 * (0.8 + 0.2 * 0.5) = 9.
      {"hgx split numa", 6 * 450, 6 * 450, 0.5, 1.0, 0.2, true, 4, 9.0},
      // Each GPU on its own NUMA node: best share is 1/4 too, so no penalty: 10.
      {"h100x4 own numa", 6 * 150, 6 * 150, 0.25, 0.25, 0.2, true, 4, 10.0},
      // PCIe pair across sockets: SYS 6 of best NODE 10; 10 * (0.8*0.6 + 0.2*0.5) = 5.8, capped.
      {"pcie across sockets", 6, 10, 0.5, 1.0, 0.2, false, 4, 4.0},
      // numa_weight 0: bandwidth alone, 10 * 162/225 = 7.2.
      {"bandwidth only", 162, 225, 0.5, 1.0, 0.0, true, 4, 7.2},
  };
  for (const Case& c : cases) {
    EXPECT_NEAR(LocalityScore(c.weight, c.best, c.numa, c.best_numa, c.numa_weight, c.met, c.cap),
                c.want, 1e-9)
        << c.what;
  }
}

TEST(FragmentationScoreTest, Table) {
  // score = 10 / (1 + exp(delta / 500)): 5 for no change, smoothly towards 10 as stranded
  // capacity is freed and towards 0 as it grows, never saturating (so nodes never tie by it).
  EXPECT_DOUBLE_EQ(FragmentationScore(0), 5.0);
  EXPECT_NEAR(FragmentationScore(-1000), 8.8080, 1e-4);           // 10 / (1 + e^-2)
  EXPECT_NEAR(FragmentationScore(1000), 1.1920, 1e-4);            // 10 / (1 + e^2)
  EXPECT_NEAR(FragmentationScore(500), 2.6894, 1e-4);             // 10 / (1 + e)
  EXPECT_NEAR(FragmentationScore(-2000), 9.8201, 1e-4);           // 10 / (1 + e^-4)
  EXPECT_GT(FragmentationScore(2999), FragmentationScore(3000));  // strictly decreasing
  EXPECT_GT(FragmentationScore(3000), 0.0);
}

FreeView View(std::vector<int> free_milli, std::vector<int> free_slots, int node_free_slots,
              std::vector<GpuMask> domains) {
  FreeView view;
  view.gpu_count = static_cast<int>(free_milli.size());
  for (size_t i = 0; i < free_milli.size(); ++i) {
    view.free_milli[i] = free_milli[i];
    view.free_slots[i] = free_slots[i];
  }
  view.node_free_slots = node_free_slots;
  view.domains = std::move(domains);
  return view;
}

TEST(FragmentMilliTest, Table) {
  // GPUs free: 1000 (2 slots), 500 (1 slot), 250 (1 slot), 0 (no slot). Total free 1750.
  const FreeView one_domain = View({1000, 500, 250, 0}, {2, 1, 1, 0}, 4, {0xF});
  struct Case {
    const char* what;
    WorkloadClass cls;
    double want;
  };
  const Case cases[] = {
      // Half-GPU pods can use GPUs 0 and 1; GPU 2's 250 is stranded: 250.
      {"half", {1, 500, 1}, 250},
      // Quarter pods use 0, 1, 2; nothing stranded (GPU 3 has 0 free).
      {"quarter", {1, 250, 1}, 0},
      // Whole-GPU pods fit on GPU 0 only; 500 + 250 stranded.
      {"whole", {1, 1000, 1}, 750},
      // Two whole GPUs do not fit at all: all 1750 is stranded.
      {"two whole", {2, 1000, 1}, 1750},
  };
  for (const Case& c : cases) EXPECT_DOUBLE_EQ(FragmentMilli(one_domain, c.cls), c.want) << c.what;

  // Node-level slots: 1 free slot cannot host a 2-GPU pod even with 2 usable GPUs.
  EXPECT_DOUBLE_EQ(FragmentMilli(View({1000, 1000}, {1, 1}, 1, {0x3}), {2, 500, 1}), 2000);
  // Two empty GPUs in different domains cannot host a 2-GPU pod that needs one domain.
  const FreeView split = View({1000, 0, 1000, 0}, {1, 0, 1, 0}, 2, {0x3, 0xC});
  EXPECT_DOUBLE_EQ(FragmentMilli(split, {2, 1000, 1}), 2000);
  const FreeView together = View({1000, 1000, 0, 0}, {1, 1, 0, 0}, 2, {0x3, 0xC});
  EXPECT_DOUBLE_EQ(FragmentMilli(together, {2, 1000, 1}), 0);
  // Weighted mean: (1 * 250 + 3 * 750) / 4 = 625.
  EXPECT_DOUBLE_EQ(ExpectedFragmentMilli(one_domain, {{1, 500, 1}, {1, 1000, 3}}), 625);
}

TEST(FragmentMilliTest, AClassWithoutItsCpuOrMemoryOnTheNodeStrandsEverything) {
  FreeView view = View({1000, 500}, {1, 1}, 2, {0x3});
  view.cpu_free = 8000;
  view.memory_free = int64_t{64} << 30;
  WorkloadClass half{1, 500, 1};
  EXPECT_DOUBLE_EQ(FragmentMilli(view, half), 0);  // asks no CPU: both GPUs usable
  half.cpu_milli = 8000;
  EXPECT_DOUBLE_EQ(FragmentMilli(view, half), 0);  // exactly the CPU left
  half.cpu_milli = 8001;
  EXPECT_DOUBLE_EQ(FragmentMilli(view, half), 1500);  // one millicore short: all stranded
  half.cpu_milli = 0;
  half.memory_bytes = (int64_t{64} << 30) + 1;
  EXPECT_DOUBLE_EQ(FragmentMilli(view, half), 1500);
  // A class with milli 0 (learned: the node's default share) takes 1000 / replicas.
  view.default_share = 250;
  EXPECT_DOUBLE_EQ(FragmentMilli(view, {1, 0, 1}), 0);
  view.default_share = 1000;
  EXPECT_DOUBLE_EQ(FragmentMilli(view, {1, 0, 1}), 500);
}

// A node of 8 GPUs (NVLink pairs, 2 time-slice replicas each) and 16 cores, `cpu_used` of them
// taken by a GPU-less pod.
testing::TestCluster& HostCluster(testing::TestCluster& cluster, const std::string& name,
                                  int64_t cpu_used) {
  cluster.Add(MakeNode()
                  .Name(name)
                  .Profile("pairs")
                  .Replicas(2)
                  .Allocatable(16)
                  .Host(16000, int64_t{256} << 30)
                  .Obj());
  if (cpu_used > 0) {
    cluster.Add(MakePod()
                    .Name("cpu-on-" + name)
                    .OnNode(name)
                    .Phase(PodPhase::kRunning)
                    .Requests(cpu_used, 0)
                    .Obj());
  }
  return cluster;
}

TEST(FragmentationComponentTest, AGpuLessPodIsSteeredToWhereItsCpuStrandsNothing) {
  testing::TestCluster cluster;
  HostCluster(cluster, "roomy", 0);
  HostCluster(cluster, "tight", 8000);
  // Pods to come: one GPU and 8 cores each.
  WorkloadClass cls{1, 1000, 1};
  cls.cpu_milli = 8000;
  const Fragmentation frag({cls});
  const PodRequirements cpu_pod = *RequirementsOf(MakePod().Name("cpu").Requests(4000, 0).Obj());
  // On "tight", 4 more cores leave 4 free: no GPU pod of the class fits there any more, and
  // all 8 free GPUs are stranded. On "roomy" 12 cores stay free: nothing is stranded.
  const PlacementContext tight = MakePlacementContext(cpu_pod, *cluster.Node("tight"));
  const PlacementContext roomy = MakePlacementContext(cpu_pod, *cluster.Node("roomy"));
  EXPECT_DOUBLE_EQ(frag.Score(roomy, 0), FragmentationScore(0));
  EXPECT_DOUBLE_EQ(frag.Score(tight, 0), FragmentationScore(8000));
  EXPECT_TRUE(frag.ScoresGpuLessPods());
  EXPECT_TRUE(frag.ReadsHostResources());
  EXPECT_FALSE(Fragmentation({{1, 1000, 1}}).ReadsHostResources());
  EXPECT_TRUE(Fragmentation({{1, 1000, 1}}, /*pinned=*/false).ReadsHostResources());
}

TEST(FragmentationComponentTest, AGpuPodsOwnCpuCountsToo) {
  testing::TestCluster cluster;
  HostCluster(cluster, "n", 0);
  WorkloadClass cls{1, 1000, 1};
  cls.cpu_milli = 8000;
  const Fragmentation frag({cls});
  // A whole-GPU pod with 12 cores leaves 4: the 7 GPUs left are stranded for the class.
  const PodRequirements hungry = *RequirementsOf(MakePod()
                                                     .Name("p")
                                                     .Gpus(1)
                                                     .Annotation("gputopo.io/gpu-milli", "1000")
                                                     .Requests(12000, 0)
                                                     .Obj());
  const PodRequirements light = *RequirementsOf(MakePod()
                                                    .Name("p")
                                                    .Gpus(1)
                                                    .Annotation("gputopo.io/gpu-milli", "1000")
                                                    .Requests(1000, 0)
                                                    .Obj());
  const auto node = cluster.Node("n");
  EXPECT_DOUBLE_EQ(frag.Score(MakePlacementContext(hungry, *node), Bit(0)),
                   FragmentationScore(7000));
  EXPECT_DOUBLE_EQ(frag.Score(MakePlacementContext(light, *node), Bit(0)), FragmentationScore(0));
}

TEST(FragmentationComponentTest, AnUnpinnedWorkloadFollowsTheNodesLearnedMix) {
  testing::TestCluster cluster;
  HostCluster(cluster, "n", 0);
  const auto node = cluster.Node("n");
  // A pod taking 600 milli of GPU 0 leaves it 400 and one slot.
  const PodRequirements pod =
      *RequirementsOf(MakePod().Name("p").Gpus(1).Annotation("gputopo.io/gpu-milli", "600").Obj());
  // Pinned to quarter-GPU pods, which can use the 400 left; the node's learned mix (none here)
  // does not matter to either until there is one.
  const Fragmentation pinned({{1, 250, 1}});
  const Fragmentation learned({{1, 250, 1}}, /*pinned=*/false);
  const PlacementContext ctx = MakePlacementContext(pod, *node);
  EXPECT_DOUBLE_EQ(pinned.Score(ctx, Bit(0)), FragmentationScore(0));
  EXPECT_DOUBLE_EQ(learned.Score(ctx, Bit(0)), FragmentationScore(0));
  // The cluster has learned that whole-GPU pods come: for them the 400 left are stranded.
  auto mix = std::make_shared<ObservedWorkload>();
  mix->version = 7;
  mix->classes = {{1, 1000, 1}};
  const NodeState with_mix = NodeState::Build("n", node->topology(), {}, 99, node->host(), mix);
  const PlacementContext ctx_mix = MakePlacementContext(pod, with_mix);
  EXPECT_DOUBLE_EQ(learned.Score(ctx_mix, Bit(0)), FragmentationScore(400));
  EXPECT_DOUBLE_EQ(pinned.Score(ctx_mix, Bit(0)), FragmentationScore(0));
  EXPECT_NE(with_mix.signature(),
            NodeState::Build("n", node->topology(), {}, 98, node->host()).signature());
}

TEST(PackingScoreTest, Table) {
  // 10 * (1 - (0.5 * cpu_left / 128000 + 0.5 * gpu_left / 8000)).
  EXPECT_DOUBLE_EQ(PackingScore(0, 0, 128000, 8000), 10.0);
  EXPECT_DOUBLE_EQ(PackingScore(128000, 8000, 128000, 8000), 0.0);
  EXPECT_DOUBLE_EQ(PackingScore(64000, 4000, 128000, 8000), 5.0);
  EXPECT_DOUBLE_EQ(PackingScore(0, 4000, 128000, 8000), 7.5);
  EXPECT_DOUBLE_EQ(PackingScore(-1, 4000, 128000, 8000), 5.0);       // CPU unknown: the GPU term
  EXPECT_DOUBLE_EQ(PackingScore(256000, 16000, 128000, 8000), 0.0);  // clamped
}

TEST(PackingComponentTest, PrefersTheFullerNodeForGpuAndGpuLessPods) {
  testing::TestCluster cluster;
  HostCluster(cluster, "busy", 8000);
  HostCluster(cluster, "idle", 0);
  const Packing packing(16000, 8000);
  for (int gpus : {0, 1}) {
    SCOPED_TRACE(gpus);
    const PodRequirements pod = *RequirementsOf(MakePod()
                                                    .Name("p")
                                                    .Gpus(gpus)
                                                    .Annotation("gputopo.io/gpu-milli", "1000")
                                                    .Requests(2000, 0)
                                                    .Obj());
    const GpuMask set = gpus == 0 ? 0 : Bit(0);
    const double busy =
        packing.Prepare(MakePlacementContext(pod, *cluster.Node("busy")))->Score(set);
    const double idle =
        packing.Prepare(MakePlacementContext(pod, *cluster.Node("idle")))->Score(set);
    EXPECT_GT(busy, idle);
    // idle: 14 of 16 cores and 8 - gpus of 8 GPUs left.
    EXPECT_DOUBLE_EQ(idle, 10.0 * (1.0 - (0.5 * 14.0 / 16.0 + 0.5 * (8.0 - gpus) / 8.0)));
  }
  EXPECT_NE(
      packing
          .Prepare(MakePlacementContext(
              *RequirementsOf(
                  MakePod().Name("p").Gpus(1).Annotation("gputopo.io/gpu-milli", "1000").Obj()),
              *cluster.Node("idle")))
          ->Explain(Bit(0))
          .find("7.00 GPU and 16.0 CPU free"),
      std::string::npos);
}

TEST(SlotBalanceScoreTest, Table) {
  EXPECT_DOUBLE_EQ(SlotBalanceScore(8, 16), 5.0);  // 10 * 8/16
  EXPECT_DOUBLE_EQ(SlotBalanceScore(16, 16), 10.0);
  EXPECT_DOUBLE_EQ(SlotBalanceScore(0, 16), 0.0);
  EXPECT_DOUBLE_EQ(SlotBalanceScore(-1, 16), 0.0);  // clamped
  EXPECT_DOUBLE_EQ(SlotBalanceScore(3, 0), 0.0);    // no slots at all
}

// Components on a real node: packing a shared GPU strands less than opening an empty one.
TEST(FragmentationComponentTest, PrefersTheSharedGpuForAnotherWorkload) {
  testing::TestCluster cluster;
  cluster.Add(MakeNode().Name("n").Profile("pcie8").Replicas(4).Allocatable(32).Obj());
  cluster.Add(MakePod().Name("other").Gpus(1).Group("other").OnNode("n").Assigned("0").Obj());
  const auto node = cluster.Node("n");
  const PodInfo pod = MakePod().Name("p").Gpus(1).Group("mine").Obj();
  const PodRequirements req = *RequirementsOf(pod);
  const PlacementContext ctx = MakePlacementContext(req, *node);
  const Fragmentation frag(Fragmentation::DefaultWorkload());
  EXPECT_GT(frag.Score(ctx, Bit(0)), frag.Score(ctx, Bit(1)));
  EXPECT_NE(frag.Prepare(ctx)->Explain(Bit(1)).find("stranded"), std::string::npos);
  // Replica spread sees no group member on either GPU.
  const ReplicaSpread spread;
  EXPECT_EQ(spread.Score(ctx, Bit(0)), 10.0);
  EXPECT_EQ(spread.Score(ctx, Bit(1)), 10.0);
}

// The prepared scorer updates the node's fragmentation incrementally; it must agree with
// recomputing the whole node after the placement, for every candidate set.
TEST(FragmentationComponentTest, IncrementalScoreMatchesFullRecomputation) {
  testing::TestCluster cluster;
  cluster.Add(MakeNode().Name("n").Profile("pairs").Replicas(4).Allocatable(32).Obj());
  cluster.Add(MakePod().Name("a").Gpus(1).Group("a").OnNode("n").Assigned("0").Obj());
  cluster.Add(MakePod().Name("b").Gpus(2).Group("b").OnNode("n").Assigned("0,3").Obj());
  cluster.Add(MakePod()
                  .Name("c")
                  .Gpus(1)
                  .Group("c")
                  .OnNode("n")
                  .Assigned("5")
                  .Annotation("gputopo.io/gpu-milli", "700")
                  .Obj());
  cluster.Add(MakePod()
                  .Name("d")
                  .Gpus(1)
                  .Group("d")
                  .OnNode("n")
                  .Assigned("6")
                  .Annotation("gputopo.io/exclusive", "true")
                  .Obj());
  const auto workload = Fragmentation::DefaultWorkload();
  const Fragmentation frag(workload);
  for (const char* milli : {"250", "500", "1000"}) {
    for (int gpus : {1, 2, 3}) {
      const PodRequirements req = *RequirementsOf(
          MakePod().Name("p").Gpus(gpus).Annotation("gputopo.io/gpu-milli", milli).Obj());
      const PlacementContext ctx = MakePlacementContext(req, *cluster.Node("n"));
      const auto prepared = frag.Prepare(ctx);
      const FreeView before = Fragmentation::Before(ctx);
      int checked = 0;
      topology::ForEachCombination(topology::FirstN(8) & ~Bit(6), gpus, [&](GpuMask set) {
        const double full =
            ExpectedFragmentMilli(Fragmentation::After(ctx, before, set), workload) -
            ExpectedFragmentMilli(before, workload);
        EXPECT_NEAR(prepared->Score(set), FragmentationScore(full), 1e-9)
            << "milli " << milli << " set " << set;
        ++checked;
        return true;
      });
      EXPECT_GT(checked, 0);
    }
  }
}

// Node "n" of HostCluster with 6000 milli CPU used, a whole GPU 0 and 300 milli of GPU 2 taken.
void BusyHostNode(testing::TestCluster& cluster) {
  HostCluster(cluster, "n", 6000);
  cluster.Add(MakePod().Name("a").Gpus(1).Group("a").OnNode("n").Assigned("0").Obj());
  cluster.Add(MakePod()
                  .Name("b")
                  .Gpus(1)
                  .Group("b")
                  .OnNode("n")
                  .Assigned("2")
                  .Annotation("gputopo.io/gpu-milli", "300")
                  .Obj());
}

// The same agreement for what the prepared scorer precomputes per GPU: exclusive pods (which
// empty their GPUs), and classes that need CPU the pod's own request may take.
TEST(FragmentationComponentTest, IncrementalScoreMatchesForExclusivePodsAndCpuClasses) {
  testing::TestCluster cluster;
  BusyHostNode(cluster);
  std::vector<WorkloadClass> workload = Fragmentation::DefaultWorkload();
  WorkloadClass hungry{1, 500, 2};
  hungry.cpu_milli = 4000;
  workload.push_back(hungry);
  WorkloadClass pair{2, 1000, 1};
  pair.cpu_milli = 2000;
  workload.push_back(pair);
  WorkloadClass giant{1, 250, 1};  // more CPU than the node has: strands everything already
  giant.cpu_milli = 12000;         // 10000 free
  workload.push_back(giant);
  // Nine classes, and the first eight: a small mix's classes of one need (milli of a GPU) share
  // what the scorer precomputes for it, a larger mix's do not; both agree with recomputing.
  for (const size_t classes : {workload.size(), size_t{8}}) {
    const std::vector<WorkloadClass> mix(workload.begin(),
                                         workload.begin() + static_cast<long>(classes));
    const Fragmentation frag(mix);
    for (bool exclusive : {false, true}) {
      for (int64_t cpu : {0, 5000}) {
        for (int gpus : {1, 2, 3}) {
          const PodRequirements req =
              *RequirementsOf(MakePod()
                                  .Name("p")
                                  .Gpus(gpus)
                                  .Annotation("gputopo.io/gpu-milli", "500")
                                  .Annotation("gputopo.io/exclusive", exclusive ? "true" : "false")
                                  .Requests(cpu, 0)
                                  .Obj());
          const PlacementContext ctx = MakePlacementContext(req, *cluster.Node("n"));
          const auto prepared = frag.Prepare(ctx);
          const FreeView before = Fragmentation::Before(ctx);
          int checked = 0;
          topology::ForEachCombination(ctx.all, gpus, [&](GpuMask set) {
            const double full = ExpectedFragmentMilli(Fragmentation::After(ctx, before, set), mix) -
                                ExpectedFragmentMilli(before, mix);
            EXPECT_NEAR(prepared->Score(set), FragmentationScore(full), 1e-9)
                << "classes " << classes << " exclusive " << exclusive << " cpu " << cpu << " set "
                << set;
            ++checked;
            return true;
          });
          EXPECT_GT(checked, 0);
        }
      }
    }
  }
}

// A multi-GPU pod's fragmentation bound is at least its score for every set, and below the top
// score where every set strands capacity: there the search can skip sets by it.
TEST(FragmentationComponentTest, BoundIsAtLeastEverySetsScore) {
  testing::TestCluster cluster;
  BusyHostNode(cluster);
  std::vector<WorkloadClass> workload = Fragmentation::DefaultWorkload();
  WorkloadClass hungry{1, 500, 2};
  hungry.cpu_milli = 7000;  // fits before a pod of 5000 milli CPU, not after
  workload.push_back(hungry);
  int below_top = 0;
  for (const std::vector<WorkloadClass>& mix :
       {Fragmentation::DefaultWorkload(), workload, std::vector<WorkloadClass>{{4, 1000, 1}}}) {
    const Fragmentation frag(mix);
    for (const char* milli : {"250", "500", "1000"}) {
      for (bool exclusive : {false, true}) {
        for (int64_t cpu : {0, 5000}) {
          for (int gpus : {2, 3, 4}) {
            const PodRequirements req = *RequirementsOf(
                MakePod()
                    .Name("p")
                    .Gpus(gpus)
                    .Annotation("gputopo.io/gpu-milli", milli)
                    .Annotation("gputopo.io/exclusive", exclusive ? "true" : "false")
                    .Requests(cpu, 0)
                    .Obj());
            const PlacementContext ctx = MakePlacementContext(req, *cluster.Node("n"));
            const auto prepared = frag.Prepare(ctx);
            topology::ForEachCombination(ctx.all, gpus, [&](GpuMask set) {
              EXPECT_GE(prepared->Bound(set), prepared->Score(set))
                  << "milli " << milli << " exclusive " << exclusive << " set " << set;
              return true;
            });
            if (prepared->Bound(ctx.all) < kMaxComponentScore) ++below_top;
          }
        }
      }
    }
  }
  EXPECT_GT(below_top, 20);
}

TEST(ReplicaSpreadComponentTest, PenalisesTheGroupsGpuThenItsIsland) {
  testing::TestCluster cluster;
  cluster.Add(MakeNode().Name("n").Profile("pairs").Replicas(4).Allocatable(32).Obj());
  cluster.Add(MakePod().Name("web-1").Gpus(1).Group("web").OnNode("n").Assigned("0").Obj());
  const PodRequirements req = *RequirementsOf(MakePod().Name("web-2").Gpus(1).Group("web").Obj());
  const PlacementContext ctx = MakePlacementContext(req, *cluster.Node("n"));
  const ReplicaSpread spread(0.25);
  EXPECT_EQ(spread.Score(ctx, Bit(0)), 0.0);   // the replica's own GPU
  EXPECT_EQ(spread.Score(ctx, Bit(1)), 7.5);   // GPU 1 shares its NVLink pair
  EXPECT_EQ(spread.Score(ctx, Bit(2)), 10.0);  // another island
  EXPECT_NE(spread.Explain(ctx, Bit(0)).find("1 of 1 GPUs already hold group default/web"),
            std::string::npos);
  const PodRequirements none = *RequirementsOf(
      MakePod().Name("x").Gpus(1).Group("web").Annotation("gputopo.io/spread", "none").Obj());
  EXPECT_EQ(spread.Score(MakePlacementContext(none, *cluster.Node("n")), Bit(0)), 10.0);
}

TEST(LocalityComponentTest, UnknownLinksAndSingleGpus) {
  testing::TestCluster cluster;
  cluster.Add(MakeNode().Name("plain").GpuCount(4).Allocatable(4).Obj());
  const LocalityComponent locality;
  const PodRequirements two = *RequirementsOf(MakePod().Name("a").Gpus(2).Obj());
  const PlacementContext ctx = MakePlacementContext(two, *cluster.Node("plain"));
  EXPECT_EQ(locality.Score(ctx, Bit(0) | Bit(1)), LocalityComponent::kDefaultUnknownScore);
  EXPECT_EQ(locality.Explain(ctx, Bit(0) | Bit(1)), "links unknown on this node");
  const PodRequirements one = *RequirementsOf(MakePod().Name("b").Gpus(1).Obj());
  EXPECT_EQ(locality.Score(MakePlacementContext(one, *cluster.Node("plain")), Bit(0)), 10.0);
}

// The prepared scorer computes the machine's best bandwidth and NUMA share once per (pod, node);
// every set must still score exactly as LocalityComponent::Score does.
TEST(LocalityComponentTest, PreparedScoresEqualScoreForEverySet) {
  testing::TestCluster cluster;
  cluster.Add(MakeNode().Name("dgx").Profile("dgx1").Replicas(2).Allocatable(16).Obj());
  cluster.Add(MakeNode().Name("plain").GpuCount(4).Allocatable(4).Obj());
  const LocalityComponent locality(4.0, 5.0, 0.2);
  int checked = 0;
  for (const char* node : {"dgx", "plain"}) {
    for (const char* target : {"nvlink", "numa", "none"}) {
      for (int gpus : {1, 2, 3, 4}) {
        const PodRequirements req = *RequirementsOf(
            MakePod().Name("p").Gpus(gpus).Annotation("gputopo.io/locality", target).Obj());
        const PlacementContext ctx = MakePlacementContext(req, *cluster.Node(node));
        const auto prepared = locality.Prepare(ctx);
        topology::ForEachCombination(ctx.all, gpus, [&](GpuMask set) {
          EXPECT_EQ(prepared->Score(set), locality.Score(ctx, set))
              << node << " " << target << " set " << set;
          EXPECT_EQ(prepared->Bound(set), prepared->Score(set));  // its own bound
          EXPECT_EQ(prepared->Explain(set), locality.Explain(ctx, set));
          ++checked;
          return true;
        });
      }
    }
  }
  EXPECT_GT(checked, 300);
}

}  // namespace
}  // namespace gputopo::policies
