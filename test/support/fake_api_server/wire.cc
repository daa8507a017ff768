// Wire helpers of the fake API server: JSON access, metadata accessors, query-value parsers.
#include "test/support/fake_api_server/wire.h"

#include <cctype>
#include <charconv>
#include <ctime>

namespace gputopo::testing::fake_api {
namespace {

template <typename T>
std::optional<T> ParseNumber(std::string_view s) {
  T value = 0;
  if (s.empty()) return std::nullopt;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return value;
}

}  // namespace

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

const json* Find(const json& j, std::initializer_list<const char*> path) {
  const json* current = &j;
  for (const char* key : path) {
    if (!current->is_object()) return nullptr;
    auto it = current->find(key);
    if (it == current->end()) return nullptr;
    current = &*it;
  }
  return current;
}

std::string Str(const json& j, std::initializer_list<const char*> path) {
  const json* value = Find(j, path);
  return value != nullptr && value->is_string() ? value->get<std::string>() : std::string();
}

std::string Name(const json& object) { return Str(object, {"metadata", "name"}); }
std::string Namespace(const json& object) { return Str(object, {"metadata", "namespace"}); }
std::string ResourceVersionOf(const json& object) {
  return Str(object, {"metadata", "resourceVersion"});
}
std::string PodKey(const std::string& namespace_name, const std::string& name) {
  return namespace_name + "/" + name;
}

json StripTypeMeta(const json& object) {
  json copy = object;
  copy.erase("kind");
  copy.erase("apiVersion");
  return copy;
}

void Preserve(json& to, const json& from, const char* section, const char* field) {
  const json* value = Find(from, {section, field});
  json& target = to[section];
  if (value != nullptr) {
    target[field] = *value;
  } else {
    target.erase(field);
  }
}

void DropEmptyMetadataFields(json& object) {
  json* metadata =
      object.is_object() && object.contains("metadata") ? &object["metadata"] : nullptr;
  if (metadata == nullptr || !metadata->is_object()) return;
  for (const char* field : {"labels", "annotations", "finalizers", "ownerReferences"}) {
    auto it = metadata->find(field);
    if (it != metadata->end() && (it->is_null() || (it->is_structured() && it->empty()))) {
      metadata->erase(it);
    }
  }
}

std::string ToLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string ToUpper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::optional<uint64_t> ParseUint(std::string_view s) { return ParseNumber<uint64_t>(s); }
std::optional<int64_t> ParseInt(std::string_view s) { return ParseNumber<int64_t>(s); }

std::optional<bool> ParseBool(std::string_view s) {
  if (s == "1" || s == "t" || s == "T" || s == "TRUE" || s == "true" || s == "True") return true;
  if (s == "0" || s == "f" || s == "F" || s == "FALSE" || s == "false" || s == "False") {
    return false;
  }
  return std::nullopt;
}

std::vector<std::string> SplitPath(const std::string& path) {
  std::vector<std::string> segments;
  size_t begin = 0;
  while (begin <= path.size()) {
    size_t end = path.find('/', begin);
    if (end == std::string::npos) end = path.size();
    if (end > begin) segments.push_back(path.substr(begin, end - begin));
    begin = end + 1;
  }
  return segments;
}

std::string Rfc3339(std::chrono::system_clock::time_point t) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(t);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char buffer[32];
  std::strftime(buffer, sizeof(buffer), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buffer;
}

}  // namespace gputopo::testing::fake_api
