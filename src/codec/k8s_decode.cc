// Pod and Node decoding with simdjson On-Demand: one pass over each object, fields in document
// order, values we do not need skipped without being parsed.
#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "gputopo/saturating.h"
#include "gputopo/well_known.h"
#include "src/codec/k8s_json.h"
#include "src/codec/k8s_ondemand.h"
#include "src/codec/quantity.h"
#include "src/codec/topology_document.h"

namespace gputopo::codec {
namespace {

using simdjson::ondemand::json_type;
using simdjson::ondemand::object;
using simdjson::ondemand::value;

// Kubernetes caps an object's annotations at 256 KiB; anything bigger is not from the API.
constexpr size_t kMaxAnnotationValue = 256 * 1024;

std::string_view StringOrEmpty(value v) {
  if (v.type() == json_type::null) return {};
  return v.get_string();
}

// A JSON number used as a quantity: a whole number within the limits of a quantity string.
Result<int64_t> WholeJsonNumber(value v) {
  int64_t n = 0;
  if (v.get_int64().get(n) != simdjson::SUCCESS) {
    std::string_view raw = v.raw_json_token();
    while (!raw.empty() &&
           (raw.back() == ' ' || raw.back() == '\t' || raw.back() == '\n' || raw.back() == '\r')) {
      raw.remove_suffix(1);
    }
    return InvalidArgument("quantity " + std::string(raw.substr(0, 64)) +
                           " is not a whole number of at most " +
                           std::to_string(kMaxQuantityUnits));
  }
  if (n > kMaxQuantityUnits || n < -kMaxQuantityUnits) {
    return InvalidArgument("quantity " + std::to_string(n) + " is too large");
  }
  return n;
}

// A resource quantity value: normally a JSON string, tolerated as a number. Negative amounts
// are rejected (the API server never stores one).
Result<int64_t> WholeQuantity(value v) {
  Result<int64_t> n =
      v.type() == json_type::number ? WholeJsonNumber(v) : ParseWholeQuantity(v.get_string());
  if (n.ok() && *n < 0) return InvalidArgument("quantity " + std::to_string(*n) + " is negative");
  return n;
}

// A quantity in thousandths (CPU in millicores, memory in thousandths of a byte): a JSON string,
// tolerated as a number of units. Negative amounts are rejected.
Result<int64_t> MilliQuantity(value v) {
  Result<int64_t> n = InvalidArgument("quantity is neither a string nor a number");
  if (v.type() == json_type::number) {
    Result<int64_t> units = WholeJsonNumber(v);
    if (!units.ok()) return units.status();
    n = *units * 1000;
  } else {
    n = ParseQuantityMilli(v.get_string());
  }
  if (n.ok() && *n < 0) return InvalidArgument("quantity is negative");
  return n;
}

// What one container asks for.
struct ContainerRequests {
  int64_t gpus = 0;
  int64_t cpu_milli = 0;
  int64_t memory_bytes = 0;
  bool sidecar = false;  // an init container with restartPolicy: Always
};

// One resource list entry's amount, in the unit ContainerRequests keeps it.
struct ResourceAmounts {
  int64_t gpus = -1;  // -1: not listed
  int64_t cpu_milli = -1;
  int64_t memory_bytes = -1;
};

Status DecodeResourceList(value list, std::string_view kind, ResourceAmounts& out) {
  for (auto quantity : list.get_object()) {
    const std::string_view name = quantity.unescaped_key();
    if (name == kGpuResource) {
      Result<int64_t> parsed = WholeQuantity(quantity.value());
      if (!parsed.ok()) {
        return parsed.status().WithContext(std::string(kind) + "[" + std::string(name) + "]");
      }
      out.gpus = *parsed;
    } else if (name == "cpu" || name == "memory") {
      Result<int64_t> parsed = MilliQuantity(quantity.value());
      if (!parsed.ok()) {
        return parsed.status().WithContext(std::string(kind) + "[" + std::string(name) + "]");
      }
      if (name == "cpu") {
        out.cpu_milli = *parsed;
      } else {
        out.memory_bytes = *parsed / 1000 + (*parsed % 1000 != 0 ? 1 : 0);  // whole bytes, up
      }
    }
  }
  return Status::Ok();
}

// One container's requests. The API server defaults each request to its limit when only the
// limit is set; reading the limit where a request is missing gives the same answer for objects
// that did not pass through it (snapshot files, tests).
Result<ContainerRequests> DecodeContainer(value container) {
  ContainerRequests out;
  ResourceAmounts requests;
  ResourceAmounts limits;
  for (auto field : container.get_object()) {
    const std::string_view key = field.unescaped_key();
    if (key == "restartPolicy") {
      out.sidecar = StringOrEmpty(field.value()) == "Always";
    } else if (key == "resources") {
      value resources = field.value();
      if (resources.type() == json_type::null) continue;
      for (auto kind : resources.get_object()) {
        const std::string_view kind_key = kind.unescaped_key();
        if (kind_key != "requests" && kind_key != "limits") continue;
        value list = kind.value();
        if (list.type() == json_type::null) continue;
        if (Status s =
                DecodeResourceList(list, kind_key, kind_key == "requests" ? requests : limits);
            !s.ok()) {
          return s;
        }
      }
    }
  }
  auto pick = [](int64_t request, int64_t limit) {
    return request >= 0 ? request : std::max<int64_t>(limit, 0);
  };
  out.gpus = pick(requests.gpus, limits.gpus);
  out.cpu_milli = pick(requests.cpu_milli, limits.cpu_milli);
  out.memory_bytes = pick(requests.memory_bytes, limits.memory_bytes);
  return out;
}

Result<std::vector<ContainerRequests>> DecodeContainers(value list) {
  std::vector<ContainerRequests> out;
  if (list.type() == json_type::null) return out;
  for (auto container : list.get_array()) {
    Result<ContainerRequests> c = DecodeContainer(container.value());
    if (!c.ok()) return c.status();
    out.push_back(*c);
  }
  return out;
}

// kube-scheduler's effective request of one resource: regular containers plus sidecars run
// together; each plain init container runs alone with the sidecars started before it. A total
// beyond int64_t saturates at kGpuRequestOverflow, which RequirementsOf rejects like any other
// request above its limit.
int64_t EffectiveRequest(const std::vector<ContainerRequests>& containers,
                         const std::vector<ContainerRequests>& init,
                         int64_t ContainerRequests::*amount) {
  int64_t sum = 0;
  for (const ContainerRequests& c : containers) sum = SaturatingAdd(sum, c.*amount);
  int64_t sidecars = 0;
  int64_t init_peak = 0;
  for (const ContainerRequests& c : init) {
    if (c.sidecar) {
      sidecars = SaturatingAdd(sidecars, c.*amount);
      init_peak = std::max(init_peak, sidecars);
    } else {
      init_peak = std::max(init_peak, SaturatingAdd(sidecars, c.*amount));
    }
  }
  return std::max(SaturatingAdd(sum, sidecars), init_peak);
}

Status DecodePodMetadata(value metadata, bool with_labels, PodInfo& pod) {
  for (auto field : metadata.get_object()) {
    const std::string_view key = field.unescaped_key();
    if (key == "name") {
      pod.name = std::string(field.value().get_string().value());
    } else if (key == "namespace") {
      pod.namespace_name = std::string(field.value().get_string().value());
    } else if (key == "uid") {
      pod.uid = std::string(field.value().get_string().value());
    } else if (key == "resourceVersion") {
      pod.resource_version = std::string(StringOrEmpty(field.value()));
    } else if (key == "deletionTimestamp") {
      pod.deletion_requested = field.value().type() != json_type::null;
    } else if (key == "labels") {
      value labels = field.value();
      if (labels.type() == json_type::null) continue;
      for (auto label : labels.get_object()) {
        const std::string_view name = label.unescaped_key();
        const std::string_view text = StringOrEmpty(label.value());
        if (name == kLabelPodTemplateHash) pod.pod_template_hash = std::string(text);
        if (with_labels) pod.labels.emplace_back(std::string(name), std::string(text));
      }
      std::sort(pod.labels.begin(), pod.labels.end());
      // A repeated key (the API server never sends one): keep one.
      pod.labels.erase(std::unique(pod.labels.begin(), pod.labels.end(),
                                   [](const auto& a, const auto& b) { return a.first == b.first; }),
                       pod.labels.end());
    } else if (key == "annotations") {
      value annotations = field.value();
      if (annotations.type() == json_type::null) continue;
      for (auto annotation : annotations.get_object()) {
        const std::string_view name = annotation.unescaped_key();
        if (name.substr(0, kAnnotationPrefix.size()) != kAnnotationPrefix) continue;
        const std::string_view text = StringOrEmpty(annotation.value());
        if (text.size() > kMaxAnnotationValue) {
          return InvalidArgument("annotation " + std::string(name) + " is too large");
        }
        pod.annotations.emplace_back(std::string(name), std::string(text));
      }
    } else if (key == "ownerReferences") {
      value owners = field.value();
      if (owners.type() == json_type::null) continue;
      for (auto owner_value : owners.get_array()) {
        OwnerReference owner;
        for (auto f : owner_value.get_object()) {
          const std::string_view k = f.unescaped_key();
          if (k == "kind")
            owner.kind = std::string(StringOrEmpty(f.value()));
          else if (k == "name")
            owner.name = std::string(StringOrEmpty(f.value()));
          else if (k == "uid")
            owner.uid = std::string(StringOrEmpty(f.value()));
          else if (k == "controller")
            owner.controller = f.value().type() == json_type::boolean && f.value().get_bool();
        }
        pod.owners.push_back(std::move(owner));
      }
    }
  }
  return Status::Ok();
}

PodPhase ParsePhase(std::string_view phase) {
  if (phase == "Pending") return PodPhase::kPending;
  if (phase == "Running") return PodPhase::kRunning;
  if (phase == "Succeeded") return PodPhase::kSucceeded;
  if (phase == "Failed") return PodPhase::kFailed;
  return phase.empty() ? PodPhase::kPending : PodPhase::kUnknown;
}

}  // namespace

bool KeyEquals(std::string_view key, std::string_view expected) {
  if (key.size() != expected.size()) return false;
  for (size_t i = 0; i < key.size(); ++i) {
    const auto a = static_cast<unsigned char>(key[i]);
    const auto b = static_cast<unsigned char>(expected[i]);
    if (a != b && std::tolower(a) != std::tolower(b)) return false;
  }
  return true;
}

Result<PodInfo> DecodePodValue(value pod_value, bool with_labels) {
  PodInfo pod;
  std::vector<ContainerRequests> containers;
  std::vector<ContainerRequests> init;
  ResourceAmounts overhead;
  if (pod_value.type() != json_type::object) return InvalidArgument("Pod is not a JSON object");
  for (auto field : pod_value.get_object()) {
    const std::string_view key = field.unescaped_key();
    if (key == "metadata") {
      if (Status s = DecodePodMetadata(field.value(), with_labels, pod); !s.ok()) return s;
    } else if (key == "spec") {
      for (auto spec_field : field.value().get_object()) {
        const std::string_view spec_key = spec_field.unescaped_key();
        if (spec_key == "nodeName") {
          pod.node_name = std::string(StringOrEmpty(spec_field.value()));
        } else if (spec_key == "priority") {
          value priority = spec_field.value();
          if (priority.type() == json_type::null) continue;
          int64_t number = 0;
          if (priority.get_int64().get(number) != simdjson::SUCCESS ||
              number < std::numeric_limits<int32_t>::min() ||
              number > std::numeric_limits<int32_t>::max()) {
            return InvalidArgument("spec.priority is not a 32-bit integer");
          }
          pod.priority = static_cast<int32_t>(number);
        } else if (spec_key == "containers" || spec_key == "initContainers") {
          Result<std::vector<ContainerRequests>> list = DecodeContainers(spec_field.value());
          if (!list.ok())
            return list.status().WithContext(std::string("spec.") + std::string(spec_key));
          (spec_key == "containers" ? containers : init) = std::move(list).value();
        } else if (spec_key == "overhead") {
          // RuntimeClass overhead, which kube-scheduler adds to the pod's requests.
          value list = spec_field.value();
          if (list.type() == json_type::null) continue;
          if (Status s = DecodeResourceList(list, "spec.overhead", overhead); !s.ok()) return s;
        }
      }
    } else if (key == "status") {
      value status = field.value();
      if (status.type() == json_type::null) continue;
      for (auto status_field : status.get_object()) {
        const std::string_view status_key = status_field.unescaped_key();
        if (status_key == "phase") {
          pod.phase = ParsePhase(StringOrEmpty(status_field.value()));
        } else if (status_key == "nominatedNodeName") {
          pod.nominated_node = std::string(StringOrEmpty(status_field.value()));
        } else if (status_key == "containerStatuses") {
          value statuses = status_field.value();
          if (statuses.type() == json_type::null) continue;
          bool all = true;
          bool any = false;
          for (auto container : statuses.get_array()) {
            any = true;
            bool terminated = false;
            for (auto f : container.get_object()) {
              if (f.unescaped_key().value() != "state") continue;
              value state = f.value();
              if (state.type() != json_type::object) continue;
              for (auto s : state.get_object()) {
                terminated |= s.unescaped_key().value() == "terminated";
              }
            }
            all &= terminated;
          }
          pod.containers_terminated = any && all;
        }
      }
    }
  }
  if (pod.name.empty()) return InvalidArgument("Pod has no metadata.name");
  if (pod.namespace_name.empty()) pod.namespace_name = "default";
  pod.gpu_request = EffectiveRequest(containers, init, &ContainerRequests::gpus);
  pod.cpu_request_milli =
      SaturatingAdd(EffectiveRequest(containers, init, &ContainerRequests::cpu_milli),
                    std::max<int64_t>(overhead.cpu_milli, 0));
  pod.memory_request_bytes =
      SaturatingAdd(EffectiveRequest(containers, init, &ContainerRequests::memory_bytes),
                    std::max<int64_t>(overhead.memory_bytes, 0));
  return pod;
}

Result<NodeInfo> DecodeNodeValue(value node_value) {
  NodeInfo node;
  if (node_value.type() != json_type::object) return InvalidArgument("Node is not a JSON object");
  for (auto field : node_value.get_object()) {
    const std::string_view key = field.unescaped_key();
    if (key == "metadata") {
      for (auto meta : field.value().get_object()) {
        const std::string_view meta_key = meta.unescaped_key();
        if (meta_key == "name") {
          node.name = std::string(meta.value().get_string().value());
        } else if (meta_key == "resourceVersion") {
          node.resource_version = std::string(StringOrEmpty(meta.value()));
        } else if (meta_key == "labels") {
          value labels = meta.value();
          if (labels.type() == json_type::null) continue;
          for (auto label : labels.get_object()) {
            const std::string_view name = label.unescaped_key();
            std::optional<std::string>* slot = nullptr;
            if (name == kLabelGpuCount)
              slot = &node.label_gpu_count;
            else if (name == kLabelGpuReplicas)
              slot = &node.label_gpu_replicas;
            else if (name == kLabelGpuProduct)
              slot = &node.label_gpu_product;
            else if (name == kLabelGpuMemory)
              slot = &node.label_gpu_memory;
            else if (name == kLabelTopologyProfile)
              slot = &node.label_topology_profile;
            if (slot != nullptr) *slot = std::string(StringOrEmpty(label.value()));
          }
        } else if (meta_key == "annotations") {
          value annotations = meta.value();
          if (annotations.type() == json_type::null) continue;
          for (auto annotation : annotations.get_object()) {
            if (annotation.unescaped_key().value() != kAnnotationTopology) continue;
            const std::string_view text = StringOrEmpty(annotation.value());
            node.annotation_topology =
                text.size() > kMaxAnnotationValue
                    ? Result<MachineTopology>(InvalidArgument("document is larger than 256 KiB"))
                    : ParseTopologyDocument(text);
          }
        }
      }
    } else if (key == "status") {
      value status = field.value();
      if (status.type() == json_type::null) continue;
      for (auto status_field : status.get_object()) {
        if (status_field.unescaped_key().value() != "allocatable") continue;
        value allocatable = status_field.value();
        if (allocatable.type() == json_type::null) continue;
        ResourceAmounts amounts;
        if (Status s = DecodeResourceList(allocatable, "status.allocatable", amounts); !s.ok()) {
          return s;
        }
        node.allocatable_gpus = std::max<int64_t>(amounts.gpus, 0);
        node.allocatable_cpu_milli = std::max<int64_t>(amounts.cpu_milli, 0);
        node.allocatable_memory_bytes = std::max<int64_t>(amounts.memory_bytes, 0);
      }
    }
  }
  if (node.name.empty()) return InvalidArgument("Node has no metadata.name");
  return node;
}

// metav1.LabelSelector as LabelSelectorAsSelector reads it; a selector it rejects is an error
// (the budget then matches nothing), not a broken object.
Result<LabelSelector> DecodeLabelSelector(value selector_value) {
  LabelSelector selector;
  for (auto field : selector_value.get_object()) {
    const std::string_view key = field.unescaped_key();
    value v = field.value();
    if (v.type() == json_type::null) continue;
    if (key == "matchLabels") {
      for (auto label : v.get_object()) {
        selector.requirements.push_back({std::string(label.unescaped_key().value()),
                                         LabelRequirement::Operator::kIn,
                                         {std::string(StringOrEmpty(label.value()))}});
      }
    } else if (key == "matchExpressions") {
      for (auto expression : v.get_array()) {
        LabelRequirement r;
        std::string op;
        for (auto f : expression.get_object()) {
          const std::string_view k = f.unescaped_key();
          if (k == "key") {
            r.key = std::string(StringOrEmpty(f.value()));
          } else if (k == "operator") {
            op = std::string(StringOrEmpty(f.value()));
          } else if (k == "values") {
            value values = f.value();
            if (values.type() == json_type::null) continue;
            for (auto item : values.get_array()) r.values.emplace_back(StringOrEmpty(item.value()));
          }
        }
        if (op == "In" || op == "NotIn") {
          r.op = op == "In" ? LabelRequirement::Operator::kIn : LabelRequirement::Operator::kNotIn;
          if (r.values.empty()) {
            return InvalidArgument("for 'in', 'notin' operators, values set can't be empty");
          }
        } else if (op == "Exists" || op == "DoesNotExist") {
          r.op = op == "Exists" ? LabelRequirement::Operator::kExists
                                : LabelRequirement::Operator::kDoesNotExist;
          if (!r.values.empty()) {
            return InvalidArgument("values set must be empty for exists and does not exist");
          }
        } else {
          return InvalidArgument("\"" + op.substr(0, 64) +
                                 "\" is not a valid label selector operator");
        }
        if (r.key.empty()) return InvalidArgument("a label selector requirement has no key");
        selector.requirements.push_back(std::move(r));
      }
    }
  }
  return selector;
}

Result<DisruptionBudgetInfo> DecodeDisruptionBudgetValue(value budget_value) {
  DisruptionBudgetInfo budget;
  if (budget_value.type() != json_type::object) {
    return InvalidArgument("PodDisruptionBudget is not a JSON object");
  }
  for (auto field : budget_value.get_object()) {
    const std::string_view key = field.unescaped_key();
    value v = field.value();
    if (v.type() == json_type::null) continue;
    if (key == "metadata") {
      for (auto meta : v.get_object()) {
        const std::string_view k = meta.unescaped_key();
        if (k == "name") {
          budget.name = std::string(StringOrEmpty(meta.value()));
        } else if (k == "namespace") {
          budget.namespace_name = std::string(StringOrEmpty(meta.value()));
        } else if (k == "uid") {
          budget.uid = std::string(StringOrEmpty(meta.value()));
        } else if (k == "resourceVersion") {
          budget.resource_version = std::string(StringOrEmpty(meta.value()));
        }
      }
    } else if (key == "spec") {
      for (auto spec : v.get_object()) {
        if (spec.unescaped_key().value() != "selector") continue;
        value selector = spec.value();
        if (selector.type() == json_type::null) continue;
        Result<LabelSelector> decoded = DecodeLabelSelector(selector);
        if (decoded.ok()) {
          budget.selector = std::move(decoded).value();
        } else {
          budget.selector_error = decoded.status().message();
        }
      }
    } else if (key == "status") {
      for (auto status : v.get_object()) {
        const std::string_view k = status.unescaped_key();
        value sv = status.value();
        if (sv.type() == json_type::null) continue;
        if (k == "disruptionsAllowed") {
          int64_t n = 0;
          if (sv.get_int64().get(n) != simdjson::SUCCESS || n < 0 ||
              n > std::numeric_limits<int32_t>::max()) {
            return InvalidArgument("status.disruptionsAllowed is not a non-negative int32");
          }
          budget.disruptions_allowed = static_cast<int32_t>(n);
        } else if (k == "disruptedPods") {
          for (auto pod : sv.get_object()) {
            budget.disrupted_pods.emplace_back(pod.unescaped_key().value());
          }
        }
      }
    }
  }
  if (budget.name.empty()) return InvalidArgument("PodDisruptionBudget has no metadata.name");
  if (budget.uid.empty()) return InvalidArgument("PodDisruptionBudget has no metadata.uid");
  std::sort(budget.disrupted_pods.begin(), budget.disrupted_pods.end());
  return budget;
}

struct K8sDecoder::Impl {
  simdjson::ondemand::parser parser;
  simdjson::padded_string buffer;

