#include "src/agent/kube_pod_source.h"

#include <time.h>

#include <charconv>
#include <cstdio>
#include <exception>
#include <nlohmann/json.hpp>

#include "gputopo/well_known.h"
#include "src/kube/watch_protocol.h"

namespace gputopo::agent {
namespace {

using nlohmann::json;

constexpr int kPageSize = 500;

Status Bad(const std::string& what) { return InvalidArgument("pod: " + what); }

// RFC 3339 as the API server writes it: "2024-05-01T12:34:56Z" (fractions and offsets too).
std::optional<std::chrono::system_clock::time_point> ParseTimestamp(const std::string& text) {
  struct tm tm {};
  int consumed = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                  &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &consumed) != 6) {
    return std::nullopt;
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  const time_t seconds = timegm(&tm);
  if (seconds == static_cast<time_t>(-1)) return std::nullopt;
  std::string_view rest = std::string_view(text).substr(static_cast<size_t>(consumed));
  if (!rest.empty() && rest.front() == '.') {
    rest.remove_prefix(1);
    while (!rest.empty() && rest.front() >= '0' && rest.front() <= '9') rest.remove_prefix(1);
  }
  long offset = 0;  // seconds east of UTC
  if (rest == "Z") {
  } else if (rest.size() == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':') {
    const int hours = (rest[1] - '0') * 10 + (rest[2] - '0');
    const int minutes = (rest[4] - '0') * 10 + (rest[5] - '0');
    offset = (rest[0] == '+' ? 1 : -1) * (hours * 3600L + minutes * 60L);
  } else {
    return std::nullopt;
  }
  return std::chrono::system_clock::from_time_t(seconds - offset);
}

// The request of `resource` in a container's resources: requests, else limits.
Result<int64_t> ReadRequest(const json& container, const std::string& resource) {
  const json* resources = container.contains("resources") ? &container["resources"] : nullptr;
  if (resources == nullptr || !resources->is_object()) return int64_t{0};
  for (const char* kind : {"requests", "limits"}) {
    if (!resources->contains(kind) || !(*resources)[kind].is_object()) continue;
    const json& list = (*resources)[kind];
    if (!list.contains(resource)) continue;
    const json& value = list[resource];
    if (value.is_number_unsigned()) return static_cast<int64_t>(value.get<uint64_t>());
    if (value.is_number_integer() && value.get<int64_t>() >= 0) return value.get<int64_t>();
    if (value.is_string()) {
      const std::string text = value.get<std::string>();
      int64_t n = 0;
      const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), n);
      if (error == std::errc() && end == text.data() + text.size() && n >= 0) return n;
    }
    return Bad(std::string(kind) + " of " + resource + " is not a whole number");
  }
  return int64_t{0};
}

std::string StringAt(const json& object, const char* key) {
  if (!object.is_object() || !object.contains(key) || !object[key].is_string()) return {};
  return object[key].get<std::string>();
}

}  // namespace

Result<std::optional<BoundPod>> DecodeBoundPod(std::string_view text,
                                               std::string_view resource_name) {
  try {
    const json pod = json::parse(text);
    if (!pod.is_object() || !pod.contains("metadata") || !pod["metadata"].is_object()) {
      return Bad("no metadata");
    }
    const json& metadata = pod["metadata"];
    const json empty = json::object();
    const json& spec = pod.contains("spec") && pod["spec"].is_object() ? pod["spec"] : empty;
    const json& status =
        pod.contains("status") && pod["status"].is_object() ? pod["status"] : empty;
    const std::string phase = StringAt(status, "phase");
    if (phase == "Succeeded" || phase == "Failed" || metadata.contains("deletionTimestamp")) {
      return std::optional<BoundPod>();
    }
    BoundPod out;
    out.namespace_name = StringAt(metadata, "namespace");
    out.name = StringAt(metadata, "name");
    out.uid = StringAt(metadata, "uid");
    if (out.name.empty() || out.namespace_name.empty()) return Bad("no name or namespace");
    const auto created = ParseTimestamp(StringAt(metadata, "creationTimestamp"));
    if (!created.has_value()) return Bad(out.name + ": unreadable creationTimestamp");
    out.created = *created;
    out.scheduler_name = StringAt(spec, "schedulerName");
    if (metadata.contains("annotations") && metadata["annotations"].is_object()) {
      const std::string key(kAnnotationAssignedGpus);
      const json& annotations = metadata["annotations"];
      if (annotations.contains(key) && annotations[key].is_string()) {
        out.assigned_gpus = annotations[key].get<std::string>();
      }
    }
    const std::string resource(resource_name);
    for (const auto& [field, init] : {std::pair{"initContainers", true}, {"containers", false}}) {
      if (!spec.contains(field) || !spec[field].is_array()) continue;
      for (const json& c : spec[field]) {
        Result<int64_t> request = ReadRequest(c, resource);
        if (!request.ok()) return request.status().WithContext(out.Key());
        out.containers.push_back({StringAt(c, "name"), *request, init});
      }
    }
    return std::optional<BoundPod>(std::move(out));
  } catch (const std::exception& e) {
    return Bad(std::string("unreadable: ") + e.what());
  }
}

KubePodSource::KubePodSource(kube::KubeClient& kube, std::string node_name,
                             std::string resource_name)
    : kube_(kube), node_name_(std::move(node_name)), resource_name_(std::move(resource_name)) {}

Result<NodePods> ListNodePods(kube::KubeClient& kube, const std::string& node_name,
                              std::string_view resource_name) {
  kube::WatchProtocolParser parser;
  NodePods out;
  std::string continue_token;
  const std::string selector = "spec.nodeName=" + node_name;
  do {
    Result<std::string> body = kube.ListPage("/api/v1/pods", kPageSize, continue_token, selector);
    if (!body.ok()) return body.status().WithContext("listing the pods of node " + node_name);
    Result<kube::ListPage> page = parser.ParseList(*body);
    if (!page.ok()) return page.status().WithContext("reading the pod list");
    continue_token = page->continue_token;
    out.resource_version = page->resource_version;
    for (const std::string& item : page->items) {
      Result<std::optional<BoundPod>> pod = DecodeBoundPod(item, resource_name);
      if (pod.ok() && pod->has_value()) out.pods.push_back(*std::move(pod).value());
    }
  } while (!continue_token.empty());
  return out;
}

Result<std::vector<BoundPod>> KubePodSource::CurrentPods() {
  Result<NodePods> listed = ListNodePods(kube_, node_name_, resource_name_);
  if (!listed.ok()) return listed.status();
  return std::move(listed->pods);
}

}  // namespace gputopo::agent
