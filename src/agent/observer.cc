#include "src/agent/observer.h"

#include <spdlog/spdlog.h>

#include <utility>

#include "gputopo/well_known.h"
#include "src/agent/observed_gpus.h"
#include "src/codec/k8s_json.h"
#include "src/kube/watch_protocol.h"

namespace gputopo::agent {

Observer::Observer(ObserverOptions options, kube::KubeClient& kube,
                   PodResourcesClient& pod_resources, MachineTopology topology, const Clock& clock,
                   observability::MetricsRegistry& metrics, PodResourcesView* share)
    : options_(std::move(options)),
      kube_(kube),
      pod_resources_(pod_resources),
      share_(share),
      topology_(std::move(topology)),
      clock_(clock),
      polls_(metrics.RegisterCounter("gputopo_agent_observe_passes_total",
                                     "Observe passes (PodResources, then this node's pods when "
                                     "it changed), by result.",
                                     {"result"})),
      writes_(metrics.RegisterCounter("gputopo_agent_observed_gpus_writes_total",
                                      "gputopo.io/observed-gpus annotation writes, by result.",
                                      {"result"})),
      unmapped_pods_(metrics
                         .RegisterGauge("gputopo_agent_unmapped_pods",
                                        "Pods whose device IDs do not all map to GPUs (MIG, "
                                        "unknown forms) in the latest pass.")
                         .WithLabels({})),
      ready_gauge_(metrics
                       .RegisterGauge("gputopo_agent_ready",
                                      "1 when the latest observe pass read both the API server "
                                      "and PodResources.")
                       .WithLabels({})) {}

Observer::~Observer() { Stop(); }

Result<std::vector<PodInfo>> Observer::PodsOnNode() {
  kube::WatchProtocolParser parser;
  codec::K8sDecoder decoder;
  std::vector<PodInfo> pods;
  std::string continue_token;
  const std::string selector = "spec.nodeName=" + options_.node_name;
  do {
    Result<std::string> body =
        kube_.ListPage("/api/v1/pods", options_.page_size, continue_token, selector);
    if (!body.ok())
      return body.status().WithContext("listing the pods of node " + options_.node_name);
    Result<kube::ListPage> page = parser.ParseList(*body);
    if (!page.ok()) return page.status().WithContext("reading the pod list");
    continue_token = page->continue_token;
    for (const std::string& item : page->items) {
      Result<PodInfo> pod = decoder.DecodePod(item);
      if (pod.ok()) pods.push_back(std::move(pod).value());  // others cannot be annotated
    }
  } while (!continue_token.empty());
  return pods;
}

ObserverPass Observer::RunOnce() {
  ObserverPass pass;
  passes_.fetch_add(1);
  const uint64_t ticket = share_ != nullptr ? share_->Begin() : 0;
  Result<std::vector<PodDeviceIds>> devices = pod_resources_.List(options_.resource_name);
  if (share_ != nullptr && devices.ok()) share_->Finish(ticket, *devices);
  const auto now = clock_.MonotonicNow();
  const bool unchanged =
      devices.ok() && settled_ && *settled_ == *devices && now - settled_at_ < options_.resync;
  if (unchanged) {
    polls_.WithLabels({"unchanged"}).Increment();
    pass.pods_listed = static_cast<int>(devices->size());
    return pass;  // ready as before: the pods were listed and annotated for this very answer
  }
  Result<std::vector<PodInfo>> pods =
      devices.ok() ? PodsOnNode() : Result<std::vector<PodInfo>>(devices.status());
  if (!pods.ok() || !devices.ok()) {
    pass.status = devices.ok() ? pods.status() : devices.status();
    polls_.WithLabels({devices.ok() ? "api_error" : "podresources_error"}).Increment();
    settled_.reset();
    if (ready_.exchange(false) || passes_.load() == 1) {
      spdlog::warn("observe: not ready: {}", pass.status.message());
    }
    ready_gauge_.Set(0);
    MutexLock lock(mu_);
    last_error_ = pass.status.message();
    return pass;
  }
  pass.listed_pods = true;
  polls_.WithLabels({"ok"}).Increment();
  if (!ready_.exchange(true)) spdlog::info("observe: ready (node {})", options_.node_name);
  ready_gauge_.Set(1);
  {
    MutexLock lock(mu_);
    last_error_.clear();
  }

  pass.pods_listed = static_cast<int>(devices->size());
  std::string problems;
  for (const ObservedPod& observed : ObserveGpus(*pods, *devices, topology_)) {
    for (const std::string& p : observed.problems) {
      problems += (problems.empty() ? "" : "; ") + observed.pod.Key() + ": " + p;
    }
    if (observed.value.empty()) ++pass.unmapped;
    if (!observed.needs_write) continue;
    const Status written =
        kube_.AnnotatePod(observed.pod, "", kAnnotationObservedGpus, observed.value);
    if (written.ok()) {
      ++pass.writes;
      writes_.WithLabels({"ok"}).Increment();
      spdlog::info("observe: pod {} holds GPUs {} (was \"{}\")", observed.pod.Key(), observed.value,
                   observed.current);
    } else {
      ++pass.write_failures;
      writes_.WithLabels({"error"}).Increment();
      spdlog::warn("observe: writing {} on pod {}: {} (again at the next pass)",
                   kAnnotationObservedGpus, observed.pod.Key(), written.message());
    }
  }
  unmapped_pods_.Set(pass.unmapped);
  if (pass.write_failures == 0) {
    settled_ = *std::move(devices);
    settled_at_ = now;
  } else {
    settled_.reset();  // the writes owed are tried again at the next pass
  }
  // Problems persist from pass to pass; say them once, when they change.
  if (problems != last_problems_) {
    if (!problems.empty()) spdlog::warn("observe: device IDs not mapped: {}", problems);
    last_problems_ = std::move(problems);
  }
  return pass;
}

void Observer::Start(std::function<void()> thread_setup) {
  MutexLock lock(mu_);
  if (thread_.joinable()) return;
  stop_ = false;
  thread_ = std::thread([this, setup = std::move(thread_setup)] {
    if (setup) setup();
    Loop();
  });
}

void Observer::Stop() {
  {
    MutexLock lock(mu_);
    stop_ = true;
    cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

std::string Observer::last_error() const {
  MutexLock lock(mu_);
  return last_error_;
}

void Observer::Loop() {
  for (;;) {
    const auto started = std::chrono::steady_clock::now();
    (void)RunOnce();
    const auto next = started + options_.period;
    MutexLock lock(mu_);
    while (!stop_ && lock.WaitUntil(cv_, next) == std::cv_status::no_timeout) {
    }
    if (stop_) return;
  }
}

}  // namespace gputopo::agent
