// ShapeInterner: one TopologyShape per distinct machine shape.
//
// Nodes of one machine type (same links and NUMA layout, whatever their GPU UUIDs) get the same
// shape object, so the analysis runs once and per-shape caches are shared.
//
// Thread safety: thread-safe; Intern() may be called concurrently.
#ifndef GPUTOPO_TOPOLOGY_SHAPE_INTERNER_H_
#define GPUTOPO_TOPOLOGY_SHAPE_INTERNER_H_

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "gputopo/machine_topology.h"
#include "gputopo/mutex.h"
#include "gputopo/status.h"
#include "topology/topology_shape.h"

namespace gputopo::topology {

class ShapeInterner {
 public:
  // The shared shape of `machine`, analysed on first sight. Error when `machine` is invalid.
  Result<std::shared_ptr<const TopologyShape>> Intern(const MachineTopology& machine);

  // Number of distinct shapes alive.
  size_t size() const;

 private:
  mutable Mutex mutex_;
  // Keyed by TopologyShape::fingerprint(); weak so that shapes of removed nodes are freed.
  std::unordered_map<std::string, std::weak_ptr<const TopologyShape>> shapes_
      GPUTOPO_GUARDED_BY(mutex_);
};

// The fingerprint TopologyShape::Analyze() would give `machine`, without analysing it.
std::string ShapeFingerprint(const MachineTopology& machine);

}  // namespace gputopo::topology

#endif  // GPUTOPO_TOPOLOGY_SHAPE_INTERNER_H_
