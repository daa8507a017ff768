#include "src/service/preemptor.h"

#include <algorithm>
#include <optional>
#include <string_view>
#include <utility>

#include "evaluation/nominated_claims.h"

namespace gputopo::service {
namespace {

// The "<namespace>/<name>" gputopo knows for `uid` on `node`, else the uid itself.
std::string KeyOf(const policies::NodeState& node, const std::string& uid) {
  for (int g = 0; g < node.gpu_count(); ++g) {
    for (const policies::Occupant& o : node.gpu(g).occupants) {
      if (o.pod_uid == uid) return o.pod_key;
    }
  }
  for (const policies::UnplacedPod& p : node.unplaced()) {
    if (p.pod_uid == uid) return p.pod_key;
  }
  return "uid " + uid;
}

// Every pod gputopo tracks on `node`, once each (the views point into the node).
std::vector<std::string_view> PodsOn(const policies::NodeState& node) {
  std::vector<std::string_view> uids;
  for (int g = 0; g < node.gpu_count(); ++g) {
    for (const policies::Occupant& o : node.gpu(g).occupants) uids.push_back(o.pod_uid);
  }
  for (const policies::UnplacedPod& p : node.unplaced()) uids.push_back(p.pod_uid);
  std::sort(uids.begin(), uids.end());
  uids.erase(std::unique(uids.begin(), uids.end()), uids.end());
  return uids;
}

}  // namespace

PreemptReply Preemptor::Preempt(const extender::PreemptionArgs& args) const {
  const auto start = context_.clock.MonotonicNow();
  auto record = std::make_shared<PreemptRecord>();
  record->sequence = context_.decisions.NextSequence();
  record->time = context_.clock.Now();
  record->pod_key = args.pod.Key();
  record->pod_uid = args.pod.uid;
  record->priority = args.pod.priority;
  record->full_pods = args.full_pods;
  record->nodes.reserve(args.nodes.size());
  for (const extender::PreemptionNode& n : args.nodes) {
    PreemptRecord::Node node;
    node.name = n.name;
    node.proposed = n.victim_uids;
    node.proposed_pdb_violations = n.pdb_violations;
    record->nodes.push_back(std::move(node));
  }

  Result<policies::PodRequirements> requirements = policies::RequirementsOf(args.pod);
  Result<std::shared_ptr<const policies::Preset>> preset =
      requirements.ok() ? context_.PresetFor(*requirements)
                        : Result<std::shared_ptr<const policies::Preset>>(requirements.status());
  if (!requirements.ok()) {
    record->error = "gputopo: " + requirements.status().message();
  } else if (!preset.ok()) {
    record->requirements = DescribeRequirements(*requirements);
    record->error = "gputopo: " + preset.status().message();
  } else {
    record->requirements = DescribeRequirements(*requirements);
    record->preset = (*preset)->name();
    std::shared_ptr<const policies::ClusterSnapshot> snapshot = context_.state.Snapshot();
    for (size_t i = 0; i < args.nodes.size(); ++i) {
      const extender::PreemptionNode& in = args.nodes[i];
      PreemptRecord::Node& out = record->nodes[i];
      policies::VictimChoice& choice = out.choice;
      if (!in.error.empty()) {
        choice.reason = "gputopo: unreadable victims entry";
        choice.detail = in.error;
        continue;
      }
      if (requirements->gpus == 0) {
        // Not a GPU pod: the scheduler's victims are its own business.
        choice.possible = true;
        choice.as_proposed = true;
        choice.victims = in.victim_uids;
        choice.pdb_violations = in.pdb_violations;
        choice.detail = "requests no GPU: the scheduler's victims kept";
        continue;
      }
      std::shared_ptr<const policies::NodeState> node = snapshot->FindShared(in.name);
      if (node == nullptr) {
        choice.reason = "gputopo: node unknown to gputopo (not a GPU node, or not seen yet)";
        choice.detail = "no Node object with this name in gputopo's cache";
        continue;
      }
      // Claims are not pods: the preemptor looks through its own and those of lower priority,
      // and no other claim is ever a victim (a victim has a lower priority).
      if (std::optional<policies::NodeState> view =
              evaluation::ViewWithoutClaims(*node, args.pod.uid, args.pod.priority)) {
        node = std::make_shared<const policies::NodeState>(std::move(*view));
      }
      std::optional<policies::BudgetCoverage> coverage;
      if (budgets_ != nullptr) coverage = budgets_->CoverageOf(PodsOn(*node));
      choice = policies::ChooseVictims(*requirements, args.pod.priority, *node, **preset,
                                       {in.victim_uids, in.pdb_violations},
                                       coverage ? &*coverage : nullptr);
      if (coverage) out.budgets = coverage->budgets;
      if (choice.possible) {
        for (const std::string& uid : choice.victims) out.victim_keys.push_back(KeyOf(*node, uid));
        out.placement = DescribePlacement(*node, choice.gpus);
      }
    }
  }

  PreemptReply reply;
  std::vector<cluster::ClaimOffer> offers;
  if (record->error.empty()) {
    for (const PreemptRecord::Node& node : record->nodes) {
      if (!node.choice.possible) continue;
      ++record->kept;
      reply.kept.push_back({node.name, &node.choice.victims, node.choice.pdb_violations});
      if (node.choice.gpus != 0)
        offers.push_back({node.name, topology::ToIndices(node.choice.gpus)});
    }
  }
  // Whichever node the scheduler nominates the pod to, it holds these GPUs there until it binds.
  if (!args.pod.uid.empty()) context_.state.OfferClaims(args.pod.uid, offers);
  record->duration =
      std::chrono::duration_cast<std::chrono::microseconds>(context_.clock.MonotonicNow() - start);
  reply.record = record;
  context_.decisions.Add(std::shared_ptr<const PreemptRecord>(record));
  return reply;
}

}  // namespace gputopo::service
