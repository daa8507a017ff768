#include "policies/engine/evaluation.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <memory_resource>
#include <utility>
#include <vector>

#include "gputopo/machine_topology.h"
#include "gputopo/well_known.h"
#include "policies/engine/placement_context.h"
#include "policies/locality/locality.h"
#include "topology/best_set.h"
#include "topology/combinations.h"

namespace gputopo::policies {
namespace {

using topology::Bit;
using topology::Count;

NodeEvaluation Reject(Verdict verdict, std::string reason, std::string detail) {
  NodeEvaluation e;
  e.verdict = verdict;
  e.reason = std::move(reason);
  e.detail = std::move(detail);
  return e;
}

uint8_t NodeGpus(const NodeState& node) {
  return static_cast<uint8_t>(std::clamp(node.gpu_count(), 0, kMaxGpusPerNode));
}

std::string Plural(int n, std::string_view word) {
  return std::to_string(n) + " " + std::string(word) + (n == 1 ? "" : "s");
}

// One evaluation's scratch memory: the prepared scorers and the search's lists live here, so
// that an evaluation allocates from the heap only what it returns (most fit the buffer; the
// rest spills to the heap). Not movable: scorers point into it.
class Scratch {
 public:
  Scratch() = default;
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  std::pmr::memory_resource& memory() { return memory_; }

