// The extender preempt verb's wire format (k8s.io/kube-scheduler/extender/v1).
//
// Request: ExtenderPreemptionArgs {Pod, NodeNameToVictims, NodeNameToMetaVictims}. With
// nodeCacheCapable the scheduler fills NodeNameToMetaVictims ({node: {"Pods": [{"UID": ...}],
// "NumPDBViolations": n}}) and sends NodeNameToVictims null; without it, NodeNameToVictims
// carries full Pod objects instead. No node list is sent: the map's keys (sorted by name) are
// the nodes where the scheduler's own dry run found victims. Keys are Go field names, matched
// case-insensitively as encoding/json does.
//
// Reply: ExtenderPreemptionResult {NodeNameToMetaVictims}: the nodes the extender keeps, each
// with the pods to evict (UIDs; the scheduler resolves them among the pods it holds on that
// node, so each must be one of them) and its NumPDBViolations. The type has no error field: an
// extender that cannot answer replies with an HTTP error, which fails that preemption attempt.
//
// Thread safety: pure functions.
#ifndef GPUTOPO_SRC_CODEC_PREEMPTION_CODEC_H_
#define GPUTOPO_SRC_CODEC_PREEMPTION_CODEC_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gputopo/pod_info.h"
#include "gputopo/status.h"

namespace gputopo::extender {

struct PreemptionNode {
  std::string name;
  std::vector<std::string> victim_uids;  // the scheduler's victims, in its order
  // Their priorities, parallel to victim_uids, when full Pods were sent.
  std::vector<int32_t> victim_priorities;
  int64_t pdb_violations = 0;
  std::string error;  // this node's entry could not be used (the other nodes still are)
};

struct PreemptionArgs {
  PodInfo pod;
  bool full_pods = false;             // NodeNameToVictims was sent (nodeCacheCapable: false)
  std::vector<PreemptionNode> nodes;  // in request order
};

// One node of the reply.
struct MetaVictims {
  std::string_view node;
  const std::vector<std::string>* uids = nullptr;
  int64_t pdb_violations = 0;
};

// InvalidArgument when the body is not JSON, not an object, has no readable Pod, or a victims
// map whose shape is not the one above. An entry without UIDs fails only its node.
Result<PreemptionArgs> ParsePreemptionArgs(std::string_view body);

// ExtenderPreemptionResult.
std::string WritePreemptionResult(const std::vector<MetaVictims>& nodes);

}  // namespace gputopo::extender

#endif  // GPUTOPO_SRC_CODEC_PREEMPTION_CODEC_H_
