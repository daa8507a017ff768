// Which pods to evict from one node so that a pod of higher priority fits there, by gputopo's
// own filter.
//
// kube-scheduler's default preemption counts nvidia.com/gpu replicas: four replicas that share
// one physical GPU free "4 GPUs" for a 4-GPU pod that still cannot run, and it never looks at
// NVLink islands. Its dry run still knows what gputopo does not (CPU, memory, ports, the other
// plugins), so the choice starts from the scheduler's proposal for the node:
//  - proposed victims gputopo does not track on the node (pods without GPUs) are always kept:
//    the scheduler evicts them for resources gputopo cannot see;
//  - among the pods gputopo tracks there, any of lower priority than the preemptor may go;
//  - the set chosen is one after which the preemptor passes gputopo's filter (GPU count,
//    distinct GPUs, locality, spread, shares, exclusivity), minimising in order: the PDB
//    violations it may cause, the highest victim priority, the number of victims.
// PodDisruptionBudgets: with `budgets` (gputopo watches them), the violations of a set are
// counted as kube-scheduler counts them (disruption_budgets.h); pods of a budget that could
// break (fewer disruptions left than the candidates it counts here) are spared first; and
// NumPDBViolations is that count (plus, for proposed pods without GPUs, which the coverage does
// not hold, at most the scheduler's own count). Without them (the watch is not
// synced, or not allowed), what gputopo knows is the scheduler's NumPDBViolations for its own
// proposal, which bounds the violations among proposed pods. A pod the scheduler did not propose
// may then be one it spared for its PDB: gputopo adds such pods only where the proposal fails its
// filter or would leave a multi-GPU pod on worse links than evicting could free (GPUs all
// pairwise NVLinked, else one NVLink island), as few as it can, and counts each as a possible
// violation. The count returned is then an upper bound.
//
// Thread safety: pure functions.
#ifndef GPUTOPO_POLICIES_PREEMPTION_VICTIM_SELECTION_H_
#define GPUTOPO_POLICIES_PREEMPTION_VICTIM_SELECTION_H_

#include <cstdint>
#include <string>
#include <vector>

#include "policies/preemption/disruption_budgets.h"
#include "policies/registry/component_registry.h"
#include "policies/requirements/pod_requirements.h"
#include "policies/state/node_state.h"

namespace gputopo::policies {

// The scheduler's dry-run victims on one node.
struct ProposedVictims {
  std::vector<std::string> uids;
  int64_t pdb_violations = 0;  // its NumPDBViolations
};

struct VictimChoice {
  bool possible = false;
  std::string reason;  // when !possible: short and stable across nodes
  std::string detail;  // this node's particulars
  // The pods to evict: gputopo's choice among the pods it tracks, lowest priority first, then
  // the proposed pods it does not track. Never empty when possible.
  std::vector<std::string> victims;
  // How many victims break a PodDisruptionBudget: counted (pdb_counted), else at most this many.
  int64_t pdb_violations = 0;
  bool pdb_counted = false;  // from watched budgets, not bounded from the scheduler's count
  int32_t max_priority = 0;  // the highest priority among the victims gputopo tracks
  GpuMask gpus = 0;          // the preemptor's GPUs once the victims are gone
  bool as_proposed = false;  // the victims are exactly the scheduler's proposal
  int added = 0;             // victims gputopo added to the proposal
  int spared = 0;            // proposed victims gputopo spared
  int evaluations = 0;       // victim sets tried
};

// `priority` is the preemptor's spec.priority. `budgets`: the watched budgets that count the
// node's pods, or null when gputopo does not know them.
VictimChoice ChooseVictims(const PodRequirements& pod, int32_t priority, const NodeState& node,
                           const Preset& preset, const ProposedVictims& proposed,
                           const BudgetCoverage* budgets = nullptr);

}  // namespace gputopo::policies

#endif  // GPUTOPO_POLICIES_PREEMPTION_VICTIM_SELECTION_H_
