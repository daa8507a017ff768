// CandidateOrder: what prioritize (NormalizeScores) and --filter-decides (DecidedCandidate)
// order the nodes that one pod fits by.
//
// Every pod is ordered by its weighted score (NormalizationInput), except under a preset with
// sharingPodSteps (Preset::sharing_pod_order), where a pod that takes a share of one GPU
// (gputopo.io/gpu-milli below 1000, one GPU, not exclusive) is ordered as FGD (ATC'23) orders
// it:
//   1. replicas first: a node whose chosen GPU holds none of the pod's group (the
//      replica-spread component's score above 0) before one whose GPU does;
//   2. then the fragmentation change, in FGD's coarse steps (FragmentationStep): a larger step
//      is a smaller increase of the capacity that the workload mix can no longer use;
//   3. then smaller machines (fewer GPUs) first, and among machines of one size a fixed order of
//      node names (MachineOrder), the same for every pod, so that equal steps fill the same
//      nodes first instead of scattering shares over the cluster, and the larger machines stay
//      whole longest.
// The packing and other weighted components do not count for such pods: on the Alibaba
// GPU-sharing trace, ordering within a step by the weighted score placed less (bench/README).
// The evaluations and their caches are the same under both orders: only the order of nodes that
// fit changes, and it needs the node's name, which no evaluation sees.
//
// Thread safety: immutable after construction.
#ifndef GPUTOPO_POLICIES_ENGINE_CANDIDATE_ORDER_H_
#define GPUTOPO_POLICIES_ENGINE_CANDIDATE_ORDER_H_

#include <string>
#include <string_view>

#include "policies/engine/evaluation.h"
#include "policies/engine/normalize.h"
#include "policies/registry/component_registry.h"
#include "policies/requirements/pod_requirements.h"

namespace gputopo::policies {

// FGD's score of a placement: floor(steps * sigmoid(-d / 1000)), d the increase of expected
// fragmentation in milli-GPUs, recovered from the fragmentation component's score
// 10 / (1 + exp(d / 500)) (FragmentationScore). 0..steps; steps for a score of 10.
int FragmentationStep(double fragmentation_score, int steps);

// A node's place in the fixed order: a hash of its name (64-bit FNV-1a, so the same in every
// build and replica) mapped into [0, 1). Distinct names rarely collide (31 bits).
double FixedNodeOrder(std::string_view node_name);

// A node's place within one fragmentation step, in [0, 1), higher first: fewer GPUs first, then
// FixedNodeOrder. A multiple of 2^-38, so that a step (an integer up to 2^15) plus it is exact.
double MachineOrder(int node_gpus, std::string_view node_name);

// Whether `pod` takes a share of one GPU, and so is ordered by the sharing-pod rule where a
// preset asks for it.
bool TakesGpuShare(const PodRequirements& pod);

class CandidateOrder {
 public:
  // `preset` must outlive the order.
  CandidateOrder(const Preset& preset, const PodRequirements& pod);

  ScoreNormalization normalization() const { return normalization_; }
  // Whether Input reads node names; when false, any name may be passed.
  bool by_name() const { return sharing_ != nullptr; }
  // What NormalizeScores and DecidedCandidate order a fitting node by, the highest first.
  // Precondition: e.fits() and e.evaluation is the evaluation (EvaluationRef::To).
  double Input(const EvaluationRef& e, std::string_view node_name) const;
  // For /debug: the normalization's name, and the sharing-pod rule where it applies.
  std::string Describe() const;

 private:
  ScoreNormalization normalization_;
  const SharingPodOrder* sharing_ = nullptr;  // the preset's, when the pod is ordered by it
};

}  // namespace gputopo::policies

#endif  // GPUTOPO_POLICIES_ENGINE_CANDIDATE_ORDER_H_
