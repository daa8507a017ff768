#include "src/kube/watch_protocol.h"

#include <simdjson.h>

#include "src/codec/k8s_ondemand.h"

namespace gputopo::kube {
namespace {

using simdjson::ondemand::json_type;
using simdjson::ondemand::object;
using simdjson::ondemand::value;

std::string MetadataResourceVersion(value metadata) {
  if (metadata.type() != json_type::object) return "";
  for (auto field : metadata.get_object()) {
    if (field.unescaped_key().value() == "resourceVersion") {
      value v = field.value();
      return v.type() == json_type::string ? std::string(v.get_string().value()) : "";
    }
  }
  return "";
}

}  // namespace

struct WatchProtocolParser::Impl {
  simdjson::ondemand::parser parser;
  std::string buffer;

  simdjson::ondemand::document Iterate(std::string_view text) {
    buffer.reserve(text.size() + simdjson::SIMDJSON_PADDING);
    buffer.assign(text);
    return parser.iterate(
        simdjson::padded_string_view(buffer.data(), buffer.size(), buffer.capacity()));
  }
};

WatchProtocolParser::WatchProtocolParser() : impl_(std::make_unique<Impl>()) {}
WatchProtocolParser::~WatchProtocolParser() = default;

Result<ListPage> WatchProtocolParser::ParseList(std::string_view body) {
  ListPage page;
  try {
    simdjson::ondemand::document doc = impl_->Iterate(body);
    for (auto field : doc.get_object()) {
      const std::string_view key = field.unescaped_key();
      if (key == "metadata") {
        value metadata = field.value();
        if (metadata.type() != json_type::object) continue;
        for (auto m : metadata.get_object()) {
          const std::string_view mk = m.unescaped_key();
          value v = m.value();
          if (v.type() != json_type::string) continue;
          if (mk == "resourceVersion") page.resource_version = std::string(v.get_string().value());
          if (mk == "continue") page.continue_token = std::string(v.get_string().value());
        }
      } else if (key == "items") {
        value items = field.value();
        if (items.type() == json_type::null) continue;
        for (auto item : items.get_array()) {
          object o = item.get_object();
          page.items.emplace_back(o.raw_json().value());
        }
      }
    }
  } catch (const simdjson::simdjson_error& e) {
    return InvalidArgument(std::string("malformed list: ") + e.what());
  }
  return page;
}

Result<WatchEvent> WatchProtocolParser::ParseEvent(std::string_view line) {
  WatchEvent event;
  bool have_type = false;
  bool have_object = false;
  try {
    simdjson::ondemand::document doc = impl_->Iterate(line);
    for (auto field : doc.get_object()) {
      const std::string_view key = field.unescaped_key();
      if (key == "type") {
        const std::string_view type = field.value().get_string();
        have_type = true;
        if (type == "ADDED")
          event.type = WatchEventType::kAdded;
        else if (type == "MODIFIED")
          event.type = WatchEventType::kModified;
        else if (type == "DELETED")
          event.type = WatchEventType::kDeleted;
        else if (type == "BOOKMARK")
          event.type = WatchEventType::kBookmark;
        else if (type == "ERROR")
          event.type = WatchEventType::kError;
        else
          return InvalidArgument("unknown watch event type " + std::string(type));
      } else if (key == "object") {
        object o = field.value().get_object();
        // First pass: what we need from the object; then its raw text for the decoder.
        for (auto f : o) {
          const std::string_view k = f.unescaped_key();
          if (k == "metadata") {
            event.resource_version = MetadataResourceVersion(f.value());
          } else if (k == "code") {
            value v = f.value();
            if (v.type() == json_type::number) event.code = static_cast<int>(v.get_int64());
          } else if (k == "message") {
            value v = f.value();
            if (v.type() == json_type::string) event.message = std::string(v.get_string().value());
          }
        }
        event.object = std::string(o.raw_json().value());
        have_object = true;
      }
    }
    if (!codec::AtEnd(doc)) return InvalidArgument("trailing content after the watch event");
  } catch (const simdjson::simdjson_error& e) {
    return InvalidArgument(std::string("malformed watch event: ") + e.what());
  }
  if (!have_type || !have_object) return InvalidArgument("watch event without type or object");
  return event;
}

}  // namespace gputopo::kube
