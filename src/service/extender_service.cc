#include "src/service/extender_service.h"

#include <utility>

#include "policies/engine/candidate_order.h"
#include "policies/engine/normalize.h"

namespace gputopo::service {
namespace {

constexpr std::string_view kUnknownNodeReason =
    "gputopo: node unknown to gputopo (not a GPU node, or not seen yet)";

CycleSummary SummaryOf(const CycleRecord& record) {
  return {record.pod_key, record.passed, record.failed, record.unresolvable};
}

// Under filter_decides: the candidate (an index into the record's candidates) that prioritize
// would score highest (policies::DecidedCandidate), or nullopt when fewer than two fit.
std::optional<size_t> DecidedNode(const CycleRecord& record,
                                  const std::vector<std::string_view>& names) {
  if (record.passed < 2 || record.preset_used == nullptr || !record.pod) return std::nullopt;
  const policies::CandidateOrder order(*record.preset_used, *record.pod);
  return policies::DecidedCandidate(
      record.candidate_evaluations.size(),
      [&](size_t i) -> std::optional<double> {
        const policies::EvaluationRef& e = record.candidate_evaluations[i];
        if (!e.fits()) return std::nullopt;
        return order.Input(e, names[i]);
      },
      [&](size_t i) { return policies::FilterDecidesTieKey(record.pod_uid, names[i]); });
}

}  // namespace

std::shared_ptr<CycleRecord> ExtenderService::RunCycle(
    Verb verb, const extender::ExtenderArgs& args,
    std::shared_ptr<const policies::ClusterSnapshot> snapshot, uint64_t sequence) {
  const auto start = context_.clock.MonotonicNow();
  const auto elapsed = [&] {
    return std::chrono::duration_cast<std::chrono::microseconds>(context_.clock.MonotonicNow() -
                                                                 start);
  };
  auto record = std::make_shared<CycleRecord>();
  record->verb = verb;
  record->sequence = sequence;
  record->time = context_.clock.Now();
  record->pod_key = args.pod.Key();
  record->pod_uid = args.pod.uid;

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
      if (verb == Verb::kFilter && requirements->gpus <= 0) {
        // A pod without GPUs fits every node, known to gputopo or not (EvaluateNode's first
        // rule): its filter needs no evaluation. Its prioritize evaluates, to score.
        record->passed = args.node_names.size();
        record->duration = elapsed();
        return record;
      }
      record->snapshot = std::move(snapshot);
      const std::string pod_key = record->pod_key + "/" + record->pod_uid;
      evaluation::Evaluations evaluations =
          context_.evaluations.Evaluate({*requirements, *preset, *record->snapshot, args.node_names,
                                         pod_key, args.pod.uid, args.pod.priority});
      record->evaluated = evaluations.evaluated;
      record->from_filter = evaluations.reused;
      record->lease = std::move(evaluations.lease);
      record->candidate_positions = std::move(evaluations.positions);
      record->candidate_evaluations = std::move(evaluations.per_node);
      const std::vector<size_t>& positions = record->candidate_positions;
      std::vector<policies::EvaluationRef>& per_node = record->candidate_evaluations;
      std::shared_ptr<const policies::NodeEvaluation> unknown;
      for (size_t i = 0; i < positions.size(); ++i) {
        if (positions[i] == policies::ClusterSnapshot::kNotFound) {
          if (unknown == nullptr) {
            policies::NodeEvaluation e;
            if (requirements->gpus <= 0) {
              // A node without GPUs (gputopo keeps only GPU nodes) is where a GPU-less pod
              // strands nothing: it fits, with the top score.
              e.verdict = policies::Verdict::kFits;
              e.detail = "pod requests no GPU; node without GPUs known to gputopo";
              e.weighted_score = policies::kMaxComponentScore;
            } else {
              e.verdict = policies::Verdict::kUnschedulable;
              e.reason = std::string(kUnknownNodeReason);
              e.detail = "no Node object with this name in gputopo's cache";
            }
            unknown = std::make_shared<const policies::NodeEvaluation>(std::move(e));
            record->lease.Hold(unknown);
          }
          record->unknown_nodes.emplace_back(args.node_names[i]);
          per_node[i] = policies::EvaluationRef::To(*unknown);
        }
        const policies::EvaluationRef& e = per_node[i];
        if (e.fits())
          ++record->passed;
        else if (e.verdict == policies::Verdict::kUnresolvable)
          ++record->unresolvable;
        else
          ++record->failed;
      }
    }
  }
  if (verb == Verb::kPrioritize && record->error.empty()) {
    // The candidates are parallel to args.node_names once evaluated; empty after an error.
    const std::optional<policies::CandidateOrder> order =
        record->preset_used != nullptr && record->pod
            ? std::optional<policies::CandidateOrder>(std::in_place, *record->preset_used,
                                                      *record->pod)
            : std::nullopt;
    std::vector<std::optional<double>> weighted;
    const std::vector<policies::EvaluationRef>& candidates = record->candidate_evaluations;
    weighted.reserve(candidates.size());
    for (size_t i = 0; i < candidates.size(); ++i) {
      const policies::EvaluationRef& e = candidates[i];
      weighted.push_back(e.fits() && order ? std::optional<double>(order->Input(
                                                 e, order->by_name() ? args.node_names[i] : ""))
                                           : std::nullopt);
    }
    record->priorities = policies::NormalizeScores(weighted, normalization);
    if (order && order->by_name()) record->normalization = order->Describe();
  }
  record->duration = elapsed();
  return record;
}

