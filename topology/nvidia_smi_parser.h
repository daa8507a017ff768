// Parser of `nvidia-smi topo -m` output.
//
// Reads the GPU-to-GPU link matrix and each GPU's NUMA node from the text nvidia-smi prints:
// TAB-separated raw output or space-aligned pastes, with or without NIC rows and columns,
// legends, `CPU Affinity`, `NUMA Affinity` and `GPU NUMA ID` columns, with or without a leading
// UTF-8 byte order mark. When there is no `NUMA Affinity` column, GPUs that share a CPU affinity
// are taken to share a NUMA node, numbered in order of first appearance, and a diagnostic says
// so. Cells that cannot be read, rows missing from a truncated capture and asymmetric pairs are
// reported as diagnostics, never fatal: the links they concern stay unknown (or the weaker of an
// asymmetric pair is kept).
//
// Captures mangled by pasting are read as far as they can be, each repair noted:
// - a column name run into an attribute name ("NIC3CPU Affinity") is split in two;
// - a GPU row with more cells than the header has columns (two NIC names run together, as in
//   "NIC8NIC9") has its GPU cells read from the start and its attribute cells from the end.
// A legend without an `NV#` line, over a matrix with no NVLink, is taken for `topo -mp` output,
// which does not show NVLinks; a diagnostic says so.
//
// Thread safety: pure function.
#ifndef GPUTOPO_TOPOLOGY_NVIDIA_SMI_PARSER_H_
#define GPUTOPO_TOPOLOGY_NVIDIA_SMI_PARSER_H_

#include <string>
#include <string_view>
#include <vector>

#include "gputopo/machine_topology.h"
#include "gputopo/status.h"

namespace gputopo::topology {

struct NvidiaSmiTopology {
  MachineTopology machine;               // GPUs 0..n-1 from the header's GPU columns
  std::vector<std::string> nics;         // NIC column names ("NIC0", "mlx5_0"), informational
  std::vector<std::string> diagnostics;  // what could not be read, one line each
};

// Error when the text has no header line with GPU columns, the header has more than
// kMaxGpusPerNode of them, or a header column GPU<N> has N past kMaxGpusPerNode - 1 (dropping it
// would shrink the GPU count). Anything else (bad cells, missing or repeated rows, a row labelled
// GPU<N> past that range) is a diagnostic.
// Diagnostics quote input as printable ASCII (other bytes as \xNN) and are capped in number.
Result<NvidiaSmiTopology> ParseNvidiaSmiTopo(std::string_view text);

}  // namespace gputopo::topology

#endif  // GPUTOPO_TOPOLOGY_NVIDIA_SMI_PARSER_H_
