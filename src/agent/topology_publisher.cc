#include "src/agent/topology_publisher.h"

#include <nlohmann/json.hpp>
#include <utility>

#include "gputopo/excerpt.h"
#include "gputopo/well_known.h"
#include "src/codec/topology_document.h"

namespace gputopo::agent {

TopologyPublisher::TopologyPublisher(kube::KubeClient& kube, std::string node_name)
    : kube_(kube), node_name_(std::move(node_name)) {}

std::string TopologyPublisher::Document(const MachineTopology& topology) {
  return codec::FormatTopologyDocument(topology, {.pretty = false, .comments = {}});
}

Result<TopologyPublisher::NodeMeta> TopologyPublisher::ReadNode() {
  Result<std::string> page = kube_.ListPage("/api/v1/nodes", 1, "", "metadata.name=" + node_name_);
  if (!page.ok()) return page.status();
  const nlohmann::json list = nlohmann::json::parse(*page, nullptr, false);
  if (list.is_discarded() || !list.is_object() || !list.contains("items") ||
      !list["items"].is_array()) {
    return Internal("the node list is not a NodeList: " + Excerpt(*page));
  }
  if (list["items"].empty()) return NotFound("node " + Excerpt(node_name_) + " not found");
  const nlohmann::json& metadata = list["items"][0].value("metadata", nlohmann::json::object());
  NodeMeta meta;
  meta.uid = metadata.value("uid", "");
  meta.resource_version = metadata.value("resourceVersion", "");
  const nlohmann::json annotations = metadata.value("annotations", nlohmann::json::object());
  if (annotations.is_object()) {
    if (auto it = annotations.find(std::string(kAnnotationTopology));
        it != annotations.end() && it->is_string()) {
      meta.annotation = it->get<std::string>();
    }
  }
  return meta;
}

Result<PublishOutcome> TopologyPublisher::Publish(const MachineTopology& topology) {
  const std::string document = Document(topology);
  for (int attempt = 0; attempt < 2; ++attempt) {
    Result<NodeMeta> node = ReadNode();
    if (!node.ok()) return node.status();
    if (node->annotation == document) return PublishOutcome::kUnchanged;
    const Status written = kube_.AnnotateNode(node_name_, node->uid, node->resource_version,
                                              kAnnotationTopology, document);
    if (written.ok()) return PublishOutcome::kWritten;
    if (written.code() != StatusCode::kConflict) return written;
  }
  return Conflict("node " + Excerpt(node_name_) + " kept changing while publishing its topology");
}

}  // namespace gputopo::agent
