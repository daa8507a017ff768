#include "src/service/binder.h"

#include <optional>

#include "evaluation/nominated_claims.h"
#include "gputopo/well_known.h"

namespace gputopo::service {
namespace {

// Reservation attempts when the node keeps changing under a bind.
constexpr int kReserveAttempts = 5;

// Errors after which the call may or may not have taken effect.
bool Ambiguous(const Status& status) {
  return status.code() == StatusCode::kDeadlineExceeded ||
         status.code() == StatusCode::kUnavailable;
}

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
  if (requirements->gpus <= 0) return BindGpuLess(pod, args, record);
  Result<std::shared_ptr<const policies::Preset>> preset = context_.PresetFor(*requirements);
  if (!preset.ok()) return preset.status();

  // A retry after an attempt whose outcome was unknown: that attempt's reservation goes (the API
  // server refuses a second Binding, so at most one attempt can land).
  context_.state.CancelReservation(pod.uid);

  cluster::Reservation reservation;
  reservation.pod = pod;
  reservation.node = args.node;
  Status reserved = Conflict("node " + args.node + " kept changing");
  for (int attempt = 0; attempt < kReserveAttempts && reserved.code() == StatusCode::kConflict;
       ++attempt) {
    std::shared_ptr<const policies::ClusterSnapshot> snapshot = context_.state.Snapshot();
    std::shared_ptr<const policies::NodeState> node = snapshot->FindShared(args.node);
    if (node == nullptr) return NotFound("node " + args.node + " is unknown to gputopo");
    // A nominated pod binds into its own claim (and looks through those of lower priority).
    const std::optional<policies::NodeState> view =
        evaluation::ViewWithoutClaims(*node, pod.uid, pod.priority);
    const policies::NodeState& seen = view ? *view : *node;
    const policies::NodeEvaluation e = policies::EvaluateNode(*requirements, seen, **preset);
    if (!e.fits()) {
      return FailedPrecondition("pod no longer fits on node " + args.node + ": " + e.detail);
    }
    reservation.gpus = topology::ToIndices(e.gpus);
    reservation.node_version = node->version();
    reservation.made = context_.clock.MonotonicNow();
    reserved = context_.state.Reserve(reservation);
    if (reserved.ok()) {
      for (int gpu : reservation.gpus) record.gpus.push_back(node->GpuLabel(gpu));
      record.placement = DescribePlacement(seen, e.gpus);
      record.weighted_score = e.weighted_score;
      record.components = policies::ExplainPlacement(*requirements, seen, **preset, e.gpus);
    }
  }
  if (!reserved.ok()) return reserved;

  std::string assigned;
  for (const std::string& gpu : record.gpus) assigned += (assigned.empty() ? "" : ",") + gpu;
  const PodRef ref{pod.namespace_name, pod.name, pod.uid};
  const AnnotationList annotations = {{std::string(kAnnotationAssignedGpus), assigned}};

  // One write: the Binding carries the annotation, guarded by the pod's uid and resourceVersion.
  Status bound = kube_.BindPod(ref, pod.resource_version, args.node, annotations);
  if (!bound.ok() && (Ambiguous(bound) || bound.code() == StatusCode::kConflict)) {
    // A timed-out Binding may have landed, a 409 may be our own earlier attempt or only a stale
    // resourceVersion (another controller touched the pod): ask the API server where the pod is
    // before freeing anything (releasing GPUs of a pod that did get bound is how other GPU
    // schedulers double-allocate).
    Result<PodInfo> now = kube_.GetPod(pod.namespace_name, pod.name);
    const bool same_pod = now.ok() && now->uid == pod.uid;
    if (same_pod && now->node_name == args.node &&
        FindAnnotation(now->annotations, kAnnotationAssignedGpus) == assigned) {
      bound = Status::Ok();
    } else if (same_pod && !now->node_name.empty()) {
      bound = Conflict("pod " + pod.Key() + " was bound to node " + now->node_name);
    } else if (same_pod && bound.code() == StatusCode::kConflict && !now->deletion_requested) {
      // Unbound, so the 409 was our stale copy: once more with the current resourceVersion.
      bound = kube_.BindPod(ref, now->resource_version, args.node, annotations);
    } else if (Ambiguous(bound) && !(now.ok() && now->uid != pod.uid)) {
      // Not bound yet, or we cannot tell - but a timed-out Binding can still land after we
      // looked. Keep the GPUs reserved: the watch turns the reservation into a placement when
      // the pod shows up bound, a retry of this pod replaces it, and
      // ClusterState::ExpireReservations frees it if neither happens.
      return bound.WithContext(
          "creating the Binding (outcome unknown; the GPUs stay reserved "
          "until the pod is seen)");
    }
  }
  if (!bound.ok()) {
    // Not bound, so the GPUs are free again (the annotation travels with the Binding: a pod is
    // never left annotated but unbound).
    context_.state.CancelReservation(pod.uid);
    return bound.WithContext("creating the Binding");
  }
  context_.state.ConfirmBinding(pod.uid, args.node, annotations);

  // Tell people, on the pod: best effort, off the request path. The GPUs' identities are in
  // the annotation; the message says where they are and why.
  if (events_ != nullptr) {
    std::string message = "gputopo assigned " + record.placement + " on node " + args.node;
    for (const policies::ComponentResult& c : record.components) {
      message +=
          "; " + c.name + " " + std::to_string(static_cast<int>(c.score + 0.5)) + ": " + c.detail;
    }
    record.event_dropped = !events_->Submit(ref, "GPUsAssigned", std::move(message));
  }
  return Status::Ok();
}

Status Binder::BindGpuLess(const PodInfo& pod, const extender::BindingArgs& args,
                           BindRecord& record) const {
  // In all-pod mode (manifests/variants/all-pods) every pod's bind comes here. A pod without
  // GPUs holds nothing of gputopo's: bind it as kube-scheduler would, on any node, with no
  // annotation. Its CPU and memory reach the cluster state through the watch.
  record.placement = "no GPU";
  const PodRef ref{pod.namespace_name, pod.name, pod.uid};
  Status bound = kube_.BindPod(ref, pod.resource_version, args.node, {});
  if (!bound.ok() && (Ambiguous(bound) || bound.code() == StatusCode::kConflict)) {
    // A timed-out Binding may have landed, and a 409 may be that one: ask where the pod is.
    Result<PodInfo> now = kube_.GetPod(pod.namespace_name, pod.name);
    if (now.ok() && now->uid == pod.uid && now->node_name == args.node) return Status::Ok();
    if (now.ok() && now->uid == pod.uid && now->node_name.empty() &&
        bound.code() == StatusCode::kConflict && !now->deletion_requested) {
      bound = kube_.BindPod(ref, now->resource_version, args.node, {});
    }
  }
  return bound.ok() ? bound : bound.WithContext("creating the Binding");
}

Status Binder::Bind(const extender::BindingArgs& args) const {
  const auto start = context_.clock.MonotonicNow();
  auto record = std::make_shared<BindRecord>();
  record->sequence = context_.decisions.NextSequence();
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
