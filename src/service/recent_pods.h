// RecentPods: the Pod objects kube-scheduler sent in recent filter/prioritize calls, by UID.
//
// Bind arguments carry only the pod's name and UID; when the cache does not know the pod (it
// was created after the last sync), bind uses the copy the scheduler just sent. Bounded in count
// and in bytes (a pod's names and gputopo annotations come from the network and can be large):
// the oldest entries are dropped first.
//
// Thread safety: thread-safe.
#ifndef GPUTOPO_SRC_SERVICE_RECENT_PODS_H_
#define GPUTOPO_SRC_SERVICE_RECENT_PODS_H_

#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "gputopo/mutex.h"
#include "gputopo/pod_info.h"

namespace gputopo::service {

class RecentPods {
 public:
  explicit RecentPods(size_t capacity, size_t max_bytes = 8u << 20)
      : capacity_(capacity), max_bytes_(max_bytes) {}

  void Remember(const PodInfo& pod);
  std::optional<PodInfo> Find(std::string_view uid) const;
  size_t bytes() const;

  // The memory an entry holds, in bytes.
  static size_t ApproxBytes(const PodInfo& pod);

 private:
  void EraseOldestLocked() GPUTOPO_REQUIRES(mutex_);

  const size_t capacity_;
  const size_t max_bytes_;
  mutable Mutex mutex_;
  size_t bytes_ GPUTOPO_GUARDED_BY(mutex_) = 0;
  std::unordered_map<std::string, PodInfo> pods_ GPUTOPO_GUARDED_BY(mutex_);
  std::deque<std::string> order_ GPUTOPO_GUARDED_BY(mutex_);  // oldest first
};

}  // namespace gputopo::service

#endif  // GPUTOPO_SRC_SERVICE_RECENT_PODS_H_
