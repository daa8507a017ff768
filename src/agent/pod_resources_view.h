// PodResourcesView: kubelet's latest PodResources List answer for the plugin's resource, shared
// by the observer, which asks for it once a period anyway, and the enforcing device plugin, which
// must know at each admission which containers already hold devices. So an admission need not
// make its own PodResources call (a third gRPC round trip while kubelet waits).
//
// When an answer can stand in for a call made now: every allocation after the plugin registered
// goes through the plugin's own Allocate, which records the container it steered there
// (DevicePlugin's own record). So an answer asked for after the registration, together with that
// record, misses nothing, however old it is, unless an Allocate could not be attributed to a
// container (kubelet allocated devices the plugin did not steer). Both events, registering and an
// unattributed Allocate, call Invalidate(): answers asked for before it are then unusable, and the
// plugin calls kubelet itself until a newer answer arrives. An answer may still list a container
// that is gone since (a pod deleted and created again under the same name); the plugin then finds
// no pod to steer and asks kubelet itself before falling back.
//
// Thread safety: thread-safe.
#ifndef GPUTOPO_SRC_AGENT_POD_RESOURCES_VIEW_H_
#define GPUTOPO_SRC_AGENT_POD_RESOURCES_VIEW_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "gputopo/mutex.h"
#include "src/agent/pod_resources_client.h"

namespace gputopo::agent {

class PodResourcesView {
 public:
  using Answer = std::shared_ptr<const std::vector<PodDeviceIds>>;

  // Call before asking kubelet; pass the ticket to Finish with the answer.
  uint64_t Begin();
  // Keeps `answer` unless an answer asked for later is already kept; returns it either way.
  Answer Finish(uint64_t ticket, std::vector<PodDeviceIds> answer);
  // Answers asked for before now are no longer usable.
  void Invalidate();
  // The latest answer asked for after the last Invalidate(); null when there is none.
  Answer Current() const;

 private:
  mutable Mutex mutex_;
  uint64_t next_ticket_ GPUTOPO_GUARDED_BY(mutex_) = 0;
  uint64_t invalid_up_to_ GPUTOPO_GUARDED_BY(mutex_) = 0;  // tickets <= this are unusable
  uint64_t kept_ticket_ GPUTOPO_GUARDED_BY(mutex_) = 0;
  Answer kept_ GPUTOPO_GUARDED_BY(mutex_);
};

}  // namespace gputopo::agent

#endif  // GPUTOPO_SRC_AGENT_POD_RESOURCES_VIEW_H_
