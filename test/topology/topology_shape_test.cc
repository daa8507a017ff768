#include "topology/topology_shape.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "test/support/machines.h"
#include "topology/best_set.h"
#include "topology/combinations.h"
#include "topology/link_type.h"
#include "topology/profile_catalog.h"
#include "topology/shape_interner.h"
#include "topology/topology_resolver.h"

namespace gputopo::topology {
namespace {

Link L(std::string_view text) { return *ParseLink(text); }

using testing::Dgx1;         // the hybrid cube-mesh of shared/topology/nvidia-smi/dgx1_like_*.txt
using testing::NvLinkPairs;  // two NVLink pairs per NUMA node, PCIe between pairs: 4 islands of 2

TEST(LinkTypeTest, ParsesEveryNvidiaSmiName) {
  struct Case {
    const char* text;
    LinkType type;
    int nvlinks;
  };
  for (const Case& c : {Case{"NV1", LinkType::kNvLink, 1}, Case{"NV18", LinkType::kNvLink, 18},
                        Case{"PIX", LinkType::kPix, 0}, Case{"PXB", LinkType::kPxb, 0},
                        Case{"PHB", LinkType::kPhb, 0}, Case{"NODE", LinkType::kNode, 0},
                        Case{"SYS", LinkType::kSys, 0}, Case{"SOC", LinkType::kSys, 0}}) {
    std::optional<Link> link = ParseLink(c.text);
    ASSERT_TRUE(link.has_value()) << c.text;
    EXPECT_EQ(link->type, c.type) << c.text;
    EXPECT_EQ(link->nvlinks, c.nvlinks) << c.text;
  }
  for (const char* bad : {"", "X", "NV", "NV0", "NVx", "NV-1", "NV1000", "nv2", "SYSX"}) {
    EXPECT_FALSE(ParseLink(bad).has_value()) << bad;
  }
  EXPECT_EQ(FormatLink(L("NV12")), "NV12");
  EXPECT_EQ(FormatLink(Link{}), "UNKNOWN");
}

TEST(LinkTypeTest, WeightsOrderLinksByBandwidth) {
  // NV2 (50) > NV1 (25) > PIX > PXB > PHB > NODE > SYS > unknown (0).
  const std::vector<const char*> order = {"NV2", "NV1", "PIX", "PXB", "PHB", "NODE", "SYS"};
  for (size_t i = 0; i + 1 < order.size(); ++i) {
    EXPECT_GT(LinkWeight(L(order[i])), LinkWeight(L(order[i + 1]))) << order[i];
  }
  EXPECT_EQ(LinkWeight(L("NV12")), 300.0);
  EXPECT_EQ(LinkWeight(Link{}), 0.0);
}

TEST(CombinationsTest, BinomialAndEnumerationAgree) {
  EXPECT_EQ(Binomial(8, 4), 70u);
  EXPECT_EQ(Binomial(16, 8), 12870u);
  EXPECT_EQ(Binomial(5, 0), 1u);
  EXPECT_EQ(Binomial(3, 4), 0u);
  EXPECT_EQ(Binomial(64, 32), 1832624140942590534u);
  const GpuMask pool = Bit(1) | Bit(3) | Bit(4) | Bit(9) | Bit(12);
  std::set<GpuMask> seen;
  std::vector<GpuMask> order;
  ForEachCombination(pool, 3, [&](GpuMask subset) {
    EXPECT_EQ(Count(subset), 3);
    EXPECT_EQ(subset & ~pool, 0u);
    seen.insert(subset);
    order.push_back(subset);
    return true;
  });
  EXPECT_EQ(seen.size(), 10u);  // C(5,3), each once
  EXPECT_EQ(order.front(), Bit(1) | Bit(3) | Bit(4));
  int visits = 0;
  ForEachCombination(FirstN(64), 1, [&](GpuMask) { return ++visits < 5; });
  EXPECT_EQ(visits, 5);  // stops when asked
  int all64 = 0;
  ForEachCombination(FirstN(64), 64, [&](GpuMask s) {
    EXPECT_EQ(s, ~GpuMask{0});
    return ++all64 > 0;
  });
  EXPECT_EQ(all64, 1);
}

TEST(TopologyShapeTest, Dgx1IsOneIslandOverTwoNumaNodes) {
  auto shape = TopologyShape::Analyze(Dgx1());
  ASSERT_TRUE(shape.ok()) << shape.status().ToString();
  const TopologyShape& s = **shape;
  EXPECT_EQ(s.gpu_count(), 8);
  EXPECT_TRUE(s.has_nvlink());
  EXPECT_TRUE(s.links_known());
  EXPECT_EQ(s.island_count(), 1);
  EXPECT_EQ(s.island(0), FirstN(8));
  EXPECT_EQ(s.numa_ids(), (std::vector<int>{0, 1}));
  EXPECT_EQ(s.numa_gpus(0), FirstN(4));
  EXPECT_TRUE(s.InOneNuma(Bit(1) | Bit(2)));
  EXPECT_FALSE(s.InOneNuma(Bit(3) | Bit(4)));
  // GPU0-GPU3 quad: NV1+NV1+NV2+NV2+NV1+NV2 = 9 links * 25.
  EXPECT_EQ(s.PairwiseWeight(FirstN(4)), 225.0);
  EXPECT_EQ(s.BestPairwiseWeight(4), 225.0);
  // Best pair: any NV2 pair.
  EXPECT_EQ(s.BestPairwiseWeight(2), 50.0);
  EXPECT_EQ(s.BestPairwiseWeight(1), 0.0);
}

// The per-set answers are kept in tables on machines of up to 12 GPUs and summed on larger
// ones: either way they are the plain sums over the set's pairs and NUMA nodes, bit for bit.
TEST(TopologyShapeTest, PerSetAnswersAreThePlainSumsWhetherTabulatedOrNot) {
  for (const MachineTopology& machine : {Dgx1(), NvLinkPairs(), testing::PcieTwoNuma(16)}) {
    auto shape = TopologyShape::Analyze(machine);
    ASSERT_TRUE(shape.ok()) << shape.status().ToString();
    const TopologyShape& s = **shape;
    int checked = 0;
    for (int k = 0; k <= std::min(s.gpu_count(), 5); ++k) {
      ForEachCombination(s.all_gpus(), k, [&](GpuMask set) {
        double weight = 0.0;
        for (int a = 0; a < s.gpu_count(); ++a) {
          for (int b = a + 1; b < s.gpu_count(); ++b) {
            if (Has(set, a) && Has(set, b)) weight += s.weight(a, b);
          }
        }
        int most = 0;
        for (int id : s.numa_ids()) most = std::max(most, Count(set & s.numa_gpus(id)));
        EXPECT_EQ(s.PairwiseWeight(set), weight) << s.gpu_count() << " GPUs, set " << set;
        EXPECT_EQ(s.MostOnOneNuma(set), most) << s.gpu_count() << " GPUs, set " << set;
        ++checked;
        return true;
      });
    }
    EXPECT_GT(checked, 100);
  }
  // A 16-GPU PCIe machine: pairs on one NUMA node weigh more than pairs across.
  auto pcie = TopologyShape::Analyze(testing::PcieTwoNuma(16));
  ASSERT_TRUE(pcie.ok());
  EXPECT_EQ((*pcie)->MostOnOneNuma(Bit(0) | Bit(1) | Bit(15)), 2);
  EXPECT_GT((*pcie)->PairwiseWeight(Bit(0) | Bit(1)), (*pcie)->PairwiseWeight(Bit(0) | Bit(15)));
}

TEST(TopologyShapeTest, IslandsAreNvLinkComponentsNotNumaNodes) {
  auto shape = TopologyShape::Analyze(NvLinkPairs());
  ASSERT_TRUE(shape.ok());
  const TopologyShape& s = **shape;
  ASSERT_EQ(s.island_count(), 4);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(s.island(i), Bit(2 * i) | Bit(2 * i + 1));
  EXPECT_EQ(s.island_of(5), 2);
  EXPECT_TRUE(s.InOneIsland(Bit(4) | Bit(5)));
  EXPECT_FALSE(s.InOneIsland(Bit(5) | Bit(6)));
  EXPECT_TRUE(s.InOneIsland(Bit(7)));
}

TEST(TopologyShapeTest, NvLinkIslandMaySpanNumaNodes) {
  MachineTopology m(4);
  const int numa[] = {3, 1, 7, 5};  // shared/topology/nvidia-smi/h100_4x_NV6_each_gpu_own_numa.txt
  for (int a = 0; a < 4; ++a) {
    m.gpu(a).numa_node = numa[a];
    for (int b = a + 1; b < 4; ++b) m.SetLink(a, b, L("NV6"));
  }
  auto shape = TopologyShape::Analyze(m);
  ASSERT_TRUE(shape.ok());
  EXPECT_EQ((*shape)->island_count(), 1);
  EXPECT_EQ((*shape)->numa_ids(), (std::vector<int>{1, 3, 5, 7}));
  EXPECT_FALSE((*shape)->InOneNuma(Bit(0) | Bit(1)));
  EXPECT_TRUE((*shape)->InOneIsland(FirstN(4)));
}

TEST(TopologyShapeTest, FallbackHasUnknownLinksAndSingletonIslands) {
  auto shape = TopologyShape::Analyze(MachineTopology(4));
  ASSERT_TRUE(shape.ok());
  EXPECT_FALSE((*shape)->links_known());
  EXPECT_FALSE((*shape)->has_nvlink());
  EXPECT_EQ((*shape)->island_count(), 4);
  EXPECT_TRUE((*shape)->numa_ids().empty());
  EXPECT_FALSE((*shape)->InOneNuma(Bit(0)));
  EXPECT_EQ((*shape)->BestPairwiseWeight(2), 0.0);
}

TEST(TopologyShapeTest, RejectsInvalidMachines) {
  EXPECT_FALSE(TopologyShape::Analyze(MachineTopology(0)).ok());
  EXPECT_FALSE(TopologyShape::Analyze(MachineTopology(65)).ok());
  MachineTopology bad_numa(2);
  bad_numa.gpu(1).numa_node = 5000;
  EXPECT_EQ(TopologyShape::Analyze(bad_numa).status().code(), StatusCode::kInvalidArgument);
  MachineTopology bad_replicas(2);
  bad_replicas.set_replicas_per_gpu(100000);
  EXPECT_FALSE(TopologyShape::Analyze(bad_replicas).ok());
  EXPECT_TRUE(TopologyShape::Analyze(MachineTopology(64)).ok());
}

TEST(BestSetTest, PicksTheFullyNvLinkedQuadOnDgx1) {
  auto shape = *TopologyShape::Analyze(Dgx1());
  BestSet best = FindBestSetByBandwidth(*shape, FirstN(8), 4);
  EXPECT_EQ(best.gpus, FirstN(4));  // {0,1,2,3} and {4,5,6,7} tie; lowest indices win
  EXPECT_EQ(best.weight, 225.0);
  // Without GPU 0 the other quad is the only fully connected one.
  best = FindBestSetByBandwidth(*shape, FirstN(8) & ~Bit(0), 4);
  EXPECT_EQ(best.gpus, Bit(4) | Bit(5) | Bit(6) | Bit(7));
  EXPECT_EQ(FindBestSetByBandwidth(*shape, Bit(1) | Bit(2), 3).gpus, 0u);
}

TEST(BestSetTest, GreedyMatchesExactOnSymmetricMachines) {
  MachineTopology m(32);
  for (int a = 0; a < 32; ++a) {
    m.gpu(a).numa_node = a / 16;
    for (int b = a + 1; b < 32; ++b) m.SetLink(a, b, a / 8 == b / 8 ? L("NV12") : L("SYS"));
  }
  auto shape = *TopologyShape::Analyze(m);
  // C(32, 8) is far above the exact limit: the greedy search must still find one 8-island.
  BestSet best = FindBestSetByBandwidth(*shape, FirstN(32), 8);
  EXPECT_EQ(best.gpus, FirstN(8));
  EXPECT_EQ(best.weight, 28 * 300.0);
  EXPECT_EQ(shape->BestPairwiseWeight(8), 28 * 300.0);
}

TEST(ShapeInternerTest, SharesOneShapePerMachineType) {
  ShapeInterner interner;
  MachineTopology a = Dgx1();
  MachineTopology b = Dgx1();
  b.gpu(0).uuid = "GPU-aaaa";  // identities differ, shape does not
  auto sa = interner.Intern(a);
  auto sb = interner.Intern(b);
  ASSERT_TRUE(sa.ok() && sb.ok());
  EXPECT_EQ(sa->get(), sb->get());
  auto sc = interner.Intern(NvLinkPairs());
  ASSERT_TRUE(sc.ok());
  EXPECT_NE(sa->get(), sc->get());
  EXPECT_EQ(interner.size(), 2u);
  EXPECT_FALSE(interner.Intern(MachineTopology(0)).ok());
}

class ResolverTest : public ::testing::Test {
 protected:
  ResolverTest() : catalog_(interner_), resolver_(catalog_, interner_) {
    EXPECT_TRUE(catalog_.Add("dgx1-v100", "test", Dgx1()).ok());
  }
  ShapeInterner interner_;
  ProfileCatalog catalog_;
  TopologyResolver resolver_;
};

TEST_F(ResolverTest, ProfileLabelWithReplicasLabel) {
  NodeInfo node;
  node.name = "n";
  node.allocatable_gpus = 32;
  node.label_topology_profile = "dgx1-v100";
  node.label_gpu_replicas = "4";
  auto r = resolver_.Resolve(node);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->source, TopologySource::kProfile);
  EXPECT_EQ(r->shape->gpu_count(), 8);
  EXPECT_EQ(r->replicas_per_gpu, 4);
  EXPECT_EQ(r->total_slots, 32);
}

TEST_F(ResolverTest, ReplicasFromAllocatableWhenUnlabelled) {
  NodeInfo node;
  node.name = "n";
  node.allocatable_gpus = 16;
  node.label_topology_profile = "dgx1-v100";
  auto r = resolver_.Resolve(node);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->replicas_per_gpu, 2);  // 16 allocatable / 8 physical
  EXPECT_EQ(r->total_slots, 16);
}

