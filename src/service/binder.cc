#include "src/service/binder.h"

#include "gputopo/well_known.h"

namespace gputopo::service {
namespace {

// Reservation attempts when the node keeps changing under a bind.
constexpr int kReserveAttempts = 5;

}  // namespace

Result<PodInfo> Binder::FindPod(const extender::BindingArgs& args) const {
  const std::string key = args.pod_namespace + "/" + args.pod_name;
  if (!args.pod_uid.empty()) {
    if (std::optional<PodInfo> pod = context_.state.FindPod(args.pod_uid);
        pod && pod->Key() == key) {
      return *pod;
    }
    if (std::optional<PodInfo> pod = context_.recent_pods.Find(args.pod_uid);
        pod && pod->Key() == key) {
      return *pod;
    }
  }
  Result<PodInfo> pod = kube_.GetPod(args.pod_namespace, args.pod_name);
  if (!pod.ok()) return pod.status();
  if (!args.pod_uid.empty() && pod->uid != args.pod_uid) {
    return Conflict("pod " + key + " has uid " + pod->uid + ", not " + args.pod_uid +
                    " (deleted and re-created)");
  }
  return pod;
}

Status Binder::BindOnce(const extender::BindingArgs& args, BindRecord& record) const {
  Result<PodInfo> found = FindPod(args);
  if (!found.ok()) return found.status();
  const PodInfo& pod = *found;
  if (!pod.node_name.empty()) {
    return Conflict("pod " + pod.Key() + " is already bound to node " + pod.node_name);
  }
  record.pod_uid = pod.uid;
  Result<policies::PodRequirements> requirements = policies::RequirementsOf(pod);
  if (!requirements.ok()) return requirements.status();
  Result<std::shared_ptr<const policies::Preset>> preset = context_.PresetFor(*requirements);
  if (!preset.ok()) return preset.status();

  policies::Reservation reservation;
  reservation.pod = pod;
  reservation.node = args.node;
  Status reserved = Conflict("node " + args.node + " kept changing");
  for (int attempt = 0; attempt < kReserveAttempts && reserved.code() == StatusCode::kConflict;
       ++attempt) {
    std::shared_ptr<const policies::ClusterSnapshot> snapshot = context_.state.Snapshot();
    std::shared_ptr<const policies::NodeState> node = snapshot->FindShared(args.node);
    if (node == nullptr) return NotFound("node " + args.node + " is unknown to gputopo");
    const policies::NodeEvaluation e = policies::EvaluateNode(*requirements, *node, **preset);
    if (!e.fits()) {
      return FailedPrecondition("pod no longer fits on node " + args.node + ": " + e.detail);
    }
    reservation.gpus = topology::ToIndices(e.gpus);
    reservation.node_version = node->version();
    reserved = context_.state.Reserve(reservation);
    if (reserved.ok()) {
      for (int gpu : reservation.gpus) record.gpus.push_back(node->GpuLabel(gpu));
      record.placement = DescribePlacement(*node, e.gpus);
      record.weighted_score = e.weighted_score;
      record.components = policies::ExplainPlacement(*requirements, *node, **preset, e.gpus);
    }
  }
  if (!reserved.ok()) return reserved;

  std::string assigned;
  for (const std::string& gpu : record.gpus) assigned += (assigned.empty() ? "" : ",") + gpu;
  const PodRef ref{pod.namespace_name, pod.name, pod.uid};
  if (Status s = kube_.AnnotatePod(ref, pod.resource_version, kAnnotationAssignedGpus, assigned);
      !s.ok()) {
    context_.state.CancelReservation(pod.uid);
    return s.WithContext("writing " + std::string(kAnnotationAssignedGpus));
  }
  if (Status s = kube_.BindPod(ref, args.node); !s.ok()) {
    context_.state.CancelReservation(pod.uid);
    return s.WithContext("creating the Binding");
  }
  context_.state.ConfirmBinding(pod.uid, args.node);
  return Status::Ok();
}

Status Binder::Bind(const extender::BindingArgs& args) const {
  const auto start = context_.clock.MonotonicNow();
  auto record = std::make_shared<BindRecord>();
  record->time = context_.clock.Now();
  record->pod_key = args.pod_namespace + "/" + args.pod_name;
  record->pod_uid = args.pod_uid;
  record->node = args.node;
  Status status = BindOnce(args, *record);
  if (!status.ok()) record->error = status.message();
  record->duration =
      std::chrono::duration_cast<std::chrono::microseconds>(context_.clock.MonotonicNow() - start);
  context_.decisions.Add(std::shared_ptr<const BindRecord>(record));
  return status;
}

}  // namespace gputopo::service
