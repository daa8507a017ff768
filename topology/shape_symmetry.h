// ShapeSymmetry: the relabelings of a machine's GPUs that leave its topology unchanged.
//
// Two nodes of one machine type whose GPUs are in the same states up to such a relabeling
// evaluate alike: the same candidate sets, relabeled, score the same. evaluation/ uses this to
// search one node of each such class of states instead of every node.
//
// - Twin classes: GPUs that are interchangeable on their own (the same link to every other GPU
//   and the same NUMA node), such as the GPUs of one NUMA node behind an NVSwitch. Any
//   permutation inside a class keeps the topology.
// - Relabelings: automorphisms of the links and of the NUMA partition (a NUMA node may map to
//   another) that keep the order of GPUs inside every twin class. Together with the
//   permutations inside twin classes they make every automorphism; the identity is first. At
//   most kMaxRelabelings are listed (every listed one is an automorphism whatever the cap).
//
// Thread safety: immutable after FindShapeSymmetry.
#ifndef GPUTOPO_TOPOLOGY_SHAPE_SYMMETRY_H_
#define GPUTOPO_TOPOLOGY_SHAPE_SYMMETRY_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gputopo::topology {

class TopologyShape;

struct ShapeSymmetry {
  static constexpr size_t kMaxRelabelings = 64;
  // Per GPU, its twin class, numbered 0.. in order of each class's lowest GPU.
  std::vector<int> twin_class;
  int twin_classes = 0;
  // Each maps GPU g to relabeling[g]; relabelings[0] is the identity.
  std::vector<std::vector<uint8_t>> relabelings;
  // True when no state can be relabeled into another: every class has one GPU and the identity
  // is the only relabeling.
  bool trivial() const {
    return twin_classes == static_cast<int>(twin_class.size()) && relabelings.size() <= 1;
  }
};

// From the shape's links and NUMA nodes (islands follow from the links). Pure.
ShapeSymmetry FindShapeSymmetry(const TopologyShape& shape);

}  // namespace gputopo::topology

#endif  // GPUTOPO_TOPOLOGY_SHAPE_SYMMETRY_H_
