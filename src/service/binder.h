// Binder: the bind verb. Chooses the GPUs, reserves them, writes gputopo.io/assigned-gpus on
// the pod and creates its Binding, through KubeApi.
//
// Order, and why:
//  1. evaluate the pod on the chosen node against the current snapshot (the same search that
//     scored it), and reserve those GPUs in the cache, conditional on the node not having
//     changed meanwhile (retried a few times when it has) - from here on every concurrent
//     filter, prioritize and bind sees them;
//  2. create the Binding, carrying gputopo.io/assigned-gpus in its metadata.annotations and
//     guarded by the pod's uid and resourceVersion: the API server sets spec.nodeName and the
//     annotation in one write (one round trip, and no pod annotated but unbound);
//  3. queue the GPUsAssigned Event (EventQueue; never waited for).
// A failure after 1 cancels the reservation, unless the outcome is unknown (a timeout): then
// the pod is read back, and the GPUs stay reserved until the watch shows where it went. Binds of
// different pods run concurrently, also on one node; nothing holds a lock across an API call.
//
// Thread safety: thread-safe.
#ifndef GPUTOPO_SRC_SERVICE_BINDER_H_
#define GPUTOPO_SRC_SERVICE_BINDER_H_

#include "gputopo/kube_api.h"
#include "gputopo/status.h"
#include "src/codec/extender_codec.h"
#include "src/service/event_queue.h"
#include "src/service/scheduling_context.h"

namespace gputopo::service {

class Binder {
 public:
  // All must outlive the binder; `events` may be null (no Events are recorded).
  Binder(const SchedulingContext& context, KubeApi& kube, EventQueue* events)
      : context_(context), kube_(kube), events_(events) {}

  Status Bind(const extender::BindingArgs& args) const;

 private:
  // The pod to bind: from the cache, else the copy a recent filter carried, else the API.
  Result<PodInfo> FindPod(const extender::BindingArgs& args) const;
  Status BindOnce(const extender::BindingArgs& args, BindRecord& record) const;
  // BindOnce for a pod that requests no GPU (all-pod mode): a plain Binding.
  Status BindGpuLess(const PodInfo& pod, const extender::BindingArgs& args,
                     BindRecord& record) const;

  const SchedulingContext& context_;
  KubeApi& kube_;
  EventQueue* const events_;
};

}  // namespace gputopo::service

#endif  // GPUTOPO_SRC_SERVICE_BINDER_H_
