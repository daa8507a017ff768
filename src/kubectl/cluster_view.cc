#include "src/kubectl/cluster_view.h"

#include "src/app/app.h"
#include "src/codec/k8s_json.h"
#include "src/kube/cluster_watcher.h"
#include "src/kube/watch_protocol.h"

namespace gputopo::kubectl {
namespace {

constexpr int kPageSize = 500;

// Every item of a paged list at `path`, as raw JSON.
Result<std::vector<std::string>> ListAll(kube::KubeClient& client, std::string_view path) {
  kube::WatchProtocolParser parser;
  std::vector<std::string> items;
  std::string token;
  do {
    Result<std::string> body = client.ListPage(path, kPageSize, token);
    if (!body.ok()) return body.status().WithContext("listing " + std::string(path));
    Result<kube::ListPage> page = parser.ParseList(*body);
    if (!page.ok()) return page.status().WithContext("reading the list of " + std::string(path));
    for (std::string& item : page->items) items.push_back(std::move(item));
    token = page->continue_token;
  } while (!token.empty());
  return items;
}

}  // namespace

Result<std::unique_ptr<ClusterView>> ClusterView::Create() {
  std::unique_ptr<ClusterView> view(new ClusterView());
  view->profiles_ = std::make_unique<topology::ProfileCatalog>(view->interner_);
  if (Status s = app::LoadProfiles("", *view->profiles_); !s.ok()) return s;
  view->resolver_ = std::make_unique<topology::TopologyResolver>(*view->profiles_, view->interner_);
  view->state_ = std::make_unique<cluster::ClusterState>(*view->resolver_);
  return view;
}

Status ClusterView::Load(kube::KubeClient& client) {
  Result<std::vector<std::string>> node_items = ListAll(client, "/api/v1/nodes");
  if (!node_items.ok()) return node_items.status();
  Result<std::vector<std::string>> pod_items = ListAll(client, "/api/v1/pods");
  if (!pod_items.ok()) return pod_items.status();
  codec::K8sDecoder decoder;
  std::vector<NodeInfo> nodes;
  for (const std::string& item : *node_items) {
    // What the extender's watch keeps: GPU nodes (a corrupt topology annotation is kept and
    // shown on that node); a Node it cannot read at all is left out.
    if (Result<NodeInfo> node = decoder.DecodeNode(item); node.ok() && kube::IsGpuNode(*node))
      nodes.push_back(*node);
  }
  std::vector<PodInfo> pods;
  for (const std::string& item : *pod_items) {
    if (Result<PodInfo> pod = decoder.DecodePod(item); pod.ok()) pods.push_back(*pod);
  }
  Load(nodes, pods);
  return Status::Ok();
}

void ClusterView::Load(const std::vector<NodeInfo>& nodes, const std::vector<PodInfo>& pods) {
  state_->Reset(nodes, pods);
  pods_ = pods;
}

std::optional<PodInfo> ClusterView::FindPod(const std::string& namespace_name,
                                            const std::string& name) const {
  for (const PodInfo& pod : pods_) {
    if (pod.namespace_name == namespace_name && pod.name == name) return pod;
  }
  return std::nullopt;
}

}  // namespace gputopo::kubectl
