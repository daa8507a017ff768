#include "src/service/extender_service.h"

#include <algorithm>
#include <unordered_map>

#include "policies/engine/normalize.h"

namespace gputopo::service {
namespace {

constexpr std::string_view kUnknownNodeReason =
    "gputopo: node unknown to gputopo (not a GPU node, or not seen yet)";

}  // namespace

std::shared_ptr<CycleRecord> ExtenderService::RunCycle(Verb verb,
                                                       const extender::ExtenderArgs& args) {
  const auto start = context_.clock.MonotonicNow();
  auto record = std::make_shared<CycleRecord>();
  record->verb = verb;
  record->sequence = context_.decisions.NextSequence();
  record->time = context_.clock.Now();
  record->pod_key = args.pod.Key();
  record->pod_uid = args.pod.uid;
  context_.recent_pods.Remember(args.pod);

  policies::ScoreNormalization normalization = policies::ScoreNormalization::kNone;
  Result<policies::PodRequirements> requirements = policies::RequirementsOf(args.pod);
  if (!requirements.ok()) {
    record->error = "gputopo: " + requirements.status().message();
  } else {
    record->requirements = DescribeRequirements(*requirements);
    Result<std::shared_ptr<const policies::Preset>> preset = context_.PresetFor(*requirements);
    if (!preset.ok()) {
      record->error = "gputopo: " + preset.status().message();
    } else {
      record->preset = (*preset)->name();
      record->pod = *requirements;
      record->preset_used = *preset;
      normalization = (*preset)->normalization();
      record->normalization = std::string(policies::ScoreNormalizationName(normalization));
      record->snapshot = context_.state.Snapshot();
      const policies::ClusterSnapshot& snapshot = *record->snapshot;
      const std::string pod_key = record->pod_key + "/" + record->pod_uid;
      evaluation::Evaluations evaluations = context_.evaluations.Evaluate(
          {*requirements, *preset, snapshot, args.node_names, pod_key});
      const std::vector<size_t>& positions = evaluations.positions;
      record->evaluated = evaluations.evaluated;
      record->from_filter = evaluations.reused;
      record->lease = std::move(evaluations.lease);
      record->nodes.resize(positions.size());
      std::shared_ptr<const policies::NodeEvaluation> unknown;
      for (size_t i = 0; i < positions.size(); ++i) {
        CycleRecord::NodeRef& ref = record->nodes[i];
        if (positions[i] == policies::ClusterSnapshot::kNotFound) {
          if (unknown == nullptr) {
            policies::NodeEvaluation e;
            e.verdict = policies::Verdict::kUnschedulable;
            e.reason = std::string(kUnknownNodeReason);
            e.detail = "no Node object with this name in gputopo's cache";
            unknown = std::make_shared<const policies::NodeEvaluation>(std::move(e));
            record->lease.Hold(unknown);
          }
          ref.node =
              CycleRecord::kUnknownNode | static_cast<uint32_t>(record->unknown_nodes.size());
          record->unknown_nodes.emplace_back(args.node_names[i]);
          ref.evaluation = policies::EvaluationRef::To(*unknown);
          ++record->failed;
          continue;
        }
        ref.node = static_cast<uint32_t>(positions[i]);
        ref.evaluation = evaluations.per_node[i];
        if (ref.evaluation.fits())
          ++record->passed;
        else if (ref.evaluation.verdict == policies::Verdict::kUnresolvable)
          ++record->unresolvable;
        else
          ++record->failed;
      }
    }
  }
  if (verb == Verb::kPrioritize && record->error.empty()) {
    std::vector<std::optional<double>> weighted;
    weighted.reserve(record->nodes.size());
    for (const CycleRecord::NodeRef& ref : record->nodes) {
      weighted.push_back(ref.evaluation.fits()
                             ? std::optional<double>(ref.evaluation.weighted_score)
                             : std::nullopt);
    }
    record->priorities = policies::NormalizeScores(weighted, normalization);
  }
  record->duration =
      std::chrono::duration_cast<std::chrono::microseconds>(context_.clock.MonotonicNow() - start);
  return record;
}

void ExtenderService::Commit(std::shared_ptr<CycleRecord> record) {
  // Failures by reason: reasons are few and shared by many nodes, so count by text first.
  std::unordered_map<std::string_view, size_t> reasons;
  for (const CycleRecord::NodeRef& ref : record->nodes) {
    if (!ref.evaluation.fits()) ++reasons[ref.evaluation.evaluation->reason];
  }
  for (const auto& [reason, count] : reasons) record->failure_reasons[std::string(reason)] += count;
  if (record->nodes.size() > 2 * kRecordedNodes) {
    std::vector<size_t> failed;
    std::vector<size_t> passed;
    for (size_t i = 0; i < record->nodes.size(); ++i) {
      if (record->nodes[i].evaluation.fits()) {
        passed.push_back(i);
      } else if (failed.size() < kRecordedNodes) {
        failed.push_back(i);
      }
    }
    // The best scores, ties to the earlier node: (score, position) pairs in one array.
    std::vector<std::pair<double, size_t>> ranked;
    ranked.reserve(passed.size());
    for (size_t i : passed) ranked.emplace_back(-record->nodes[i].evaluation.weighted_score, i);
    const size_t keep = std::min(kRecordedNodes, ranked.size());
    std::nth_element(ranked.begin(), ranked.begin() + static_cast<long>(keep), ranked.end());
    std::vector<size_t> kept = failed;
    for (size_t k = 0; k < keep; ++k) kept.push_back(ranked[k].second);
    std::sort(kept.begin(), kept.end());
    std::vector<CycleRecord::NodeRef> nodes;
    std::vector<int> priorities;
    nodes.reserve(kept.size());
    for (size_t i : kept) {
      nodes.push_back(record->nodes[i]);
      if (!record->priorities.empty()) priorities.push_back(record->priorities[i]);
    }
    record->nodes = std::move(nodes);
    record->priorities = std::move(priorities);
  }
  if (record->snapshot != nullptr) {
    const auto& states = record->snapshot->nodes();
    for (CycleRecord::NodeRef& ref : record->nodes) {
      if ((ref.node & CycleRecord::kUnknownNode) != 0) continue;
      record->node_states.push_back(states[ref.node]);
      ref.node = static_cast<uint32_t>(record->node_states.size() - 1);
    }
    record->snapshot.reset();
  }
  context_.decisions.Add(std::shared_ptr<const CycleRecord>(std::move(record)));
}

FilterReply ExtenderService::Filter(const extender::ExtenderArgs& args) {
  FilterReply reply;
  reply.record = RunCycle(Verb::kFilter, args);
  const CycleRecord& record = *reply.record;
  if (!record.error.empty()) {
    reply.error = record.error;
    return reply;
  }
  reply.outcomes.reserve(record.nodes.size());
  for (const CycleRecord::NodeRef& ref : record.nodes) {
    const policies::EvaluationRef& e = ref.evaluation;
    reply.outcomes.push_back({e.fits(), e.verdict == policies::Verdict::kUnresolvable,
                              e.fits() ? std::string_view() : e.evaluation->reason});
  }
  return reply;
}

PrioritizeReply ExtenderService::Prioritize(const extender::ExtenderArgs& args) {
  PrioritizeReply reply;
  reply.record = RunCycle(Verb::kPrioritize, args);
  const CycleRecord& record = *reply.record;
  if (!record.error.empty()) {
    reply.error = record.error;
    return reply;
  }
  reply.scores.reserve(record.nodes.size());
  for (size_t i = 0; i < record.nodes.size(); ++i) {
    reply.scores.emplace_back(args.node_names[i], record.priorities[i]);
  }
  return reply;
}

}  // namespace gputopo::service
