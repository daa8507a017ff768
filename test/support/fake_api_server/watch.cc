// Watch-cache rules of the fake API server: resume window, event and bookmark lines.
#include "test/support/fake_api_server/watch.h"

#include <string_view>

namespace gputopo::testing::fake_api {
namespace {

json BookmarkObject(Resource r, uint64_t resource_version) {
  json metadata = {{"resourceVersion", std::to_string(resource_version)},
                   {"creationTimestamp", nullptr}};
  if (r == Resource::kDisruptionBudgets) {
    return {{"kind", "PodDisruptionBudget"},
            {"apiVersion", "policy/v1"},
            {"metadata", metadata},
            {"spec", json::object()},
            {"status",
             {{"disruptionsAllowed", 0},
              {"currentHealthy", 0},
              {"desiredHealthy", 0},
              {"expectedPods", 0}}}};
  }
  if (r == Resource::kPods) {
    return {{"kind", "Pod"},
            {"apiVersion", "v1"},
            {"metadata", metadata},
            {"spec", {{"containers", nullptr}}},
            {"status", json::object()}};
  }
  return {{"kind", "Node"},
          {"apiVersion", "v1"},
          {"metadata", metadata},
          {"spec", json::object()},
          {"status",
           {{"daemonEndpoints", {{"kubeletEndpoint", {{"Port", 0}}}}},
            {"nodeInfo",
             {{"machineID", ""},
              {"systemUUID", ""},
              {"bootID", ""},
              {"kernelVersion", ""},
              {"osImage", ""},
              {"containerRuntimeVersion", ""},
              {"kubeletVersion", ""},
              {"kubeProxyVersion", ""},
              {"operatingSystem", ""},
              {"architecture", ""}}}}}};
}

}  // namespace

uint64_t OldestResumable(const History& history, uint64_t current_resource_version) {
  if (!history.evicted) return history.list_resource_version;
  return history.events.empty() ? current_resource_version
                                : history.events.front()->resource_version - 1;
}

std::string EventLine(const char* type, const json& object) {
  return Dump(json{{"type", type}, {"object", object}}) + "\n";
}

std::string BookmarkLine(Resource r, uint64_t resource_version) {
  return EventLine("BOOKMARK", BookmarkObject(r, resource_version));
}

std::optional<std::string> EncodeFor(const Watcher& watcher, const WatchRecord& record) {
  const bool now_matches = std::string_view(record.type) != kDeleted &&
                           watcher.filter.Matches(watcher.resource, *record.object);
  const bool matched_before =
      record.previous != nullptr && watcher.filter.Matches(watcher.resource, *record.previous);
  if (now_matches && !matched_before) return EventLine(kAdded, *record.object);
  if (now_matches && matched_before) return EventLine(kModified, *record.object);
  if (!matched_before) return std::nullopt;
  json gone = *record.previous;
  gone["metadata"]["resourceVersion"] = std::to_string(record.resource_version);
  return EventLine(kDeleted, gone);
}

}  // namespace gputopo::testing::fake_api