TEST_F(ResolverTest, AnnotationWinsOverProfile) {
  NodeInfo node;
  node.name = "n";
  node.allocatable_gpus = 4;
  node.label_topology_profile = "dgx1-v100";
  MachineTopology doc(2);
  doc.SetLink(0, 1, L("NV4"));
  doc.set_replicas_per_gpu(2);
  node.annotation_topology = Result<MachineTopology>(doc);
  auto r = resolver_.Resolve(node);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->source, TopologySource::kAnnotation);
  EXPECT_EQ(r->shape->gpu_count(), 2);
  EXPECT_EQ(r->replicas_per_gpu, 2);  // from the document
  node.label_gpu_replicas = "1";      // the label wins over the document
  EXPECT_EQ(resolver_.Resolve(node)->replicas_per_gpu, 1);
  EXPECT_EQ(resolver_.Resolve(node)->total_slots, 2);
}

TEST_F(ResolverTest, CorruptAnnotationFailsTheNodeEvenWithAProfile) {
  NodeInfo node;
  node.name = "n";
  node.allocatable_gpus = 8;
  node.label_topology_profile = "dgx1-v100";
  node.annotation_topology = Result<MachineTopology>(InvalidArgument("not valid JSON"));
  auto r = resolver_.Resolve(node);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("gputopo.io/topology"), std::string::npos);
  EXPECT_NE(r.status().message().find("not valid JSON"), std::string::npos);
}

