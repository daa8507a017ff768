#include "src/kube/cluster_watcher.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "src/codec/k8s_json.h"
#include "src/kube/watch_protocol.h"

namespace gputopo::kube {

bool IsGpuNode(const NodeInfo& node) {
  return node.allocatable_gpus > 0 || node.label_topology_profile.has_value() ||
         node.annotation_topology.has_value();
}

ClusterWatcher::ClusterWatcher(KubeClient& client, cluster::ClusterState& state, const Clock& clock,
                               WatcherOptions options, GpuMismatchListener on_gpu_mismatch,
                               cluster::DisruptionBudgetIndex* budgets)
    : client_(client),
      state_(state),
      budgets_(budgets),
      clock_(clock),
      options_(options),
      on_gpu_mismatch_(std::move(on_gpu_mismatch)) {}

ClusterWatcher::~ClusterWatcher() { Stop(); }

void ClusterWatcher::Start() {
  stop_ = false;
  last_activity_ns_ = NowNs();
  last_expiry_ns_ = NowNs();
  nodes_.thread = std::thread([this] { Run(nodes_); });
  pods_.thread = std::thread([this] { Run(pods_); });
  if (budgets_ != nullptr) budgets_kind_.thread = std::thread([this] { Run(budgets_kind_); });
}

void ClusterWatcher::Stop() {
  {
    std::lock_guard<std::mutex> lock(sleep_mutex_);
    stop_ = true;
  }
  sleep_cv_.notify_all();
  for (Kind* kind : {&nodes_, &pods_, &budgets_kind_}) {
    if (kind->thread.joinable()) kind->thread.join();
  }
}

int64_t ClusterWatcher::NowNs() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             clock_.MonotonicNow().time_since_epoch())
      .count();
}

void ClusterWatcher::Touch() { last_activity_ns_ = NowNs(); }

bool ClusterWatcher::Ready() const {
  if (!nodes_.synced || !pods_.synced) return false;
  const int64_t now = NowNs();
  const int64_t bound =
      std::chrono::duration_cast<std::chrono::nanoseconds>(options_.staleness).count();
  for (const Kind* kind : {&nodes_, &pods_}) {
    const int64_t since = kind->broken_since_ns.load();
    if (since != 0 && now - since > bound) return false;
  }
  return true;
}

WatcherStats ClusterWatcher::Stats() const {
  WatcherStats s;
  s.events = events_;
  s.relists = relists_;
  s.reconnects = reconnects_;
  s.expired_reservations = expired_;
  s.cache_age_seconds = static_cast<double>(NowNs() - last_activity_ns_.load()) / 1e9;
  s.synced = nodes_.synced && pods_.synced;
  return s;
}

bool ClusterWatcher::Sleep(std::chrono::milliseconds delay) {
  std::unique_lock<std::mutex> lock(sleep_mutex_);
  sleep_cv_.wait_for(lock, delay, [this] { return stop_.load(); });
  return !stop_;
}

Result<std::string> ClusterWatcher::List(Kind& kind) {
  WatchProtocolParser parser;
  codec::K8sDecoder decoder;
  std::vector<NodeInfo> nodes;
  std::vector<PodInfo> pods;
  std::vector<DisruptionBudgetInfo> budgets;
  std::string continue_token;
  std::string resource_version;
  do {
    Result<std::string> body = client_.ListPage(kind.path, options_.page_size, continue_token);
    if (!body.ok()) return body.status();
    Result<ListPage> page = parser.ParseList(*body);
    if (!page.ok()) return page.status();
    if (resource_version.empty()) resource_version = page->resource_version;
    continue_token = page->continue_token;
    for (const std::string& item : page->items) {
      if (kind.id == KindId::kNodes) {
        Result<NodeInfo> node = decoder.DecodeNode(item);
        if (!node.ok()) {
          spdlog::warn("list nodes: skipping an object: {}", node.status().message());
          continue;
        }
        if (IsGpuNode(*node)) nodes.push_back(std::move(node).value());
      } else if (kind.id == KindId::kBudgets) {
        Result<DisruptionBudgetInfo> budget = decoder.DecodeDisruptionBudget(item);
        if (!budget.ok()) {
          spdlog::warn("list poddisruptionbudgets: skipping an object: {}",
                       budget.status().message());
          continue;
        }
        budgets.push_back(std::move(budget).value());
      } else {
        Result<PodInfo> pod = decoder.DecodePod(item, /*with_labels=*/budgets_ != nullptr);
        if (!pod.ok()) {
          spdlog::warn("list pods: skipping an object: {}", pod.status().message());
          continue;
        }
        // GPU pods, and bound pods for the CPU and memory they take.
        if (pod->gpu_request > 0 || !pod->node_name.empty()) {
          pods.push_back(std::move(pod).value());
        }
      }
    }
  } while (!continue_token.empty() && !stop_);
  size_t kept = 0;
  if (kind.id == KindId::kNodes) {
    state_.ReplaceNodes(nodes);
    kept = nodes.size();
  } else if (kind.id == KindId::kBudgets) {
    budgets_->ReplaceBudgets(budgets);
    kept = budgets.size();
  } else {
    state_.ReplacePods(pods);
    if (budgets_ != nullptr) budgets_->ReplacePods(pods);
    kept = pods.size();
  }
  spdlog::info("listed {}: {} kept at resourceVersion {}", kind.name, kept, resource_version);
  Touch();
  return resource_version;
}

