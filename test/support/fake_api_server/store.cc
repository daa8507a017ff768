// FakeApiServer::Impl's object store: the test-side writes and reads, resourceVersions, and the
// feed of every change into the watch-cache history and the open watches.
#include <algorithm>
#include <cstdio>

#include "test/support/fake_api_server/impl.h"

namespace gputopo::testing {
namespace {

// Paginated lists whose snapshot is kept for their continue tokens.
constexpr size_t kMaxSnapshots = 64;

}  // namespace

using fake_api::History;
using fake_api::Info;
using fake_api::JsonPtr;
using fake_api::WatchRecord;

std::optional<fake_api::json> FakeApiServer::Impl::Create(Resource r, json object) {
  if (!object.is_object() || !object.contains("metadata") || !object["metadata"].is_object() ||
      fake_api::Name(object).empty()) {
    return std::nullopt;
  }
  object["kind"] = Info(r).kind;
  object["apiVersion"] = Info(r).api_version;
  json& metadata = object["metadata"];
  if (Info(r).namespaced && fake_api::Namespace(object).empty()) {
    metadata["namespace"] = "default";
  }
  if (r == Resource::kNodes) metadata.erase("namespace");
  if (r == Resource::kPods) {
    if (!object.contains("status") || !object["status"].is_object()) {
      object["status"] = json::object();
    }
    if (!object["status"].contains("phase")) object["status"]["phase"] = "Pending";
  }
  std::lock_guard<std::mutex> lock(mu_);
  const std::string key = fake_api::Key(r, object);
  if (objects_[Index(r)].count(key) != 0) return std::nullopt;
  if (fake_api::Str(object, {"metadata", "uid"}).empty()) metadata["uid"] = NewUid();
  if (!metadata.contains("creationTimestamp") || metadata["creationTimestamp"].is_null()) {
    metadata["creationTimestamp"] = fake_api::Rfc3339(now_());
  }
  BumpResourceVersion();
  JsonPtr stored = Put(r, key, std::move(object));
  Publish(r, fake_api::kAdded, stored, nullptr);
  return *stored;
}

std::optional<fake_api::json> FakeApiServer::Impl::Update(
    Resource r, const std::string& key, const std::function<void(json&)>& mutate) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = objects_[Index(r)].find(key);
  if (it == objects_[Index(r)].end()) return std::nullopt;
  const JsonPtr previous = it->second;
  json updated = *previous;
  mutate(updated);
  if (!updated.is_object()) updated = *previous;
  if (!updated.contains("metadata") || !updated["metadata"].is_object()) {
    updated["metadata"] = (*previous)["metadata"];
  }
  updated["kind"] = Info(r).kind;
  updated["apiVersion"] = Info(r).api_version;
  fake_api::Preserve(updated, *previous, "metadata", "name");
  fake_api::Preserve(updated, *previous, "metadata", "namespace");
  BumpResourceVersion();
  JsonPtr stored = Put(r, key, std::move(updated));
  Publish(r, fake_api::kModified, stored, previous);
  return *stored;
}

bool FakeApiServer::Impl::Delete(Resource r, const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = objects_[Index(r)].find(key);
  if (it == objects_[Index(r)].end()) return false;
  const JsonPtr previous = it->second;
  objects_[Index(r)].erase(it);
  BumpResourceVersion();
  json final_state = *previous;
  final_state["metadata"]["resourceVersion"] = std::to_string(resource_version_);
  Publish(r, fake_api::kDeleted, std::make_shared<const json>(std::move(final_state)), previous);
  return true;
}

std::optional<fake_api::json> FakeApiServer::Impl::Get(Resource r, const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = objects_[Index(r)].find(key);
  if (it == objects_[Index(r)].end()) return std::nullopt;
  return *it->second;
}

std::vector<fake_api::json> FakeApiServer::Impl::All(Resource r) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<json> out;
  for (const auto& [key, object] : objects_[Index(r)]) out.push_back(*object);
  return out;
}

std::vector<fake_api::json> FakeApiServer::Impl::Events() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<json> out;
  for (const auto& [key, event] : events_) out.push_back(event);
  return out;
}

std::string FakeApiServer::Impl::resource_version() const {
  std::lock_guard<std::mutex> lock(mu_);
  return std::to_string(resource_version_);
}

void FakeApiServer::Impl::BumpResourceVersion() {
  ++resource_version_;
  state_cv_.notify_all();
}

JsonPtr FakeApiServer::Impl::Put(Resource r, const std::string& key, json object) {
  object["metadata"]["resourceVersion"] = std::to_string(resource_version_);
  auto stored = std::make_shared<const json>(std::move(object));
  objects_[Index(r)][key] = stored;
  return stored;
}

void FakeApiServer::Impl::Publish(Resource r, const char* type, JsonPtr object, JsonPtr previous) {
  auto record = std::make_shared<const WatchRecord>(
      WatchRecord{type, resource_version_, std::move(object), std::move(previous)});
  History& history = history_[Index(r)];
  history.events.push_back(record);
  TrimHistory(history);
  for (auto& [id, watcher] : watchers_) {
    if (watcher->resource != r || record->resource_version <= watcher->start_resource_version) {
      continue;
    }
    watcher->pending.push_back(record);
    watcher->cv.notify_all();
  }
}

void FakeApiServer::Impl::TrimHistory(History& history) {
  while (history.events.size() > history_window_) {
    history.events.pop_front();
    history.evicted = true;
  }
}

std::shared_ptr<const FakeApiServer::Impl::Snapshot> FakeApiServer::Impl::TakeSnapshot(
    Resource r) const {
  auto snapshot = std::make_shared<Snapshot>();
  snapshot->reserve(objects_[Index(r)].size());
  for (const auto& [key, object] : objects_[Index(r)]) snapshot->emplace_back(key, object);
  return snapshot;
}

void FakeApiServer::Impl::TrimSnapshots() {
  while (snapshots_.size() > kMaxSnapshots) {
    auto oldest = std::min_element(
        snapshots_.begin(), snapshots_.end(),
        [](const auto& a, const auto& b) { return a.first.second < b.first.second; });
    snapshots_.erase(oldest);
  }
}

std::string FakeApiServer::Impl::NewUid() {
  char buffer[48];
  std::snprintf(buffer, sizeof(buffer), "6b1c4a52-0000-4000-8000-%012llx",
                static_cast<unsigned long long>(++uid_counter_));
  return buffer;
}

std::string FakeApiServer::Impl::RandomSuffix() {
  static constexpr char kAlphabet[] = "bcdfghjklmnpqrstvwxz2456789";
  constexpr uint64_t kBase = sizeof(kAlphabet) - 1;
  uint64_t value = (++name_counter_) * 2654435761u;
  std::string suffix;
  for (int i = 0; i < 5; ++i) {
    suffix += kAlphabet[value % kBase];
    value /= kBase;
  }
  return suffix;
}

}  // namespace gputopo::testing
