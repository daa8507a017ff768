// RecentPods: the Pod objects kube-scheduler sent in recent filter/prioritize calls, by UID.
//
// Bind arguments carry only the pod's name and UID; when the cache does not know the pod (it
// was created after the last sync), bind uses the copy the scheduler just sent. Bounded: the
// oldest entries are dropped first.
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

#include "gputopo/pod_info.h"

namespace gputopo::service {

class RecentPods {
 public:
  explicit RecentPods(size_t capacity) : capacity_(capacity) {}

  void Remember(const PodInfo& pod);
  std::optional<PodInfo> Find(std::string_view uid) const;

 private:
  const size_t capacity_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, PodInfo> pods_;  // GUARDED_BY(mutex_)
  std::deque<std::string> order_;                  // GUARDED_BY(mutex_), oldest first
};

}  // namespace gputopo::service

#endif  // GPUTOPO_SRC_SERVICE_RECENT_PODS_H_