 private:
  static constexpr size_t kBytes = 4096;
  alignas(std::max_align_t) std::array<std::byte, kBytes> buffer_;
  std::pmr::monotonic_buffer_resource memory_{buffer_.data(), buffer_.size(),
                                              std::pmr::new_delete_resource()};
};

// The masks of the domains a required locality confines the pod to; one "everything" domain
// when it is not required.
std::pmr::vector<GpuMask> SearchDomains(const PodRequirements& pod,
                                        const topology::TopologyShape& shape,
                                        std::pmr::memory_resource& memory) {
  std::pmr::vector<GpuMask> domains(&memory);
  if (pod.gpus > 1 && pod.locality_mode == ConstraintMode::kRequired) {
    if (pod.locality == Locality::kNvLink) {
      for (int i = 0; i < shape.island_count(); ++i) domains.push_back(shape.island(i));
      return domains;
    }
    if (pod.locality == Locality::kNuma) {
      for (int id : shape.numa_ids()) domains.push_back(shape.numa_gpus(id));
      return domains;
    }
  }
  domains.push_back(shape.all_gpus());
  return domains;
}

int LargestDomain(const std::pmr::vector<GpuMask>& domains, GpuMask within) {
  int largest = 0;
  for (GpuMask d : domains) largest = std::max(largest, Count(d & within));
  return largest;
}

// Checks that can fail a node whatever other pods do.
std::optional<NodeEvaluation> CheckResolvable(const PodRequirements& pod, const NodeState& node) {
  const int n = pod.gpus;
  if (n > node.gpu_count()) {
    return Reject(
        Verdict::kUnresolvable, "gputopo: node has fewer physical GPUs than requested",
        "needs " + Plural(n, "distinct GPU") + "; node has " + std::to_string(node.gpu_count()));
  }
  if (n > node.total_slots()) {
    return Reject(Verdict::kUnresolvable, "gputopo: node offers fewer GPU slots than requested",
                  "needs " + std::to_string(n) + " " + std::string(kGpuResource) +
                      "; node offers " + std::to_string(node.total_slots()));
  }
  if (n > 1 && pod.locality_mode == ConstraintMode::kRequired) {
    const topology::TopologyShape& shape = node.shape();
    if (pod.locality == Locality::kNvLink) {
      int largest = 0;
      for (int i = 0; i < shape.island_count(); ++i)
        largest = std::max(largest, Count(shape.island(i)));
      if (!shape.has_nvlink() || largest < n) {
        return Reject(Verdict::kUnresolvable, "gputopo: no NVLink island large enough",
                      shape.links_known()
                          ? "needs " + std::to_string(n) +
                                " GPUs in one NVLink island; largest has " +
                                std::to_string(shape.has_nvlink() ? largest : 1)
                          : "needs " + std::to_string(n) +
                                " GPUs in one NVLink island; this node's links are unknown");
      }
    }
    if (pod.locality == Locality::kNuma) {
      int largest = 0;
      for (int id : shape.numa_ids()) largest = std::max(largest, Count(shape.numa_gpus(id)));
      if (largest < n) {
        return Reject(
            Verdict::kUnresolvable, "gputopo: no NUMA node with enough GPUs",
            shape.numa_ids().empty()
                ? "needs " + std::to_string(n) + " GPUs on one NUMA node; NUMA nodes unknown"
                : "needs " + std::to_string(n) + " GPUs on one NUMA node; largest has " +
                      std::to_string(largest));
      }
    }
  }
  return std::nullopt;
}

struct Eligibility {
  GpuMask eligible = 0;
  int exclusive_held = 0;  // GPUs held by an exclusive pod
  int occupied = 0;        // GPUs with pods, for an exclusive pod
  int full = 0;            // GPUs without a free slot or share
  int group = 0;           // GPUs holding the group, under required spread
  int unhealthy = 0;       // GPUs the node agent found not answering
};

Eligibility FindEligible(const PlacementContext& ctx) {
  Eligibility e;
  for (int g = 0; g < ctx.node.gpu_count(); ++g) {
    const auto i = static_cast<size_t>(g);
    if (topology::Has(ctx.node.unhealthy_gpus(), g)) {
      ++e.unhealthy;
    } else if (ctx.node.gpu(g).exclusive) {
      ++e.exclusive_held;
    } else if (ctx.pod.exclusive && !topology::Has(ctx.empty, g)) {
      ++e.occupied;
    } else if (ctx.free_slots[i] < 1 || ctx.free_milli[i] < ctx.share_milli) {
      ++e.full;
    } else if (ctx.pod.spread == SpreadMode::kRequired && topology::Has(ctx.group_gpus, g)) {
      ++e.group;
    } else {
      e.eligible |= Bit(g);
    }
  }
  return e;
}

std::string DescribeShortfall(const PlacementContext& ctx, const Eligibility& e) {
  std::string out = "needs " + Plural(ctx.pod.gpus, "GPU") + " with a free slot and " +
                    std::to_string(ctx.share_milli) + " milli free" +
                    (ctx.pod.exclusive ? ", no other pod" : "") + "; " +
                    std::to_string(Count(e.eligible)) + " of " +
                    std::to_string(ctx.node.gpu_count()) + " qualify";
  std::vector<std::string> parts;
  if (e.unhealthy > 0) parts.push_back(std::to_string(e.unhealthy) + " unhealthy");
  if (e.full > 0) parts.push_back(std::to_string(e.full) + " full");
  if (e.exclusive_held > 0) parts.push_back(std::to_string(e.exclusive_held) + " held exclusively");
  if (e.occupied > 0) parts.push_back(std::to_string(e.occupied) + " shared (pod is exclusive)");
  if (e.group > 0)
    parts.push_back(std::to_string(e.group) + " already hold group " + ctx.pod.group);
  if (!parts.empty()) {
    out += " (";
    for (size_t i = 0; i < parts.size(); ++i) out += (i ? ", " : "") + parts[i];
    out += ")";
  }
  return out;
}

// A preset prepared for one (pod, node): each component's scorer and weight, in the preset's
// order. For a pod without GPUs, a component that does not score such pods has no scorer and
// gives the top score: the pod takes nothing it cares about. Belongs to one evaluation, and
// lives in its scratch memory.
class PreparedPreset {
 public:
  PreparedPreset(const PlacementContext& ctx, const Preset& preset, Scratch& scratch)
      : parts_(&scratch.memory()) {
    parts_.reserve(preset.components().size());
    for (const WeightedComponent& c : preset.components()) {
      const bool scores = ctx.pod.gpus > 0 || c.component->ScoresGpuLessPods();
      PreparedScorePtr scorer =
          scores ? c.component->PrepareIn(ctx, scratch.memory()) : PreparedScorePtr();
      const bool bound_is_score = scorer == nullptr || scorer->BoundIsScore();
      parts_.push_back({&c, std::move(scorer), bound_is_score});
      total_weight_ += c.weight;
    }
  }

