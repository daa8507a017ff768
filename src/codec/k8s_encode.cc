#include "src/codec/k8s_encode.h"

#include <ctime>
#include <nlohmann/json.hpp>

#include "gputopo/well_known.h"
#include "src/codec/topology_document.h"

namespace gputopo::codec {
namespace {

using nlohmann::json;

std::string_view PhaseName(PodPhase phase) {
  switch (phase) {
    case PodPhase::kPending:
      return "Pending";
    case PodPhase::kRunning:
      return "Running";
    case PodPhase::kSucceeded:
      return "Succeeded";
    case PodPhase::kFailed:
      return "Failed";
    case PodPhase::kUnknown:
      break;
  }
  return "Unknown";
}

json EncodeNode(const NodeInfo& node) {
  json labels = json::object();
  const std::pair<std::string_view, const std::optional<std::string>*> known[] = {
      {kLabelGpuCount, &node.label_gpu_count},
      {kLabelGpuReplicas, &node.label_gpu_replicas},
      {kLabelGpuProduct, &node.label_gpu_product},
      {kLabelGpuMemory, &node.label_gpu_memory},
      {kLabelTopologyProfile, &node.label_topology_profile}};
  for (const auto& [key, value] : known) {
    if (value->has_value()) labels[std::string(key)] = **value;
  }
  json annotations = json::object();
  if (node.annotation_topology) {
    if (node.annotation_topology->ok()) {
      annotations[std::string(kAnnotationTopology)] = FormatTopologyDocument(
          node.annotation_topology->value(), {.pretty = false, .comments = {}});
    } else {
      annotations["gputopo.io/topology-error"] = node.annotation_topology->status().message();
    }
  }
  json allocatable = {{std::string(kGpuResource), std::to_string(node.allocatable_gpus)}};
  if (node.allocatable_cpu_milli > 0) {
    allocatable["cpu"] = std::to_string(node.allocatable_cpu_milli) + "m";
  }
  if (node.allocatable_memory_bytes > 0) {
    allocatable["memory"] = std::to_string(node.allocatable_memory_bytes);
  }
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata",
           {{"name", node.name},
            {"resourceVersion", node.resource_version},
            {"labels", labels},
            {"annotations", annotations}}},
          {"status", {{"capacity", allocatable}, {"allocatable", allocatable}}}};
}

json EncodePod(const PodInfo& pod) {
  json annotations = json::object();
  for (const auto& [key, value] : pod.annotations) annotations[key] = value;
  json labels = json::object();
  if (!pod.pod_template_hash.empty())
    labels[std::string(kLabelPodTemplateHash)] = pod.pod_template_hash;
  json owners = json::array();
  for (const OwnerReference& o : pod.owners) {
    owners.push_back(
        {{"kind", o.kind}, {"name", o.name}, {"uid", o.uid}, {"controller", o.controller}});
  }
  json requests = json::object();
  if (pod.gpu_request > 0) requests[std::string(kGpuResource)] = std::to_string(pod.gpu_request);
  json limits = requests;
  if (pod.cpu_request_milli > 0) requests["cpu"] = std::to_string(pod.cpu_request_milli) + "m";
  if (pod.memory_request_bytes > 0) {
    requests["memory"] = std::to_string(pod.memory_request_bytes);
  }
  const json container = {{"name", pod.gpu_request > 0 ? "gpu" : "main"},
                          {"resources", {{"requests", requests}, {"limits", limits}}}};
  json spec = {{"containers", json::array({container})}};
  if (!pod.node_name.empty()) spec["nodeName"] = pod.node_name;
  if (pod.priority != 0) spec["priority"] = pod.priority;
  json metadata = {{"name", pod.name}, {"namespace", pod.namespace_name},
                   {"uid", pod.uid},   {"resourceVersion", pod.resource_version},
                   {"labels", labels}, {"annotations", annotations}};
  if (!owners.empty()) metadata["ownerReferences"] = owners;
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", metadata},
          {"spec", spec},
          {"status", {{"phase", PhaseName(pod.phase)}}}};
}

}  // namespace

std::string EncodeList(const std::vector<NodeInfo>& nodes, const std::vector<PodInfo>& pods) {
  json items = json::array();
  for (const NodeInfo& node : nodes) items.push_back(EncodeNode(node));
  for (const PodInfo& pod : pods) items.push_back(EncodePod(pod));
  const json list = {{"apiVersion", "v1"},
                     {"kind", "List"},
                     {"metadata", {{"resourceVersion", ""}}},
                     {"items", items}};
  return list.dump(-1, ' ', false, json::error_handler_t::replace);
}

nlohmann::json EncodePodEvent(const PodRef& pod, std::string_view reason, std::string_view message,
                              std::string_view component, std::string_view time) {
  nlohmann::json event = {
      {"apiVersion", "v1"},
      {"kind", "Event"},
      {"metadata", {{"generateName", pod.name + "."}, {"namespace", pod.namespace_name}}},
      {"involvedObject",
       {{"apiVersion", "v1"},
        {"kind", "Pod"},
        {"name", pod.name},
        {"namespace", pod.namespace_name},
        {"uid", pod.uid}}},
      {"reason", std::string(reason)},
      {"message", std::string(message)},
      {"type", "Normal"},
      {"source", {{"component", std::string(component)}}},
      {"reportingComponent", std::string(component)},
      {"count", 1}};
  if (!time.empty()) {
    event["firstTimestamp"] = std::string(time);
    event["lastTimestamp"] = std::string(time);
  }
  return event;
}

}  // namespace gputopo::codec
