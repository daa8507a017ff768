#include "src/in_memory_api/in_memory_cluster.h"

#include <simdjson.h>

#include <charconv>
#include <nlohmann/json.hpp>

#include "src/codec/k8s_encode.h"
#include "src/codec/k8s_ondemand.h"

namespace gputopo::in_memory_api {
namespace {

using nlohmann::json;
using simdjson::ondemand::json_type;

std::string Dump(const json& object) {
  return object.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

Result<std::unique_ptr<InMemoryCluster>> InMemoryCluster::Load(std::string_view list_json) {
  std::unique_ptr<InMemoryCluster> cluster(new InMemoryCluster());
  MutexLock lock(cluster->mutex_);  // not shared yet; held for the analysis's sake
  std::string list_kind;
  std::vector<Item> items;
  try {
    simdjson::ondemand::parser parser;
    simdjson::padded_string padded(list_json);
    simdjson::ondemand::document doc = parser.iterate(padded);
    if (doc.type() != json_type::object) return InvalidArgument("snapshot is not a JSON object");
    for (auto field : doc.get_object()) {
      const std::string_view key = field.unescaped_key();
      if (key == "kind") {
        list_kind = std::string(field.value().get_string().value());
      } else if (key == "items") {
        simdjson::ondemand::value list = field.value();
        if (list.type() == json_type::null) continue;
        for (auto element : list.get_array()) {
          simdjson::ondemand::object object = element.get_object();
          Item item;
          for (auto f : object) {
            if (f.unescaped_key().value() == "kind") {
              item.kind = std::string(f.value().get_string().value());
              break;
            }
          }
          item.json = std::string(object.raw_json().value());
          items.push_back(std::move(item));
        }
      }
    }
  } catch (const simdjson::simdjson_error& e) {
    return InvalidArgument(std::string("snapshot is not valid JSON: ") + e.what());
  }
  if (list_kind != "List" && list_kind != "NodeList" && list_kind != "PodList") {
    return InvalidArgument("snapshot kind is '" + list_kind +
                           "'; expected List, NodeList or PodList");
  }
  uint64_t max_version = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    Item& item = items[i];
    if (item.kind.empty())
      item.kind = list_kind == "NodeList" ? "Node" : list_kind == "PodList" ? "Pod" : "";
    const std::string where = "snapshot items[" + std::to_string(i) + "]";
    std::string version;
    if (item.kind == "Node") {
      Result<NodeInfo> node = cluster->decoder_.DecodeNode(item.json);
      if (!node.ok()) return node.status().WithContext(where);
      version = node->resource_version;
      cluster->nodes_.push_back(std::move(node).value());
    } else if (item.kind == "Pod") {
      Result<PodInfo> pod = cluster->decoder_.DecodePod(item.json);
      if (!pod.ok()) return pod.status().WithContext(where);
      version = pod->resource_version;
      const std::string key = pod->Key();
      if (!cluster->pods_.emplace(key, PodSlot{i, std::move(pod).value()}).second) {
        return InvalidArgument(where + ": pod " + key + " appears twice");
      }
    }
    uint64_t numeric = 0;
    std::from_chars(version.data(), version.data() + version.size(), numeric);
    max_version = std::max(max_version, numeric);
  }
  cluster->items_ = std::move(items);
  cluster->resource_version_ = max_version;
  return cluster;
}

std::vector<NodeInfo> InMemoryCluster::Nodes() const {
  MutexLock lock(mutex_);
  return nodes_;
}

std::vector<PodInfo> InMemoryCluster::Pods() const {
  MutexLock lock(mutex_);
  std::vector<std::pair<size_t, PodInfo>> ordered;
  for (const auto& [key, slot] : pods_) ordered.emplace_back(slot.item, slot.info);
  std::sort(ordered.begin(), ordered.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<PodInfo> pods;
  for (auto& [index, info] : ordered) pods.push_back(std::move(info));
  return pods;
}

void InMemoryCluster::SetPodListener(PodListener listener) {
  MutexLock lock(mutex_);
  listener_ = std::move(listener);
}

std::vector<std::string> InMemoryCluster::PendingPodObjects() const {
  MutexLock lock(mutex_);
  std::vector<std::pair<size_t, std::string>> pending;
  for (const auto& [key, slot] : pods_) {
    if (slot.info.node_name.empty() && slot.info.phase == PodPhase::kPending) {
      pending.emplace_back(slot.item, items_[slot.item].json);
    }
  }
  std::sort(pending.begin(), pending.end());
  std::vector<std::string> out;
  for (auto& [index, text] : pending) out.push_back(std::move(text));
  return out;
}

std::string InMemoryCluster::ListJson() const {
  MutexLock lock(mutex_);
  size_t size = 96;
  for (const Item& item : items_) size += item.json.size() + 1;
  std::string out;
  out.reserve(size);
  out += R"({"apiVersion":"v1","kind":"List","metadata":{"resourceVersion":""},"items":[)";
  for (size_t i = 0; i < items_.size(); ++i) {
    if (i > 0) out.push_back(',');
    out += items_[i].json;
  }
  out += "]}";
  return out;
}

Result<PodInfo> InMemoryCluster::GetPod(std::string_view namespace_name, std::string_view name) {
  MutexLock lock(mutex_);
  auto it = pods_.find(std::string(namespace_name) + "/" + std::string(name));
  if (it == pods_.end()) {
    return NotFound("pods \"" + std::string(name) + "\" not found in namespace " +
                    std::string(namespace_name));
  }
  return it->second.info;
}

std::string InMemoryCluster::NextResourceVersionLocked() {
  return std::to_string(++resource_version_);
}

Status InMemoryCluster::ReplacePodLocked(PodSlot& slot, std::string text) {
  Result<PodInfo> decoded = decoder_.DecodePod(text);
  if (!decoded.ok()) return Internal("re-reading a pod we wrote: " + decoded.status().message());
  items_[slot.item].json = std::move(text);
  slot.info = std::move(decoded).value();
  if (listener_) listener_(slot.info);
  return Status::Ok();
}

Result<InMemoryCluster::PodSlot*> InMemoryCluster::FindPodLocked(const PodRef& pod) {
  auto it = pods_.find(pod.Key());
  if (it == pods_.end()) return NotFound("pods \"" + pod.name + "\" not found");
  PodSlot& slot = it->second;
  if (!pod.uid.empty() && slot.info.uid != pod.uid) {
    return Conflict("Precondition failed: UID in precondition: " + pod.uid +
                    ", UID in object meta: " + slot.info.uid);
  }
  return &slot;
}

Status InMemoryCluster::AnnotatePod(const PodRef& pod, std::string_view resource_version,
                                    std::string_view key, std::string_view value) {
  MutexLock lock(mutex_);
  Result<PodSlot*> found = FindPodLocked(pod);
  if (!found.ok()) return found.status();
  PodSlot& slot = **found;
  if (!resource_version.empty() && slot.info.resource_version != resource_version) {
    return Conflict("Operation cannot be fulfilled on pods \"" + pod.name +
                    "\": the object has been modified; please apply your changes to the latest "
                    "version and try again");
  }
  json object = json::parse(items_[slot.item].json, nullptr, /*allow_exceptions=*/false);
  if (object.is_discarded()) return Internal("stored pod is not JSON");
  json& annotations = object["metadata"]["annotations"];
  if (!annotations.is_object()) annotations = json::object();
  annotations[std::string(key)] = std::string(value);
  object["metadata"]["resourceVersion"] = NextResourceVersionLocked();
  return ReplacePodLocked(slot, Dump(object));
}

Status InMemoryCluster::BindPod(const PodRef& pod, std::string_view resource_version,
                                std::string_view node, const AnnotationList& annotations) {
  MutexLock lock(mutex_);
  Result<PodSlot*> found = FindPodLocked(pod);
  if (!found.ok()) return found.status();
  PodSlot& slot = **found;
  if (!resource_version.empty() && slot.info.resource_version != resource_version) {
    return Conflict("Operation cannot be fulfilled on pods \"" + pod.name +
                    "\": Precondition failed: ResourceVersion in precondition: " +
                    std::string(resource_version) +
                    ", ResourceVersion in object meta: " + slot.info.resource_version);
  }
  if (!slot.info.node_name.empty()) {
    return Conflict("Operation cannot be fulfilled on pods/binding \"" + pod.name + "\": pod " +
                    pod.name + " is already assigned to node \"" + slot.info.node_name + "\"");
  }
  json object = json::parse(items_[slot.item].json, nullptr, /*allow_exceptions=*/false);
  if (object.is_discarded()) return Internal("stored pod is not JSON");
  object["spec"]["nodeName"] = std::string(node);
  if (!annotations.empty()) {
    json& target = object["metadata"]["annotations"];
    if (!target.is_object()) target = json::object();
    for (const auto& [key, value] : annotations) target[key] = value;
  }
  json& conditions = object["status"]["conditions"];
  if (!conditions.is_array()) conditions = json::array();
  conditions.push_back({{"type", "PodScheduled"}, {"status", "True"}});
  object["metadata"]["resourceVersion"] = NextResourceVersionLocked();
  return ReplacePodLocked(slot, Dump(object));
}

Status InMemoryCluster::RecordEvent(const PodRef& pod, std::string_view reason,
                                    std::string_view message) {
  MutexLock lock(mutex_);
  const std::string version = NextResourceVersionLocked();
  // As the API server stores it: named from generateName (which it keeps), with a
  // resourceVersion. The snapshot
  // has no clock, so the timestamps are left out.
  json event = codec::EncodePodEvent(pod, reason, message, "gputopo", "");
  json& metadata = event["metadata"];
  metadata["name"] = metadata["generateName"].get<std::string>() + version;
  metadata["resourceVersion"] = version;
  items_.push_back({"Event", Dump(event)});
  return Status::Ok();
}

}  // namespace gputopo::in_memory_api
