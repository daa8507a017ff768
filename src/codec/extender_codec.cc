#include "src/codec/extender_codec.h"

#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "gputopo/short_copy.h"
#include "src/codec/json_text.h"
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

// A NodeNames element. Node names never hold escapes, so the name is read as the raw token
// between its quotes (a view into the body, nothing copied or unescaped). With `check`, a name
// with a backslash is unescaped; without, the caller checks all names for one at once
// (NamesHoldBackslash). Throws simdjson_error when the element is not a string.
std::string_view NodeNameOf(value element, bool check) {
  std::string_view raw = element.raw_json_token();  // with any whitespace after it
  while (!raw.empty() &&
         (raw.back() == ' ' || raw.back() == '\n' || raw.back() == '\t' || raw.back() == '\r')) {
    raw.remove_suffix(1);
  }
  if (raw.size() >= 2 && raw.front() == '"' && raw.back() == '"') {
    const std::string_view inner = raw.substr(1, raw.size() - 2);
    if (!check || inner.find('\\') == std::string_view::npos) return inner;
  }
  return element.get_string();
}

// Whether a NodeNames entry taken unchecked (NodeNameOf without `check`) may hold a backslash:
// one search of the text from the first entry to the last, in place of one per entry (each a
// call to memchr on a short name: about 15 us a request at 5000 names). True as well when the
// entries are not views of `text` in order, which unchecked entries always are.
bool NamesHoldBackslash(std::string_view text, const std::vector<std::string_view>& names) {
  if (names.empty()) return false;
  const std::string_view first = names.front();
  const std::string_view last = names.back();
  if (!ExtenderArgs::IsRawTokenOf(text, first) || !ExtenderArgs::IsRawTokenOf(text, last) ||
      last.data() < first.data()) {
    return true;
  }
  const std::string_view span(first.data(),
                              static_cast<size_t>(last.data() + last.size() - first.data()));
  return span.find('\\') != std::string_view::npos;
}

}  // namespace

struct ExtenderRequestParser::Impl {
  explicit Impl(size_t max_bytes) : parser(max_bytes) {}
  simdjson::ondemand::parser parser;
  std::string buffer;  // body copy with simdjson's padding as spare capacity
  ExtenderArgs args;
  std::vector<std::string_view> listed_names;  // NodeNames, before they become args.node_names
};

// A name list emptied for the next request, keeping its capacity up to kKeptNames entries: at
// 5000 nodes, growing the lists anew cost every request about a dozen allocations and copies.
constexpr size_t kKeptNames = 1 << 14;
void Recycle(std::vector<std::string_view>& names) {
  if (names.capacity() > kKeptNames) {
    std::vector<std::string_view>().swap(names);
  } else {
    names.clear();
  }
}

ExtenderRequestParser::ExtenderRequestParser(size_t max_bytes)
    : impl_(std::make_unique<Impl>(max_bytes)) {}
ExtenderRequestParser::~ExtenderRequestParser() = default;

Result<const ExtenderArgs*> ExtenderRequestParser::ParseArgs(std::string_view body) {
  return ParseArgs(body, body.size());
}

Result<const ExtenderArgs*> ExtenderRequestParser::ParseArgs(std::string_view body,
                                                             size_t readable) {
  Result<const ExtenderArgs*> args = ParseOnce(body, readable, false);
  if (args.ok() && !(*args)->nodes_mode && NamesHoldBackslash((*args)->text, (*args)->node_names)) {
    return ParseOnce(body, readable, true);
  }
  return args;
}

