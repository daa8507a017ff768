// Preemption on full GPU clusters: kube-scheduler's DefaultPreemption, which counts
// nvidia.com/gpu replicas, against the same dry run with gputopo's preempt verb
// (policies::ChooseVictims) choosing the victims on each candidate node.
//
// Per (machine, replicas per GPU, seed): every node is filled with low-priority pods (priority
// 100; 70% one replica, 30% two GPUs), each placed where gputopo's evaluation scores best and
// bound on the GPUs it chose, until no pod fits anywhere. Then high-priority jobs (priority
// 1000000, 2, 4 or 8 GPUs) arrive one by one. Each first tries every node without preemption
// (best weighted score). Otherwise:
//  - default: per node, every lower-priority pod removed, the job must fit by replica count
//    (free slots >= request); pods are reprieved by priority descending (ties: oldest first,
//    as kube-scheduler's MoreImportantPod orders them)
//    while the free slots still suffice; the rest are the victims. The node is picked as
//    kube-scheduler's pickOneNodeForPreemption does (fewest PDB violations, lowest highest victim
//    priority, smallest sum of victim priorities, fewest victims, then name). The victims are
//    evicted and the job placed by gputopo's evaluation on that node; when it does not fit
//    there, the preemption was wasted (pods evicted, job still pending).
//  - gputopo: the same dry run proposes victims; ChooseVictims is called for every candidate
//    node; the nodes it answers possible for are picked from by the same rule, with the victims
//    and PDB count it returned.
//  - gputopo + PDBs: the same, with ChooseVictims given the budgets that count each node's pods
//    (what gputopo's PodDisruptionBudget watch gives it in live mode).
//  - none: no preemption at all (how many jobs fit as they come).
// Admitted jobs stay: later jobs of the same priority cannot preempt them.
//
// The race (a second table): in a real cluster the preemptor does not take the freed GPUs at
// once. kube-scheduler sets its status.nominatedNodeName, deletes the victims and retries it a
// second or two later, while each victim's ReplicaSet creates a replacement at once. Here each
// replacement (the victim's shape, priority 100) is scheduled before the job's retry: on the
// nominated node only if the node's free replicas less the job's request still hold it (the
// scheduler's own nominated-pod accounting, addNominatedPods), and wherever gputopo's filter
// lets it. With claims (what gputopo ships), the preempt verb offered ClusterState the GPUs it
// chose (OfferClaims) and the nomination turns them into a claim the replacements see; without
// claims they see the freed GPUs as free. The job then retries on its nominated node, looking
// through its own claim; when it does not fit, the preemption was wasted.
//
// PodDisruptionBudgets: the low pods belong to kDeployments Deployments (round robin); every
// other one has a budget with maxUnavailable 10% of its replicas (rounded up), so
// disruptionsAllowed starts there. Each eviction of a pod a budget counts takes one from it (the
// replacement pod cannot run in the full cluster, so nothing gives it back); an eviction that
// takes it below 0 breaks the budget. The dry run counts PDBs as kube-scheduler's
// SelectVictimsOnNode does (violating pods reprieved first, NumPDBViolations the violating
// victims left), and pickOneNodeForPreemption puts that count first.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "bench/sim/placers.h"
#include "cluster/cluster_state.h"
#include "evaluation/nominated_claims.h"
#include "gputopo/well_known.h"
#include "policies/engine/evaluation.h"
#include "policies/preemption/victim_selection.h"
#include "src/app/app.h"
#include "topology/gpu_mask.h"
#include "topology/profile_catalog.h"
#include "topology/shape_interner.h"
#include "topology/topology_resolver.h"

