// Resolving a node's topology from its labels and annotation.
//
// Sources, in order:
//  1. the `gputopo.io/topology` annotation (a topology document; a corrupt one fails the node);
//  2. the `gputopo.io/topology-profile` label naming a shipped machine profile (an unknown name
//     fails the node);
//  3. a fallback from the GPU count: label `nvidia.com/gpu.count`, else allocatable divided by
//     the replicas label, else allocatable; every link unknown.
// Replicas per GPU: label `nvidia.com/gpu.replicas`, else the document's `replicas`, else
// allocatable divided by the physical GPU count, rounded up (a node whose device plugin marked
// one GPU's replicas unhealthy advertises fewer than gpus * R), else 1. The node's slots are
// allocatable, capped at gpus * R.
//
// Thread safety: Resolve() is safe to call concurrently (the interner and catalog are).
#ifndef GPUTOPO_TOPOLOGY_TOPOLOGY_RESOLVER_H_
#define GPUTOPO_TOPOLOGY_TOPOLOGY_RESOLVER_H_

#include <memory>
#include <string>
#include <vector>

#include "gputopo/machine_topology.h"
#include "gputopo/node_info.h"
#include "gputopo/status.h"
#include "topology/profile_catalog.h"
#include "topology/shape_interner.h"
#include "topology/topology_shape.h"

namespace gputopo::topology {

// One node's hardware, resolved. Immutable once built.
struct ResolvedTopology {
  std::shared_ptr<const TopologyShape> shape;        // shared by nodes of one machine type
  std::shared_ptr<const std::vector<GpuInfo>> gpus;  // identities, parallel to shape's GPUs
  int replicas_per_gpu = 1;  // time-slice replicas each physical GPU is advertised as
  int total_slots = 0;       // replicas kubelet can hand out: allocatable, capped at gpus*R
  TopologySource source = TopologySource::kFallback;
  std::string source_detail;  // e.g. "profile dgx1-v100", "gpu count from nvidia.com/gpu.count"
};

class TopologyResolver {
 public:
  // Both must outlive the resolver.
  TopologyResolver(const ProfileCatalog& profiles, ShapeInterner& interner)
      : profiles_(profiles), interner_(interner) {}

  // Error (with a message fit for a user) when the node's topology cannot be determined: a
  // corrupt annotation, an unknown profile, an unparsable label, absurd counts.
  Result<ResolvedTopology> Resolve(const NodeInfo& node) const;

 private:
  const ProfileCatalog& profiles_;
  ShapeInterner& interner_;
};

}  // namespace gputopo::topology

#endif  // GPUTOPO_TOPOLOGY_TOPOLOGY_RESOLVER_H_
