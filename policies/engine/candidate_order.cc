#include "policies/engine/candidate_order.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "gputopo/machine_topology.h"

namespace gputopo::policies {

int FragmentationStep(double fragmentation_score, int steps) {
  if (!(fragmentation_score > 0.0)) return 0;  // an infinite increase; NaN too
  // exp(d / 1000) = sqrt(exp(d / 500)) = sqrt(10 / score - 1).
  const double growth = std::sqrt(std::max(0.0, kMaxComponentScore / fragmentation_score - 1.0));
  const double step = std::floor(steps / (1.0 + growth));
  return static_cast<int>(std::clamp(step, 0.0, static_cast<double>(steps)));
}

double FixedNodeOrder(std::string_view node_name) {
  uint64_t hash = 14695981039346656037ULL;
  for (const char c : node_name) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ULL;
  }
  // FNV-1a alone leaves the last bytes' effect on the high bits nearly linear (names that differ
  // in one digit would keep their numeric order): MurmurHash3's finalizer spreads every bit.
  hash ^= hash >> 33;
  hash *= 0xff51afd7ed558ccdULL;
  hash ^= hash >> 33;
  hash *= 0xc4ceb9fe1a85ec53ULL;
  hash ^= hash >> 33;
  // 31 bits: as a double exact, and below 1 after the scaling.
  return std::ldexp(static_cast<double>(hash >> 33), -31);
}

double MachineOrder(int node_gpus, std::string_view node_name) {
  // 65 sizes (0..64 GPUs) in 7 bits above the name's 31.
  const int smaller = kMaxGpusPerNode - std::clamp(node_gpus, 0, kMaxGpusPerNode);
  return std::ldexp(smaller + FixedNodeOrder(node_name), -7);
}

bool TakesGpuShare(const PodRequirements& pod) {
  return pod.gpus == 1 && !pod.exclusive && pod.gpu_milli.has_value() &&
         *pod.gpu_milli < kWholeGpuMilli;
}

CandidateOrder::CandidateOrder(const Preset& preset, const PodRequirements& pod)
    : normalization_(preset.normalization()) {
  if (preset.sharing_pod_order().steps > 0 && TakesGpuShare(pod)) {
    sharing_ = &preset.sharing_pod_order();
  }
}

double CandidateOrder::Input(const EvaluationRef& e, std::string_view node_name) const {
  if (sharing_ == nullptr) {
    return NormalizationInput(e.weighted_score, e.locality_missed, normalization_);
  }
  const ComponentScores& scores = e.evaluation->component_scores;
  if (scores.size() <= sharing_->fragmentation) {  // not scored by this preset's components
    return NormalizationInput(e.weighted_score, e.locality_missed, normalization_) - 100.0;
  }
  // Tiers of width steps + 1 each: the step and the machine's place (below 1) stay inside one.
  // Every term is an integer below 2^15 (kMaxSharingPodSteps) or a 38-bit fraction, so the sum
  // is exact.
  static_assert(2 * kMaxSharingPodSteps + 1 < (1 << 15) && kMaxGpusPerNode < (1 << 7));
  const double tier = static_cast<double>(sharing_->steps) + 1.0;
  const bool apart = !sharing_->replica_spread || *sharing_->replica_spread >= scores.size() ||
                     scores[*sharing_->replica_spread] > 0.0;
  return (apart ? tier : 0.0) +
         FragmentationStep(scores[sharing_->fragmentation], sharing_->steps) +
         MachineOrder(e.evaluation->node_gpus, node_name);
}

std::string CandidateOrder::Describe() const {
  std::string out(ScoreNormalizationName(normalization_));
  if (sharing_ != nullptr) {
    out += " of the GPU-share order: replicas apart, then the fragmentation step of " +
           std::to_string(sharing_->steps) + ", then smaller machines, then a fixed node order";
  }
  return out;
}

}  // namespace gputopo::policies