  // Component `i`'s score of `gpus`.
  double Score(size_t i, GpuMask gpus) const {
    const auto& scorer = parts_[i].scorer;
    return scorer != nullptr ? scorer->Score(gpus) : kMaxComponentScore;
  }
  // Component `i`'s explanation of its score of `gpus`.
  std::string Explain(size_t i, GpuMask gpus) const {
    const auto& scorer = parts_[i].scorer;
    return scorer != nullptr ? scorer->Explain(gpus) : "pod requests no GPU";
  }
  // The weighted mean of the scores (components of weight 0 are not asked); the top score when
  // no component has weight.
  double WeightedScore(GpuMask gpus) const {
    return WeightedMean([&](size_t i) { return Score(i, gpus); });
  }
  // Each weighted component's bound of one set (PreparedScore::Bound), by index.
  using Bounds = std::array<double, Preset::kMaxComponents>;
  // At least WeightedScore(gpus): the same mean of the components' bounds, each kept in
  // `bounds`.
  double WeightedBound(GpuMask gpus, Bounds& bounds) const {
    return WeightedMean([&](size_t i) {
      const auto& scorer = parts_[i].scorer;
      const double bound = scorer != nullptr ? scorer->Bound(gpus) : kMaxComponentScore;
      if (i < bounds.size()) bounds[i] = bound;
      return bound;
    });
  }
  // WeightedScore(gpus), taking from WeightedBound(gpus, bounds) the scores that are their own
  // bounds instead of asking again.
  double WeightedScore(GpuMask gpus, const Bounds& bounds) const {
    return WeightedMean([&](size_t i) {
      return parts_[i].bound_is_score && i < bounds.size() ? bounds[i] : Score(i, gpus);
    });
  }
  policies::ComponentScores ComponentScores(GpuMask gpus) const {
    policies::ComponentScores scores;
    for (size_t i = 0; i < parts_.size(); ++i) scores.push_back(Score(i, gpus));
    return scores;
  }
  // WeightedScore(gpus) from ComponentScores(gpus), each component asked once: the same
  // products summed in the same order, so the same double.
  double WeightedScore(const policies::ComponentScores& scores, GpuMask gpus) const {
    return WeightedMean([&](size_t i) { return i < scores.size() ? scores[i] : Score(i, gpus); });
  }
  size_t size() const { return parts_.size(); }
  const WeightedComponent& component(size_t i) const { return *parts_[i].component; }

 private:
  // The mean of value(i) over the components of weight above 0, weighted, summed in the
  // preset's order (value is not asked for the others); the top score when no component has
  // weight. Every weighted score and bound goes through here, so equal values give the same
  // double.
  template <typename Value>
  double WeightedMean(Value value) const {
    if (total_weight_ <= 0.0) return kMaxComponentScore;
    double sum = 0.0;
    for (size_t i = 0; i < parts_.size(); ++i) {
      if (const double weight = parts_[i].component->weight; weight > 0.0) {
        sum += weight * value(i);
      }
    }
    return sum / total_weight_;
  }