Result<const ExtenderArgs*> ExtenderRequestParser::ParseOnce(std::string_view body, size_t readable,
                                                             bool check_names) {
  ExtenderArgs& args = impl_->args;
  std::vector<std::string_view> node_names = std::move(args.node_names);
  std::vector<std::string_view> node_objects = std::move(args.node_objects);
  args = ExtenderArgs{};
  Recycle(node_names);
  Recycle(node_objects);
  args.node_names = std::move(node_names);
  args.node_objects = std::move(node_objects);
  std::vector<std::string_view>& listed_names = impl_->listed_names;  // from NodeNames
  Recycle(listed_names);
  // simdjson reads up to SIMDJSON_PADDING bytes past the end.
  simdjson::padded_string_view input(body.data(), body.size(), readable);
  if (readable < body.size() + simdjson::SIMDJSON_PADDING) {
    std::string& buffer = impl_->buffer;
    buffer.reserve(body.size() + simdjson::SIMDJSON_PADDING);
    buffer.assign(body);
    input = simdjson::padded_string_view(buffer.data(), buffer.size(), buffer.capacity());
  }
  args.text = std::string_view(input.data(), input.size());
  bool have_pod = false;
  bool have_names = false;
  try {
    simdjson::ondemand::document doc = impl_->parser.iterate(input);
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
        for (auto element : v.get_array()) {
          listed_names.push_back(NodeNameOf(element.value(), check_names));
        }
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
    args.node_names.swap(listed_names);
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

namespace {

// The reply writers' output: a string written through a raw pointer, growing only when a
// Reserve finds too little room, so that writing thousands of nodes costs a few stores each.
class ReplyBuffer {
 public:
  explicit ReplyBuffer(size_t capacity) { out_.resize(std::max<size_t>(capacity, 64)); }
  // Room for `bytes` more bytes of Raw, Char and Int output.
  void Reserve(size_t bytes) {
    if (out_.size() - at_ < bytes) [[unlikely]]
      Grow(bytes);
  }
  void Char(char c) { out_[at_++] = c; }
  void Raw(std::string_view text) {  // std::copy: an empty view may have no data at all
    std::copy(text.begin(), text.end(), out_.data() + at_);
    at_ += text.size();
  }
  // A JSON string literal; reserves its own room.
  void String(std::string_view text) {
    if (codec::NeedsJsonEscaping(text)) {
      std::string escaped;
      codec::AppendJsonEscaped(text, escaped);
      Reserve(escaped.size() + 2);
      Char('"');
      Raw(escaped);
      Char('"');
      return;
    }
    Reserve(text.size() + 2);
    Char('"');
    Raw(text);
    Char('"');
  }
  std::string Take() && {
    out_.resize(at_);
    return std::move(out_);
  }
  // Direct writes: Room() is where the next byte goes; after writing at most the bytes Reserved,
  // CommitTo(end) counts the bytes written up to `end`.
  char* Room() { return out_.data() + at_; }
  void CommitTo(const char* end) { at_ = static_cast<size_t>(end - out_.data()); }

 private:
  [[gnu::noinline]] void Grow(size_t bytes) { out_.resize(std::max(out_.size() * 2, at_ + bytes)); }

  std::string out_;
  size_t at_ = 0;  // bytes written
};

// Writes a score (kube-scheduler's extender scores are 0..10, MaxExtenderPriority) and returns
// the end; needs 11 bytes of room.
[[gnu::always_inline]] inline char* WriteScore(char* to, int score) {
  if (score >= 0 && score <= 9) {
    *to = static_cast<char>('0' + score);
    return to + 1;
  }
  if (score == 10) {
    to[0] = '1';
    to[1] = '0';
    return to + 2;
  }
  return std::to_chars(to, to + 11, score).ptr;
}

}  // namespace

void AppendJsonString(std::string& out, std::string_view text) {
  out.push_back('"');
  if (codec::NeedsJsonEscaping(text)) {
    codec::AppendJsonEscaped(text, out);
  } else {
    out.append(text);
  }
  out.push_back('"');
}

std::string WriteFilterResult(const ExtenderArgs& args,
                              const std::vector<FilterOutcome>& outcomes) {
  size_t estimate = 128;
  for (size_t i = 0; i < outcomes.size(); ++i) {
    estimate += args.node_names[i].size() + 4;
    if (!outcomes[i].passed && !outcomes[i].omitted) estimate += outcomes[i].reason.size() + 4;
    if (args.nodes_mode && outcomes[i].passed) estimate += args.node_objects[i].size() + 1;
  }
  ReplyBuffer out(estimate);
  auto append_failed = [&](bool unresolvable) {
    out.Reserve(2);
    out.Char('{');
    bool first = true;
    for (size_t i = 0; i < outcomes.size(); ++i) {
      if (outcomes[i].passed || outcomes[i].omitted || outcomes[i].unresolvable != unresolvable) {
        continue;
      }
      if (!first) {
        out.Reserve(1);
        out.Char(',');
      }
      first = false;
      out.String(args.node_names[i]);
      out.Reserve(1);
      out.Char(':');
      out.String(outcomes[i].reason);
    }
    out.Reserve(1);
    out.Char('}');
  };
  out.Reserve(64);
  out.Raw("{\"Nodes\":");
  if (args.nodes_mode) {
    out.Raw("{\"metadata\":{},\"items\":[");
    bool first = true;
    for (size_t i = 0; i < outcomes.size(); ++i) {
      if (!outcomes[i].passed) continue;
      out.Reserve(args.node_objects[i].size() + 1);
      if (!first) out.Char(',');
      first = false;
      out.Raw(args.node_objects[i]);
    }
    out.Reserve(32);
    out.Raw("]},\"NodeNames\":[");
  } else {
    out.Raw("null,\"NodeNames\":[");
  }
  {
    // NodeNames in both modes: a scheduler with a node cache reads these, one without reads
    // Nodes, so the reply is right whichever way the extender is registered.
    // Consecutive NodeNames entries that passed and sit in the request text as `"a","b"` (raw
    // tokens three bytes apart, ExtenderArgs::IsRawToken) are copied as one block of that text:
    // it is exactly what writing each name would give, at one copy per run instead of per name.
    auto address = [](std::string_view name) { return reinterpret_cast<uintptr_t>(name.data()); };
    const std::vector<std::string_view>& names = args.node_names;
    bool first = true;
    for (size_t i = 0; i < outcomes.size(); ++i) {
      if (!outcomes[i].passed) continue;
      if (!first) {
        out.Reserve(1);
        out.Char(',');
      }
      first = false;
      if (args.nodes_mode || !args.IsRawToken(names[i])) {
        out.String(names[i]);
        continue;
      }
      size_t last = i;
      while (last + 1 < outcomes.size() && outcomes[last + 1].passed &&
             address(names[last + 1]) == address(names[last]) + names[last].size() + 3 &&
             args.IsRawToken(names[last + 1])) {
        ++last;
      }
      const char* begin = names[i].data() - 1;  // the opening quote
      const std::string_view run(
          begin, static_cast<size_t>(names[last].data() + names[last].size() + 1 - begin));
      out.Reserve(run.size());
      out.Raw(run);
      i = last;
    }
    out.Reserve(20);
    out.Raw("],\"FailedNodes\":");
  }
  append_failed(false);
  out.Reserve(40);
  out.Raw(",\"FailedAndUnresolvableNodes\":");
  append_failed(true);
  out.Reserve(16);
  out.Raw(",\"Error\":\"\"}");
  return std::move(out).Take();
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
  return WritePriorityList(ExtenderArgs{}, scores);
}

std::string WritePriorityList(const ExtenderArgs& args,
                              const std::vector<std::pair<std::string_view, int>>& scores) {
  size_t estimate = 2;
  for (const auto& score : scores) estimate += score.first.size() + 32;
  ReplyBuffer out(estimate);
  out.Char('[');
  constexpr std::string_view kHost = ",{\"Host\":";
  constexpr std::string_view kScore = ",\"Score\":";
  // Locals, not reads through `scores` and `args`: the writes through a char pointer below may
  // alias anything, which would make the compiler reload those every entry.
  const size_t count = scores.size();
  const std::pair<std::string_view, int>* entries = scores.data();
  const std::string_view text = args.text;
  for (size_t i = 0; i < count; ++i) {
    const std::string_view host = entries[i].first;
    const int score = entries[i].second;
    if (ExtenderArgs::IsRawTokenOf(text, host)) {
      // Nothing to escape, and its quotes right around it: the entry is written in one go.
      out.Reserve(kHost.size() + host.size() + 2 + kScore.size() + 12);
      char* at = out.Room();
      if (i > 0) *at++ = ',';
      at = std::copy(kHost.begin() + 1, kHost.end(), at);
      at = CopyShort(at, std::string_view(host.data() - 1, host.size() + 2));
      at = std::copy(kScore.begin(), kScore.end(), at);
      at = WriteScore(at, score);
      *at++ = '}';
      out.CommitTo(at);
      continue;
    }
    out.Reserve(kHost.size());
    out.Raw(i > 0 ? kHost : kHost.substr(1));
    out.String(host);
    out.Reserve(kScore.size() + 12);
    out.Raw(kScore);
    out.CommitTo(WriteScore(out.Room(), score));
    out.Char('}');
  }
  out.Reserve(1);
  out.Char(']');
  return std::move(out).Take();
}

std::string WriteBindingResult(std::string_view error) {
  std::string out = "{\"Error\":";
  AppendJsonString(out, error);
  out += "}";
  return out;
}

}  // namespace gputopo::extender