std::shared_ptr<CycleRecord> ExtenderService::RunCurrentCycle(Verb verb,
                                                              const extender::ExtenderArgs& args) {
  context_.recent_pods.Remember(args.pod);
  return RunCycle(verb, args, context_.state.Snapshot(), context_.decisions.NextSequence());
}

FilterReply ExtenderService::Filter(const extender::ExtenderArgs& args) {
  std::shared_ptr<CycleRecord> record = RunCurrentCycle(Verb::kFilter, args);
  FilterReply reply;
  reply.summary = SummaryOf(*record);
  if (!record->error.empty()) {
    reply.error = record->error;
  } else if (record->GpuLessFilter()) {
    reply.outcomes.assign(args.node_names.size(), {true, false, std::string_view()});
  } else {
    // The decided candidate's index, or none (candidates.size()): a plain index, not an optional,
    // which GCC's -O2 reports as maybe-uninitialized.
    const std::vector<policies::EvaluationRef>& candidates = record->candidate_evaluations;
    const size_t none = candidates.size();
    const size_t decided =
        options_.filter_decides ? DecidedNode(*record, args.node_names).value_or(none) : none;
    if (decided != none) record->decided_node = std::string(args.node_names[decided]);
    reply.outcomes.reserve(candidates.size());
    for (size_t i = 0; i < candidates.size(); ++i) {
      const policies::EvaluationRef& e = candidates[i];
      const bool left_out = e.fits() && decided != none && i != decided;
      reply.outcomes.push_back({e.fits() && !left_out,
                                e.verdict == policies::Verdict::kUnresolvable,
                                e.fits() ? std::string_view() : e.evaluation->reason, left_out});
    }
    reply.lease = record->lease;
  }
  observer_.Observe(std::move(record));  // last: the observer may change it
  return reply;
}

PrioritizeReply ExtenderService::Prioritize(const extender::ExtenderArgs& args) {
  std::shared_ptr<CycleRecord> record = RunCurrentCycle(Verb::kPrioritize, args);
  PrioritizeReply reply;
  reply.summary = SummaryOf(*record);
  if (!record->error.empty()) {
    reply.error = record->error;
  } else {
    reply.scores.reserve(record->candidate_evaluations.size());
    for (size_t i = 0; i < record->candidate_evaluations.size(); ++i) {
      reply.scores.emplace_back(args.node_names[i], record->priorities[i]);
    }
  }
  observer_.Observe(std::move(record));  // last: the observer may change it
  return reply;
}

}  // namespace gputopo::service