TEST_F(ResolverTest, UnknownProfileNamesTheKnownOnes) {
  NodeInfo node;
  node.name = "n";
  node.allocatable_gpus = 8;
  node.label_topology_profile = "dgx-9000";
  auto r = resolver_.Resolve(node);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("dgx-9000"), std::string::npos);
  EXPECT_NE(r.status().message().find("dgx1-v100"), std::string::npos);
}

TEST_F(ResolverTest, FallbackFromCountLabelThenAllocatable) {
  NodeInfo node;
  node.name = "n";
  node.allocatable_gpus = 12;
  node.label_gpu_count = "4";
  node.label_gpu_product = "Tesla-T4-SHARED";
  auto r = resolver_.Resolve(node);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->source, TopologySource::kFallback);
  EXPECT_EQ(r->shape->gpu_count(), 4);
  EXPECT_EQ(r->replicas_per_gpu, 3);
  EXPECT_FALSE(r->shape->links_known());
  EXPECT_EQ((*r->gpus)[2].model, "Tesla-T4-SHARED");

  NodeInfo plain;
  plain.name = "p";
  plain.allocatable_gpus = 3;
  auto p = resolver_.Resolve(plain);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->shape->gpu_count(), 3);  // each allocatable GPU is one physical GPU
  EXPECT_EQ(p->replicas_per_gpu, 1);

  NodeInfo by_replicas;
  by_replicas.name = "r";
  by_replicas.allocatable_gpus = 16;
  by_replicas.label_gpu_replicas = "4";
  EXPECT_EQ(resolver_.Resolve(by_replicas)->shape->gpu_count(), 4);
}

