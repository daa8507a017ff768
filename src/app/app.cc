#include "src/app/app.h"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "gputopo/excerpt.h"
#include "gputopo/well_known.h"
#include "src/app/background_priority.h"
#include "src/app/embedded_data.h"
#include "src/codec/k8s_encode.h"
#include "src/codec/preset_document.h"
#include "src/codec/topology_document.h"

namespace gputopo::app {
namespace {

// Events waiting to be posted before new ones are dropped (~1 KiB each), and the threads that
// post them (each waits on one API call at a time).
constexpr size_t kEventQueueCapacity = 1024;
constexpr int kEventWorkers = 4;

struct NamedText {
  std::string name;
  std::string text;
};

// Embedded files, then *.json of `dir` in name order (a file may replace an embedded one).
Result<std::vector<NamedText>> Collect(std::span<const EmbeddedFile> embedded,
                                       const std::string& dir) {
  std::vector<NamedText> out;
  for (const EmbeddedFile& f : embedded)
    out.push_back({"built-in " + std::string(f.name), std::string(f.contents)});
  if (dir.empty()) return out;
  std::error_code ec;
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".json") files.push_back(entry.path());
  }
  if (ec) return InvalidArgument("cannot read directory " + dir + ": " + ec.message());
  std::sort(files.begin(), files.end());
  for (const auto& path : files) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    if (!in) return InvalidArgument("cannot read " + path.string());
    out.push_back({path.string(), text.str()});
  }
  return out;
}

}  // namespace

Status LoadProfiles(const std::string& extra_dir, topology::ProfileCatalog& catalog) {
  Result<std::vector<NamedText>> files = Collect(EmbeddedProfiles(), extra_dir);
  if (!files.ok()) return files.status();
  for (const NamedText& file : *files) {
    Result<codec::ProfileDocument> doc = codec::ParseProfileDocument(file.text);
    if (!doc.ok()) return doc.status().WithContext(file.name);
    if (Status s = catalog.Add(doc->name, doc->description, doc->machine); !s.ok()) {
      return s.WithContext(file.name);
    }
  }
  return Status::Ok();
}

Result<policies::PresetCatalog> LoadPresets(const std::string& extra_dir) {
  Result<std::vector<NamedText>> files = Collect(EmbeddedPresets(), extra_dir);
  if (!files.ok()) return files.status();
  const policies::ComponentRegistry registry = policies::BuiltinComponents();
  policies::PresetCatalog catalog;
  for (const NamedText& file : *files) {
    Result<policies::PresetSpec> spec = codec::ParsePresetDocument(file.text);
    if (!spec.ok()) return spec.status().WithContext(file.name);
    Result<std::shared_ptr<const policies::Preset>> preset = policies::BuildPreset(*spec, registry);
    if (!preset.ok()) return preset.status().WithContext(file.name);
    catalog.Add(*preset);
  }
  return catalog;
}

App::App(const AppOptions& options, const Clock& clock)
    : clock_(clock), grace_period_(options.server.http.grace_period) {}
App::~App() { Stop(); }

Status App::Start() {
  if (watcher_) watcher_->Start();
  return server_->Start();
}

void App::Stop() {
  if (server_) server_->Stop();
  if (watcher_) watcher_->Stop();
  // Events of the last binds: posted if the API server answers within the grace period.
  if (events_ && !events_->Drain(grace_period_)) {
    spdlog::warn("{} Event(s) not posted before shutdown", events_->Stats().pending);
  }
}