namespace gputopo::bench {
namespace {

constexpr int32_t kLowPriority = 100;
constexpr int32_t kJobPriority = 1000000;

constexpr int kDeployments = 16;

enum class Mode { kNone, kDefault, kGputopo, kGputopoPdb };
constexpr Mode kModes[] = {Mode::kNone, Mode::kDefault, Mode::kGputopo, Mode::kGputopoPdb};
const char* ModeName(Mode mode) {
  switch (mode) {
    case Mode::kNone:
      return "no preemption";
    case Mode::kDefault:
      return "default";
    case Mode::kGputopo:
      return "gputopo";
    case Mode::kGputopoPdb:
      return "gputopo + PDBs";
  }
  return "?";
}
bool IsGputopo(Mode mode) { return mode == Mode::kGputopo || mode == Mode::kGputopoPdb; }

struct Machine {
  std::string profile;
  int replicas = 1;
};

// What one run counts.
struct Stats {
  int jobs = 0;
  int admitted = 0;
  int admitted_direct = 0;   // fit without preemption
  int admitted_preempt = 0;  // fit after a preemption
  int preemptions = 0;       // victims evicted for a job
  int wasted = 0;            // ... and the job still did not fit
  int evicted = 0;           // pods evicted in all
  int evicted_admitted = 0;  // pods evicted for the jobs admitted by preemption
  int pdb_broken = 0;        // evictions that took a budget below 0
  int multi = 0;             // admitted jobs of 2+ GPUs
  int in_island = 0;
  int all_nvlink = 0;
  // gputopo mode: the default choice on the same state, for comparison.
  int default_would_waste = 0;
  int more_than_default = 0;   // gputopo evicted more where default's choice would have worked
  int fewer_than_default = 0;  // ... fewer
  int as_proposed = 0;         // gputopo's chosen victims were the dry run's own
  int added = 0;               // victims gputopo added to the chosen node's proposal
  int spared = 0;              // proposed victims it spared there
  // Admitted jobs by size (2, 4, 8 GPUs): how many, and how many with all pairs NVLink.
  std::map<int, std::pair<int, int>> by_size;
  std::vector<double> choose_us;  // one per ChooseVictims call
  // The race: victims' replacements scheduled before the job's retry.
  int replacements = 0;               // created (one per victim)
  int replacements_placed = 0;        // ... that found a node
  int replacements_on_nominated = 0;  // ... on the job's nominated node
};

// Whether each evicted pod's replacement is scheduled before the job retries (the race), and
// whether gputopo's preempt offered claims for the job.
struct Race {
  bool replacements = false;
  bool claims = false;
};

// A pod the benchmark placed, as the scheduler's dry run sees it.
struct Held {
  std::string node;
  int32_t priority = 0;
  int slots = 0;
  int64_t seq = 0;  // creation order (larger: newer)
  int budget = -1;  // the PodDisruptionBudget that counts it, if any
};

// The cluster: gputopo's ClusterState (what filter, bind and preempt read) and the pods' own
// table for the scheduler's side.
class Cluster {
 public:
  Cluster(const topology::TopologyResolver& resolver, const std::vector<NodeInfo>& nodes)
      : state_(resolver) {
    state_.Reset(nodes, {});
    for (const NodeInfo& n : nodes) names_.push_back(n.name);
    std::sort(names_.begin(), names_.end());
  }

  const std::vector<std::string>& names() const { return names_; }
  std::shared_ptr<const policies::NodeState> Node(const std::string& name) const {
    return state_.Snapshot()->FindShared(name);
  }
  const std::unordered_map<std::string, Held>& pods() const { return pods_; }
  std::vector<std::string> PodsOn(const std::string& node) const {
    std::vector<std::string> uids;
    for (const auto& [uid, held] : pods_) {
      if (held.node == node) uids.push_back(uid);
    }
    std::sort(uids.begin(), uids.end());
    return uids;
  }

  // The best node (highest weighted score, ties: first by name) and its evaluation.
  std::pair<int, policies::NodeEvaluation> Best(const policies::PodRequirements& req,
                                                const policies::Preset& preset) const {
    auto snapshot = state_.Snapshot();
    int best = -1;
    policies::NodeEvaluation best_e;
    for (size_t i = 0; i < names_.size(); ++i) {
      const auto node = snapshot->FindShared(names_[i]);
      policies::NodeEvaluation e = policies::EvaluateNode(req, *node, preset);
      if (e.fits() && (best < 0 || e.weighted_score > best_e.weighted_score)) {
        best = static_cast<int>(i);
        best_e = std::move(e);
      }
    }
    return {best, best_e};
  }

  // Binds `pod` to `node` on `gpus`, as gputopo's bind does; `budget` counts it (-1: none).
  void Bind(PodInfo pod, const std::string& node, topology::GpuMask gpus, int budget = -1) {
    pod.node_name = node;
    pod.phase = PodPhase::kRunning;
    std::string assigned;
    for (int g : topology::ToIndices(gpus)) {
      assigned += (assigned.empty() ? "" : ",") + std::to_string(g);
    }
    pod.annotations.emplace_back(std::string(kAnnotationAssignedGpus), assigned);
    state_.UpsertPod(pod);
    pods_[pod.uid] = {node, pod.priority, static_cast<int>(pod.gpu_request), next_seq_++, budget};
  }

  // The preempt verb chose `gpus` on `node` for `pod` (ClusterState::OfferClaims); then the
  // scheduler nominates it there (status.nominatedNodeName on the pending pod).
  void OfferClaim(const PodInfo& pod, const std::string& node, topology::GpuMask gpus) {
    state_.OfferClaims(pod.uid, {{node, topology::ToIndices(gpus)}});
  }
  void Nominate(PodInfo pod, const std::string& node) {
    pod.nominated_node = node;
    state_.UpsertPod(pod);
  }

