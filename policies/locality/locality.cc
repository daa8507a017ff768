#include "policies/locality/locality.h"

#include <algorithm>
#include <bit>
#include <cstdio>

#include "topology/link_type.h"

namespace gputopo::policies {

bool LocalityTargetMet(Locality target, const topology::TopologyShape& shape, GpuMask gpus) {
  if (topology::Count(gpus) <= 1) return true;
  switch (target) {
    case Locality::kNone:
      return true;
    case Locality::kNvLink:
      return shape.has_nvlink() && shape.InOneIsland(gpus);
    case Locality::kNuma:
      return shape.InOneNuma(gpus);
  }
  return false;
}

double LocalityScore(double set_weight, double best_weight, double numa_share,
                     double best_numa_share, double numa_weight, bool target_met,
                     double unmet_cap) {
  const double bandwidth = best_weight > 0.0 ? std::min(1.0, set_weight / best_weight) : 1.0;
  const double numa = best_numa_share > 0.0 ? std::min(1.0, numa_share / best_numa_share) : 1.0;
  const double score = kMaxComponentScore * ((1.0 - numa_weight) * bandwidth + numa_weight * numa);
  return target_met ? score : std::min(score, unmet_cap);
}

double NumaShare(const topology::TopologyShape& shape, GpuMask gpus) {
  const int n = topology::Count(gpus);
  if (n == 0 || shape.numa_ids().empty()) return 1.0;
  return static_cast<double>(shape.MostOnOneNuma(gpus)) / n;
}

double BestNumaShare(const topology::TopologyShape& shape, int n) {
  if (n <= 0 || shape.numa_ids().empty()) return 1.0;
  int largest = 0;
  for (int id : shape.numa_ids()) largest = std::max(largest, topology::Count(shape.numa_gpus(id)));
  return static_cast<double>(std::min(largest, n)) / n;
}

namespace {

// Locality prepared for one (pod, node): what does not depend on the candidate set (the best
// bandwidth and NUMA share of the pod's GPU count on the machine) is computed once. Scores equal
// LocalityComponent::Score's.
class PreparedLocality final : public PreparedScore {
 public:
  PreparedLocality(const LocalityComponent& component, const PlacementContext& ctx,
                   double numa_weight, double unmet_cap, double unknown_score)
      : component_(component), ctx_(ctx), numa_weight_(numa_weight), unmet_cap_(unmet_cap) {
    if (ctx.pod.gpus <= 1 || ctx.pod.locality == Locality::kNone) {
      constant_ = kMaxComponentScore;
      is_constant_ = true;
    } else if (!ctx.shape.links_known()) {
      constant_ = unknown_score;
      is_constant_ = true;
    } else {
      best_weight_ = ctx.shape.BestPairwiseWeight(ctx.pod.gpus);
      best_numa_share_ = BestNumaShare(ctx.shape, ctx.pod.gpus);
    }
  }

  double Score(GpuMask gpus) const override {
    if (is_constant_) return constant_;
    const topology::TopologyShape& shape = ctx_.shape;
    return LocalityScore(shape.PairwiseWeight(gpus), best_weight_, NumaShare(shape, gpus),
                         best_numa_share_, numa_weight_,
                         LocalityTargetMet(ctx_.pod.locality, shape, gpus), unmet_cap_);
  }
  std::string Explain(GpuMask gpus) const override { return component_.Explain(ctx_, gpus); }
  // The score itself: a few table reads, cheaper than what the other components compute.
  double Bound(GpuMask gpus) const override { return Score(gpus); }
  bool BoundIsScore() const override { return true; }

 private:
  const LocalityComponent& component_;
  const PlacementContext& ctx_;
  double numa_weight_;
  double unmet_cap_;
  bool is_constant_ = false;  // every set scores constant_
  double constant_ = 0.0;
  double best_weight_ = 0.0;
  double best_numa_share_ = 0.0;
};

}  // namespace

PreparedScorePtr LocalityComponent::PrepareIn(const PlacementContext& ctx,
                                              std::pmr::memory_resource& memory) const {
  return MakePreparedScore<PreparedLocality>(memory, *this, ctx, numa_weight_, unmet_cap_,
                                             unknown_score_);
}

double LocalityComponent::Score(const PlacementContext& ctx, GpuMask gpus) const {
  if (ctx.pod.gpus <= 1 || ctx.pod.locality == Locality::kNone) return kMaxComponentScore;
  if (!ctx.shape.links_known()) return unknown_score_;
  return LocalityScore(ctx.shape.PairwiseWeight(gpus), ctx.shape.BestPairwiseWeight(ctx.pod.gpus),
                       NumaShare(ctx.shape, gpus), BestNumaShare(ctx.shape, ctx.pod.gpus),
                       numa_weight_, LocalityTargetMet(ctx.pod.locality, ctx.shape, gpus),
                       unmet_cap_);
}

std::string LocalityComponent::Explain(const PlacementContext& ctx, GpuMask gpus) const {
  if (ctx.pod.gpus <= 1) return "single GPU";
  if (ctx.pod.locality == Locality::kNone) return "locality not requested";
  if (!ctx.shape.links_known()) return "links unknown on this node";
  const double weight = ctx.shape.PairwiseWeight(gpus);
  const double best = ctx.shape.BestPairwiseWeight(ctx.pod.gpus);
  // Weakest link inside the set, the thing that limits collective bandwidth.
  Link weakest{LinkType::kNvLink, topology::kMaxBondedNvLinks};
  double weakest_weight = 1e18;
  for (GpuMask a = gpus; a != 0; a &= a - 1) {
    const int ga = std::countr_zero(a);
    for (GpuMask b = a & (a - 1); b != 0; b &= b - 1) {
      const int gb = std::countr_zero(b);
      if (ctx.shape.weight(ga, gb) < weakest_weight) {
        weakest_weight = ctx.shape.weight(ga, gb);
        weakest = ctx.shape.link(ga, gb);
      }
    }
  }
  char ratio[32];
  std::snprintf(ratio, sizeof(ratio), "%.0f%%", best > 0 ? 100.0 * weight / best : 100.0);
  std::string out = std::string(ratio) + " of the best " + std::to_string(ctx.pod.gpus) +
                    "-GPU bandwidth on this machine, weakest link " + topology::FormatLink(weakest);
  const bool met = LocalityTargetMet(ctx.pod.locality, ctx.shape, gpus);
  out += met ? ", inside one " : ", NOT inside one ";
  out += ctx.pod.locality == Locality::kNvLink ? "NVLink island" : "NUMA node";
  if (!ctx.shape.numa_ids().empty()) {
    const int n = topology::Count(gpus);
    const int local = static_cast<int>(NumaShare(ctx.shape, gpus) * n + 0.5);
    out += ", " + std::to_string(local) + " of " + std::to_string(n) + " on one NUMA node";
  }
  return out;
}

}  // namespace gputopo::policies
