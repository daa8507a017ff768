#include "src/agent/watched_pod_source.h"

#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>
#include <utility>

#include "src/kube/watch_protocol.h"

namespace gputopo::agent {
namespace {

// metadata.uid of a pod object; empty when unreadable.
std::string UidOf(std::string_view object) {
  const nlohmann::json pod = nlohmann::json::parse(object, nullptr, false);
  if (!pod.is_object() || !pod.contains("metadata") || !pod["metadata"].is_object()) return {};
  const nlohmann::json& metadata = pod["metadata"];
  if (!metadata.contains("uid") || !metadata["uid"].is_string()) return {};
  return metadata["uid"].get<std::string>();
}

}  // namespace

WatchedPodSource::WatchedPodSource(kube::KubeClient& kube, std::string node_name,
                                   std::string resource_name, WatchedPodSourceOptions options)
    : kube_(kube),
      node_name_(std::move(node_name)),
      resource_name_(std::move(resource_name)),
      selector_("spec.nodeName=" + node_name_),
      options_(options),
      live_(kube, node_name_, resource_name_) {}

WatchedPodSource::~WatchedPodSource() { Stop(); }

void WatchedPodSource::Start() {
  MutexLock lock(mu_);
  if (thread_.joinable()) return;
  stopping_ = false;
  stop_ = false;
  thread_ = std::thread([this] { Run(); });
}

void WatchedPodSource::Stop() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
    stop_ = true;
    if (watch_end_ != nullptr) *watch_end_ = true;
    changed_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

Result<std::vector<BoundPod>> WatchedPodSource::CurrentPods() {
  MutexLock lock(mu_);
  if (!synced_) return Unavailable("the pods of node " + node_name_ + " are not listed yet");
  std::vector<BoundPod> out;
  out.reserve(pods_.size());
  for (const auto& [uid, pod] : pods_) out.push_back(pod);
  return out;
}

Result<std::vector<BoundPod>> WatchedPodSource::ListNow() {
  Result<std::vector<BoundPod>> live = live_.CurrentPods();
  if (!live.ok()) return live;
  MutexLock lock(mu_);
  uint64_t next = arrivals_;
  for (BoundPod& pod : live.value()) {
    const auto known = pods_.find(pod.uid);
    pod.arrival = known != pods_.end() ? known->second.arrival : ++next;
  }
  return live;
}

bool WatchedPodSource::synced() const {
  MutexLock lock(mu_);
  return synced_;
}

bool WatchedPodSource::WaitForChanges(uint64_t count) {
  MutexLock lock(mu_);
  while (!stopping_ && changes_ < count) lock.Wait(changed_);
  return changes_ >= count;
}

bool WatchedPodSource::WaitForChange(uint64_t seen, std::chrono::milliseconds at_most) {
  const auto deadline = std::chrono::steady_clock::now() + at_most;
  MutexLock lock(mu_);
  while (!stopping_ && changes_ <= seen) {
    if (lock.WaitUntil(changed_, deadline) == std::cv_status::timeout) break;
  }
  return changes_ > seen;
}

uint64_t WatchedPodSource::changes() const {
  MutexLock lock(mu_);
  return changes_;
}

uint64_t WatchedPodSource::lists() const {
  MutexLock lock(mu_);
  return lists_;
}

Result<std::string> WatchedPodSource::Relist() {
  Result<NodePods> listed = ListNodePods(kube_, node_name_, resource_name_);
  if (!listed.ok()) return listed.status();
  std::map<std::string, BoundPod> pods;
  MutexLock lock(mu_);
  for (BoundPod& pod : listed->pods) {
    const auto known = pods_.find(pod.uid);
    pod.arrival = known != pods_.end() ? known->second.arrival : ++arrivals_;
    std::string uid = pod.uid;
    pods.insert_or_assign(std::move(uid), std::move(pod));
  }
  pods_ = std::move(pods);
  synced_ = true;
  ++lists_;
  ++changes_;
  changed_.notify_all();
  return std::move(listed->resource_version);
}

Status WatchedPodSource::WatchFrom(std::string& resource_version) {
  kube::WatchProtocolParser parser;
  Status failed = Status::Ok();  // set by an event that ends the watch (410, unreadable)
  std::atomic<bool> end{false};  // this watch's stop flag: set here, or by Stop()
  {
    MutexLock lock(mu_);
    if (stopping_) return Unavailable("stopped");
    watch_end_ = &end;
  }
  auto on_event = [&](std::string_view line) {
    if (end.load()) return;
    Result<kube::WatchEvent> event = parser.ParseEvent(line);
    if (!event.ok()) {
      failed = event.status().WithContext("pod watch");
      end = true;
      return;
    }
    if (event->type == kube::WatchEventType::kError) {
      failed = event->code == 410 ? FailedPrecondition("pod watch expired (410): " + event->message)
                                  : Unavailable("pod watch error " + std::to_string(event->code) +
                                                ": " + event->message);
      end = true;
      return;
    }
    if (!event->resource_version.empty()) resource_version = event->resource_version;
    if (event->type == kube::WatchEventType::kBookmark) return;
    std::optional<BoundPod> pod;
    if (event->type != kube::WatchEventType::kDeleted) {
      Result<std::optional<BoundPod>> decoded = DecodeBoundPod(event->object, resource_name_);
      if (decoded.ok() && decoded->has_value()) pod = std::move(**decoded);
    }
    // A pod to drop (deleted, finished, unreadable) is read again only for its uid.
    const std::string uid = pod.has_value() ? pod->uid : UidOf(event->object);
    if (uid.empty()) return;
    MutexLock lock(mu_);
    if (pod.has_value()) {
      const auto known = pods_.find(uid);
      pod->arrival = known != pods_.end() ? known->second.arrival : ++arrivals_;
      pods_.insert_or_assign(uid, *std::move(pod));
    } else {
      pods_.erase(uid);
    }
    ++changes_;
    changed_.notify_all();
  };
  Status watched = kube_.Watch(
      "/api/v1/pods", resource_version, options_.watch_timeout_seconds, [] {}, on_event, end,
      selector_);
  {
    MutexLock lock(mu_);
    watch_end_ = nullptr;
  }
  if (!failed.ok()) return failed;
  return watched;
}

void WatchedPodSource::Run() {
  // As client-go's reflector: list, then watch from the list's version; a watch the server
  // ends, or one that breaks, is resumed from the last version seen; only a 410 (the version is
  // too old) or a failed list leads to a list.
  std::string resource_version;
  bool listed = false;
  while (!stop_.load()) {
    Status failed = Status::Ok();
    if (!listed) {
      Result<std::string> rv = Relist();
      if (rv.ok()) {
        resource_version = *std::move(rv);
        listed = true;
      } else {
        failed = rv.status();
      }
    }
    if (listed) {
      failed = WatchFrom(resource_version);
      if (stop_.load()) break;
      if (failed.ok()) continue;  // the server ended it
      if (failed.code() == StatusCode::kFailedPrecondition) {
        spdlog::info("enforce: {}; listing the node's pods again", failed.message());
        listed = false;
        continue;
      }
    }
    spdlog::warn("enforce: {}; retrying in {} ms", failed.message(), options_.retry_delay.count());
    const auto retry_at = std::chrono::steady_clock::now() + options_.retry_delay;
    MutexLock lock(mu_);
    while (!stopping_ && lock.WaitUntil(changed_, retry_at) == std::cv_status::no_timeout) {
    }
  }
}

}  // namespace gputopo::agent
