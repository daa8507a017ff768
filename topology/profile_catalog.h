// ProfileCatalog: the machine profiles a node can name with the label
// `gputopo.io/topology-profile=<name>`.
//
// The profiles gputopo ships live in topology/profiles/*.json (topology documents, the same
// format as the node annotation); main loads them, plus any from --profiles-dir, through the
// document codec in src/ and adds them here.
//
// Thread safety: build it single-threaded, then share it read-only.
#ifndef GPUTOPO_TOPOLOGY_PROFILE_CATALOG_H_
#define GPUTOPO_TOPOLOGY_PROFILE_CATALOG_H_

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gputopo/machine_topology.h"
#include "gputopo/status.h"
#include "topology/shape_interner.h"
#include "topology/topology_shape.h"

namespace gputopo::topology {

struct Profile {
  std::string name;
  std::string description;
  MachineTopology machine;
  std::shared_ptr<const TopologyShape> shape;
  std::shared_ptr<const std::vector<GpuInfo>> gpus;
};

class ProfileCatalog {
 public:
  // `interner` must outlive the catalog.
  explicit ProfileCatalog(ShapeInterner& interner) : interner_(interner) {}

  // Adds or replaces a profile. Error when the name is not a valid label value or the machine is
  // invalid.
  Status Add(std::string name, std::string description, const MachineTopology& machine);

  // nullptr when there is no such profile.
  const Profile* Find(std::string_view name) const;
  std::vector<std::string> Names() const;

 private:
  ShapeInterner& interner_;
  std::map<std::string, Profile, std::less<>> profiles_;
};

// True when `value` is a valid Kubernetes label value: at most 63 characters, alphanumerics,
// '-', '_' and '.', starting and ending with an alphanumeric (or empty).
bool IsValidLabelValue(std::string_view value);

}  // namespace gputopo::topology

#endif  // GPUTOPO_TOPOLOGY_PROFILE_CATALOG_H_