  // A pending pod that goes away.
  void Forget(const std::string& uid) { state_.RemovePod(uid); }

  // Evicts the pod; true when that breaks its budget.
  bool Evict(const std::string& uid) {
    const int budget = pods_.at(uid).budget;
    state_.RemovePod(uid);
    pods_.erase(uid);
    return budget >= 0 && --allowed_[static_cast<size_t>(budget)] < 0;
  }

  // status.disruptionsAllowed per budget.
  std::vector<int>& allowed() { return allowed_; }
  const std::vector<int>& allowed() const { return allowed_; }

  // The budgets that count the pods on `node`, as gputopo's DisruptionBudgetIndex gives them.
  policies::BudgetCoverage CoverageOn(const std::string& node) const {
    policies::BudgetCoverage coverage;
    coverage.allowed.assign(allowed_.begin(), allowed_.end());
    for (size_t b = 0; b < allowed_.size(); ++b) coverage.budgets.push_back(std::to_string(b));
    for (const std::string& uid : PodsOn(node)) {
      const int budget = pods_.at(uid).budget;
      if (budget >= 0) coverage.budgets_of[uid] = {budget};
    }
    return coverage;
  }

 private:
  cluster::ClusterState state_;
  std::vector<std::string> names_;
  std::unordered_map<std::string, Held> pods_;
  std::vector<int> allowed_;
  int64_t next_seq_ = 0;
};

PodInfo MakePod(const std::string& name, int gpus, int32_t priority) {
  PodInfo pod;
  pod.namespace_name = "bench";
  pod.name = name;
  pod.uid = "uid-" + name;
  pod.gpu_request = gpus;
  pod.priority = priority;
  return pod;
}

// A node's candidate victims as the scheduler compares them (pickOneNodeForPreemption).
struct Candidate {
  int node = -1;  // position in names()
  std::vector<std::string> victims;
  int64_t pdb_violations = 0;
  int32_t max_priority = 0;
  int64_t priority_sum = 0;  // each victim's priority + MaxInt32 + 1, as kube-scheduler sums them
  policies::VictimChoice choice;  // gputopo mode
  auto Key() const {
    return std::make_tuple(pdb_violations, max_priority, priority_sum, victims.size(), node);
  }
};

void Summarise(const Cluster& cluster, Candidate& c) {
  c.max_priority = std::numeric_limits<int32_t>::min();
  c.priority_sum = 0;
  for (const std::string& uid : c.victims) {
    const int32_t p = cluster.pods().at(uid).priority;
    c.max_priority = std::max(c.max_priority, p);
    c.priority_sum += int64_t{p} + int64_t{std::numeric_limits<int32_t>::max()} + 1;
  }
}

// kube-scheduler's dry run on one node, by replica count: nullopt when the job does not fit even
// with every lower-priority pod removed.
// `newest_first`: among pods of equal priority, the newest is reprieved first (else the oldest,
// as kube-scheduler's MoreImportantPod orders them by start time).
std::optional<Candidate> DryRun(const Cluster& cluster, int n, const policies::NodeState& node,
                                int gpus, int32_t priority, bool newest_first) {
  struct Victim {
    std::string uid;
    int32_t priority;
    int slots;
    int64_t seq;
    int budget;
  };
  std::vector<Victim> lower;
  int free = node.free_slots();
  for (const std::string& uid : cluster.PodsOn(node.name())) {
    const Held& h = cluster.pods().at(uid);
    if (h.priority >= priority) continue;
    lower.push_back({uid, h.priority, h.slots, h.seq, h.budget});
    free += h.slots;
  }
  if (lower.empty() || free < gpus) return std::nullopt;
  std::sort(lower.begin(), lower.end(), [&](const Victim& a, const Victim& b) {
    if (a.priority != b.priority) return a.priority > b.priority;
    return newest_first ? a.seq > b.seq : a.seq < b.seq;
  });
  // filterPodsWithPDBViolation over every candidate, most important first; then the violating
  // ones are reprieved first.
  std::vector<int> left = cluster.allowed();
  std::vector<const Victim*> violating;
  std::vector<const Victim*> other;
  for (const Victim& v : lower) {
    const bool violates = v.budget >= 0 && --left[static_cast<size_t>(v.budget)] < 0;
    (violates ? violating : other).push_back(&v);
  }
  Candidate c;
  c.node = n;
  for (const auto* group : {&violating, &other}) {
    for (const Victim* v : *group) {
      if (free - v->slots >= gpus) {
        free -= v->slots;  // reprieved
      } else {
        c.victims.push_back(v->uid);
        if (group == &violating) ++c.pdb_violations;
      }
    }
  }
  if (c.victims.empty()) return std::nullopt;  // it fits as is: no preemption on this node
  Summarise(cluster, c);
  return c;
}

const Candidate* PickOne(const std::vector<Candidate>& candidates) {
  const Candidate* best = nullptr;
  for (const Candidate& c : candidates) {
    if (best == nullptr || c.Key() < best->Key()) best = &c;
  }
  return best;
}

void CountPlacement(const policies::NodeState& node, topology::GpuMask gpus, Stats& s) {
  if (topology::Count(gpus) < 2) return;
  ++s.multi;
  auto& [placed, nvlink] = s.by_size[topology::Count(gpus)];
  ++placed;
  const topology::TopologyShape& shape = node.shape();
  if (shape.has_nvlink() && shape.InOneIsland(gpus)) ++s.in_island;
  const std::vector<int> idx = topology::ToIndices(gpus);
  bool all = true;
  for (size_t a = 0; a < idx.size(); ++a) {
    for (size_t b = a + 1; b < idx.size(); ++b) {
      if (!shape.link(idx[a], idx[b]).IsNvLink()) all = false;
    }
  }
  if (all) {
    ++s.all_nvlink;
    ++nvlink;
  }
}

// A pod bound by the fill.
struct Bound {
  PodInfo pod;
  std::string node;
  topology::GpuMask gpus = 0;
  int deployment = 0;
};

// Fills every node with low-priority pods until none fits anywhere; returns them in the order
// they were bound.
std::vector<Bound> Fill(const topology::TopologyResolver& resolver,
                        const std::vector<NodeInfo>& nodes, const policies::Preset& preset,
                        uint64_t seed) {
  Cluster cluster(resolver, nodes);
  std::mt19937_64 rng(seed);
  std::vector<Bound> bound;
  for (int i = 0;; ++i) {
    const bool two = std::uniform_real_distribution<double>(0, 1)(rng) < 0.3;
    bool placed = false;
    for (int gpus : {two ? 2 : 1, two ? 1 : 2}) {  // the other kind once the drawn one is full
      PodInfo pod = MakePod("low-" + std::to_string(i), gpus, kLowPriority);
      Result<policies::PodRequirements> req = policies::RequirementsOf(pod);
      if (!req.ok()) continue;
      auto [n, e] = cluster.Best(*req, preset);
      if (n < 0) continue;
      const std::string& name = cluster.names()[static_cast<size_t>(n)];
      cluster.Bind(pod, name, e.gpus);
      bound.push_back({std::move(pod), name, e.gpus, i % kDeployments});
      placed = true;
      break;
    }
    if (!placed) break;
  }
  return bound;
}

Stats Run(Mode mode, const topology::TopologyResolver& resolver, const std::vector<NodeInfo>& nodes,
          const std::vector<Bound>& filled, const std::vector<int>& jobs,
          const policies::Preset& preset, bool newest_first, Race race = {}) {
  Cluster cluster(resolver, nodes);
  // Every other Deployment has a budget: maxUnavailable 10% of its replicas, rounded up.
  std::vector<int> replicas(kDeployments, 0);
  for (const Bound& b : filled) ++replicas[static_cast<size_t>(b.deployment)];
  std::vector<int> budget_of(kDeployments, -1);
  for (int d = 0; d < kDeployments; d += 2) {
    budget_of[static_cast<size_t>(d)] = static_cast<int>(cluster.allowed().size());
    cluster.allowed().push_back((replicas[static_cast<size_t>(d)] + 9) / 10);
  }
  for (const Bound& b : filled) {
    cluster.Bind(b.pod, b.node, b.gpus, budget_of[static_cast<size_t>(b.deployment)]);
  }
  Stats s;
  for (size_t j = 0; j < jobs.size(); ++j) {
    ++s.jobs;
    const PodInfo pod = MakePod("job-" + std::to_string(j), jobs[j], kJobPriority);
    Result<policies::PodRequirements> req = policies::RequirementsOf(pod);
    if (!req.ok()) continue;
    if (auto [n, e] = cluster.Best(*req, preset); n >= 0) {
      const std::string& name = cluster.names()[static_cast<size_t>(n)];
      CountPlacement(*cluster.Node(name), e.gpus, s);
      cluster.Bind(pod, name, e.gpus);
      ++s.admitted;
      ++s.admitted_direct;
      continue;
    }
    if (mode == Mode::kNone) continue;

    // The scheduler's dry run on every node.
    std::vector<Candidate> proposals;
    std::vector<std::shared_ptr<const policies::NodeState>> states;
    for (size_t i = 0; i < cluster.names().size(); ++i) {
      auto node = cluster.Node(cluster.names()[i]);
      if (auto c =
              DryRun(cluster, static_cast<int>(i), *node, jobs[j], kJobPriority, newest_first)) {
        proposals.push_back(std::move(*c));
      }
      states.push_back(std::move(node));
    }
    if (proposals.empty()) continue;
    const Candidate* chosen = nullptr;
    std::vector<Candidate> answered;
    if (mode == Mode::kDefault) {
      chosen = PickOne(proposals);
    } else {
      for (const Candidate& p : proposals) {
        const policies::NodeState& node = *states[static_cast<size_t>(p.node)];
        std::optional<policies::BudgetCoverage> coverage;
        if (mode == Mode::kGputopoPdb) coverage = cluster.CoverageOn(node.name());
        const auto start = std::chrono::steady_clock::now();
        policies::VictimChoice choice =
            policies::ChooseVictims(*req, kJobPriority, node, preset,
                                    policies::ProposedVictims{p.victims, p.pdb_violations},
                                    coverage ? &*coverage : nullptr);
        const auto stop = std::chrono::steady_clock::now();
        s.choose_us.push_back(std::chrono::duration<double, std::micro>(stop - start).count());
        if (!choice.possible) continue;
        Candidate c;
        c.node = p.node;
        c.victims = choice.victims;
        c.pdb_violations = choice.pdb_violations;
        c.choice = std::move(choice);
        Summarise(cluster, c);
        answered.push_back(std::move(c));
      }
      chosen = PickOne(answered);
      // What default preemption would have done on this same state.
      const Candidate& d = *PickOne(proposals);
      const policies::NodeState& dnode = *states[static_cast<size_t>(d.node)];
      const std::vector<std::string_view> duids(d.victims.begin(), d.victims.end());
      const bool default_works =
          policies::EvaluateNode(*req, dnode.Without(duids, 0), preset).fits();
      if (!default_works) ++s.default_would_waste;
      if (chosen != nullptr && default_works) {
        if (chosen->victims.size() > d.victims.size()) ++s.more_than_default;
        if (chosen->victims.size() < d.victims.size()) ++s.fewer_than_default;
      }
    }
    if (chosen == nullptr) continue;  // no node where preemption helps: pending, nothing evicted
    if (IsGputopo(mode)) {
      s.as_proposed += chosen->choice.as_proposed ? 1 : 0;
      s.added += chosen->choice.added;
      s.spared += chosen->choice.spared;
    }
    const std::string& name = cluster.names()[static_cast<size_t>(chosen->node)];
    ++s.preemptions;
    std::vector<Held> evicted;
    for (const std::string& uid : chosen->victims) {
      evicted.push_back(cluster.pods().at(uid));
      s.pdb_broken += cluster.Evict(uid) ? 1 : 0;
    }
    s.evicted += static_cast<int>(chosen->victims.size());
    if (race.replacements) {
      if (race.claims && chosen->choice.gpus != 0)
        cluster.OfferClaim(pod, name, chosen->choice.gpus);
      cluster.Nominate(pod, name);
      for (size_t v = 0; v < evicted.size(); ++v) {
        ++s.replacements;
        const PodInfo rival =
            MakePod("job-" + std::to_string(j) + "-replacement-" + std::to_string(v),
                    evicted[v].slots, kLowPriority);
        Result<policies::PodRequirements> rival_req = policies::RequirementsOf(rival);
        if (!rival_req.ok()) continue;
        int best = -1;
        policies::NodeEvaluation best_e;
        for (size_t i = 0; i < cluster.names().size(); ++i) {
          const auto node = cluster.Node(cluster.names()[i]);
          // The scheduler counts replicas: bound pods', and the nominee's on its node.
          const std::optional<policies::NodeState> bound_only =
              evaluation::ViewWithoutClaims(*node, pod.uid, kJobPriority);
          int free = (bound_only ? *bound_only : *node).free_slots();
          if (cluster.names()[i] == name) free -= jobs[j];
          if (free < evicted[v].slots) continue;
          // gputopo's filter, as the replacement (lower priority) sees the node: claims held.
          policies::NodeEvaluation e = policies::EvaluateNode(*rival_req, *node, preset);
          if (e.fits() && (best < 0 || e.weighted_score > best_e.weighted_score)) {
            best = static_cast<int>(i);
            best_e = std::move(e);
          }
        }
        if (best < 0) continue;
        const std::string& where = cluster.names()[static_cast<size_t>(best)];
        ++s.replacements_placed;
        if (where == name) ++s.replacements_on_nominated;
        cluster.Bind(rival, where, best_e.gpus, evicted[v].budget);
      }
    }
    const auto node = cluster.Node(name);
    // The job's retry looks through its own claim.
    const std::optional<policies::NodeState> own_view =
        evaluation::ViewWithoutClaims(*node, pod.uid, kJobPriority);
    const policies::NodeState& seen = own_view ? *own_view : *node;
    const policies::NodeEvaluation e = policies::EvaluateNode(*req, seen, preset);
    if (!e.fits()) {
      ++s.wasted;
      cluster.Forget(pod.uid);  // it gives up: no claim of it outlives this job
      continue;
    }
    CountPlacement(seen, e.gpus, s);
    cluster.Bind(pod, name, e.gpus);
    ++s.admitted;
    ++s.admitted_preempt;
    s.evicted_admitted += static_cast<int>(chosen->victims.size());
  }
  return s;
}

// The race's variants: which preemption, and whether gputopo's claims hold the freed GPUs.
struct RaceVariant {
  const char* name;
  Mode mode;
  Race race;
};
constexpr RaceVariant kRaceVariants[] = {
    {"default", Mode::kDefault, {true, false}},
    {"gputopo, without claims", Mode::kGputopo, {true, false}},
    {"gputopo, with claims", Mode::kGputopo, {true, true}},
};

std::vector<NodeInfo> MakeNodes(const Machine& m, const topology::Profile& profile, int count) {
  std::vector<NodeInfo> nodes;
  for (int i = 0; i < count; ++i) {
    NodeInfo info;
    char name[64];
    std::snprintf(name, sizeof(name), "%s-%03d", m.profile.c_str(), i);
    info.name = name;
    info.allocatable_gpus = int64_t{profile.machine.gpu_count()} * m.replicas;
    info.label_topology_profile = m.profile;
    info.label_gpu_replicas = std::to_string(m.replicas);
    nodes.push_back(std::move(info));
  }
  return nodes;
}

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto i = static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

int Main(int argc, char** argv) {
  CLI::App cli{"gputopo preemption against kube-scheduler's default preemption"};
  std::string machine_list = "dgx1-v100,hgx-h100";
  std::string replica_list = "1,4";
  int nodes_per_machine = 32;
  int jobs = 200;
  int seeds = 5;
  std::string out = "bench/results";
  std::string reprieve = "oldest";
  cli.add_option("--machines", machine_list, "topology profiles")->capture_default_str();
  cli.add_option("--replicas", replica_list, "replicas per GPU (time-slicing)")
      ->capture_default_str();
  cli.add_option("--nodes", nodes_per_machine, "nodes per cluster")->capture_default_str();
  cli.add_option("--jobs", jobs, "high-priority jobs arriving")->capture_default_str();
  cli.add_option("--seeds", seeds)->capture_default_str();
  cli.add_option("--out", out)->capture_default_str();
  cli.add_option("--reprieve", reprieve,
                 "which pod of equal priority the dry run reprieves first: newest or oldest")
      ->check(CLI::IsMember({"newest", "oldest"}))
      ->capture_default_str();
  CLI11_PARSE(cli, argc, argv);

  auto presets = LoadShippedPresets();
  if (!presets.ok()) {
    std::cerr << presets.status().ToString() << "\n";
    return 2;
  }
  const std::shared_ptr<const policies::Preset> preset = presets->Find("default");
  if (preset == nullptr) {
    std::cerr << "no preset \"default\" shipped\n";
    return 2;
  }
  topology::ShapeInterner interner;
  topology::ProfileCatalog profiles(interner);
  if (Status s = app::LoadProfiles("", profiles); !s.ok()) {
    std::cerr << s.ToString() << "\n";
    return 2;
  }
  const topology::TopologyResolver resolver(profiles, interner);

  auto split = [](const std::string& list) {
    std::vector<std::string> items;
    for (std::stringstream ss(list); ss.good();) {
      std::string item;
      std::getline(ss, item, ',');
      if (!item.empty()) items.push_back(item);
    }
    return items;
  };

  std::filesystem::create_directories(out);
  std::ostringstream md;
  md << nodes_per_machine << " nodes per cluster, filled with priority-" << kLowPriority
     << " pods (70% one replica, 30% two GPUs; " << kDeployments
     << " Deployments round robin, every other one with a PodDisruptionBudget of maxUnavailable "
        "10%) until none fits; "
     << jobs << " jobs of priority " << kJobPriority
     << " (2, 4 or 8 GPUs, uniform) arrive one by one; default preset; mean of " << seeds
     << " seeds (counts per seed; ChooseVictims time over all calls of all seeds); the "
        "dry run reprieves the "
     << reprieve << " pod first among equal priorities.\n\n"
     << "| machine | R | mode | jobs admitted | without preemption | after preemption | "
        "preemptions | wasted (% of preemptions) | pods evicted per job admitted by preemption | "
        "pods evicted in all | evictions breaking a PDB | multi-GPU jobs in one NVLink island | "
        "all pairs NVLink | ChooseVictims per node call, mean / p99 | calls per preemption "
        "attempt |\n"
     << "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  std::ostringstream notes;
  std::ostringstream race_md;
  race_md << "\n### The race with the victims' replacements\n\n"
          << "Each victim's replacement (its shape, priority " << kLowPriority
          << ") is scheduled before the job's retry; same clusters, jobs and seeds as above. "
             "Counts per seed.\n\n"
          << "| machine | R | preemption | jobs admitted | after preemption | preemptions | "
             "wasted (% of preemptions) | pods evicted | replacements placed | ... on the "
             "job's nominated node |\n"
          << "|---|---|---|---|---|---|---|---|---|---|\n";
  for (const std::string& profile_name : split(machine_list)) {
    const topology::Profile* profile = profiles.Find(profile_name);
    if (profile == nullptr) {
      std::cerr << "unknown profile " << profile_name << "\n";
      return 2;
    }
    for (const std::string& r : split(replica_list)) {
      const Machine machine{profile_name, std::stoi(r)};
      const std::vector<NodeInfo> nodes = MakeNodes(machine, *profile, nodes_per_machine);
      std::map<Mode, Stats> sums;
      std::map<std::string, Stats> race_sums;
      std::map<Mode, int> attempts;  // preemption attempts (jobs that did not fit as they came)
      for (int seed = 0; seed < seeds; ++seed) {
        const uint64_t s = 42 + static_cast<uint64_t>(seed);
        const std::vector<Bound> filled = Fill(resolver, nodes, *preset, s);
        std::mt19937_64 rng(s * 7919);
        std::vector<int> sizes;
        for (int j = 0; j < jobs; ++j) {
          const int sizes_of[] = {2, 4, 8};
          sizes.push_back(sizes_of[std::uniform_int_distribution<int>(0, 2)(rng)]);
        }
        for (Mode mode : kModes) {
          const auto t0 = std::chrono::steady_clock::now();
          Stats st = Run(mode, resolver, nodes, filled, sizes, *preset, reprieve == "newest");
          const double secs =
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          std::fprintf(stderr,
                       "%s R=%s seed %d %-13s: %zu low pods, admitted %d (%d by preemption), "
                       "preemptions %d, wasted %d, evicted %d, %.1f s\n",
                       profile_name.c_str(), r.c_str(), seed, ModeName(mode), filled.size(),
                       st.admitted, st.admitted_preempt, st.preemptions, st.wasted, st.evicted,
                       secs);
          Stats& sum = sums[mode];
          sum.jobs += st.jobs;
          sum.admitted += st.admitted;
          sum.admitted_direct += st.admitted_direct;
          sum.admitted_preempt += st.admitted_preempt;
          sum.preemptions += st.preemptions;
          sum.wasted += st.wasted;
          sum.evicted += st.evicted;
          sum.evicted_admitted += st.evicted_admitted;
          sum.pdb_broken += st.pdb_broken;
          sum.multi += st.multi;
          sum.in_island += st.in_island;
          sum.all_nvlink += st.all_nvlink;
          sum.default_would_waste += st.default_would_waste;
          sum.more_than_default += st.more_than_default;
          sum.fewer_than_default += st.fewer_than_default;
          sum.as_proposed += st.as_proposed;
          sum.added += st.added;
          sum.spared += st.spared;
          for (const auto& [size, counts] : st.by_size) {
            sum.by_size[size].first += counts.first;
            sum.by_size[size].second += counts.second;
          }
          sum.choose_us.insert(sum.choose_us.end(), st.choose_us.begin(), st.choose_us.end());
          attempts[mode] += st.jobs - st.admitted_direct;
        }
        for (const RaceVariant& variant : kRaceVariants) {
          Stats st = Run(variant.mode, resolver, nodes, filled, sizes, *preset,
                         reprieve == "newest", variant.race);
          Stats& sum = race_sums[variant.name];
          sum.jobs += st.jobs;
          sum.admitted += st.admitted;
          sum.admitted_preempt += st.admitted_preempt;
          sum.preemptions += st.preemptions;
          sum.wasted += st.wasted;
          sum.evicted += st.evicted;
          sum.replacements += st.replacements;
          sum.replacements_placed += st.replacements_placed;
          sum.replacements_on_nominated += st.replacements_on_nominated;
        }
      }
      for (const RaceVariant& variant : kRaceVariants) {
        const Stats& t = race_sums[variant.name];
        const double n = seeds;
        char row[512];
        std::snprintf(row, sizeof(row),
                      "| %s | %d | %s | %.1f%% (%.1f) | %.1f | %.1f | %.1f (%.1f%%) | %.1f | %.1f "
                      "| %.1f |\n",
                      profile_name.c_str(), machine.replicas, variant.name,
                      t.jobs > 0 ? 100.0 * t.admitted / t.jobs : 0.0, t.admitted / n,
                      t.admitted_preempt / n, t.preemptions / n, t.wasted / n,
                      t.preemptions > 0 ? 100.0 * t.wasted / t.preemptions : 0.0, t.evicted / n,
                      t.replacements_placed / n, t.replacements_on_nominated / n);
        race_md << row;
      }
      for (Mode mode : kModes) {
        const Stats& t = sums[mode];
        const double n = seeds;
        auto pct = [](int a, int b) { return b > 0 ? 100.0 * a / b : 0.0; };
        char row[1024];
        std::string timing = "";
        std::string calls = "";
        if (IsGputopo(mode)) {
          double mean = 0;
          for (double us : t.choose_us) mean += us;
          mean = t.choose_us.empty() ? 0 : mean / static_cast<double>(t.choose_us.size());
          char buf[128];
          std::snprintf(buf, sizeof(buf), "%.0f / %.0f µs", mean, Percentile(t.choose_us, 0.99));
          timing = buf;
          std::snprintf(
              buf, sizeof(buf), "%.1f",
              attempts[mode] > 0 ? static_cast<double>(t.choose_us.size()) / attempts[mode] : 0.0);
          calls = buf;
        }
        const bool preempts = mode != Mode::kNone;
        char wasted[64] = "";
        char per_job[32] = "";
        if (preempts) {
          std::snprintf(wasted, sizeof(wasted), "%.1f (%.1f%%)", t.wasted / n,
                        pct(t.wasted, t.preemptions));
          if (t.admitted_preempt > 0) {
            std::snprintf(per_job, sizeof(per_job), "%.2f",
                          static_cast<double>(t.evicted_admitted) / t.admitted_preempt);
          } else {
            std::snprintf(per_job, sizeof(per_job), "-");
          }
        }
        std::snprintf(row, sizeof(row),
                      "| %s | %d | %s | %.1f%% (%.1f) | %.1f | %.1f | %.1f | %s | %s | %.1f | "
                      "%.1f | %.1f%% | %.1f%% | %s | %s |\n",
                      profile_name.c_str(), machine.replicas, ModeName(mode),
                      pct(t.admitted, t.jobs), t.admitted / n, t.admitted_direct / n,
                      t.admitted_preempt / n, t.preemptions / n, wasted, per_job, t.evicted / n,
                      t.pdb_broken / n, pct(t.in_island, t.multi), pct(t.all_nvlink, t.multi),
                      timing.c_str(), calls.c_str());
        md << row;
        if (preempts) {
          std::string sizes_note;
          for (const auto& [size, counts] : t.by_size) {
            char buf[96];
            std::snprintf(buf, sizeof(buf), "%s%d GPUs %.1f%% of %.1f",
                          sizes_note.empty() ? "" : ", ", size, pct(counts.second, counts.first),
                          counts.first / n);
            sizes_note += buf;
          }
          notes << "- " << profile_name << " R=" << machine.replicas << " " << ModeName(mode)
                << ": all pairs NVLink by job size (share of the admitted jobs of that size per "
                   "seed): "
                << sizes_note << ".\n";
        }
        if (IsGputopo(mode)) {
          char note[1024];
          std::snprintf(note, sizeof(note),
                        "- %s R=%d %s: on the states where gputopo preempted, default's own choice "
                        "would have been wasted %.1f times per seed; where it would have worked, "
                        "gputopo evicted more pods %.1f times, fewer %.1f times. gputopo's "
                        "victims were the dry run's own in %.1f%% of its preemptions; per "
                        "preemption it added %.2f pods to the proposal and spared %.2f.\n",
                        profile_name.c_str(), machine.replicas, ModeName(mode),
                        t.default_would_waste / n, t.more_than_default / n,
                        t.fewer_than_default / n, pct(t.as_proposed, t.preemptions),
                        t.preemptions > 0 ? static_cast<double>(t.added) / t.preemptions : 0.0,
                        t.preemptions > 0 ? static_cast<double>(t.spared) / t.preemptions : 0.0);
          notes << note;
        }
      }
    }
  }
  md << "\n" << notes.str() << race_md.str();
  std::ofstream(out + "/preemption.md") << md.str();
  std::cout << md.str();
  return 0;
}

}  // namespace
}  // namespace gputopo::bench

int main(int argc, char** argv) { return gputopo::bench::Main(argc, argv); }
