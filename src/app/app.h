// App: one gputopo server, wired. The only place that constructs the parts and connects them
// (main and the demo use it; so do the end-to-end tests).
//
// Thread safety: Create/Start/Stop from one thread.
#ifndef GPUTOPO_SRC_APP_APP_H_
#define GPUTOPO_SRC_APP_APP_H_

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cluster/cluster_state.h"
#include "cluster/disruption_budget_index.h"
#include "evaluation/cached_evaluations.h"
#include "gputopo/clock.h"
#include "gputopo/status.h"
#include "policies/registry/component_registry.h"
#include "src/http/extender_server.h"
#include "src/in_memory_api/in_memory_cluster.h"
#include "src/kube/cluster_watcher.h"
#include "src/kube/kube_client.h"
#include "src/observability/metrics.h"
#include "src/service/binder.h"
#include "src/service/cycle_metrics.h"
#include "src/service/decision_log.h"
#include "src/service/decision_recorder.h"
#include "src/service/event_queue.h"
#include "src/service/extender_service.h"
#include "src/service/preemptor.h"
#include "src/service/recent_pods.h"
#include "src/service/table_refresher.h"
#include "src/service/thread_pool_executor.h"
#include "topology/profile_catalog.h"
#include "topology/shape_interner.h"
#include "topology/topology_resolver.h"

namespace gputopo::app {

struct AppOptions {
  http::ServerOptions server;
  std::string default_preset = "default";
  // service::ExtenderServiceOptions::filter_decides (`--filter-decides`).
  bool filter_decides = false;
  std::string presets_dir;   // extra preset files (*.json); empty: the built-in ones only
  std::string profiles_dir;  // extra machine profiles (*.json)
  // The source of truth: the API server when `kube` is set (live), else the snapshot: a
  // kubectl-style List of Nodes and Pods.
  std::string snapshot_json;
  std::optional<kube::KubeConfig> kube;
  kube::ClientOptions client;
  kube::WatcherOptions watcher;
  // Live mode with an admin listener: /metrics and /debug need a bearer token that RBAC allows
  // (TokenReview + SubjectAccessReview).
  bool admin_auth = true;
  // Threads that make the searches of a new pod shape's first cycle beside the request thread
  // (`--evaluation-threads`): 0 none; -1 one less than the CPUs, at most 3.
  int evaluation_threads = -1;
};

// The catalogs, built from embedded files plus the optional directories. Error names the file.
Status LoadProfiles(const std::string& extra_dir, topology::ProfileCatalog& catalog);
Result<policies::PresetCatalog> LoadPresets(const std::string& extra_dir);

class App {
 public:
  // Error when a profile, preset or the snapshot cannot be loaded, or the default preset is
  // unknown. `clock` must outlive the app.
  static Result<std::unique_ptr<App>> Create(const AppOptions& options, const Clock& clock);
  ~App();

  // Starts watching the API server (live mode) and serving.
  Status Start();
  int port() const { return server_->port(); }
  int admin_port() const { return server_->admin_port(); }
  void RequestStop() { server_->RequestStop(); }
  void Wait() { server_->Wait(); }
  void Stop();

  bool live() const { return watcher_ != nullptr; }
  // Ready to schedule: always with a snapshot; live, once the watch has synced (and not stale).
  bool Ready() const { return watcher_ == nullptr || watcher_->Ready(); }
  // Precondition: !live().
  in_memory_api::InMemoryCluster& cluster() { return *cluster_; }
  // Live mode only (else nullptr).
  const kube::ClusterWatcher* watcher() const { return watcher_.get(); }
  // Live mode only (else nullptr): the PodDisruptionBudgets preempt counts against.
  const cluster::DisruptionBudgetIndex* disruption_budgets() const { return budgets_.get(); }
  service::ExtenderService& extender_service() { return *service_; }
  // What GET /metrics renders.
  observability::MetricsRegistry& metrics() { return metrics_; }
  cluster::ClusterState& state() { return *state_; }
  service::TableRefresher& table_refresher() { return *table_refresher_; }
  // The service's CycleObserver: Flush it to see every answered cycle in the DecisionLog.
  service::DecisionRecorder& decision_recorder() { return *recorder_; }
  const policies::PresetCatalog& presets() const { return presets_; }

 private:
  // A watch event showed a pod on other GPUs than gputopo assigned: log, count, queue an Event.
  void OnGpuMismatch(const PodInfo& pod);
  App(const AppOptions& options, const Clock& clock);

  // Add the collectors of the parts (metric_collectors.h); called once the parts exist.
  void RegisterCollectors();

  const Clock& clock_;
  const std::chrono::milliseconds grace_period_;
  observability::MetricsRegistry metrics_;  // outlives everything below that records into it
  // OnGpuMismatch calls.
  observability::Counter& gpu_mismatches_ =
      metrics_
          .RegisterCounter("gputopo_gpu_mismatches_total",
                           "Pods the node agent saw on other GPUs than gputopo assigned "
                           "(gputopo.io/observed-gpus differs from gputopo.io/assigned-gpus).")
          .WithLabels({});
  // All background work that no request waits for: table refreshes and decision commits (each
  // at most one task at a time, so two threads never keep one waiting for the other). Destroyed
  // after everything that posts to it.
  service::ThreadPoolExecutor background_;
  topology::ShapeInterner interner_;
  topology::ProfileCatalog profiles_{interner_};
  topology::TopologyResolver resolver_{profiles_, interner_};
  policies::PresetCatalog presets_;
  // AppOptions::evaluation_threads with -1 resolved; before evaluation_helpers_, sized by it.
  const int evaluation_helper_threads_;
  // At the request threads' priority (the searches of a cycle a request waits for); null when
  // there are none. Before evaluations_, which posts to it.
  std::unique_ptr<service::ThreadPoolExecutor> evaluation_helpers_;
  // Before state_: the state tells the refresher of every snapshot, so both outlive it.
  evaluation::CachedEvaluations evaluations_;
  std::unique_ptr<service::TableRefresher> table_refresher_;
  std::unique_ptr<cluster::ClusterState> state_;
  std::unique_ptr<in_memory_api::InMemoryCluster> cluster_;  // snapshot mode
  std::unique_ptr<kube::KubeClient> client_;                 // live mode
  // Live mode: PodDisruptionBudgets and GPU pods' labels, for preemption; before watcher_,
  // which feeds it, so that it outlives the watcher.
  std::unique_ptr<cluster::DisruptionBudgetIndex> budgets_;
  std::unique_ptr<kube::ClusterWatcher> watcher_;  // live mode
  std::unique_ptr<http::AccessControl> access_;    // live mode with an admin listener
  // Bounded in bytes too: see docs/operations.md for the memory budget they are part of.
  service::RecentPods recent_pods_{4096, 8u << 20};
  service::DecisionLog decisions_{256, 256, 16u << 20};
  service::CycleMetrics cycle_metrics_{metrics_};
  std::unique_ptr<service::DecisionRecorder> recorder_;  // commits into decisions_
  std::unique_ptr<service::SchedulingContext> context_;
  std::unique_ptr<service::ExtenderService> service_;
  std::unique_ptr<service::EventQueue> events_;  // before binder_, which queues into it
  std::unique_ptr<service::Binder> binder_;
  std::unique_ptr<service::Preemptor> preemptor_;
  std::unique_ptr<http::ExtenderServer> server_;
};

}  // namespace gputopo::app

#endif  // GPUTOPO_SRC_APP_APP_H_
