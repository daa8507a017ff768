// The topology document (docs/topology-document.md): JSON <-> MachineTopology.
//
// Used for the node annotation gputopo.io/topology, the shipped machine profiles, and the
// output of `gputopo topology import`. nlohmann::json: never on the request path (node objects
// are decoded when they change, not per request).
//
// Thread safety: pure functions.
#ifndef GPUTOPO_SRC_CODEC_TOPOLOGY_DOCUMENT_H_
#define GPUTOPO_SRC_CODEC_TOPOLOGY_DOCUMENT_H_

#include <string>
#include <string_view>
#include <vector>

#include "gputopo/machine_topology.h"
#include "gputopo/status.h"

namespace gputopo::codec {

// Error, with the offending field named, when the document is corrupt.
Result<MachineTopology> ParseTopologyDocument(std::string_view json);

struct ProfileDocument {
  std::string name;
  std::string description;
  MachineTopology machine;
};
Result<ProfileDocument> ParseProfileDocument(std::string_view json);

struct TopologyFormatOptions {
  bool pretty = true;                 // indented, for people; compact for annotations
  std::vector<std::string> comments;  // emitted as "notes": [...] (e.g. parser diagnostics)
};
std::string FormatTopologyDocument(const MachineTopology& machine,
                                   const TopologyFormatOptions& options = {});

}  // namespace gputopo::codec

#endif  // GPUTOPO_SRC_CODEC_TOPOLOGY_DOCUMENT_H_
