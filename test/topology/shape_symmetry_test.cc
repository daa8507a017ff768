// ShapeSymmetry: twin classes and relabelings of the machines the tests know, and that every
// relabeling found keeps every link and the NUMA partition.
#include "topology/shape_symmetry.h"

#include <gtest/gtest.h>

#include <set>

#include "test/support/machines.h"
#include "topology/topology_shape.h"

namespace gputopo::topology {
namespace {

std::shared_ptr<const TopologyShape> ShapeOf(const MachineTopology& machine) {
  auto shape = TopologyShape::Analyze(machine);
  EXPECT_TRUE(shape.ok());
  return *shape;
}

// Every relabeling keeps each pair's link and whether two GPUs share a NUMA node, and is a
// permutation; the first is the identity; none repeats.
void ExpectAutomorphisms(const TopologyShape& shape) {
  const ShapeSymmetry& symmetry = shape.symmetry();
  const int n = shape.gpu_count();
  ASSERT_FALSE(symmetry.relabelings.empty());
  for (int g = 0; g < n; ++g) EXPECT_EQ(symmetry.relabelings[0][static_cast<size_t>(g)], g);
  std::set<std::vector<uint8_t>> seen;
  for (const std::vector<uint8_t>& r : symmetry.relabelings) {
    EXPECT_TRUE(seen.insert(r).second);
    EXPECT_EQ(std::set<uint8_t>(r.begin(), r.end()).size(), static_cast<size_t>(n));
    for (int a = 0; a < n; ++a) {
      for (int b = 0; b < n; ++b) {
        if (a == b) continue;
        EXPECT_EQ(shape.link(a, b),
                  shape.link(r[static_cast<size_t>(a)], r[static_cast<size_t>(b)]));
        EXPECT_EQ(
            shape.numa_of(a) == shape.numa_of(b),
            shape.numa_of(r[static_cast<size_t>(a)]) == shape.numa_of(r[static_cast<size_t>(b)]));
      }
    }
  }
  // Twins keep every link when swapped.
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      if (i == j || symmetry.twin_class[static_cast<size_t>(i)] !=
                        symmetry.twin_class[static_cast<size_t>(j)]) {
        continue;
      }
      EXPECT_EQ(shape.numa_of(i), shape.numa_of(j));
      for (int k = 0; k < n; ++k) {
        if (k != i && k != j) {
          EXPECT_EQ(shape.link(i, k), shape.link(j, k));
        }
      }
    }
  }
}

TEST(ShapeSymmetryTest, NvSwitchGpusOfOneNumaNodeAreTwinsAndTheNodesSwap) {
  const auto shape = ShapeOf(testing::HgxH100());
  ExpectAutomorphisms(*shape);
  const ShapeSymmetry& symmetry = shape->symmetry();
  EXPECT_EQ(symmetry.twin_classes, 2);
  EXPECT_EQ(symmetry.twin_class, (std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1}));
  ASSERT_EQ(symmetry.relabelings.size(), 2u);  // the identity, and the two NUMA nodes swapped
  EXPECT_EQ(symmetry.relabelings[1], (std::vector<uint8_t>{4, 5, 6, 7, 0, 1, 2, 3}));
  EXPECT_FALSE(symmetry.trivial());
}

TEST(ShapeSymmetryTest, TheHybridCubeMeshHasNoTwinsButRelabelings) {
  const auto shape = ShapeOf(testing::Dgx1());
  ExpectAutomorphisms(*shape);
  EXPECT_EQ(shape->symmetry().twin_classes, 8);
  EXPECT_GT(shape->symmetry().relabelings.size(), 1u);
  EXPECT_FALSE(shape->symmetry().trivial());
}

TEST(ShapeSymmetryTest, PairsAndPcieMachines) {
  for (const MachineTopology& machine : {testing::NvLinkPairs(), testing::PcieTwoNuma(8)}) {
    const auto shape = ShapeOf(machine);
    ExpectAutomorphisms(*shape);
    EXPECT_FALSE(shape->symmetry().trivial());
  }
}

TEST(ShapeSymmetryTest, AMachineWithoutSymmetryIsTrivial) {
  // Three GPUs on a path of distinct links: only the identity keeps them.
  MachineTopology machine(3);
  machine.SetLink(0, 1, Link{LinkType::kNvLink, 2});
  machine.SetLink(1, 2, Link{LinkType::kNvLink, 1});
  machine.SetLink(0, 2, Link{LinkType::kSys, 0});
  const auto shape = ShapeOf(machine);
  ExpectAutomorphisms(*shape);
  EXPECT_TRUE(shape->symmetry().trivial());
}

}  // namespace
}  // namespace gputopo::topology