  struct Part {
    const WeightedComponent* component;  // owned by the preset
    PreparedScorePtr scorer;             // null: the top score, for a pod without GPUs
    bool bound_is_score;                 // the scorer's Bound is its Score (or no scorer)
  };
  std::pmr::vector<Part> parts_;
  double total_weight_ = 0.0;
};

// Chooses a node's GPU set: the best weighted score, among the sets that meet the pod's
// preferred locality target when any does (with known links; a required target already
// confined the search to its domains).
class CandidateSearch {
 public:
  CandidateSearch(const PlacementContext& ctx, const Preset& preset, Scratch& scratch,
                  SetBounding bounding = SetBounding::kScoreEverySet)
      : shape_(ctx.shape),
        locality_(ctx.pod.locality),
        tiered_(ctx.pod.gpus > 1 && ctx.pod.locality != Locality::kNone && ctx.shape.links_known()),
        bounded_(ctx.pod.gpus > 1 && bounding == SetBounding::kSkipBoundedOut),
        scorers_(ctx, preset, scratch) {}

  double WeightedScore(GpuMask gpus) const { return scorers_.WeightedScore(gpus); }
  policies::ComponentScores ComponentScores(GpuMask gpus) const {
    return scorers_.ComponentScores(gpus);
  }
  double WeightedScore(const policies::ComponentScores& scores, GpuMask gpus) const {
    return scorers_.WeightedScore(scores, gpus);
  }

  void Consider(GpuMask gpus) {
    ++candidates_;
    const bool met = !tiered_ || LocalityTargetMet(locality_, shape_, gpus);
    if (best_ != 0 && best_met_ && !met) return;  // a set that meets the target beats the rest
    // A set of the best's tier whose bound is below the best by more than kBoundMargin scores
    // below it: it is neither the best nor within kUniqueMargin of it, so skipping it changes
    // neither best() nor best_unique(). (Bounds and scores are the same sums of terms each no
    // smaller, so rounding keeps the order; the margin is there besides.)
    double score = 0.0;
    if (bounded_ && best_ != 0 && met == best_met_) {
      PreparedPreset::Bounds bounds;
      if (scorers_.WeightedBound(gpus, bounds) < best_score_ - kBoundMargin) return;
      score = scorers_.WeightedScore(gpus, bounds);
    } else {
      score = WeightedScore(gpus);
    }
    // The two highest scores of the tier the best is in (a set meeting the target opens it).
    if (best_ != 0 && met && !best_met_) {
      top_ = score;
      second_ = -1.0;
    } else if (best_ == 0) {
      top_ = score;
    } else if (score > top_) {
      second_ = top_;
      top_ = score;
    } else if (score > second_) {
      second_ = score;
    }
    if (best_ != 0 && met == best_met_ &&
        (score < best_score_ ||
         (score == best_score_ && !topology::LexicographicallySmaller(gpus, best_)))) {
      return;
    }
    best_ = gpus;
    best_met_ = met;
    best_score_ = score;
  }

  GpuMask best() const { return best_; }
  // True when every other set of the best's tier scored at least kUniqueMargin below it: then
  // a relabeling of this node that keeps its topology and states has the relabeled best as its
  // own, whatever rounding the relabeled sums see.
  static constexpr double kUniqueMargin = 1e-9;
  static constexpr double kBoundMargin = 1e-6;
  bool best_unique() const { return best_ != 0 && top_ - second_ > kUniqueMargin; }
  bool Meets(GpuMask gpus) const { return !tiered_ || LocalityTargetMet(locality_, shape_, gpus); }
  double best_score() const { return best_score_; }
  bool best_missed_locality() const { return best_ != 0 && !best_met_; }
  uint64_t candidates() const { return candidates_; }