void App::RegisterCollectors() {
  metrics_.AddCollector([state = state_.get()](observability::MetricsWriter& out) {
    const auto snapshot = state->Snapshot();
    size_t resolved = 0;
    constexpr std::string_view kSlotsHelp =
        "nvidia.com/gpu slots (time-sliced replicas) per node with a known topology: used, free.";
    for (const auto& node : snapshot->nodes()) {
      if (!node->has_topology()) continue;
      ++resolved;
      out.WriteGauge("gputopo_node_gpu_slots", kSlotsHelp,
                     {{"node", node->name()}, {"state", "used"}},
                     static_cast<double>(node->used_slots()));
      out.WriteGauge("gputopo_node_gpu_slots", kSlotsHelp,
                     {{"node", node->name()}, {"state", "free"}},
                     static_cast<double>(node->free_slots()));
    }
    const size_t unresolved = snapshot->node_count() - resolved;
    constexpr std::string_view kNodesHelp =
        "GPU nodes known, by whether their topology could be resolved.";
    out.WriteGauge("gputopo_nodes", kNodesHelp, {{"topology", "resolved"}},
                   static_cast<double>(resolved));
    out.WriteGauge("gputopo_nodes", kNodesHelp, {{"topology", "unresolved"}},
                   static_cast<double>(unresolved));

    const policies::ClusterCounts counts = state->Counts();
    constexpr std::string_view kPodsHelp = "GPU pods known: placed on a node, or pending.";
    out.WriteGauge("gputopo_pods", kPodsHelp, {{"state", "placed"}},
                   static_cast<double>(counts.placed_pods));
    out.WriteGauge("gputopo_pods", kPodsHelp, {{"state", "pending"}},
                   static_cast<double>(counts.pods - counts.placed_pods));
    out.WriteGauge("gputopo_reservations",
                   "Binds in flight: GPUs held for a pod not yet seen bound.", {},
                   static_cast<double>(counts.reservations));
  });
  metrics_.AddCollector([refresher = table_refresher_.get()](observability::MetricsWriter& out) {
    out.WriteCounter("gputopo_background_evaluations_total",
                     "Node evaluations made off the request path, for recent pod shapes, after "
                     "the cluster changed.",
                     {}, static_cast<double>(refresher->nodes_evaluated()));
  });
  metrics_.AddCollector([events = events_.get()](observability::MetricsWriter& out) {
    const service::EventQueueStats stats = events->Stats();
    constexpr std::string_view kHelp =
        "Kubernetes Events about pods (GPUsAssigned), by outcome: posted, failed (the API server "
        "refused them or could not be reached), dropped (the queue was full).";
    out.WriteCounter("gputopo_events_total", kHelp, {{"outcome", "posted"}},
                     static_cast<double>(stats.posted));
    out.WriteCounter("gputopo_events_total", kHelp, {{"outcome", "failed"}},
                     static_cast<double>(stats.failed));
    out.WriteCounter("gputopo_events_total", kHelp, {{"outcome", "dropped"}},
                     static_cast<double>(stats.dropped));
    out.WriteGauge("gputopo_events_pending", "Events queued, not yet posted.", {},
                   static_cast<double>(stats.pending));
  });
  metrics_.AddCollector([this](observability::MetricsWriter& out) {
    out.WriteCounter("gputopo_gpu_mismatches_total",
                     "Pods the node agent saw on other GPUs than gputopo assigned "
                     "(gputopo.io/observed-gpus differs from gputopo.io/assigned-gpus).",
                     {}, static_cast<double>(gpu_mismatches_.load(std::memory_order_relaxed)));
  });
  if (!watcher_) return;
  metrics_.AddCollector([watcher = watcher_.get()](observability::MetricsWriter& out) {
    const kube::WatcherStats stats = watcher->Stats();
    out.WriteCounter("gputopo_watch_events_total", "Watch events applied to the cache.", {},
                     static_cast<double>(stats.events));
    out.WriteCounter("gputopo_watch_reconnects_total",
                     "Watches resumed from their resourceVersion after a broken stream.", {},
                     static_cast<double>(stats.reconnects));
    out.WriteCounter("gputopo_watch_relists_total",
                     "Full lists after the first (the resourceVersion was too old: 410 Gone).", {},
                     static_cast<double>(stats.relists));
    out.WriteCounter("gputopo_reservations_expired_total",
                     "Reservations freed because the pod was never seen bound.", {},
                     static_cast<double>(stats.expired_reservations));
    out.WriteGauge("gputopo_cache_age_seconds",
                   "Seconds since the last watch event, bookmark or list.", {},
                   stats.cache_age_seconds);
    out.WriteGauge("gputopo_cache_synced", "1 once both watches have listed and are current.", {},
                   stats.synced ? 1.0 : 0.0);
  });
}

