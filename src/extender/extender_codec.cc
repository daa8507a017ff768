#include "src/extender/extender_codec.h"

#include <simdjson.h>

#include <cstdio>

#include "src/codec/k8s_ondemand.h"

namespace gputopo::extender {
namespace {

using codec::KeyEquals;
using simdjson::ondemand::json_type;
using simdjson::ondemand::value;

// Reads metadata.name of a Node object and leaves the object consumed; returns its raw JSON.
std::pair<std::string_view, std::string_view> NodeNameAndRaw(value item) {
  simdjson::ondemand::object node = item.get_object();
  std::string_view name;
  for (auto field : node) {
    if (field.unescaped_key().value() != "metadata") continue;
    for (auto meta : field.value().get_object()) {
      if (meta.unescaped_key().value() == "name") {
        name = meta.value().get_string();
        break;
      }
    }
    break;
  }
  const std::string_view raw = node.raw_json();
  return {name, raw};
}

}  // namespace

struct ExtenderRequestParser::Impl {
  explicit Impl(size_t max_bytes) : parser(max_bytes) {}
  simdjson::ondemand::parser parser;
  std::string buffer;  // body copy with simdjson's padding as spare capacity
  ExtenderArgs args;
};

ExtenderRequestParser::ExtenderRequestParser(size_t max_bytes)
    : impl_(std::make_unique<Impl>(max_bytes)) {}
ExtenderRequestParser::~ExtenderRequestParser() = default;

Result<const ExtenderArgs*> ExtenderRequestParser::ParseArgs(std::string_view body) {
  ExtenderArgs& args = impl_->args;
  args = ExtenderArgs{};
  std::string& buffer = impl_->buffer;
  buffer.reserve(body.size() + simdjson::SIMDJSON_PADDING);
  buffer.assign(body);  // simdjson reads up to SIMDJSON_PADDING bytes past the end
  bool have_pod = false;
  bool have_names = false;
  std::vector<std::string_view> listed_names;  // from NodeNames
  try {
    simdjson::ondemand::document doc = impl_->parser.iterate(
        simdjson::padded_string_view(buffer.data(), buffer.size(), buffer.capacity()));
    if (doc.type() != json_type::object)
      return InvalidArgument("ExtenderArgs must be a JSON object");
    for (auto field : doc.get_object()) {
      const std::string_view key = field.unescaped_key();
      value v = field.value();
      if (KeyEquals(key, "Pod")) {
        if (v.type() == json_type::null) continue;
        Result<PodInfo> pod = codec::DecodePodValue(v);
        if (!pod.ok()) return pod.status().WithContext("Pod");
        args.pod = std::move(pod).value();
        have_pod = true;
      } else if (KeyEquals(key, "Nodes")) {
        args.node_names.clear();  // a repeated key: the last one wins, as in Go
        args.node_objects.clear();
        args.nodes_mode = false;
        if (v.type() == json_type::null) continue;
        for (auto list_field : v.get_object()) {
          if (!KeyEquals(list_field.unescaped_key().value(), "items")) continue;
          value items = list_field.value();
          if (items.type() == json_type::null) continue;
          for (auto item : items.get_array()) {
            auto [name, raw] = NodeNameAndRaw(item.value());
            if (name.empty())
              return InvalidArgument("Nodes.items has a Node without metadata.name");
            args.node_names.push_back(name);
            args.node_objects.push_back(raw);
          }
        }
        args.nodes_mode = true;
      } else if (KeyEquals(key, "NodeNames")) {
        listed_names.clear();  // a repeated key: the last one wins, as in Go
        if (v.type() == json_type::null) continue;
        for (auto name : v.get_array()) listed_names.push_back(name.get_string());
        have_names = true;
      }
    }
    if (!codec::AtEnd(doc)) return InvalidArgument("trailing content after ExtenderArgs");
  } catch (const simdjson::simdjson_error& e) {
    return InvalidArgument(std::string("malformed ExtenderArgs JSON: ") + e.what());
  }
  if (!have_pod) return InvalidArgument("ExtenderArgs has no Pod");
  // With both, the Node objects win: kube-scheduler without a node cache reads only those.
  if (!args.nodes_mode) {
    if (!have_names) return InvalidArgument("ExtenderArgs has neither Nodes nor NodeNames");
    args.node_names = std::move(listed_names);
  }
  return &args;
}

Result<BindingArgs> ParseBindingArgs(std::string_view body) {
  BindingArgs args;
  try {
    simdjson::ondemand::parser parser;
    simdjson::padded_string padded(body);
    simdjson::ondemand::document doc = parser.iterate(padded);
    if (doc.type() != json_type::object) {
      return InvalidArgument("ExtenderBindingArgs must be a JSON object");
    }
    for (auto field : doc.get_object()) {
      const std::string_view key = field.unescaped_key();
      value v = field.value();
      std::string* target = nullptr;
      if (KeyEquals(key, "PodName"))
        target = &args.pod_name;
      else if (KeyEquals(key, "PodNamespace"))
        target = &args.pod_namespace;
      else if (KeyEquals(key, "PodUID"))
        target = &args.pod_uid;
      else if (KeyEquals(key, "Node"))
        target = &args.node;
      if (target == nullptr || v.type() == json_type::null) continue;
      *target = std::string(v.get_string().value());
    }
    if (!codec::AtEnd(doc)) return InvalidArgument("trailing content after ExtenderBindingArgs");
  } catch (const simdjson::simdjson_error& e) {
    return InvalidArgument(std::string("malformed ExtenderBindingArgs JSON: ") + e.what());
  }
  if (args.pod_name.empty()) return InvalidArgument("ExtenderBindingArgs has no PodName");
  if (args.pod_namespace.empty()) return InvalidArgument("ExtenderBindingArgs has no PodNamespace");
  if (args.node.empty()) return InvalidArgument("ExtenderBindingArgs has no Node");
  return args;
}

void AppendJsonString(std::string& out, std::string_view text) {
  out.push_back('"');
  // Copy runs of characters that need no escaping in one go (node names never do).
  size_t run = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(text.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default: {
        char escaped[8];
        std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
        out += escaped;
      }
    }
  }
  out.append(text.data() + run, text.size() - run);
  out.push_back('"');
}

