#include "src/app/app.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "src/app/embedded_data.h"
#include "src/codec/preset_document.h"
#include "src/codec/topology_document.h"

namespace gputopo::app {
namespace {

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

App::App(const AppOptions&, const Clock& clock) : clock_(clock) {}
App::~App() {
  if (server_) server_->Stop();
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
  Result<std::unique_ptr<snapshot::InMemoryCluster>> cluster =
      snapshot::InMemoryCluster::Load(options.snapshot_json);
  if (!cluster.ok()) return cluster.status();
  app->cluster_ = std::move(cluster).value();
  app->state_ = std::make_unique<policies::ClusterState>(app->resolver_);
  app->state_->Reset(app->cluster_->Nodes(), app->cluster_->Pods());
  // Writes to the cluster reach the cache the way watch events would.
  app->cluster_->SetPodListener(
      [state = app->state_.get()](const PodInfo& pod) { state->UpsertPod(pod); });

  app->context_ = std::make_unique<service::SchedulingContext>(service::SchedulingContext{
      *app->state_, app->presets_, options.default_preset, app->recent_pods_, app->decisions_,
      app->clock_, &app->evaluation_cache_});
  app->service_ = std::make_unique<service::ExtenderService>(*app->context_);
  app->binder_ = std::make_unique<service::Binder>(*app->context_, *app->cluster_);
  snapshot::InMemoryCluster* source = app->cluster_.get();
  app->server_ = std::make_unique<http::ExtenderServer>(
      options.server,
      http::ServerDependencies{*app->service_, *app->binder_, *app->context_,
                               [source] { return source->ListJson(); }, [] { return true; }});
  return app;
}

}  // namespace gputopo::app
