// WatchedPodSource: the pods bound to this node from a watched cache, so that an admission
// (kubelet waiting on GetPreferredAllocation) reads memory instead of listing the API server.
//
// Its thread lists the pods with field selector spec.nodeName=<node> (pages of 500), then
// watches from the list's resourceVersion with the same selector (bookmarks on): ADDED and
// MODIFIED replace a pod (one that can hold nothing any more, DecodeBoundPod's nullopt, is
// dropped), DELETED drops it, BOOKMARK only moves the resourceVersion. As client-go's reflector:
// a watch the server ends is resumed from the last resourceVersion at once, one that breaks
// after `retry_delay`; a 410 Expired lists again at once, a failed list after `retry_delay`.
//
// Each pod gets BoundPod::arrival, the order in which the cache first had it (a list's pods in
// list order), which is kubelet's admission order among pods created in the same second; a pod
// keeps it across relists.
//
// Freshness: the cache can lag the API server by the watch's delay, so a pod bound a moment ago
// may be missing. ListNow() answers with a live list (KubePodSource) for the caller that must
// not miss it: the device plugin lists again when the cache's pods give no steering.
//
// Thread safety: thread-safe. CurrentPods, ListNow and the accessors may be called from any
// thread, concurrently with the watch thread.
#ifndef GPUTOPO_SRC_AGENT_WATCHED_POD_SOURCE_H_
#define GPUTOPO_SRC_AGENT_WATCHED_POD_SOURCE_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gputopo/mutex.h"
#include "gputopo/status.h"
#include "src/agent/device_plugin.h"
#include "src/agent/kube_pod_source.h"
#include "src/kube/kube_client.h"

namespace gputopo::agent {

struct WatchedPodSourceOptions {
  std::chrono::milliseconds retry_delay{1000};  // after a failed list or watch
  int watch_timeout_seconds = 300;              // the server ends each watch after this
};

class WatchedPodSource final : public PodSource {
 public:
  // `kube` must outlive the source. Starts nothing: see Start().
  WatchedPodSource(kube::KubeClient& kube, std::string node_name, std::string resource_name,
                   WatchedPodSourceOptions options = {});
  ~WatchedPodSource() override;  // Stop()s
  WatchedPodSource(const WatchedPodSource&) = delete;
  WatchedPodSource& operator=(const WatchedPodSource&) = delete;

  void Start();  // the list-and-watch thread; idempotent
  void Stop();   // ends the watch and joins the thread; idempotent

  // The cached pods, in uid order; Unavailable until the first list has arrived.
  Result<std::vector<BoundPod>> CurrentPods() override;
  // A live list from the API server (the cache is left as it is); pods the cache has keep their
  // arrival, the others come after them in list order.
  Result<std::vector<BoundPod>> ListNow() override;
  bool cached() const override { return true; }

  bool synced() const;
  // Returns once the cache has applied `count` changes in all (lists and watch events that
  // changed a pod), or Stop(); true in the first case. For tests and benchmarks: they wait for
  // the event, never for a time.
  bool WaitForChanges(uint64_t count);
  uint64_t changes() const override;
  bool WaitForChange(uint64_t seen, std::chrono::milliseconds at_most) override;
  uint64_t lists() const;  // lists made by the watch thread (the first one included)

 private:
  void Run();
  // Lists every page; on success replaces the cache and returns its resourceVersion.
  Result<std::string> Relist();
  // Watches from `resource_version` until the server ends the watch (OK, the new version in
  // `resource_version`), it fails or needs a relist (error), or Stop().
  Status WatchFrom(std::string& resource_version);

  kube::KubeClient& kube_;
  const std::string node_name_;
  const std::string resource_name_;
  const std::string selector_;
  const WatchedPodSourceOptions options_;
  KubePodSource live_;

  mutable Mutex mu_;
  std::condition_variable changed_;
  std::map<std::string, BoundPod> pods_ GPUTOPO_GUARDED_BY(mu_);  // by uid
  uint64_t arrivals_ GPUTOPO_GUARDED_BY(mu_) = 0;                 // BoundPod::arrival handed out
  bool synced_ GPUTOPO_GUARDED_BY(mu_) = false;
  uint64_t changes_ GPUTOPO_GUARDED_BY(mu_) = 0;
  uint64_t lists_ GPUTOPO_GUARDED_BY(mu_) = 0;
  bool stopping_ GPUTOPO_GUARDED_BY(mu_) = false;
  std::atomic<bool> stop_{false};                                   // the thread ends
  std::atomic<bool>* watch_end_ GPUTOPO_GUARDED_BY(mu_) = nullptr;  // the open watch's stop flag
  std::thread thread_;
};

}  // namespace gputopo::agent

#endif  // GPUTOPO_SRC_AGENT_WATCHED_POD_SOURCE_H_