TEST_F(ResolverTest, AbsurdOrMalformedLabelsFailWithAReason) {
  struct Case {
    std::optional<std::string> count, replicas;
    int64_t allocatable;
    const char* expect;
  };
  for (const Case& c : {Case{"abc", std::nullopt, 8, "nvidia.com/gpu.count"},
                        Case{"0", std::nullopt, 8, "nvidia.com/gpu.count"},
                        Case{"999", std::nullopt, 8, "nvidia.com/gpu.count"},
                        Case{std::nullopt, "-2", 8, "nvidia.com/gpu.replicas"},
                        Case{std::nullopt, "4x", 8, "nvidia.com/gpu.replicas"},
                        Case{std::nullopt, std::nullopt, -1, "out of range"},
                        Case{std::nullopt, std::nullopt, 1'000'000'000, "out of range"},
                        Case{std::nullopt, std::nullopt, 500, "at most 64"},
                        Case{std::nullopt, std::nullopt, 0, "no nvidia.com/gpu"}}) {
    NodeInfo node;
    node.name = "n";
    node.allocatable_gpus = c.allocatable;
    node.label_gpu_count = c.count;
    node.label_gpu_replicas = c.replicas;
    auto r = resolver_.Resolve(node);
    ASSERT_FALSE(r.ok()) << c.expect;
    EXPECT_NE(r.status().message().find(c.expect), std::string::npos) << r.status().message();
  }
}

TEST(ProfileCatalogTest, ValidatesNames) {
  ShapeInterner interner;
  ProfileCatalog catalog(interner);
  EXPECT_TRUE(catalog.Add("pcie-4gpu-2numa", "", MachineTopology(4)).ok());
  EXPECT_FALSE(catalog.Add("Bad Name", "", MachineTopology(4)).ok());
  EXPECT_FALSE(catalog.Add("-leading", "", MachineTopology(4)).ok());
  EXPECT_FALSE(catalog.Add("ok", "", MachineTopology(0)).ok());
  EXPECT_NE(catalog.Find("pcie-4gpu-2numa"), nullptr);
  EXPECT_EQ(catalog.Find("nope"), nullptr);
}

}  // namespace
}  // namespace gputopo::topology
