#include "src/service/recent_pods.h"

namespace gputopo::service {

size_t RecentPods::ApproxBytes(const PodInfo& pod) {
  size_t n = sizeof(PodInfo) + pod.namespace_name.capacity() + pod.name.capacity() +
             2 * pod.uid.capacity() + pod.resource_version.capacity() + pod.node_name.capacity() +
             pod.pod_template_hash.capacity();
  for (const OwnerReference& o : pod.owners) {
    n += sizeof(o) + o.kind.capacity() + o.name.capacity() + o.uid.capacity();
  }
  for (const auto& [key, value] : pod.annotations) {
    n += sizeof(std::pair<std::string, std::string>) + key.capacity() + value.capacity();
  }
  return n + 64;  // the map's node and the order's entry
}

void RecentPods::EraseOldestLocked() {
  auto it = pods_.find(order_.front());
  if (it != pods_.end()) {
    bytes_ -= ApproxBytes(it->second);
    pods_.erase(it);
  }
  order_.pop_front();
}

void RecentPods::Remember(const PodInfo& pod) {
  if (pod.uid.empty() || capacity_ == 0) return;
  const size_t bytes = ApproxBytes(pod);
  if (bytes > max_bytes_) return;  // larger than the whole cache: not worth evicting for
  MutexLock lock(mutex_);
  auto it = pods_.find(pod.uid);
  if (it != pods_.end()) {
    bytes_ -= ApproxBytes(it->second);
    it->second = pod;
  } else {
    it = pods_.emplace(pod.uid, pod).first;
    order_.push_back(pod.uid);
  }
  bytes_ += ApproxBytes(it->second);  // of the stored copy, which Erase will count again
  while (!order_.empty() && (order_.size() > capacity_ || bytes_ > max_bytes_)) {
    EraseOldestLocked();
  }
}

std::optional<PodInfo> RecentPods::Find(std::string_view uid) const {
  MutexLock lock(mutex_);
  auto it = pods_.find(std::string(uid));
  if (it == pods_.end()) return std::nullopt;
  return it->second;
}

size_t RecentPods::bytes() const {
  MutexLock lock(mutex_);
  return bytes_;
}

}  // namespace gputopo::service
