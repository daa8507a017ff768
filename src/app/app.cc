#include "src/app/app.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "gputopo/excerpt.h"
#include "gputopo/well_known.h"
#include "src/app/background_priority.h"
#include "src/app/embedded_data.h"
#include "src/app/metric_collectors.h"
#include "src/codec/k8s_encode.h"
#include "src/codec/preset_document.h"
#include "src/codec/topology_document.h"

namespace gputopo::app {
namespace {

// Events waiting to be posted before new ones are dropped (~1 KiB each), and the threads that
// post them (each waits on one API call at a time).
constexpr size_t kEventQueueCapacity = 1024;
constexpr int kEventWorkers = 4;
// The background executor's threads: table refreshes and decision commits, each at most one
// task at a time.
constexpr int kBackgroundThreads = 2;
// Cycle records waiting for the background commit before request threads commit their own.
constexpr size_t kMaxPendingRecords = 64;
// How long the recorder gathers records before committing them (DecisionRecorder): readers of
// the log flush it first, so only the background wake-ups depend on it, once per delay instead
// of once per verb.
constexpr std::chrono::milliseconds kRecordBatchDelay(20);

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

// GET /ui's page, compiled in (src/http/ui/index.html).
std::string_view UiPage() {
  for (const EmbeddedFile& f : EmbeddedUi()) {
    if (f.name == "index.html") return f.contents;
  }
  return "gputopo: the /ui page was not built in\n";
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

namespace {

// AppOptions::evaluation_threads, with -1 resolved.
int EvaluationHelperThreads(int requested) {
  if (requested >= 0) return requested;
  const auto cpus = static_cast<int>(std::thread::hardware_concurrency());
  return std::clamp(cpus - 1, 0, 3);
}

}  // namespace

App::App(const AppOptions& options, const Clock& clock)
    : clock_(clock),
      grace_period_(options.server.http.grace_period),
      background_(kBackgroundThreads, &StartBackgroundThread),
      evaluation_helper_threads_(EvaluationHelperThreads(options.evaluation_threads)),
      evaluation_helpers_(
          evaluation_helper_threads_ > 0
              ? std::make_unique<service::ThreadPoolExecutor>(evaluation_helper_threads_)
              : nullptr),
      evaluations_(
          evaluation::EvaluationHelpers{evaluation_helpers_.get(), evaluation_helper_threads_}) {}
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
  CollectClusterState(metrics_, *state_);
  CollectBackgroundEvaluations(metrics_, *table_refresher_);
  CollectNodeAnswers(metrics_, evaluations_.cache());
  CollectEvents(metrics_, *events_);
  if (watcher_) CollectWatch(metrics_, *watcher_);
  if (budgets_) CollectDisruptionBudgets(metrics_, *budgets_);
}

void App::OnGpuMismatch(const PodInfo& pod) {
  gpu_mismatches_.Increment();
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
  // About 8 MB that the first cycles of new pod shapes would otherwise fault in as they go.
  app->evaluations_.ReserveAnswerArrays();
  app->table_refresher_ =
      std::make_unique<service::TableRefresher>(app->evaluations_, app->background_);
  app->state_ = std::make_unique<cluster::ClusterState>(
      app->resolver_, [refresher = app->table_refresher_.get()](const auto& snapshot) {
        refresher->Notify(snapshot);
      });
  KubeApi* kube = nullptr;
  std::function<std::string()> list_snapshot;
  if (options.kube) {
    app->client_ = std::make_unique<kube::KubeClient>(*options.kube, options.client, clock);
    app->budgets_ = std::make_unique<cluster::DisruptionBudgetIndex>();
    app->watcher_ = std::make_unique<kube::ClusterWatcher>(
        *app->client_, *app->state_, clock, options.watcher,
        [self = app.get()](const PodInfo& pod) { self->OnGpuMismatch(pod); }, app->budgets_.get());
    kube = app->client_.get();
    if (options.admin_auth && options.server.admin_port >= 0) {
      app->access_ = std::make_unique<http::AccessControl>(*app->client_, clock);
    }
    list_snapshot = [state = app->state_.get()] {
      auto [nodes, pods] = state->Export();
      return codec::EncodeList(nodes, pods);
    };
  } else {
    Result<std::unique_ptr<in_memory_api::InMemoryCluster>> cluster =
        in_memory_api::InMemoryCluster::Load(options.snapshot_json);
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
  app->recorder_ = std::make_unique<service::DecisionRecorder>(
      app->decisions_, &app->cycle_metrics_, app->background_,
      service::RecorderOptions{kMaxPendingRecords, kRecordBatchDelay});
  app->service_ = std::make_unique<service::ExtenderService>(
      *app->context_, *app->recorder_, service::ExtenderServiceOptions{options.filter_decides});
  app->events_ =
      std::make_unique<service::EventQueue>(*kube, kEventQueueCapacity, &StartBackgroundThread);
  app->binder_ = std::make_unique<service::Binder>(*app->context_, *kube, app->events_.get());
  app->preemptor_ = std::make_unique<service::Preemptor>(*app->context_, app->budgets_.get());
  App* self = app.get();
  app->server_ = std::make_unique<http::ExtenderServer>(
      options.server,
      http::ServerDependencies{*app->service_, *app->recorder_, *app->binder_, *app->preemptor_,
                               *app->context_, std::move(list_snapshot),
                               [self] { return self->Ready(); }, UiPage(), &app->metrics_,
                               app->access_.get()});
  app->RegisterCollectors();
  return app;
}

}  // namespace gputopo::app