std::string WriteFilterResult(const ExtenderArgs& args,
                              const std::vector<FilterOutcome>& outcomes) {
  std::string out;
  size_t estimate = 128;
  for (size_t i = 0; i < args.node_names.size(); ++i) {
    estimate += args.node_names[i].size() + 4;
    if (args.nodes_mode && i < args.node_objects.size())
      estimate += args.node_objects[i].size() + 1;
  }
  out.reserve(estimate);
  auto append_failed = [&](bool unresolvable) {
    out.push_back('{');
    bool first = true;
    for (size_t i = 0; i < outcomes.size(); ++i) {
      if (outcomes[i].passed || outcomes[i].unresolvable != unresolvable) continue;
      if (!first) out.push_back(',');
      first = false;
      AppendJsonString(out, args.node_names[i]);
      out.push_back(':');
      AppendJsonString(out, outcomes[i].reason);
    }
    out.push_back('}');
  };
  out += "{\"Nodes\":";
  if (args.nodes_mode) {
    out += "{\"metadata\":{},\"items\":[";
    bool first = true;
    for (size_t i = 0; i < outcomes.size(); ++i) {
      if (!outcomes[i].passed) continue;
      if (!first) out.push_back(',');
      first = false;
      out += args.node_objects[i];
    }
    out += "]},\"NodeNames\":[";
  } else {
    out += "null,\"NodeNames\":[";
  }
  {
    // NodeNames in both modes: a scheduler with a node cache reads these, one without reads
    // Nodes, so the reply is right whichever way the extender is registered.
    bool first = true;
    for (size_t i = 0; i < outcomes.size(); ++i) {
      if (!outcomes[i].passed) continue;
      if (!first) out.push_back(',');
      first = false;
      AppendJsonString(out, args.node_names[i]);
    }
    out += "]";
  }
  out += ",\"FailedNodes\":";
  append_failed(false);
  out += ",\"FailedAndUnresolvableNodes\":";
  append_failed(true);
  out += ",\"Error\":\"\"}";
  return out;
}

std::string WriteFilterError(std::string_view error) {
  std::string out =
      "{\"Nodes\":null,\"NodeNames\":null,\"FailedNodes\":{},"
      "\"FailedAndUnresolvableNodes\":{},\"Error\":";
  AppendJsonString(out, error);
  out += "}";
  return out;
}

std::string WritePriorityList(const std::vector<std::pair<std::string_view, int>>& scores) {
  std::string out;
  out.reserve(32 + scores.size() * 40);
  out.push_back('[');
  for (size_t i = 0; i < scores.size(); ++i) {
    if (i > 0) out.push_back(',');
    out += "{\"Host\":";
    AppendJsonString(out, scores[i].first);
    out += ",\"Score\":";
    out += std::to_string(scores[i].second);
    out.push_back('}');
  }
  out.push_back(']');
  return out;
}

std::string WriteBindingResult(std::string_view error) {
  std::string out = "{\"Error\":";
  AppendJsonString(out, error);
  out += "}";
  return out;
}

}  // namespace gputopo::extender
