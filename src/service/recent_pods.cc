#include "src/service/recent_pods.h"

namespace gputopo::service {

void RecentPods::Remember(const PodInfo& pod) {
  if (pod.uid.empty() || capacity_ == 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto [it, inserted] = pods_.insert_or_assign(pod.uid, pod);
  if (!inserted) return;
  order_.push_back(pod.uid);
  while (order_.size() > capacity_) {
    pods_.erase(order_.front());
    order_.pop_front();
  }
}

std::optional<PodInfo> RecentPods::Find(std::string_view uid) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = pods_.find(std::string(uid));
  if (it == pods_.end()) return std::nullopt;
  return it->second;
}

}  // namespace gputopo::service