void App::OnGpuMismatch(const PodInfo& pod) {
  gpu_mismatches_.fetch_add(1, std::memory_order_relaxed);
  const std::string assigned(FindAnnotation(pod.annotations, kAnnotationAssignedGpus).value_or(""));
  const std::string observed(FindAnnotation(pod.annotations, kAnnotationObservedGpus).value_or(""));
  std::string message = "The node agent sees the pod on GPUs " + Excerpt(observed) + " of " +
                        Excerpt(pod.node_name) + ", not on GPUs " + Excerpt(assigned) +
                        " that gputopo assigned; gputopo now counts the observed GPUs.";
  spdlog::warn("pod {}: {}", Excerpt(pod.Key()), message);
  if (events_ != nullptr) {
    (void)events_->Submit(PodRef{pod.namespace_name, pod.name, pod.uid}, "GPUsMismatch",
                          std::move(message));
  }
}

Result<std::unique_ptr<App>> App::Create(const AppOptions& options, const Clock& clock) {
  std::unique_ptr<App> app(new App(options, clock));
  if (Status s = LoadProfiles(options.profiles_dir, app->profiles_); !s.ok()) return s;
  Result<policies::PresetCatalog> presets = LoadPresets(options.presets_dir);
  if (!presets.ok()) return presets.status();
  app->presets_ = std::move(presets).value();
  if (app->presets_.Find(options.default_preset) == nullptr) {
    return NotFound("default preset '" + options.default_preset + "' is not defined");
  }
  app->table_refresher_ =
      std::make_unique<service::TableRefresher>(app->evaluations_, &StartBackgroundThread);
  app->state_ = std::make_unique<policies::ClusterState>(
      app->resolver_, [refresher = app->table_refresher_.get()](const auto& snapshot) {
        refresher->Notify(snapshot);
      });
  KubeApi* kube = nullptr;
  std::function<std::string()> list_snapshot;
  if (options.kube) {
    app->client_ = std::make_unique<kube::KubeClient>(*options.kube, options.client, clock);
    app->watcher_ = std::make_unique<kube::ClusterWatcher>(
        *app->client_, *app->state_, clock, options.watcher,
        [self = app.get()](const PodInfo& pod) { self->OnGpuMismatch(pod); });
    kube = app->client_.get();
    if (options.admin_auth && options.server.admin_port >= 0) {
      app->access_ = std::make_unique<http::AccessControl>(*app->client_, clock);
    }
    list_snapshot = [state = app->state_.get()] {
      auto [nodes, pods] = state->Export();
      return codec::EncodeList(nodes, pods);
    };
  } else {
    Result<std::unique_ptr<snapshot::InMemoryCluster>> cluster =
        snapshot::InMemoryCluster::Load(options.snapshot_json);
    if (!cluster.ok()) return cluster.status();
    app->cluster_ = std::move(cluster).value();
    app->state_->Reset(app->cluster_->Nodes(), app->cluster_->Pods());
    // Writes to the cluster reach the cache the way watch events would.
    app->cluster_->SetPodListener(
        [state = app->state_.get()](const PodInfo& pod) { state->UpsertPod(pod); });
    kube = app->cluster_.get();
    list_snapshot = [source = app->cluster_.get()] { return source->ListJson(); };
  }

  app->context_ = std::make_unique<service::SchedulingContext>(service::SchedulingContext{
      *app->state_, app->presets_, options.default_preset, app->recent_pods_, app->decisions_,
      app->clock_, app->evaluations_});
  app->service_ = std::make_unique<service::ExtenderService>(*app->context_);
  app->events_ =
      std::make_unique<service::EventQueue>(*kube, kEventQueueCapacity, &StartBackgroundThread);
  app->binder_ = std::make_unique<service::Binder>(*app->context_, *kube, app->events_.get());
  App* self = app.get();
  app->server_ = std::make_unique<http::ExtenderServer>(
      options.server,
      http::ServerDependencies{*app->service_, *app->binder_, *app->context_,
                               std::move(list_snapshot), [self] { return self->Ready(); },
                               &app->metrics_, &StartBackgroundThread, app->access_.get()});
  app->RegisterCollectors();
  return app;
}

}  // namespace gputopo::app
