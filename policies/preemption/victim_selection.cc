#include "policies/preemption/victim_selection.h"

#include <algorithm>
#include <set>
#include <string_view>
#include <tuple>

#include "policies/engine/evaluation.h"
#include "topology/gpu_mask.h"

namespace gputopo::policies {
namespace {

// A pod gputopo tracks on the node.
struct Tracked {
  std::string_view uid;
  int32_t priority = 0;
  bool proposed = false;
  // A watched PodDisruptionBudget counts it that evicting every candidate it counts would break.
  bool at_risk = false;
  // How many lower-priority pods share its most crowded GPU (unplaced pods: above any GPU's),
  // for the order in which pods are spared.
  int crowding = 0;
  GpuMask gpus = 0;  // the GPUs it holds (none when unplaced)
};

// A victim set and where the preemptor goes once it is evicted.
struct Option {
  std::vector<const Tracked*> victims;
  NodeEvaluation after;
};

// The lexicographic cost of an option: PDB violations (counted from the watched budgets, else
// what the scheduler's count implies), links lost against what evicting more would give (all
// pairs NVLink, else one NVLink island), victims the scheduler did not propose (without watched
// budgets each may be one it spared for a PDB; with them this term is 0), the highest victim
// priority, the count, then the placement's score (higher wins).
using Cost = std::tuple<int64_t, int, int64_t, int64_t, size_t, double>;

class Search {
 public:
  Search(const PodRequirements& pod, const NodeState& node, const Preset& preset,
         const ProposedVictims& proposed, const BudgetCoverage* budgets)
      : pod_(pod), node_(node), preset_(preset), proposed_(proposed), budgets_(budgets) {}

  // The evaluation of the preemptor on the node without `victims`.
  NodeEvaluation Evaluate(const std::vector<const Tracked*>& victims) {
    ++evaluations_;
    std::vector<std::string_view> uids;
    uids.reserve(victims.size());
    for (const Tracked* t : victims) uids.push_back(t->uid);
    return EvaluateNode(pod_, node_.Without(uids, 0), preset_);
  }

  // With watched budgets: how many of `victims` break one, taken most important first as
  // kube-scheduler does. Without: at most this many proposed victims break a PDB (the proposal's
  // own count).
  int64_t KnownPdb(const std::vector<const Tracked*>& victims) const {
    if (budgets_ != nullptr) {
      std::vector<const Tracked*> ordered = victims;
      std::sort(ordered.begin(), ordered.end(), [](const Tracked* a, const Tracked* b) {
        return a->priority != b->priority ? a->priority > b->priority : a->uid < b->uid;
      });
      std::vector<std::string_view> uids;
      uids.reserve(ordered.size());
      for (const Tracked* t : ordered) uids.push_back(t->uid);
      return CountPdbViolations(uids, *budgets_);
    }
    const auto proposed =
        std::count_if(victims.begin(), victims.end(), [](const Tracked* t) { return t->proposed; });
    return std::min<int64_t>(proposed, proposed_.pdb_violations);
  }
  // With watched budgets: the violations `victims` cause, plus, for the `foreign` proposed pods
  // (not tracked, so not in the coverage), at most the scheduler's own count.
  int64_t CountedPdb(const std::vector<const Tracked*>& victims, size_t foreign) const {
    return KnownPdb(victims) +
           std::min<int64_t>(static_cast<int64_t>(foreign), proposed_.pdb_violations);
  }
  int64_t Unproposed(const std::vector<const Tracked*>& victims) const {
    if (budgets_ != nullptr) return 0;
    return std::count_if(victims.begin(), victims.end(),
                         [](const Tracked* t) { return !t->proposed; });
  }

  // How well linked a set of GPUs is: 2 when every pair has NVLink, 1 when they share an NVLink
  // island, else 0 (one GPU: 2).
  int LinkClass(GpuMask gpus) const {
    const topology::TopologyShape& shape = node_.shape();
    if (!shape.InOneIsland(gpus)) return 0;
    for (int a : topology::ToIndices(gpus)) {
      for (int b : topology::ToIndices(gpus)) {
        if (a < b && !shape.link(a, b).IsNvLink()) return 1;
      }
    }
    return 2;
  }

  // `best_class`: the LinkClass the preemptor gets with every candidate evicted.
  Cost CostOf(const Option& option, int best_class) const {
    int64_t top = INT64_MIN;
    for (const Tracked* t : option.victims) top = std::max<int64_t>(top, t->priority);
    const int lost = std::max(0, best_class - LinkClass(option.after.gpus));
    return {KnownPdb(option.victims),   lost,
            Unproposed(option.victims), top,
            option.victims.size(),      -option.after.weighted_score};
  }

