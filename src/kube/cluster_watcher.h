// ClusterWatcher: keeps ClusterState in step with the API server (a reflector per kind).
//
// For Nodes and Pods, each on its own thread: list (in pages) and replace that kind in the
// cache, then watch from the list's resourceVersion with bookmarks. Every event is applied as it
// arrives; bookmarks and objects move the resourceVersion on. When the server ends a watch
// (timeoutSeconds) it is resumed from the last resourceVersion; when the stream breaks it is
// resumed after a backoff (exponential, jittered, capped); when the resourceVersion is too old
// (410 Gone, as an HTTP status or an ERROR event) the kind is listed afresh. An event only counts
// once its whole line has arrived, and applying one is idempotent, so a stream dropped in the
// middle of an event neither loses nor double-counts a pod.
//
// What is kept: nodes that advertise nvidia.com/gpu (or carry gputopo's label or annotation),
// and pods that request it (ClusterState drops the rest), so memory follows the GPU fleet, not
// the cluster.
//
// With a DisruptionBudgetIndex, PodDisruptionBudgets (policy/v1) are watched the same way on a
// third thread, and the pods watch also feeds the index the labels of GPU pods. Budgets are
// optional: Ready() does not wait for them, and while they cannot be listed (RBAC without
// poddisruptionbudgets, say) the index stays unsynced and preemption uses the scheduler's count.
//
// Ready() is true once nodes and pods have been listed, and turns false while one of those two
// watches has been broken for longer than the staleness bound.
//
// Thread safety: Start/Stop from one thread; the accessors are thread-safe.
#ifndef GPUTOPO_SRC_KUBE_CLUSTER_WATCHER_H_
#define GPUTOPO_SRC_KUBE_CLUSTER_WATCHER_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "cluster/cluster_state.h"
#include "cluster/disruption_budget_index.h"
#include "gputopo/clock.h"
#include "src/kube/kube_client.h"

namespace gputopo::kube {

struct WatcherOptions {
  int page_size = 500;
  int watch_timeout_seconds = 300;  // the server ends each watch after this; we resume it
  std::chrono::milliseconds backoff_initial{500};
  std::chrono::milliseconds backoff_max{30000};
  std::chrono::seconds staleness{60};         // Ready() turns false past this
  std::chrono::seconds reservation_ttl{120};  // see ClusterState::ExpireReservations
};

struct WatcherStats {
  uint64_t events = 0;      // events applied, every kind
  uint64_t relists = 0;     // full lists after the first (410 Gone)
  uint64_t reconnects = 0;  // watches resumed after a broken stream
  uint64_t expired_reservations = 0;
  double cache_age_seconds = 0;  // since the last event, bookmark or list of either kind
  bool synced = false;
};

class ClusterWatcher {
 public:
  // Called on the pods watch's thread for a watch event that first shows a pod's
  // gputopo.io/observed-gpus differ from its gputopo.io/assigned-gpus (ClusterState::UpsertPod).
  // Must be quick: an Event is queued, not posted.
  using GpuMismatchListener = std::function<void(const PodInfo&)>;

  // All must outlive the watcher. `budgets` may be null: PodDisruptionBudgets are not watched.
  ClusterWatcher(KubeClient& client, cluster::ClusterState& state, const Clock& clock,
                 WatcherOptions options, GpuMismatchListener on_gpu_mismatch = nullptr,
                 cluster::DisruptionBudgetIndex* budgets = nullptr);
  ~ClusterWatcher();
  ClusterWatcher(const ClusterWatcher&) = delete;
  ClusterWatcher& operator=(const ClusterWatcher&) = delete;

  void Start();
  void Stop();

  bool Ready() const;
  WatcherStats Stats() const;

 private:
  enum class KindId { kNodes, kPods, kBudgets };
  struct Kind {
    Kind(KindId i, const char* n, const char* p) : id(i), name(n), path(p) {}
    KindId id;
    const char* name;
    const char* path;
    std::atomic<bool> synced{false};
    std::atomic<int64_t> broken_since_ns{0};  // monotonic ns; 0 while healthy
    std::thread thread;
  };

  void Run(Kind& kind);
  // Lists the kind and replaces it in the cache; the list's resourceVersion, or an error.
  Result<std::string> List(Kind& kind);
  struct Decoders;
  // Applies one event line; returns false when the kind must be listed again (410).
  bool Apply(Kind& kind, Decoders& decoders, std::string_view line, std::string& resource_version);
  // Waits `delay` or until Stop(); false when stopping.
  bool Sleep(std::chrono::milliseconds delay);
  int64_t NowNs() const;
  void Touch();

  KubeClient& client_;
  cluster::ClusterState& state_;
  cluster::DisruptionBudgetIndex* const budgets_;
  const Clock& clock_;
  const WatcherOptions options_;
  const GpuMismatchListener on_gpu_mismatch_;
  Kind nodes_{KindId::kNodes, "nodes", "/api/v1/nodes"};
  Kind pods_{KindId::kPods, "pods", "/api/v1/pods"};
  Kind budgets_kind_{KindId::kBudgets, "poddisruptionbudgets",
                     "/apis/policy/v1/poddisruptionbudgets"};
  std::atomic<bool> stop_{false};
  std::mutex sleep_mutex_;
  std::condition_variable sleep_cv_;
  std::atomic<uint64_t> events_{0};
  std::atomic<uint64_t> relists_{0};
  std::atomic<uint64_t> reconnects_{0};
  std::atomic<uint64_t> expired_{0};
  std::atomic<int64_t> last_activity_ns_{0};
  std::atomic<int64_t> last_expiry_ns_{0};
};

// True when gputopo has a reason to keep this node: it advertises nvidia.com/gpu, or names a
// topology profile or carries a topology document.
bool IsGpuNode(const NodeInfo& node);

}  // namespace gputopo::kube

#endif  // GPUTOPO_SRC_KUBE_CLUSTER_WATCHER_H_
