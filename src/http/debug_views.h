// JSON views of gputopo's state and decisions, for the /debug endpoints. nlohmann::json; never
// on the scheduling path.
//
// Thread safety: pure functions of their arguments.
#ifndef GPUTOPO_SRC_HTTP_DEBUG_VIEWS_H_
#define GPUTOPO_SRC_HTTP_DEBUG_VIEWS_H_

#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

#include "cluster/cluster_state.h"
#include "policies/state/cluster_snapshot.h"
#include "src/service/decision_log.h"

namespace gputopo::http {

// /debug/nodes: one summary per node (with each GPU's slots used and groups, for /ui's cells),
// in snapshot order, `limit` of them from `offset` (a page; `total` says how many there are).
std::string RenderNodes(const policies::ClusterSnapshot& snapshot, size_t offset = 0,
                        size_t limit = SIZE_MAX);
// /debug/nodes/<name>: GPUs, islands, NUMA nodes, links, occupants, free slots, source. An
// occupant whose uid is in `reserved_pods` is marked `"reserved": true` (its bind is in flight).
std::string RenderNode(const policies::NodeState& node,
                       const std::unordered_set<std::string>& reserved_pods = {});
// /debug/decisions: the most recent decisions, newest first.
std::string RenderDecisions(const std::vector<service::DecisionRecord>& records);
// /debug/pods/<ns>/<name>: per node verdict and reason, or score split; the chosen node, GPUs,
// island. At most `max_nodes` nodes per cycle are listed (failed first by reason, then the
// best scores); counts cover all. With the pod as the cache holds it now (`current`, may be
// null), also the GPUs gputopo assigned and those the node agent observed, and whether they
// differ.
std::string RenderPod(const std::string& pod_key, const service::PodHistory& history,
                      size_t max_nodes, const PodInfo* current = nullptr);
// /debug: an index of the endpoints and a few counts.
// `workload`: the learned mix (null before one is learned), from `observed` GPU pods.
std::string RenderIndex(const cluster::ClusterCounts& counts, const std::string& default_preset,
                        const std::vector<std::string>& presets,
                        const policies::ObservedWorkload* workload = nullptr,
                        uint64_t observed = 0);

}  // namespace gputopo::http

#endif  // GPUTOPO_SRC_HTTP_DEBUG_VIEWS_H_