  // `json` as one whole `kind` object, read by `decode` (a value -> Result<T>); trailing content
  // and malformed JSON are errors that name the kind.
  template <typename T, typename Decode>
  Result<T> DecodeWhole(std::string_view json, std::string_view kind, Decode decode) {
    try {
      buffer = simdjson::padded_string(json);
      simdjson::ondemand::document doc = parser.iterate(buffer);
      Result<T> decoded = decode(doc.get_value());
      if (decoded.ok() && !AtEnd(doc)) {
        return InvalidArgument("trailing content after the " + std::string(kind) + " object");
      }
      return decoded;
    } catch (const simdjson::simdjson_error& e) {
      return InvalidArgument("malformed " + std::string(kind) + " JSON: " + e.what());
    }
  }
};

K8sDecoder::K8sDecoder() : impl_(std::make_unique<Impl>()) {}
K8sDecoder::~K8sDecoder() = default;

Result<PodInfo> K8sDecoder::DecodePod(std::string_view json, bool with_labels) {
  return impl_->DecodeWhole<PodInfo>(
      json, "Pod", [with_labels](value v) { return DecodePodValue(v, with_labels); });
}

Result<NodeInfo> K8sDecoder::DecodeNode(std::string_view json) {
  return impl_->DecodeWhole<NodeInfo>(json, "Node", [](value v) { return DecodeNodeValue(v); });
}

Result<DisruptionBudgetInfo> K8sDecoder::DecodeDisruptionBudget(std::string_view json) {
  return impl_->DecodeWhole<DisruptionBudgetInfo>(
      json, "PodDisruptionBudget", [](value v) { return DecodeDisruptionBudgetValue(v); });
}

}  // namespace gputopo::codec
