// Observer: the node agent's observe mode, PodResources side. It changes nothing on the node; it
// tells the cluster which GPUs each pod really holds.
//
// Each pass: kubelet's PodResources List for the resource; then, when that answer changed since
// the last complete pass (or a write is owed, or `resync` has passed), the pods bound to this
// node (one list from the API server, field selector spec.nodeName), ObserveGpus(), and a write
// of gputopo.io/observed-gpus on each pod whose value changed (a merge patch guarded by the
// pod's uid, so a re-created pod of the same name is never annotated with its predecessor's
// GPUs). So the API server sees one list per node per `resync` when nothing moves, not one per
// second. A failed pass or write is simply done again at the next pass: nothing is lost.
// Passes run at most once per `period`, so PodResources is asked at most once per period. Each
// answer also goes to the PodResourcesView given (enforce mode's device plugin reads it there
// instead of asking kubelet at each admission).
//
// Ready (for /readyz) once a pass has succeeded, and while the latest one did: both the API
// server and PodResources answered.
//
// Thread safety: RunOnce() from one thread at a time (Start() runs it on its own thread); the
// accessors from any thread.
#ifndef GPUTOPO_SRC_AGENT_OBSERVER_H_
#define GPUTOPO_SRC_AGENT_OBSERVER_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "gputopo/clock.h"
#include "gputopo/machine_topology.h"
#include "gputopo/mutex.h"
#include "gputopo/status.h"
#include "src/agent/pod_resources_client.h"
#include "src/agent/pod_resources_view.h"
#include "src/kube/kube_client.h"
#include "src/observability/metrics.h"

namespace gputopo::agent {

struct ObserverOptions {
  std::string node_name;
  std::string resource_name = "nvidia.com/gpu";
  // The shortest time between two passes (PodResources polls at most once per period).
  std::chrono::milliseconds period{1000};
  // How long an unchanged PodResources answer goes without the pods being listed again (to
  // catch annotations changed by someone else).
  std::chrono::milliseconds resync{60000};
  int page_size = 500;  // pods per list page
};

// What one pass did.
struct ObserverPass {
  Status status;             // OK when both lists were read
  int pods_listed = 0;       // PodResources pods holding the resource
  bool listed_pods = false;  // the API server was asked (the answer changed, or a resync)
  int writes = 0;            // annotations written
  int write_failures = 0;
  int unmapped = 0;  // pods left without a value (device IDs that do not map)
};

class Observer {
 public:
  // `kube`, `pod_resources`, `clock`, `metrics` and `share` (may be null) must outlive the
  // observer. `topology` is this node's discovered topology (index device IDs map through it; it
  // may be empty).
  Observer(ObserverOptions options, kube::KubeClient& kube, PodResourcesClient& pod_resources,
           MachineTopology topology, const Clock& clock, observability::MetricsRegistry& metrics,
           PodResourcesView* share = nullptr);
  ~Observer();  // Stop()s
  Observer(const Observer&) = delete;
  Observer& operator=(const Observer&) = delete;

  ObserverPass RunOnce();
  // Runs passes on a thread of its own until Stop(); `thread_setup` (may be empty) runs first on
  // that thread (the agent lowers its priority there: admissions must not wait behind a pass).
  void Start(std::function<void()> thread_setup = {});
  void Stop();

  bool ready() const { return ready_.load(); }
  // Why the latest pass failed; empty when it did not.
  std::string last_error() const;
  uint64_t passes() const { return passes_.load(); }

 private:
  Result<std::vector<PodInfo>> PodsOnNode();
  void Loop();

  const ObserverOptions options_;
  kube::KubeClient& kube_;
  PodResourcesClient& pod_resources_;
  PodResourcesView* const share_;
  const MachineTopology topology_;
  const Clock& clock_;
  observability::CounterFamily& polls_;
  observability::CounterFamily& writes_;
  observability::Gauge& unmapped_pods_;
  observability::Gauge& ready_gauge_;

  std::atomic<bool> ready_{false};
  std::atomic<uint64_t> passes_{0};
  // Only touched by RunOnce:
  std::string last_problems_;  // the problems logged last
  // PodResources' answer at the last pass that listed the pods and owed no write afterwards.
  std::optional<std::vector<PodDeviceIds>> settled_;
  std::chrono::steady_clock::time_point settled_at_;

  mutable Mutex mu_;
  std::condition_variable cv_;
  bool stop_ GPUTOPO_GUARDED_BY(mu_) = false;
  std::string last_error_ GPUTOPO_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace gputopo::agent

#endif  // GPUTOPO_SRC_AGENT_OBSERVER_H_
