#include "src/codec/preemption_codec.h"

#include <simdjson.h>

#include "src/codec/extender_codec.h"
#include "src/codec/k8s_ondemand.h"

namespace gputopo::extender {
namespace {

using codec::KeyEquals;
using simdjson::ondemand::json_type;
using simdjson::ondemand::value;

// An upper bound on victims per node: no node runs more pods than this (kubelet's max-pods is
// 110 by default, and a few thousand at most in practice).
constexpr size_t kMaxVictimsPerNode = 10000;

Status ReadNumPdbViolations(value v, PreemptionNode& node) {
  if (v.type() == json_type::null) return Status::Ok();
  int64_t n = 0;
  if (v.get_int64().get(n) != simdjson::SUCCESS || n < 0) {
    node.error = "NumPDBViolations is not a non-negative integer";
    return Status::Ok();
  }
  node.pdb_violations = n;
  return Status::Ok();
}

// One {"Pods": [...], "NumPDBViolations": n} entry; `full` when Pods are Pod objects.
Status ReadVictims(value entry, bool full, PreemptionNode& node) {
  if (entry.type() == json_type::null) {
    node.error = "no victims listed";
    return Status::Ok();
  }
  if (entry.type() != json_type::object) return InvalidArgument("victims entry is not an object");
  for (auto field : entry.get_object()) {
    const std::string_view key = field.unescaped_key();
    value v = field.value();
    if (KeyEquals(key, "NumPDBViolations")) {
      if (Status s = ReadNumPdbViolations(v, node); !s.ok()) return s;
      continue;
    }
    if (!KeyEquals(key, "Pods") || v.type() == json_type::null) continue;
    if (v.type() != json_type::array) return InvalidArgument("Pods is not an array");
    for (auto item : v.get_array()) {
      if (node.victim_uids.size() >= kMaxVictimsPerNode) {
        return InvalidArgument("more than " + std::to_string(kMaxVictimsPerNode) +
                               " victims on one node");
      }
      if (full) {
        Result<PodInfo> pod = codec::DecodePodValue(item.value());
        if (!pod.ok()) {
          if (node.error.empty()) node.error = "victim: " + pod.status().message();
          continue;
        }
        if (pod->uid.empty() && node.error.empty()) node.error = "a victim has no metadata.uid";
        node.victim_uids.push_back(pod->uid);
        node.victim_priorities.push_back(pod->priority);
        continue;
      }
      std::string uid;
      value meta = item.value();
      if (meta.type() != json_type::object) return InvalidArgument("MetaPod is not an object");
      for (auto f : meta.get_object()) {
        if (!KeyEquals(f.unescaped_key(), "UID")) continue;
        value u = f.value();
        if (u.type() == json_type::string) uid = std::string(u.get_string().value());
      }
      if (uid.empty() && node.error.empty()) node.error = "a victim has no UID";
      node.victim_uids.push_back(std::move(uid));
    }
  }
  if (node.victim_uids.empty() && node.error.empty()) node.error = "no victims listed";
  return Status::Ok();
}

Status ReadNodeMap(value map, bool full, PreemptionArgs& args) {
  if (map.type() == json_type::null) return Status::Ok();
  if (map.type() != json_type::object) {
    return InvalidArgument(std::string(full ? "NodeNameToVictims" : "NodeNameToMetaVictims") +
                           " is not an object");
  }
  for (auto field : map.get_object()) {
    PreemptionNode node;
    node.name = std::string(field.unescaped_key().value());
    if (Status s = ReadVictims(field.value(), full, node); !s.ok()) {
      return s.WithContext("node " + node.name);
    }
    if (node.name.empty()) node.error = "empty node name";
    args.nodes.push_back(std::move(node));
  }
  return Status::Ok();
}

}  // namespace

Result<PreemptionArgs> ParsePreemptionArgs(std::string_view body) {
  PreemptionArgs args;
  bool has_pod = false;
  try {
    simdjson::ondemand::parser parser;
    simdjson::padded_string padded(body);
    simdjson::ondemand::document doc = parser.iterate(padded);
    if (doc.type() != json_type::object) {
      return InvalidArgument("ExtenderPreemptionArgs must be a JSON object");
    }
    for (auto field : doc.get_object()) {
      const std::string_view key = field.unescaped_key();
      value v = field.value();
      if (KeyEquals(key, "Pod")) {
        if (v.type() == json_type::null) continue;
        Result<PodInfo> pod = codec::DecodePodValue(v);
        if (!pod.ok()) return pod.status().WithContext("ExtenderPreemptionArgs.Pod");
        args.pod = std::move(pod).value();
        has_pod = true;
      } else if (KeyEquals(key, "NodeNameToVictims")) {
        if (v.type() != json_type::null) args.full_pods = true;
        if (Status s = ReadNodeMap(v, true, args); !s.ok()) return s;
      } else if (KeyEquals(key, "NodeNameToMetaVictims")) {
        if (Status s = ReadNodeMap(v, false, args); !s.ok()) return s;
      }
    }
    if (!codec::AtEnd(doc)) return InvalidArgument("trailing content after ExtenderPreemptionArgs");
  } catch (const simdjson::simdjson_error& e) {
    return InvalidArgument(std::string("malformed ExtenderPreemptionArgs JSON: ") + e.what());
  }
  if (!has_pod) return InvalidArgument("ExtenderPreemptionArgs has no Pod");
  return args;
}

std::string WritePreemptionResult(const std::vector<MetaVictims>& nodes) {
  std::string out = R"({"NodeNameToMetaVictims":{)";
  bool first_node = true;
  for (const MetaVictims& node : nodes) {
    if (!first_node) out += ',';
    first_node = false;
    AppendJsonString(out, node.node);
    out += R"(:{"Pods":[)";
    bool first = true;
    if (node.uids != nullptr) {
      for (const std::string& uid : *node.uids) {
        out += first ? R"({"UID":)" : R"(,{"UID":)";
        first = false;
        AppendJsonString(out, uid);
        out += '}';
      }
    }
    out += R"(],"NumPDBViolations":)";
    out += std::to_string(node.pdb_violations);
    out += '}';
  }
  out += "}}";
  return out;
}

}  // namespace gputopo::extender
