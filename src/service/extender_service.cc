#include "src/service/extender_service.h"

#include <algorithm>

#include "policies/engine/normalize.h"

namespace gputopo::service {
namespace {

constexpr std::string_view kUnknownNodeReason =
    "gputopo: node unknown to gputopo (not a GPU node, or not seen yet)";

}  // namespace

std::shared_ptr<CycleRecord> ExtenderService::RunCycle(Verb verb,
                                                       const extender::ExtenderArgs& args) const {
  const auto start = context_.clock.MonotonicNow();
  auto record = std::make_shared<CycleRecord>();
  record->verb = verb;
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
      policies::PodEvaluator evaluator(*requirements, **preset, context_.evaluation_cache);
      record->nodes.reserve(args.node_names.size());
      evaluator.Reserve(args.node_names.size());
      std::optional<uint32_t> unknown_evaluation;
      for (std::string_view name : args.node_names) {
        const size_t index = snapshot.FindIndex(name);
        CycleRecord::NodeRef ref;
        if (index == policies::ClusterSnapshot::kNotFound) {
          ref.node =
              CycleRecord::kUnknownNode | static_cast<uint32_t>(record->unknown_nodes.size());
          record->unknown_nodes.emplace_back(name);
          ref.evaluation = UINT32_MAX;  // patched below, once evaluations are moved
          ++record->failed;
        } else {
          ref.node = static_cast<uint32_t>(index);
          ref.evaluation = evaluator.Evaluate(*snapshot.nodes()[index]);
          const policies::NodeEvaluation& e = evaluator.evaluation(ref.evaluation);
          if (e.fits())
            ++record->passed;
          else if (e.verdict == policies::Verdict::kUnresolvable)
            ++record->unresolvable;
          else
            ++record->failed;
        }
        record->nodes.push_back(ref);
      }
      record->evaluations = evaluator.TakeEvaluations();
      if (!record->unknown_nodes.empty()) {
        policies::NodeEvaluation unknown;
        unknown.verdict = policies::Verdict::kUnschedulable;
        unknown.reason = std::string(kUnknownNodeReason);
        unknown.detail = "no Node object with this name in gputopo's cache";
        record->evaluations.push_back(
            std::make_shared<const policies::NodeEvaluation>(std::move(unknown)));
        unknown_evaluation = static_cast<uint32_t>(record->evaluations.size() - 1);
        for (CycleRecord::NodeRef& ref : record->nodes) {
          if ((ref.node & CycleRecord::kUnknownNode) != 0) ref.evaluation = *unknown_evaluation;
        }
      }
    }
  }
  if (verb == Verb::kPrioritize && record->error.empty()) {
    std::vector<std::optional<double>> weighted;
    weighted.reserve(record->nodes.size());
    for (const CycleRecord::NodeRef& ref : record->nodes) {
      const policies::NodeEvaluation& e = record->EvaluationOf(ref);
      weighted.push_back(e.fits() ? std::optional<double>(e.weighted_score) : std::nullopt);
    }
    record->priorities = policies::NormalizeScores(weighted, normalization);
  }
  record->duration =
      std::chrono::duration_cast<std::chrono::microseconds>(context_.clock.MonotonicNow() - start);
  return record;
}

void ExtenderService::Commit(std::shared_ptr<CycleRecord> record) const {
  if (record->nodes.size() > 2 * kRecordedNodes) {
    std::vector<size_t> failed;
    std::vector<size_t> passed;
    for (size_t i = 0; i < record->nodes.size(); ++i) {
      const policies::NodeEvaluation& e = record->EvaluationOf(record->nodes[i]);
      if (e.fits()) {
        passed.push_back(i);
      } else {
        ++record->failure_reasons[e.reason];
        if (failed.size() < kRecordedNodes) failed.push_back(i);
      }
    }
    const size_t keep = std::min(kRecordedNodes, passed.size());
    std::partial_sort(passed.begin(), passed.begin() + static_cast<long>(keep), passed.end(),
                      [&](size_t a, size_t b) {
                        return record->EvaluationOf(record->nodes[a]).weighted_score >
                               record->EvaluationOf(record->nodes[b]).weighted_score;
                      });
    passed.resize(keep);
    std::vector<size_t> kept = failed;
    kept.insert(kept.end(), passed.begin(), passed.end());
    std::sort(kept.begin(), kept.end());
    std::vector<CycleRecord::NodeRef> nodes;
    std::vector<std::shared_ptr<const policies::NodeEvaluation>> evaluations;
    std::vector<int> priorities;
    for (size_t i : kept) {
      CycleRecord::NodeRef ref = record->nodes[i];
      evaluations.push_back(record->evaluations[ref.evaluation]);
      ref.evaluation = static_cast<uint32_t>(evaluations.size() - 1);
      nodes.push_back(ref);
      if (!record->priorities.empty()) priorities.push_back(record->priorities[i]);
    }
    record->nodes = std::move(nodes);
    record->evaluations = std::move(evaluations);
    record->priorities = std::move(priorities);
  } else {
    for (const CycleRecord::NodeRef& ref : record->nodes) {
      const policies::NodeEvaluation& e = record->EvaluationOf(ref);
      if (!e.fits()) ++record->failure_reasons[e.reason];
    }
  }
  context_.decisions.Add(std::shared_ptr<const CycleRecord>(std::move(record)));
}

FilterReply ExtenderService::Filter(const extender::ExtenderArgs& args) const {
  FilterReply reply;
  reply.record = RunCycle(Verb::kFilter, args);
  const CycleRecord& record = *reply.record;
  if (!record.error.empty()) {
    reply.error = record.error;
    return reply;
  }
  reply.outcomes.reserve(record.nodes.size());
  for (const CycleRecord::NodeRef& ref : record.nodes) {
    const policies::NodeEvaluation& e = record.EvaluationOf(ref);
    reply.outcomes.push_back({e.fits(), e.verdict == policies::Verdict::kUnresolvable, e.reason});
  }
  return reply;
}

PrioritizeReply ExtenderService::Prioritize(const extender::ExtenderArgs& args) const {
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
