// What filter, prioritize and bind share: the cluster cache, the presets, and how a pod's
// preset is chosen and described.
//
// Thread safety: the referenced objects are thread-safe or immutable; this struct only borrows.
#ifndef GPUTOPO_SRC_SERVICE_SCHEDULING_CONTEXT_H_
#define GPUTOPO_SRC_SERVICE_SCHEDULING_CONTEXT_H_

#include <memory>
#include <string>

#include "cluster/cluster_state.h"
#include "evaluation/evaluation_source.h"
#include "gputopo/clock.h"
#include "gputopo/status.h"
#include "policies/engine/evaluation.h"
#include "policies/registry/component_registry.h"
#include "policies/requirements/pod_requirements.h"
#include "src/service/decision_log.h"
#include "src/service/recent_pods.h"

namespace gputopo::service {

struct SchedulingContext {
  cluster::ClusterState& state;
  const policies::PresetCatalog& presets;
  std::string default_preset;
  RecentPods& recent_pods;
  DecisionLog& decisions;
  const Clock& clock;
  // Every node's evaluation for a cycle (CachedEvaluations in the server; PlainEvaluations is
  // the same answer without reuse).
  evaluation::EvaluationSource& evaluations;

  // The pod's gputopo.io/policy preset, else the default. NotFound names the known presets.
  Result<std::shared_ptr<const policies::Preset>> PresetFor(
      const policies::PodRequirements& pod) const;
};

// "2 GPUs, locality nvlink (preferred), spread preferred, group research/Deployment/web".
std::string DescribeRequirements(const policies::PodRequirements& pod);

// "GPUs 0,1 (island 0, NUMA 0)": where a set of GPUs sits on a node.
std::string DescribePlacement(const policies::NodeState& node, policies::GpuMask gpus);

}  // namespace gputopo::service

#endif  // GPUTOPO_SRC_SERVICE_SCHEDULING_CONTEXT_H_
