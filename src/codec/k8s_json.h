// Decoding Kubernetes Pod, Node and PodDisruptionBudget objects (JSON, as the API server and
// kube-scheduler send them) into gputopo's domain types. simdjson On-Demand: these run on the
// request path.
//
// Thread safety: a K8sDecoder is not thread-safe (it owns a parser); use one per thread.
#ifndef GPUTOPO_SRC_CODEC_K8S_JSON_H_
#define GPUTOPO_SRC_CODEC_K8S_JSON_H_

#include <memory>
#include <string_view>

#include "gputopo/disruption_budget.h"
#include "gputopo/node_info.h"
#include "gputopo/pod_info.h"
#include "gputopo/status.h"

namespace gputopo::codec {

class K8sDecoder {
 public:
  K8sDecoder();
  ~K8sDecoder();
  K8sDecoder(const K8sDecoder&) = delete;
  K8sDecoder& operator=(const K8sDecoder&) = delete;

  // Error when `json` is not a Pod object gputopo can read (no name, a bad GPU quantity...).
  // `with_labels`: also read metadata.labels (the API server watch does, for budget selectors;
  // nothing else reads them).
  Result<PodInfo> DecodePod(std::string_view json, bool with_labels = false);
  // Error when `json` is not a Node object. A corrupt gputopo.io/topology annotation is not an
  // error here: it is carried in NodeInfo::annotation_topology and fails that node alone.
  Result<NodeInfo> DecodeNode(std::string_view json);
  // Error when `json` is not a PodDisruptionBudget (policy/v1) with a name and uid. A selector
  // kube would reject is not an error here: it is carried in selector_error.
  Result<DisruptionBudgetInfo> DecodeDisruptionBudget(std::string_view json);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gputopo::codec

#endif  // GPUTOPO_SRC_CODEC_K8S_JSON_H_
