// PlacementContext: one pod on one node, with what every component needs precomputed.
//
// Built once per (pod, node) evaluation and shared by all components and all candidate GPU sets.
//
// Thread safety: immutable after MakePlacementContext(); borrowed references must outlive it.
#ifndef GPUTOPO_POLICIES_ENGINE_PLACEMENT_CONTEXT_H_
#define GPUTOPO_POLICIES_ENGINE_PLACEMENT_CONTEXT_H_

#include <array>

#include "policies/requirements/pod_requirements.h"
#include "policies/state/node_state.h"
#include "topology/gpu_mask.h"
#include "topology/topology_shape.h"

namespace gputopo::policies {

struct PlacementContext {
  const PodRequirements& pod;
  const NodeState& node;
  const topology::TopologyShape& shape;  // node.shape()
  int share_milli = 0;                   // the pod's share of each of its GPUs on this node
  GpuMask all = 0;                       // every GPU of the node
  GpuMask empty = 0;                     // GPUs holding no pod
  GpuMask group_gpus = 0;                // GPUs holding a pod of the pod's group
  GpuMask group_islands = 0;             // GPUs in NVLink islands that hold a pod of the group
  std::array<int, 64> free_slots{};      // per GPU
  std::array<int, 64> free_milli{};      // per GPU
  int node_free_slots = 0;               // slots free on the node (unplaced pods included)
};

// Precondition: node.has_topology(). `group_gpus`: node.GroupGpus(pod.group), when the caller
// has it already.
PlacementContext MakePlacementContext(const PodRequirements& pod, const NodeState& node);
PlacementContext MakePlacementContext(const PodRequirements& pod, const NodeState& node,
                                      GpuMask group_gpus);

}  // namespace gputopo::policies

#endif  // GPUTOPO_POLICIES_ENGINE_PLACEMENT_CONTEXT_H_
