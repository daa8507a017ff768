// What kubectl-gputopo prints: tables and matrices for people, from NodeStates (pure; no I/O).
//
// Tables follow kubectl's layout: upper-case headers, columns padded with three spaces, "<none>"
// for nothing. Colour (ANSI) only when the Style says so: the caller decides from the terminal
// and --color.
//
// Thread safety: pure functions.
#ifndef GPUTOPO_SRC_KUBECTL_RENDER_H_
#define GPUTOPO_SRC_KUBECTL_RENDER_H_

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "gputopo/pod_info.h"
#include "policies/engine/evaluation.h"
#include "policies/state/node_state.h"

namespace gputopo::kubectl {

struct Style {
  bool color = false;
  std::string Bold(std::string_view text) const;
  std::string Good(std::string_view text) const;  // green
  std::string Warn(std::string_view text) const;  // yellow
  std::string Bad(std::string_view text) const;   // red
};

// Rows of cells, aligned. A cell may hold ANSI colour codes: widths count only visible text.
std::string Table(const std::vector<std::vector<std::string>>& rows);

// `kubectl gputopo nodes`: one row per node.
std::string NodesTable(const std::vector<const policies::NodeState*>& nodes, bool wide,
                       const Style& style);
// `kubectl gputopo nodes NAME`: the node, then one row per GPU with its occupants. Occupants
// outside `namespace_filter` (when not empty) are counted, not named.
std::string NodeDetail(const policies::NodeState& node, const std::string& namespace_filter,
                       const Style& style);
// `kubectl gputopo topo NODE`: the link matrix in `nvidia-smi topo -m` layout, with each GPU's
// NUMA node and NVLink island, and the islands listed below.
std::string TopoMatrix(const policies::NodeState& node, const Style& style);

// One node's evaluation of a pod, for `explain` computed here.
struct NodeVerdict {
  std::string node;
  policies::NodeEvaluation evaluation;
  std::string placement;  // where, for a pod that fits
};
// `kubectl gputopo explain POD` without gputopo: the pod, where it is, and the verdict of every
// node (best scores first, then failures by reason).
std::string ExplainComputed(const PodInfo& pod, const std::string& requirements,
                            const std::string& preset, const std::vector<NodeVerdict>& verdicts,
                            const std::vector<policies::ComponentResult>& bound_components,
                            const Style& style);
// The same from gputopo's own record: the JSON of its /debug/pods/<namespace>/<name>.
std::string ExplainRecorded(const nlohmann::json& record, const Style& style);

}  // namespace gputopo::kubectl

#endif  // GPUTOPO_SRC_KUBECTL_RENDER_H_
