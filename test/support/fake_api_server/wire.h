// Wire helpers of the fake API server: JSON access that never throws, the object-metadata
// accessors every handler uses, and the small parsers for query values (Go's strconv rules).
//
// Pure functions; thread-safe.
#ifndef GPUTOPO_TEST_SUPPORT_FAKE_API_SERVER_WIRE_H_
#define GPUTOPO_TEST_SUPPORT_FAKE_API_SERVER_WIRE_H_

#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gputopo::testing::fake_api {

using nlohmann::json;
using JsonPtr = std::shared_ptr<const json>;

// Compact JSON; invalid UTF-8 is replaced rather than thrown on.
std::string Dump(const json& j);

// The value at `path` (object keys), or nullptr when any step is missing or not an object.
const json* Find(const json& j, std::initializer_list<const char*> path);
// The string at `path`, or "" when it is missing or not a string.
std::string Str(const json& j, std::initializer_list<const char*> path);

std::string Name(const json& object);       // metadata.name
std::string Namespace(const json& object);  // metadata.namespace
std::string ResourceVersionOf(const json& object);
// The store key of a pod: "namespace/name".
std::string PodKey(const std::string& namespace_name, const std::string& name);

// A copy without kind and apiVersion (list items carry no TypeMeta).
json StripTypeMeta(const json& object);
// Copies `section.field` of `from` into `to`, or removes it from `to` when `from` lacks it.
void Preserve(json& to, const json& from, const char* section, const char* field);
// Go's omitempty: drops empty or null labels, annotations, finalizers and ownerReferences.
void DropEmptyMetadataFields(json& object);

std::string ToLower(std::string_view s);
std::string ToUpper(std::string_view s);
std::string_view Trim(std::string_view s);
// The whole of `s` as a decimal number; nullopt for empty input, junk, a sign or overflow.
std::optional<uint64_t> ParseUint(std::string_view s);
std::optional<int64_t> ParseInt(std::string_view s);
// Go's strconv.ParseBool.
std::optional<bool> ParseBool(std::string_view s);
// The non-empty segments of a URL path.
std::vector<std::string> SplitPath(const std::string& path);
// "2006-01-02T15:04:05Z", UTC, whole seconds (metav1.Time).
std::string Rfc3339(std::chrono::system_clock::time_point t);

}  // namespace gputopo::testing::fake_api

#endif  // GPUTOPO_TEST_SUPPORT_FAKE_API_SERVER_WIRE_H_
