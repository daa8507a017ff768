// App: one gputopo server, wired. The only place that constructs the parts and connects them
// (main and the demo use it; so do the end-to-end tests).
//
// Thread safety: Create/Start/Stop from one thread.
#ifndef GPUTOPO_SRC_APP_APP_H_
#define GPUTOPO_SRC_APP_APP_H_

#include <memory>
#include <string>
#include <vector>

#include "gputopo/clock.h"
#include "gputopo/status.h"
#include "policies/engine/evaluation_cache.h"
#include "policies/registry/component_registry.h"
#include "policies/state/cluster_state.h"
#include "src/http/extender_server.h"
#include "src/service/binder.h"
#include "src/service/decision_log.h"
#include "src/service/extender_service.h"
#include "src/service/recent_pods.h"
#include "src/snapshot/in_memory_cluster.h"
#include "topology/profile_catalog.h"
#include "topology/shape_interner.h"
#include "topology/topology_resolver.h"

namespace gputopo::app {

struct AppOptions {
  http::ServerOptions server;
  std::string default_preset = "default";
  std::string presets_dir;    // extra preset files (*.json); empty: the built-in ones only
  std::string profiles_dir;   // extra machine profiles (*.json)
  std::string snapshot_json;  // the cluster: a kubectl-style List of Nodes and Pods
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

  Status Start() { return server_->Start(); }
  int port() const { return server_->port(); }
  void RequestStop() { server_->RequestStop(); }
  void Wait() { server_->Wait(); }
  void Stop() { server_->Stop(); }

  snapshot::InMemoryCluster& cluster() { return *cluster_; }
  const service::ExtenderService& extender_service() const { return *service_; }
  policies::ClusterState& state() { return *state_; }
  const policies::PresetCatalog& presets() const { return presets_; }

 private:
  App(const AppOptions& options, const Clock& clock);

  const Clock& clock_;
  topology::ShapeInterner interner_;
  topology::ProfileCatalog profiles_{interner_};
  topology::TopologyResolver resolver_{profiles_, interner_};
  policies::PresetCatalog presets_;
  std::unique_ptr<policies::ClusterState> state_;
  std::unique_ptr<snapshot::InMemoryCluster> cluster_;
  service::RecentPods recent_pods_{4096};
  service::DecisionLog decisions_{256, 256};
  policies::EvaluationCache evaluation_cache_;
  std::unique_ptr<service::SchedulingContext> context_;
  std::unique_ptr<service::ExtenderService> service_;
  std::unique_ptr<service::Binder> binder_;
  std::unique_ptr<http::ExtenderServer> server_;
};

}  // namespace gputopo::app

#endif  // GPUTOPO_SRC_APP_APP_H_