struct ClusterWatcher::Decoders {
  WatchProtocolParser parser;
  codec::K8sDecoder decoder;
};

bool ClusterWatcher::Apply(Kind& kind, Decoders& decoders, std::string_view line,
                           std::string& resource_version) {
  codec::K8sDecoder& decoder = decoders.decoder;
  Result<WatchEvent> event = decoders.parser.ParseEvent(line);
  if (!event.ok()) {
    spdlog::warn("watch {}: ignoring an event: {}", kind.name, event.status().message());
    return true;
  }
  Touch();
  if (event->type == WatchEventType::kError) {
    if (event->code == 410) return false;
    spdlog::warn("watch {}: error event {}: {}", kind.name, event->code, event->message);
    return true;
  }
  if (!event->resource_version.empty()) resource_version = event->resource_version;
  if (event->type == WatchEventType::kBookmark) return true;
  ++events_;
  if (kind.id == KindId::kNodes) {
    Result<NodeInfo> node = decoder.DecodeNode(event->object);
    if (!node.ok()) {
      spdlog::warn("watch nodes: ignoring an object: {}", node.status().message());
      return true;
    }
    if (event->type == WatchEventType::kDeleted || !IsGpuNode(*node)) {
      state_.RemoveNode(node->name);
    } else {
      state_.UpsertNode(*node);
    }
    return true;
  }
  if (kind.id == KindId::kBudgets) {
    Result<DisruptionBudgetInfo> budget = decoder.DecodeDisruptionBudget(event->object);
    if (!budget.ok()) {
      spdlog::warn("watch poddisruptionbudgets: ignoring an object: {}", budget.status().message());
      return true;
    }
    if (event->type == WatchEventType::kDeleted) {
      budgets_->RemoveBudget(budget->uid);
    } else {
      budgets_->UpsertBudget(*budget);
    }
    return true;
  }
  Result<PodInfo> pod = decoder.DecodePod(event->object, /*with_labels=*/budgets_ != nullptr);
  if (!pod.ok()) {
    spdlog::warn("watch pods: ignoring an object: {}", pod.status().message());
    return true;
  }
  if (event->type == WatchEventType::kDeleted) {
    state_.RemovePod(pod->uid);
    if (budgets_ != nullptr) budgets_->RemovePod(pod->uid);
  } else {
    if (budgets_ != nullptr) budgets_->UpsertPod(*pod);
    // Keeps GPU-less pods as their CPU and memory only; drops finished ones.
    if (state_.UpsertPod(*pod) && on_gpu_mismatch_) on_gpu_mismatch_(*pod);
  }
  return true;
}

void ClusterWatcher::Run(Kind& kind) {
  std::string resource_version;
  bool need_list = true;
  std::chrono::milliseconds backoff = options_.backoff_initial;
  Decoders decoders;
  // Waits out `backoff` with +-20% jitter, so that many gputopo instances do not reconnect in
  // step; false when stopping.
  auto wait_backoff = [&] {
    const int64_t spread = NowNs() % 401 - 200;  // -200..200 per mille of 20%
    const auto jittered = backoff + backoff * spread / 1000;
    const bool go_on = Sleep(std::chrono::duration_cast<std::chrono::milliseconds>(jittered));
    backoff = std::min(backoff * 2, options_.backoff_max);
    return go_on;
  };
  while (!stop_) {
    if (need_list) {
      Result<std::string> listed = List(kind);
      if (!listed.ok()) {
        if (kind.broken_since_ns == 0) kind.broken_since_ns = NowNs();
        spdlog::warn("list {} failed: {}; retrying in about {} ms", kind.name,
                     listed.status().ToString(), backoff.count());
        if (!wait_backoff()) break;
        continue;
      }
      if (kind.synced) ++relists_;
      resource_version = *listed;
      kind.synced = true;
      kind.broken_since_ns = 0;
      need_list = false;
    }
    bool gone = false;
    Status watched = client_.Watch(
        kind.path, resource_version, options_.watch_timeout_seconds,
        [&] {  // the server took the watch: healthy again
          kind.broken_since_ns = 0;
          backoff = options_.backoff_initial;
          Touch();
        },
        [&](std::string_view line) {
          if (!gone && !Apply(kind, decoders, line, resource_version)) gone = true;
        },
        stop_);
    if (kind.id == KindId::kPods) {
      const int64_t now = NowNs();
      if (now - last_expiry_ns_ > int64_t{10'000'000'000}) {
        last_expiry_ns_ = now;
        const size_t expired =
            state_.ExpireReservations(clock_.MonotonicNow() - options_.reservation_ttl);
        if (expired > 0) {
          expired_ += expired;
          spdlog::warn("expired {} reservation(s) never seen bound", expired);
        }
      }
    }
    if (stop_) break;
    if (gone || watched.code() == StatusCode::kGone) {
      spdlog::info("watch {}: resourceVersion {} is too old; listing again", kind.name,
                   resource_version);
      need_list = true;
      continue;
    }
    if (watched.ok()) continue;  // the server ended the watch: resume where it stopped
    ++reconnects_;
    if (kind.broken_since_ns == 0) kind.broken_since_ns = NowNs();
    spdlog::warn("watch {} broke: {}; resuming from {} in about {} ms", kind.name,
                 watched.message(), resource_version, backoff.count());
    if (!wait_backoff()) break;
  }
}

}  // namespace gputopo::kube
