#include "policies/engine/evaluation.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "gputopo/well_known.h"
#include "policies/engine/evaluation_cache.h"
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

std::string Plural(int n, std::string_view word) {
  return std::to_string(n) + " " + std::string(word) + (n == 1 ? "" : "s");
}

// The masks of the domains a required locality confines the pod to; one "everything" domain
// when it is not required.
std::vector<GpuMask> SearchDomains(const PodRequirements& pod,
                                   const topology::TopologyShape& shape) {
  std::vector<GpuMask> domains;
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

int LargestDomain(const std::vector<GpuMask>& domains, GpuMask within) {
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

class CandidateSearch {
 public:
  CandidateSearch(const PlacementContext& ctx, const Preset& preset) {
    for (const WeightedComponent& c : preset.components()) {
      total_weight_ += c.weight;
      scorers_.push_back({c.component->Prepare(ctx), c.weight});
    }
  }

  double WeightedScore(GpuMask gpus) const {
    double sum = 0.0;
    for (const auto& [scorer, weight] : scorers_) {
      if (weight > 0.0) sum += weight * scorer->Score(gpus);
    }
    return sum / total_weight_;
  }

  std::vector<double> ComponentScores(GpuMask gpus) const {
    std::vector<double> scores;
    scores.reserve(scorers_.size());
    for (const auto& [scorer, weight] : scorers_) scores.push_back(scorer->Score(gpus));
    return scores;
  }

  void Consider(GpuMask gpus) {
    ++candidates_;
    const double score = WeightedScore(gpus);
    if (best_ == 0 || score > best_score_ ||
        (score == best_score_ && topology::LexicographicallySmaller(gpus, best_))) {
      best_ = gpus;
      best_score_ = score;
    }
  }

  GpuMask best() const { return best_; }
  double best_score() const { return best_score_; }
  uint64_t candidates() const { return candidates_; }

 private:
  std::vector<std::pair<std::unique_ptr<PreparedScore>, double>> scorers_;
  double total_weight_ = 0.0;
  GpuMask best_ = 0;
  double best_score_ = 0.0;
  uint64_t candidates_ = 0;
};

}  // namespace

std::string_view VerdictName(Verdict verdict) {
  switch (verdict) {
    case Verdict::kFits:
      return "fits";
    case Verdict::kUnschedulable:
      return "unschedulable";
    case Verdict::kUnresolvable:
      return "unresolvable";
  }
  return "?";
}

NodeEvaluation EvaluateNode(const PodRequirements& pod, const NodeState& node,
                            const Preset& preset) {
  return EvaluateNode(pod, node, preset, node.GroupGpus(pod.group));
}

NodeEvaluation EvaluateNode(const PodRequirements& pod, const NodeState& node, const Preset& preset,
                            GpuMask group_gpus) {
  if (!node.has_topology()) {
    return Reject(Verdict::kUnresolvable, "gputopo: node topology invalid", node.topology_error());
  }
  if (pod.gpus <= 0) {
    NodeEvaluation e;
    e.verdict = Verdict::kFits;
    e.detail = "pod requests no GPU";
    e.weighted_score = kMaxComponentScore;
    return e;
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

  const std::vector<GpuMask> domains = SearchDomains(pod, ctx.shape);
  std::vector<GpuMask> pools;
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

  CandidateSearch search(ctx, preset);
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
    std::vector<std::pair<double, int>> singles;
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
  e.component_scores = search.ComponentScores(e.gpus);
  return e;
}

std::vector<ComponentResult> ExplainPlacement(const PodRequirements& pod, const NodeState& node,
                                              const Preset& preset, GpuMask gpus) {
  std::vector<ComponentResult> out;
  if (!node.has_topology() || gpus == 0) return out;
  const PlacementContext ctx = MakePlacementContext(pod, node);
  for (const WeightedComponent& c : preset.components()) {
    const std::unique_ptr<PreparedScore> scorer = c.component->Prepare(ctx);
    out.push_back(
        {std::string(c.component->Name()), c.weight, scorer->Score(gpus), scorer->Explain(gpus)});
  }
  return out;
}

PodEvaluator::PodEvaluator(const PodRequirements& pod, std::shared_ptr<const Preset> preset,
                           EvaluationCache* cache)
    : PodEvaluator(pod, *preset, cache) {
  shared_preset_ = std::move(preset);
}

PodEvaluator::PodEvaluator(const PodRequirements& pod, const Preset& preset, EvaluationCache* cache)
    : pod_(pod),
      preset_(preset),
      cache_(cache),
      group_hash_(std::hash<std::string_view>{}(pod.group)) {
  if (cache_ != nullptr) shape_id_ = cache_->ShapeId(EvaluationShape(pod, preset));
}

uint32_t PodEvaluator::Add(std::shared_ptr<const NodeEvaluation> evaluation) {
  evaluations_.push_back(std::move(evaluation));
  return static_cast<uint32_t>(evaluations_.size() - 1);
}

GpuMask PodEvaluator::GroupGpusOf(const NodeState& node) const {
  return pod_.spread == SpreadMode::kNone || !node.has_topology()
             ? 0
             : node.GroupGpus(pod_.group, group_hash_);
}

uint32_t PodEvaluator::Evaluate(const NodeState& node) {
  return Add(EvaluateShared(node, GroupGpusOf(node)));
}

std::shared_ptr<const NodeEvaluation> PodEvaluator::EvaluateShared(const NodeState& node,
                                                                   GpuMask group) {
  if (!node.has_topology()) {  // the error text differs per node: not memoised
    ++evaluated_;
    return std::make_shared<const NodeEvaluation>(EvaluateNode(pod_, node, preset_, 0));
  }
  if (cache_ != nullptr) {
    if (auto cached = cache_->Find(node, group, shape_id_)) {
      ++cache_hits_;
      return cached;
    }
  }
  key_.assign(node.signature());
  char bytes[sizeof(group)];
  std::memcpy(bytes, &group, sizeof(group));
  key_.append(bytes, sizeof(group));
  auto [it, inserted] = memo_.try_emplace(key_, nullptr);
  if (!inserted) {
    ++memo_hits_;
  } else {
    ++evaluated_;
    it->second = std::make_shared<const NodeEvaluation>(EvaluateNode(pod_, node, preset_, group));
  }
  if (cache_ != nullptr) cache_->Insert(node, group, shape_id_, it->second);
  return it->second;
}

EvaluationRef PodEvaluator::TableAnswer(ShapeTable& table, ShapeTable* base,
                                        const ClusterSnapshot& snapshot, size_t position) {
  const NodeSummary& summary = snapshot.summary(position);
  if (const EvaluationRef* found = table.Find(position, summary.version)) {
    ++table_hits_;
    return *found;
  }
  const bool may_hold_group =
      pod_.spread != SpreadMode::kNone && summary.groups.MayContain(group_hash_);
  if (base != nullptr && !may_hold_group) {
    std::shared_ptr<const NodeEvaluation> seeded = base->FindOwned(position, summary.version);
    if (seeded == nullptr) {
      seeded = EvaluateShared(*snapshot.nodes()[position], 0);
      (void)base->Store(position, summary.version, seeded);
    } else {
      ++table_hits_;
    }
    return table.Store(position, summary.version, std::move(seeded));
  }
  const NodeState& node = *snapshot.nodes()[position];
  return table.Store(position, summary.version,
                     EvaluateShared(node, may_hold_group ? GroupGpusOf(node) : 0));
}

size_t PodEvaluator::RefreshTable(ShapeTable& table, const ClusterSnapshot& snapshot,
                                  const std::vector<size_t>* positions) {
  // The table's lock is held only to find the stale slots and to store the new answers, not
  // while evaluating: a cycle of the shape never waits for a refresh's searches.
  std::vector<size_t> stale;
  {
    std::lock_guard<std::mutex> lock(table.mutex);
    table.Attach(snapshot.name_index());
    auto look = [&](size_t position) {
      if (table.Find(position, snapshot.summary(position).version) == nullptr)
        stale.push_back(position);
    };
    if (positions != nullptr) {
      for (size_t position : *positions) look(position);
    } else {
      for (size_t position = 0; position < snapshot.nodes().size(); ++position) look(position);
    }
  }
  if (stale.empty()) return 0;
  const uint64_t evaluated_before = evaluated_;
  std::vector<std::shared_ptr<const NodeEvaluation>> answers;
  answers.reserve(stale.size());
  for (size_t position : stale) {
    const NodeSummary& summary = snapshot.summary(position);
    const NodeState& node = *snapshot.nodes()[position];
    const bool may_hold_group =
        pod_.spread != SpreadMode::kNone && summary.groups.MayContain(group_hash_);
    answers.push_back(EvaluateShared(node, may_hold_group ? GroupGpusOf(node) : 0));
  }
  std::lock_guard<std::mutex> lock(table.mutex);
  // A cycle on a snapshot with other nodes may have moved the table on: then these positions
  // are not the table's any more, and the next refresh starts again.
  if (table.attached(snapshot.name_index())) {
    for (size_t i = 0; i < stale.size(); ++i) {
      (void)table.Store(stale[i], snapshot.summary(stale[i]).version, std::move(answers[i]));
    }
  }
  table.Pin();  // compacts what the replaced slots no longer need
  return static_cast<size_t>(evaluated_ - evaluated_before);
}

CycleEvaluations PodEvaluator::EvaluateAt(const ClusterSnapshot& snapshot,
                                          const std::vector<size_t>& positions) {
  CycleEvaluations out;
  out.per_node.resize(positions.size());
  if (cache_ == nullptr) {  // every evaluation is owned here
    auto own = std::make_shared<std::vector<std::shared_ptr<const NodeEvaluation>>>();
    for (size_t i = 0; i < positions.size(); ++i) {
      if (positions[i] == ClusterSnapshot::kNotFound) continue;
      const NodeState& node = *snapshot.nodes()[positions[i]];
      own->push_back(EvaluateShared(node, GroupGpusOf(node)));
      out.per_node[i] = EvaluationRef::To(*own->back());
    }
    out.owners.push_back(std::move(own));
    return out;
  }
  const std::shared_ptr<ShapeTable> table = cache_->Table(shape_id_, pod_, shared_preset_);
  // A spreading pod's table is its group's; nodes without the group answer as in the shape's
  // base table (locked after the group's: no lock is ever taken the other way round).
  std::shared_ptr<ShapeTable> base;
  if (!EvaluationCache::TableGroup(pod_).empty()) {
    PodRequirements no_group = pod_;
    no_group.group.clear();
    base = cache_->Table(shape_id_, no_group, shared_preset_);
  }
  std::lock_guard<std::mutex> lock(table->mutex);
  std::unique_lock<std::mutex> base_lock;
  table->Attach(snapshot.name_index());
  if (base != nullptr) {
    base_lock = std::unique_lock<std::mutex>(base->mutex);
    base->Attach(snapshot.name_index());
    if (table->fresh()) {
      // The first cycle of a new group: every node starts with the base table's answer, and
      // only those that may hold the group are answered afresh (copying slot by slot took
      // milliseconds at 5000 nodes).
      table->SeedFrom(*base);
      for (size_t position = 0; position < snapshot.node_count(); ++position) {
        if (snapshot.summary(position).groups.MayContain(group_hash_)) table->Forget(position);
      }
    }
  }
  auto answer = [&](size_t position) -> EvaluationRef {
    return TableAnswer(*table, base.get(), snapshot, position);
  };
  const size_t node_count = snapshot.node_count();
  if (positions.size() >= node_count / kSweepShare && node_count <= UINT32_MAX) {
    // Many of the nodes: answer them in position order, so that the summaries and table slots
    // are read front to back (and streamed in by the CPU) rather than at random. asked[p] is
    // one more than the index of the first request entry naming the node at position p.
    std::vector<uint32_t> asked(node_count, 0);
    std::vector<std::pair<size_t, size_t>> repeats;  // (entry, earlier entry of the same node)
    for (size_t i = 0; i < positions.size(); ++i) {
      const size_t position = positions[i];
      if (position == ClusterSnapshot::kNotFound) continue;
      if (asked[position] != 0) {
        repeats.emplace_back(i, asked[position] - 1);
      } else {
        asked[position] = static_cast<uint32_t>(i + 1);
      }
    }
    for (size_t position = 0; position < node_count; ++position) {
      if (asked[position] != 0) out.per_node[asked[position] - 1] = answer(position);
    }
    for (const auto& [entry, earlier] : repeats) out.per_node[entry] = out.per_node[earlier];
  } else {
    constexpr size_t kAhead = 8;  // positions are random: fetch what they read early
    for (size_t i = 0; i < positions.size(); ++i) {
      if (i + kAhead < positions.size() && positions[i + kAhead] != ClusterSnapshot::kNotFound) {
        __builtin_prefetch(&snapshot.summary(positions[i + kAhead]));
        table->Prefetch(positions[i + kAhead]);
      }
      if (positions[i] != ClusterSnapshot::kNotFound) out.per_node[i] = answer(positions[i]);
    }
  }
  out.owners.push_back(table->Pin());
  if (table->borrowed() != nullptr) out.owners.push_back(table->borrowed());
  if (base != nullptr) (void)base->Pin();  // compacts it now and then
  return out;
}

}  // namespace gputopo::policies