 private:
  const topology::TopologyShape& shape_;
  Locality locality_;
  bool tiered_;
  bool bounded_;  // sets are bounded first (SetBounding; pods of two GPUs or more)
  PreparedPreset scorers_;
  GpuMask best_ = 0;
  bool best_met_ = false;
  double best_score_ = 0.0;
  double top_ = 0.0;
  double second_ = -1.0;  // none yet (scores are 0..10)
  uint64_t candidates_ = 0;
};

// A pod without GPUs fits every node. Where the node's GPUs are known, the components that
// score such pods (fragmentation: the GPU capacity its CPU and memory strand) rate it; the others
// (PreparedPreset), and nodes without known GPUs, give the top score.
NodeEvaluation EvaluateGpuLess(const PodRequirements& pod, const NodeState& node,
                               const Preset& preset, GpuMask group_gpus) {
  NodeEvaluation e;
  e.verdict = Verdict::kFits;
  e.detail = "pod requests no GPU";
  e.weighted_score = kMaxComponentScore;
  e.node_gpus = NodeGpus(node);
  if (!node.has_topology()) return e;
  const PlacementContext ctx = MakePlacementContext(pod, node, group_gpus);
  Scratch scratch;
  const PreparedPreset scorers(ctx, preset, scratch);
  e.component_scores = scorers.ComponentScores(0);
  e.weighted_score = scorers.WeightedScore(0);
  return e;
}

}  // namespace

std::string_view VerdictName(Verdict verdict) { return NameOf(kVerdictNames, verdict); }

NodeEvaluation EvaluateNode(const PodRequirements& pod, const NodeState& node,
                            const Preset& preset) {
  return EvaluateNode(pod, node, preset, node.GroupGpus(pod.group));
}

NodeEvaluation EvaluateNode(const PodRequirements& pod, const NodeState& node, const Preset& preset,
                            GpuMask group_gpus) {
  return EvaluateNode(pod, node, preset, group_gpus, nullptr);
}

NodeEvaluation EvaluatePlacement(const PodRequirements& pod, const NodeState& node,
                                 const Preset& preset, GpuMask group_gpus, GpuMask gpus,
                                 uint64_t candidates) {
  const PlacementContext ctx = MakePlacementContext(pod, node, group_gpus);
  Scratch scratch;
  const CandidateSearch search(ctx, preset, scratch);
  NodeEvaluation e;
  e.verdict = Verdict::kFits;
  e.gpus = gpus;
  e.component_scores = search.ComponentScores(gpus);
  e.weighted_score = search.WeightedScore(e.component_scores, gpus);
  e.candidates = candidates;
  e.locality_missed = !search.Meets(gpus);
  e.node_gpus = NodeGpus(node);
  return e;
}

NodeEvaluation EvaluateNode(const PodRequirements& pod, const NodeState& node, const Preset& preset,
                            GpuMask group_gpus, bool* unique_best, SetBounding bounding) {
  if (unique_best != nullptr) *unique_best = false;
  if (pod.gpus <= 0) return EvaluateGpuLess(pod, node, preset, group_gpus);
  if (!node.has_topology()) {
    return Reject(Verdict::kUnresolvable, "gputopo: node topology invalid", node.topology_error());
  }
  if (auto rejected = CheckResolvable(pod, node)) return *rejected;

  const PlacementContext ctx = MakePlacementContext(pod, node, group_gpus);
  if (ctx.node_free_slots < pod.gpus) {
    return Reject(
        Verdict::kUnschedulable, "gputopo: not enough free GPU slots",
        "needs " + std::to_string(pod.gpus) + " slots; " + std::to_string(ctx.node_free_slots) +
            " of " + std::to_string(node.total_slots()) + " free" +
            (node.unplaced_slots() > 0
                 ? " (" + std::to_string(node.unplaced_slots()) + " held by pods on unknown GPUs)"
                 : ""));
  }
  const Eligibility eligibility = FindEligible(ctx);
  if (Count(eligibility.eligible) < pod.gpus) {
    std::string reason =
        eligibility.group > 0 && Count(eligibility.eligible) + eligibility.group >= pod.gpus
            ? "gputopo: spread required and the free GPUs hold the pod's group"
            : "gputopo: not enough GPUs with free capacity";
    return Reject(Verdict::kUnschedulable, std::move(reason), DescribeShortfall(ctx, eligibility));
  }

  // Pods bound without a known GPU may sit on any GPU that looks empty: an exclusive pod can
  // only count on the empty GPUs they cannot all cover.
  if (pod.exclusive && node.unplaced_slots() > 0 &&
      Count(eligibility.eligible) - node.unplaced_slots() < pod.gpus) {
    return Reject(Verdict::kUnschedulable, "gputopo: pods on unknown GPUs may hold the empty GPUs",
                  std::to_string(Count(eligibility.eligible)) + " GPUs look empty, but " +
                      std::to_string(node.unplaced_slots()) +
                      " slots are held by pods without gputopo.io/assigned-gpus");
  }

  Scratch scratch;
  const std::pmr::vector<GpuMask> domains = SearchDomains(pod, ctx.shape, scratch.memory());
  std::pmr::vector<GpuMask> pools(&scratch.memory());
  uint64_t combinations = 0;
  for (GpuMask domain : domains) {
    const GpuMask pool = domain & eligibility.eligible;
    if (Count(pool) < pod.gpus) continue;
    pools.push_back(pool);
    const uint64_t c = topology::Binomial(Count(pool), pod.gpus);
    combinations = combinations > UINT64_MAX - c ? UINT64_MAX : combinations + c;
  }
  if (pools.empty()) {
    const bool island = pod.locality == Locality::kNvLink;
    return Reject(Verdict::kUnschedulable,
                  island ? "gputopo: no NVLink island with enough free GPUs"
                         : "gputopo: no NUMA node with enough free GPUs",
                  "needs " + std::to_string(pod.gpus) + " free GPUs in one " +
                      (island ? "NVLink island" : "NUMA node") + "; at most " +
                      std::to_string(LargestDomain(domains, eligibility.eligible)) + " are");
  }

  CandidateSearch search(ctx, preset, scratch, bounding);
  const bool exact = combinations <= topology::kExactSearchLimit;
  for (GpuMask pool : pools) {
    if (exact) {
      topology::ForEachCombination(pool, pod.gpus, [&](GpuMask set) {
        search.Consider(set);
        return true;
      });
      continue;
    }
    // Heuristic: bandwidth-greedy sets from every seed, and the N best GPUs on their own.
    for (GpuMask seeds = pool; seeds != 0; seeds &= seeds - 1) {
      const topology::BestSet grown =
          topology::GrowGreedily(ctx.shape, pool, std::countr_zero(seeds), pod.gpus);
      if (grown.gpus != 0) search.Consider(grown.gpus);
    }
    std::pmr::vector<std::pair<double, int>> singles(&scratch.memory());
    for (GpuMask rest = pool; rest != 0; rest &= rest - 1) {
      const int g = std::countr_zero(rest);
      singles.emplace_back(-search.WeightedScore(Bit(g)), g);
    }
    std::sort(singles.begin(), singles.end());
    GpuMask top = 0;
    for (int i = 0; i < pod.gpus; ++i) top |= Bit(singles[static_cast<size_t>(i)].second);
    search.Consider(top);
  }

  NodeEvaluation e;
  e.verdict = Verdict::kFits;
  e.gpus = search.best();
  e.weighted_score = search.best_score();
  e.candidates = search.candidates();
  e.heuristic = !exact;
  e.locality_missed = search.best_missed_locality();
  e.component_scores = search.ComponentScores(e.gpus);
  e.node_gpus = NodeGpus(node);
  if (unique_best != nullptr) *unique_best = exact && search.best_unique();
  return e;
}

std::vector<ComponentResult> ExplainPlacement(const PodRequirements& pod, const NodeState& node,
                                              const Preset& preset, GpuMask gpus) {
  std::vector<ComponentResult> out;
  if (!node.has_topology() || (gpus == 0 && pod.gpus > 0)) return out;
  const PlacementContext ctx = MakePlacementContext(pod, node);
  Scratch scratch;
  const PreparedPreset scorers(ctx, preset, scratch);
  for (size_t i = 0; i < scorers.size(); ++i) {
    const WeightedComponent& c = scorers.component(i);
    out.push_back({std::string(c.component->Name()), c.weight, scorers.Score(i, gpus),
                   scorers.Explain(i, gpus)});
  }
  return out;
}

}  // namespace gputopo::policies
