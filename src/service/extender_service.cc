#include "src/service/extender_service.h"

namespace gputopo::service {
namespace {

constexpr std::string_view kUnknownNodeReason =
    "gputopo: node unknown to gputopo (not a GPU node, or not seen yet)";

}  // namespace

std::shared_ptr<const CycleRecord> ExtenderService::RunCycle(
    Verb verb, const extender::ExtenderArgs& args) const {
  const auto start = context_.clock.MonotonicNow();
  auto record = std::make_shared<CycleRecord>();
  record->verb = verb;
  record->time = context_.clock.Now();
  record->pod_key = args.pod.Key();
  record->pod_uid = args.pod.uid;
  context_.recent_pods.Remember(args.pod);

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
      record->snapshot = context_.state.Snapshot();
      const policies::ClusterSnapshot& snapshot = *record->snapshot;
      policies::PodEvaluator evaluator(*requirements, **preset);
      record->nodes.reserve(args.node_names.size());
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
        record->evaluations.push_back(std::move(unknown));
        unknown_evaluation = static_cast<uint32_t>(record->evaluations.size() - 1);
        for (CycleRecord::NodeRef& ref : record->nodes) {
          if ((ref.node & CycleRecord::kUnknownNode) != 0) ref.evaluation = *unknown_evaluation;
        }
      }
    }
  }
  record->duration =
      std::chrono::duration_cast<std::chrono::microseconds>(context_.clock.MonotonicNow() - start);
  context_.decisions.Add(std::shared_ptr<const CycleRecord>(record));
  return record;
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
    const policies::NodeEvaluation& e = record.evaluations[ref.evaluation];
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
    const policies::NodeEvaluation& e = record.evaluations[record.nodes[i].evaluation];
    reply.scores.emplace_back(args.node_names[i], e.fits() ? e.score : 0);
  }
  return reply;
}

}  // namespace gputopo::service
