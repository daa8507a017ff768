// Link types in `nvidia-smi topo -m` notation, and the bandwidth weight of each.
//
// Weights are relative GPU-to-GPU bandwidths, roughly GB/s in one direction: one NVLink (v2-v4)
// carries about 25 GB/s, so NV<n> weighs 25*n; PCIe paths weigh less the more bridges and
// interconnects they cross. Only their order and ratios matter: they rank GPU sets and give the
// locality score.
//
// Thread safety: pure functions.
#ifndef GPUTOPO_TOPOLOGY_LINK_TYPE_H_
#define GPUTOPO_TOPOLOGY_LINK_TYPE_H_

#include <optional>
#include <string>
#include <string_view>

#include "gputopo/machine_topology.h"

namespace gputopo::topology {

inline constexpr double kNvLinkWeightPerLink = 25.0;
inline constexpr double kPixWeight = 20.0;
inline constexpr double kPxbWeight = 16.0;
inline constexpr double kPhbWeight = 12.0;
inline constexpr double kNodeWeight = 10.0;
inline constexpr double kSysWeight = 6.0;
// The most bonded NVLinks one pair may have (NV18 on H100 is the largest seen).
inline constexpr int kMaxBondedNvLinks = 64;

// Parses "NV12", "PIX", "PXB", "PHB", "NODE", "SYS" (also "SOC", the old name of SYS).
// nullopt for anything else, including "X".
std::optional<Link> ParseLink(std::string_view text);

// "NV12", "PIX", ...; "UNKNOWN" for an unknown link.
std::string FormatLink(const Link& link);

// Relative bandwidth; 0 for an unknown link.
double LinkWeight(const Link& link);

}  // namespace gputopo::topology

#endif  // GPUTOPO_TOPOLOGY_LINK_TYPE_H_