  // Starting from every candidate in `order` evicted (`with_all`: the preemptor's evaluation
  // then), spares them one by one while the preemptor still fits (and its GPUs keep at least
  // `min_class`): a set no single victim of which can be spared.
  Option Spare(const std::vector<const Tracked*>& order, const NodeEvaluation& with_all,
               int min_class) {
    Option option{order, with_all};
    for (const Tracked* t : order) {
      std::vector<const Tracked*> without;
      without.reserve(option.victims.size());
      for (const Tracked* v : option.victims) {
        if (v != t) without.push_back(v);
      }
      NodeEvaluation e = Evaluate(without);
      if (e.fits() && LinkClass(e.gpus) >= min_class) {
        option = {std::move(without), std::move(e)};
      }
    }
    return option;
  }

  int evaluations() const { return evaluations_; }

 private:
  const PodRequirements& pod_;
  const NodeState& node_;
  const Preset& preset_;
  const ProposedVictims& proposed_;
  const BudgetCoverage* budgets_;
  int evaluations_ = 0;
};

}  // namespace

VictimChoice ChooseVictims(const PodRequirements& pod, int32_t priority, const NodeState& node,
                           const Preset& preset, const ProposedVictims& proposed,
                           const BudgetCoverage* budgets) {
  VictimChoice choice;
  choice.pdb_counted = budgets != nullptr;
  if (!node.has_topology()) {
    choice.reason = "gputopo: node topology unknown";
    choice.detail = node.topology_error();
    return choice;
  }
  const std::set<std::string_view> proposed_uids(proposed.uids.begin(), proposed.uids.end());

  // Every pod gputopo tracks on the node, once, with its GPUs and its most crowded GPU.
  std::vector<Tracked> tracked;
  auto find = [&](std::string_view uid) -> Tracked* {
    for (Tracked& t : tracked) {
      if (t.uid == uid) return &t;
    }
    return nullptr;
  };
  auto track = [&](std::string_view uid, int32_t pod_priority) -> Tracked& {
    if (Tracked* t = find(uid)) return *t;
    return tracked.emplace_back(
        Tracked{uid, pod_priority, proposed_uids.contains(uid), false, 0, 0});
  };
  for (int g = 0; g < node.gpu_count(); ++g) {
    const auto& occupants = node.gpu(g).occupants;
    const auto lower =
        static_cast<int>(std::count_if(occupants.begin(), occupants.end(),
                                       [&](const Occupant& o) { return o.priority < priority; }));
    for (const Occupant& o : occupants) {
      Tracked& t = track(o.pod_uid, o.priority);
      t.crowding = std::max(t.crowding, lower);
      t.gpus |= topology::Bit(g);
    }
  }
  for (const UnplacedPod& p : node.unplaced()) {
    track(p.pod_uid, p.priority).crowding = node.total_slots() + 1;
  }

  std::vector<const Tracked*> candidates;
  for (const Tracked& t : tracked) {
    if (t.priority < priority) candidates.push_back(&t);
  }
  if (budgets != nullptr) {
    // A budget with at least as many disruptions left as the candidates it counts here cannot
    // break, whatever is evicted: its pods are not at risk.
    std::vector<int64_t> counted(budgets->allowed.size(), 0);
    auto budgets_of = [&](const Tracked& t) -> const std::vector<int>* {
      auto it = budgets->budgets_of.find(t.uid);
      return it == budgets->budgets_of.end() ? nullptr : &it->second;
    };
    for (const Tracked* t : candidates) {
      if (const std::vector<int>* of = budgets_of(*t)) {
        for (int b : *of) {
          if (b >= 0 && static_cast<size_t>(b) < counted.size()) ++counted[b];
        }
      }
    }
    for (Tracked& t : tracked) {
      if (t.priority >= priority) continue;
      if (const std::vector<int>* of = budgets_of(t)) {
        for (int b : *of) {
          if (b >= 0 && static_cast<size_t>(b) < counted.size() &&
              budgets->allowed[b] < counted[b]) {
            t.at_risk = true;
          }
        }
      }
    }
  }
  std::vector<std::string> foreign;  // proposed, not tracked by gputopo on this node
  for (const std::string& uid : proposed.uids) {
    if (find(uid) == nullptr) foreign.push_back(uid);
  }

  Search search(pod, node, preset, proposed, budgets);
  const NodeEvaluation with_none = search.Evaluate({});
  if (with_none.fits()) {
    // gputopo's filter already passes: whatever the scheduler evicts is for its own reasons.
    choice.evaluations = search.evaluations();
    if (proposed.uids.empty()) {
      choice.reason = "gputopo: fits without evicting anything";
      choice.detail = "nothing proposed to evict, and the pod fits gputopo's filter as is";
      return choice;
    }
    choice.possible = true;
    choice.as_proposed = true;
    choice.victims = proposed.uids;
    choice.pdb_violations = proposed.pdb_violations;
    choice.gpus = with_none.gpus;
    std::vector<const Tracked*> tracked_proposed;
    for (const Tracked* t : candidates) {
      if (!t->proposed) continue;
      choice.max_priority = std::max(choice.max_priority, t->priority);
      tracked_proposed.push_back(t);
    }
    if (budgets != nullptr)
      choice.pdb_violations = search.CountedPdb(tracked_proposed, foreign.size());
    choice.detail = "fits gputopo's filter without evictions; the scheduler's victims kept";
    return choice;
  }
  if (candidates.empty()) {
    choice.evaluations = search.evaluations();
    choice.reason = "gputopo: no lower-priority pod to evict";
    choice.detail = with_none.reason;
    return choice;
  }
  const NodeEvaluation with_all = search.Evaluate(candidates);
  if (!with_all.fits()) {
    choice.evaluations = search.evaluations();
    choice.reason = "gputopo: does not fit even with every lower-priority pod evicted";
    choice.detail = with_all.reason + (with_all.detail.empty() ? "" : ": " + with_all.detail);
    return choice;
  }

  // The victim sets tried: the scheduler's own (when it works), and sparing orders that keep
  // the pods that may break a PDB (with watched budgets: pods of a budget that could break, then
  // pods the scheduler did not propose), then the higher priorities, first. They differ in which of
  // the rest they keep first: pods on crowded GPUs (evicting the few pods of sparse GPUs), pods
  // on sparse GPUs, or pods away from the GPUs the preemptor takes with every candidate gone
  // (clearing its best placement).
  const int best_class = search.LinkClass(with_all.gpus);
  std::vector<Option> tried;
  std::vector<const Tracked*> as_proposed;
  for (const Tracked* t : candidates) {
    if (t->proposed) as_proposed.push_back(t);
  }
  const auto proposed_tracked = static_cast<size_t>(
      std::count_if(tracked.begin(), tracked.end(), [](const Tracked& t) { return t.proposed; }));
  if (!as_proposed.empty() && as_proposed.size() == proposed_tracked) {
    NodeEvaluation e = search.Evaluate(as_proposed);
    if (e.fits()) tried.push_back({as_proposed, std::move(e)});
  }
  auto on_best = [&](const Tracked* t) { return (t->gpus & with_all.gpus) != 0; };
  enum class Keep { kCrowded, kSparse, kAwayFromBest };
  for (Keep keep : {Keep::kCrowded, Keep::kSparse, Keep::kAwayFromBest}) {
    std::vector<const Tracked*> order = candidates;
    std::sort(order.begin(), order.end(), [&](const Tracked* a, const Tracked* b) {
      if (a->at_risk != b->at_risk) return a->at_risk;      // at risk: spared first
      if (a->proposed != b->proposed) return !a->proposed;  // unproposed: spared first
      if (a->priority != b->priority) return a->priority > b->priority;
      if (keep == Keep::kAwayFromBest) {
        const bool a_best = on_best(a);
        if (a_best != on_best(b)) return !a_best;
      }
      if (a->crowding != b->crowding)
        return keep == Keep::kSparse ? a->crowding < b->crowding : a->crowding > b->crowding;
      return a->uid < b->uid;
    });
    tried.push_back(search.Spare(order, with_all, 0));
    for (int min_class = 1; min_class <= best_class; ++min_class)
      tried.push_back(search.Spare(order, with_all, min_class));
  }
  const Option* best = nullptr;
  for (const Option& option : tried) {
    // An empty set means the pod fits with nothing evicted, which was answered above.
    if (option.victims.empty() || !option.after.fits()) continue;
    if (best == nullptr || search.CostOf(option, best_class) < search.CostOf(*best, best_class))
      best = &option;
  }
  std::vector<const Tracked*> victims = best != nullptr ? best->victims : candidates;
  std::sort(victims.begin(), victims.end(), [](const Tracked* a, const Tracked* b) {
    return a->priority != b->priority ? a->priority < b->priority : a->uid < b->uid;
  });

  const NodeEvaluation after = best != nullptr ? best->after : with_all;
  choice.possible = true;
  choice.gpus = after.gpus;
  choice.pdb_violations = budgets != nullptr
                              ? search.CountedPdb(victims, foreign.size())
                              : search.KnownPdb(victims) + search.Unproposed(victims);
  int proposed_kept = 0;
  choice.max_priority = victims.empty() ? 0 : victims.back()->priority;
  for (const Tracked* t : victims) {
    choice.victims.emplace_back(t->uid);
    if (t->proposed)
      ++proposed_kept;
    else
      ++choice.added;
  }
  choice.spared = static_cast<int>(proposed_tracked) - proposed_kept;
  for (const std::string& uid : foreign) choice.victims.push_back(uid);
  choice.as_proposed = choice.added == 0 && choice.spared == 0;
  if (choice.as_proposed && budgets == nullptr) choice.pdb_violations = proposed.pdb_violations;
  choice.evaluations = search.evaluations();
  choice.detail = std::to_string(victims.size()) + " of " + std::to_string(candidates.size()) +
                  " lower-priority pods";
  if (choice.added > 0) choice.detail += ", " + std::to_string(choice.added) + " not proposed";
  if (choice.spared > 0)
    choice.detail += ", " + std::to_string(choice.spared) + " proposed ones spared";
  if (!foreign.empty())
    choice.detail += ", plus " + std::to_string(foreign.size()) + " without GPUs as proposed";
  return choice;
}

}  // namespace gputopo::policies
