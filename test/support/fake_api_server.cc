// FakeApiServer implementation.
//
// Faithful to kube-apiserver (what a client can observe):
// - List: {"kind":"PodList"|"NodeList","apiVersion":"v1","metadata":{"resourceVersion"},"items"}
//   with kind/apiVersion stripped from items; limit/continue pagination over a consistent snapshot
//   taken at the first page (every page reports the first page's resourceVersion); continue tokens
//   in the real format (base64url of {"v":"meta.k8s.io/v1","rv":N,"start":"<key>\u0000"});
//   metadata.remainingItemCount when no selector is used; a token whose snapshot was compacted
//   gets 410 Expired; resourceVersion with continue is a 400; resourceVersion="0" is served from
//   the "watch cache" and ignores limit (kube-apiserver before 1.33); a resourceVersion newer
//   than the server's waits up to 3 s, then 504 "Too large resource version".
// - labelSelector (=, ==, !=, in, notin, exists, !key) and fieldSelector (=, ==, !=) on
//   the fields the real server supports for pods (metadata.name, metadata.namespace,
//   spec.nodeName, spec.restartPolicy, spec.schedulerName, spec.serviceAccountName,
//   spec.hostNetwork, status.phase, status.podIP, status.nominatedNodeName) and nodes
//   (metadata.name, spec.unschedulable); others: 400 "field label not supported: <f>".
// - Watch: chunked JSON lines {"type","object"} with kind/apiVersion on objects. resourceVersion
//   unset or "0": synthetic ADDED for every current object, then changes. resourceVersion=N: the
//   watch cache's rule, per resource: resumable from N >= oldest-1 where "oldest" is the oldest
//   retained event (or, while nothing was evicted since the cache's initial list, list RV + 1);
//   older gets HTTP 200 with one ERROR event carrying a 410 Expired Status "too old resource
//   version: N (M)", then the stream ends. A future N waits for events after N. With selectors,
//   an object that starts matching arrives as ADDED and one that stops matching as DELETED (with
//   the old content at the new resourceVersion), as the watch cache does. BOOKMARKs (only with
//   allowWatchBookmarks=true) carry the current RV in an otherwise empty object shaped like the
//   real one; one is also sent just before timeoutSeconds ends the stream cleanly.
// - PATCH of pods and nodes (application/merge-patch+json, RFC 7386): a stale
//   metadata.resourceVersion in the patch is a 409 Conflict "the object has been modified...";
//   a different metadata.uid is a 422 Invalid "metadata.uid: Invalid value: ...: field is
//   immutable" (the real server has no UID precondition for PATCH: the patched object fails
//   update validation); name changes, and a pod's namespace changes, are 400 (a node's namespace
//   is cleared); status changes through the main resource are silently dropped (pod and node
//   strategies); a pod's spec changes are 422 Forbidden (pod spec is immutable; a node's spec may
//   change); uid, creationTimestamp,
//   deletionTimestamp and generation are preserved; a patch that changes nothing is a no-op
//   (no resourceVersion bump, no event). Other patch types: 415.
// - pods/binding (and namespaces/{ns}/bindings): name mismatch 400; target validation as a 500
//   with no reason (the real handler returns a bare aggregate error); missing pod 404; UID and
//   resourceVersion preconditions as 409 with the real StorageError text; already assigned,
//   being deleted, or scheduling-gated pods 409 Conflict on "pods/binding"; success sets
//   spec.nodeName, merges the Binding's annotations into the pod's, upserts the PodScheduled
//   condition and answers 201 with a Success Status.
// - TokenReview and SubjectAccessReview creation (what delegated authentication and authorization
//   send): 201 with the review and its status; tokens and non-resource rules set by the test.
// - Status bodies for errors; 401 for a missing/wrong bearer token; 404 "the server could not find
//   the requested resource" for unknown paths and 405 for a known path with an unserved method.
// - Responses are gzip-compressed only for non-watch bodies of 128 KiB or more whose request
//   accepts gzip (APIResponseCompression); watch streams are never compressed.
//
// Simplified (deliberately):
// - Only core/v1 nodes, pods, pods/binding, bindings and event creation; no namespaces objects
//   (any namespace exists), no admission, no defaulting beyond status.phase=Pending, no
//   validation of object bodies beyond what is listed above, no RBAC, no managedFields.
// - The 410 window is counted in events, not time; continue-token snapshots are kept for the 64
//   most recent paginated lists (and all dropped by CompactHistory()).
// - resourceVersionMatch=Exact is served only for the current RV (older: 410); the real server
//   reads the past from etcd.
// - Watch timeoutSeconds unset means no server-side timeout (the real server picks a random one
//   of 30-60 min). sendInitialEvents (WatchList) is rejected as by a server with the feature off.
// - Strategic merge, JSON patch and apply patches are answered 415 with a message that says so.
// - Events are stored for Events() but cannot be listed or watched over HTTP.
// - Responses are always JSON (no protobuf/CBOR negotiation); /version, /healthz, /readyz and
//   /livez answer fixed bodies.
// - Stop() ends watches abruptly and shuts down the accepted sockets it finds in /proc/self/fd
//   (Linux), because httplib would otherwise hold an idle keep-alive connection, and Stop(), for
//   up to keep_alive_timeout_s.
#include "test/support/fake_api_server.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <charconv>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <deque>
#include <exception>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>
#include <utility>

namespace gputopo::testing {
namespace {

using nlohmann::json;
using SteadyClock = std::chrono::steady_clock;
using JsonPtr = std::shared_ptr<const json>;

constexpr size_t kMaxSnapshots = 64;
constexpr size_t kGzipThresholdBytes = 128 * 1024;
constexpr auto kBreakWatchesWait = std::chrono::seconds(5);
constexpr auto kStartWait = std::chrono::seconds(5);

constexpr const char* kAdded = "ADDED";
constexpr const char* kModified = "MODIFIED";
constexpr const char* kDeleted = "DELETED";

constexpr const char* kOptimisticLockMessage =
    "the object has been modified; please apply your changes to the latest version and try "
    "again";
constexpr const char* kContinueExpiredMessage =
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter, or use the continue token in this response "
    "to retrieve the remainder of the results. Continuing with the provided token results in an "
    "inconsistent list - objects that were created, modified, or deleted between the time the "
    "first chunk was returned and now may show up in the list.";
constexpr const char* kPodSpecForbidden =
    "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only "
    "additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set "
    "to 1 if it was previously negative)";

enum class Resource : size_t { kNodes = 0, kPods = 1 };
constexpr size_t kResourceCount = 2;
size_t Index(Resource r) { return static_cast<size_t>(r); }

struct ResourceInfo {
  const char* kind;
  const char* list_kind;
  const char* plural;
};
constexpr ResourceInfo kResourceInfo[kResourceCount] = {{"Node", "NodeList", "nodes"},
                                                        {"Pod", "PodList", "pods"}};
const ResourceInfo& Info(Resource r) { return kResourceInfo[Index(r)]; }

// --- JSON helpers (no exceptions escape them) ---

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
std::string Key(Resource r, const json& object) {
  return r == Resource::kPods ? PodKey(Namespace(object), Name(object)) : Name(object);
}

json StripTypeMeta(const json& object) {
  json copy = object;
  copy.erase("kind");
  copy.erase("apiVersion");
  return copy;
}

// Copies `path` of `from` into `to`, or removes it from `to` when `from` lacks it.
void Preserve(json& to, const json& from, const char* section, const char* field) {
  const json* value = Find(from, {section, field});
  json& target = to[section];
  if (value != nullptr) {
    target[field] = *value;
  } else {
    target.erase(field);
  }
}

// Go's omitempty: an empty map or list in these metadata fields is not serialised.
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

// --- Status bodies ---

struct ApiError {
  int code = 500;
  std::string reason;  // empty: omitted (StatusReasonUnknown)
  std::string message;
  json details;  // null: omitted
};

json StatusJson(const ApiError& error) {
  json status = {{"kind", "Status"},
                 {"apiVersion", "v1"},
                 {"metadata", json::object()},
                 {"status", "Failure"}};
  if (!error.message.empty()) status["message"] = error.message;
  if (!error.reason.empty()) status["reason"] = error.reason;
  if (!error.details.is_null()) status["details"] = error.details;
  status["code"] = error.code;
  return status;
}

std::string ReasonForCode(int code) {
  switch (code) {
    case 400:
      return "BadRequest";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "NotFound";
    case 405:
      return "MethodNotAllowed";
    case 406:
      return "NotAcceptable";
    case 409:
      return "Conflict";
    case 410:
      return "Expired";
    case 413:
      return "RequestEntityTooLarge";
    case 415:
      return "UnsupportedMediaType";
    case 422:
      return "Invalid";
    case 429:
      return "TooManyRequests";
    case 500:
      return "InternalError";
    case 503:
      return "ServiceUnavailable";
    case 504:
      return "Timeout";
    default:
      return "";
  }
}

ApiError BadRequest(std::string message) { return {400, "BadRequest", std::move(message), {}}; }

ApiError NotFound(const std::string& plural, const std::string& name) {
  return {404, "NotFound", plural + " \"" + name + "\" not found",
          json{{"name", name}, {"kind", plural}}};
}

ApiError NoSuchPath() {
  return {404, "NotFound", "the server could not find the requested resource", json::object()};
}

ApiError MethodNotAllowed() {
  return {405, "MethodNotAllowed",
          "the server does not allow this method on the requested resource", json::object()};
}

ApiError Conflict(const std::string& qualified_resource, const std::string& name,
                  const std::string& why) {
  return {409, "Conflict",
          "Operation cannot be fulfilled on " + qualified_resource + " \"" + name + "\": " + why,
          json{{"name", name}, {"kind", qualified_resource}}};
}

ApiError Expired(std::string message) { return {410, "Expired", std::move(message), {}}; }

// One field error, as errors.NewInvalid renders it.
ApiError Invalid(const std::string& kind, const std::string& name, const std::string& field,
                 const std::string& cause_reason, const std::string& cause_message) {
  json cause = {{"reason", cause_reason}, {"message", cause_message}, {"field", field}};
  return {422, "Invalid", kind + " \"" + name + "\" is invalid: " + field + ": " + cause_message,
          json{{"name", name}, {"kind", kind}, {"causes", json::array({cause})}}};
}

ApiError InvalidListOptions(const std::string& field, const std::string& message) {
  return Invalid("ListOptions.meta.k8s.io", "", field, "FieldValueInvalid", message);
}

ApiError UnsupportedMediaType(std::string message) {
  return {415, "UnsupportedMediaType", std::move(message), {}};
}

std::string StorageInvalidObject(const std::string& namespace_name, const std::string& name,
                                 const std::string& message) {
  return "StorageError: invalid object, Code: 4, Key: /registry/pods/" + namespace_name + "/" +
         name + ", ResourceVersion: 0, AdditionalErrorMsg: " + message;
}

// --- Small parsers ---

std::string ToLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// The whole of `s` as a decimal T; nullopt for anything else (empty, signs T lacks, junk,
// overflow).
template <typename T>
std::optional<T> ParseNumber(std::string_view s) {
  T value = 0;
  if (s.empty()) return std::nullopt;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return value;
}

std::optional<uint64_t> ParseUint(std::string_view s) { return ParseNumber<uint64_t>(s); }
std::optional<int64_t> ParseInt(std::string_view s) { return ParseNumber<int64_t>(s); }

// Go's strconv.ParseBool.
std::optional<bool> ParseBool(std::string_view s) {
  if (s == "1" || s == "t" || s == "T" || s == "TRUE" || s == "true" || s == "True") return true;
  if (s == "0" || s == "f" || s == "F" || s == "FALSE" || s == "false" || s == "False") {
    return false;
  }
  return std::nullopt;
}

// The Content-Type's media type, lower-cased, without parameters.
std::string MediaType(const httplib::Request& req) {
  std::string value = req.get_header_value("Content-Type");
  const size_t semicolon = value.find(';');
  if (semicolon != std::string::npos) value.resize(semicolon);
  return ToLower(Trim(value));
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

std::string Base64UrlEncode(std::string_view in) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  uint32_t buffer = 0;
  int bits = 0;
  for (unsigned char c : in) {
    buffer = (buffer << 8) | c;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out += kAlphabet[(buffer >> bits) & 63u];
    }
  }
  if (bits > 0) out += kAlphabet[(buffer << (6 - bits)) & 63u];
  return out;
}

std::optional<std::string> Base64UrlDecode(std::string_view in) {
  std::string out;
  uint32_t buffer = 0;
  int bits = 0;
  for (char c : in) {
    uint32_t v = 0;
    if (c >= 'A' && c <= 'Z') {
      v = static_cast<uint32_t>(c - 'A');
    } else if (c >= 'a' && c <= 'z') {
      v = static_cast<uint32_t>(c - 'a' + 26);
    } else if (c >= '0' && c <= '9') {
      v = static_cast<uint32_t>(c - '0' + 52);
    } else if (c == '-' || c == '+') {
      v = 62;
    } else if (c == '_' || c == '/') {
      v = 63;
    } else if (c == '=') {
      break;
    } else {
      return std::nullopt;
    }
    buffer = (buffer << 6) | v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((buffer >> bits) & 0xFFu);
    }
  }
  return out;
}

struct ContinueToken {
  int64_t resource_version = 0;  // -1: continue from the latest state (inconsistent)
  std::string start;             // the first key of the next page
};

std::string EncodeContinue(int64_t resource_version, const std::string& start) {
  return Base64UrlEncode(
      Dump(json{{"v", "meta.k8s.io/v1"}, {"rv", resource_version}, {"start", start}}));
}

std::optional<ContinueToken> DecodeContinue(std::string_view token) {
  std::optional<std::string> raw = Base64UrlDecode(token);
  if (!raw) return std::nullopt;
  json j = json::parse(*raw, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || Str(j, {"v"}) != "meta.k8s.io/v1") return std::nullopt;
  const json* rv = Find(j, {"rv"});
  const json* start = Find(j, {"start"});
  if (rv == nullptr || !rv->is_number_integer() || start == nullptr || !start->is_string()) {
    return std::nullopt;
  }
  return ContinueToken{rv->get<int64_t>(), start->get<std::string>()};
}

// --- Selectors ---

struct LabelRequirement {
  enum class Op { kEquals, kNotEquals, kIn, kNotIn, kExists, kDoesNotExist };
  std::string key;
  Op op = Op::kExists;
  std::vector<std::string> values;

  bool Matches(const json* labels) const {
    std::optional<std::string> value;
    if (labels != nullptr && labels->is_object()) {
      auto it = labels->find(key);
      if (it != labels->end() && it->is_string()) value = it->get<std::string>();
    }
    const bool listed = value && std::find(values.begin(), values.end(), *value) != values.end();
    switch (op) {
      case Op::kEquals:
      case Op::kIn:
        return listed;
      case Op::kNotEquals:
      case Op::kNotIn:
        return !listed;
      case Op::kExists:
        return value.has_value();
      case Op::kDoesNotExist:
        return !value.has_value();
    }
    return false;
  }
};

struct FieldRequirement {
  std::string field;
  bool equals = true;
  std::string value;
};

std::string BoolField(const json& object, std::initializer_list<const char*> path) {
  const json* value = Find(object, path);
  return value != nullptr && value->is_boolean() && value->get<bool>() ? "true" : "false";
}

// The value of a selectable field, or nullopt when the real server does not support it.
std::optional<std::string> FieldValue(Resource r, const json& object, const std::string& field) {
  if (field == "metadata.name") return Name(object);
  if (r == Resource::kNodes) {
    if (field == "spec.unschedulable") return BoolField(object, {"spec", "unschedulable"});
    return std::nullopt;
  }
  if (field == "metadata.namespace") return Namespace(object);
  if (field == "spec.hostNetwork") return BoolField(object, {"spec", "hostNetwork"});
  static constexpr std::pair<const char*, std::pair<const char*, const char*>> kStringFields[] = {
      {"spec.nodeName", {"spec", "nodeName"}},
      {"spec.restartPolicy", {"spec", "restartPolicy"}},
      {"spec.schedulerName", {"spec", "schedulerName"}},
      {"spec.serviceAccountName", {"spec", "serviceAccountName"}},
      {"status.phase", {"status", "phase"}},
      {"status.podIP", {"status", "podIP"}},
      {"status.nominatedNodeName", {"status", "nominatedNodeName"}},
  };
  for (const auto& [name, path] : kStringFields) {
    if (field == name) return Str(object, {path.first, path.second});
  }
  return std::nullopt;
}

// Parses a fieldSelector; returns the error message on failure.
std::optional<std::string> ParseFieldSelector(std::string_view selector, Resource r,
                                              std::vector<FieldRequirement>* out) {
  if (Trim(selector).empty()) return std::nullopt;
  size_t begin = 0;
  while (begin <= selector.size()) {
    size_t end = selector.find(',', begin);
    if (end == std::string_view::npos) end = selector.size();
    const std::string_view term = Trim(selector.substr(begin, end - begin));
    FieldRequirement requirement;
    size_t op = 0;
    if ((op = term.find("!=")) != std::string_view::npos) {
      requirement.equals = false;
      requirement.value = std::string(term.substr(op + 2));
    } else if ((op = term.find("==")) != std::string_view::npos) {
      requirement.value = std::string(term.substr(op + 2));
    } else if ((op = term.find('=')) != std::string_view::npos) {
      requirement.value = std::string(term.substr(op + 1));
    } else {
      return "invalid selector: '" + std::string(selector) + "'; can't understand '" +
             std::string(term) + "'";
    }
    requirement.field = std::string(Trim(term.substr(0, op)));
    if (!FieldValue(r, json::object(), requirement.field)) {
      return "field label not supported: " + requirement.field;
    }
    out->push_back(std::move(requirement));
    begin = end + 1;
  }
  return std::nullopt;
}

// Parses a labelSelector; returns the error message on failure.
std::optional<std::string> ParseLabelSelector(std::string_view s,
                                              std::vector<LabelRequirement>* out) {
  size_t i = 0;
  auto skip_space = [&] {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  };
  auto read_while = [&](auto predicate) {
    const size_t begin = i;
    while (i < s.size() && predicate(s[i])) ++i;
    return std::string(s.substr(begin, i - begin));
  };
  auto key_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ||
           c == '/';
  };
  auto value_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  };
  auto error = [&](const std::string& expected) {
    return std::optional<std::string>("unable to parse requirement: found '" +
                                      std::string(s.substr(std::min(i, s.size()))) +
                                      "', expected: " + expected);
  };
  skip_space();
  if (i == s.size()) return std::nullopt;
  for (;;) {
    skip_space();
    LabelRequirement requirement;
    if (i < s.size() && s[i] == '!') {
      ++i;
      skip_space();
      requirement.key = read_while(key_char);
      if (requirement.key.empty()) return error("identifier");
      requirement.op = LabelRequirement::Op::kDoesNotExist;
    } else {
      requirement.key = read_while(key_char);
      if (requirement.key.empty()) return error("identifier");
      skip_space();
      if (i == s.size() || s[i] == ',') {
        requirement.op = LabelRequirement::Op::kExists;
      } else if (s.compare(i, 2, "!=") == 0 || s[i] == '=') {
        const bool not_equals = s[i] == '!';
        requirement.op =
            not_equals ? LabelRequirement::Op::kNotEquals : LabelRequirement::Op::kEquals;
        i += (not_equals || s.compare(i, 2, "==") == 0) ? 2 : 1;
        skip_space();
        requirement.values.push_back(read_while(value_char));
      } else {
        const std::string word =
            read_while([](char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; });
        if (word == "in") {
          requirement.op = LabelRequirement::Op::kIn;
        } else if (word == "notin") {
          requirement.op = LabelRequirement::Op::kNotIn;
        } else {
          return error("'=', '!=', '==', 'in', 'notin'");
        }
        skip_space();
        if (i >= s.size() || s[i] != '(') return error("'('");
        ++i;
        for (;;) {
          skip_space();
          requirement.values.push_back(read_while(value_char));
          skip_space();
          if (i < s.size() && s[i] == ',') {
            ++i;
            continue;
          }
          if (i < s.size() && s[i] == ')') {
            ++i;
            break;
          }
          return error("',' or ')'");
        }
      }
    }
    out->push_back(std::move(requirement));
    skip_space();
    if (i == s.size()) return std::nullopt;
    if (s[i] != ',') return error("','");
    ++i;
  }
}

struct Filter {
  std::string namespace_name;  // empty: all namespaces
  std::vector<LabelRequirement> labels;
  std::vector<FieldRequirement> fields;

  bool has_selectors() const { return !labels.empty() || !fields.empty(); }

  bool Matches(Resource r, const json& object) const {
    if (!namespace_name.empty() && Namespace(object) != namespace_name) return false;
    const json* object_labels = Find(object, {"metadata", "labels"});
    for (const LabelRequirement& requirement : labels) {
      if (!requirement.Matches(object_labels)) return false;
    }
    for (const FieldRequirement& requirement : fields) {
      const std::string value = FieldValue(r, object, requirement.field).value_or("");
      if ((value == requirement.value) != requirement.equals) return false;
    }
    return true;
  }
};

// --- Watch machinery ---

// One change to a resource, as the watch cache keeps it.
struct WatchRecord {
  const char* type;  // kAdded, kModified, kDeleted
  uint64_t resource_version;
  JsonPtr object;    // the new state; for DELETED the final state (at the delete's RV)
  JsonPtr previous;  // the state before (MODIFIED, DELETED); null for ADDED
};
using RecordPtr = std::shared_ptr<const WatchRecord>;

struct History {
  std::deque<RecordPtr> events;
  bool evicted = false;                // events were dropped since list_resource_version
  uint64_t list_resource_version = 0;  // the watch cache's initial list
};

enum class BreakMode { kNone, kAbrupt, kMidEvent };

struct Watcher {
  // Constant after registration.
  Resource resource = Resource::kPods;
  Filter filter;
  bool bookmarks = false;
  SteadyClock::time_point deadline = SteadyClock::time_point::max();

  // Guarded by Impl::mu_.
  uint64_t start_resource_version = 0;  // only records after this one are delivered
  std::deque<RecordPtr> pending;
  std::string error_line;  // a terminal ERROR event; the stream ends after it
  SteadyClock::time_point next_bookmark;
  bool bookmark_requested = false;
  BreakMode break_mode = BreakMode::kNone;
  std::condition_variable cv;  // waited on with Impl::mu_
};

json BookmarkObject(Resource r, uint64_t resource_version) {
  json metadata = {{"resourceVersion", std::to_string(resource_version)},
                   {"creationTimestamp", nullptr}};
  if (r == Resource::kPods) {
    return {{"kind", "Pod"},
            {"apiVersion", "v1"},
            {"metadata", metadata},
            {"spec", {{"containers", nullptr}}},
            {"status", json::object()}};
  }
  return {{"kind", "Node"},
          {"apiVersion", "v1"},
          {"metadata", metadata},
          {"spec", json::object()},
          {"status",
           {{"daemonEndpoints", {{"kubeletEndpoint", {{"Port", 0}}}}},
            {"nodeInfo",
             {{"machineID", ""},
              {"systemUUID", ""},
              {"bootID", ""},
              {"kernelVersion", ""},
              {"osImage", ""},
              {"containerRuntimeVersion", ""},
              {"kubeletVersion", ""},
              {"kubeProxyVersion", ""},
              {"operatingSystem", ""},
              {"architecture", ""}}}}}};
}

std::string EventLine(const char* type, const json& object) {
  return Dump(json{{"type", type}, {"object", object}}) + "\n";
}

std::string BookmarkLine(Resource r, uint64_t resource_version) {
  return EventLine("BOOKMARK", BookmarkObject(r, resource_version));
}

// What `watcher` sees of `record` (the watch cache's convertToWatchEvent), or nullopt.
std::optional<std::string> EncodeFor(const Watcher& watcher, const WatchRecord& record) {
  const bool now_matches = std::string_view(record.type) != kDeleted &&
                           watcher.filter.Matches(watcher.resource, *record.object);
  const bool matched_before =
      record.previous != nullptr && watcher.filter.Matches(watcher.resource, *record.previous);
  if (now_matches && !matched_before) return EventLine(kAdded, *record.object);
  if (now_matches && matched_before) return EventLine(kModified, *record.object);
  if (!matched_before) return std::nullopt;
  json gone = *record.previous;
  gone["metadata"]["resourceVersion"] = std::to_string(record.resource_version);
  return EventLine(kDeleted, gone);
}

// --- Fault injection ---

struct FaultRule {
  std::string method;  // upper case, "*" or "WATCH"
  std::string path_prefix;
  int status = 0;
  std::chrono::milliseconds delay{0};
  int remaining = 0;
  bool hold = false;  // wait for ReleaseHeld() instead of `delay`

  bool Matches(const std::string& request_method, const std::string& path, bool watch) const {
    if (path.compare(0, path_prefix.size(), path_prefix) != 0) return false;
    if (method == "*") return true;
    if (method == "WATCH") return watch;
    return method == request_method;
  }
};

std::string Upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

ApiError InjectedError(int status) {
  const std::string text = "injected by FakeApiServer";
  switch (status) {
    case 429:
      return {429, "TooManyRequests", "Too many requests, please try again later.",
              json{{"retryAfterSeconds", 1}}};
    case 500:
      return {500, "InternalError", "Internal error occurred: " + text,
              json{{"causes", json::array({json{{"message", text}}})}}};
    case 504:
      return {504,
              "Timeout",
              "Timeout: request did not complete within requested timeout - " + text,
              {}};
    default:
      return {status, ReasonForCode(status), text, {}};
  }
}

// Shuts down this process's sockets whose local address is 127.0.0.1:`port` and that have a peer:
// the connections the server accepted. httplib keeps an idle keep-alive connection open until its
// keep-alive timeout even after Server::stop(), which would make Stop() wait that long.
void ShutDownAcceptedConnections(int port) {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return;
  std::vector<int> fds;
  while (const dirent* entry = readdir(dir)) {
    std::optional<uint64_t> fd = ParseUint(entry->d_name);
    if (fd && static_cast<int>(*fd) != dirfd(dir)) fds.push_back(static_cast<int>(*fd));
  }
  closedir(dir);
  for (int fd : fds) {
    sockaddr_in local{};
    socklen_t length = sizeof(local);
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) != 0 ||
        local.sin_family != AF_INET || ntohs(local.sin_port) != port) {
      continue;
    }
    sockaddr_in peer{};
    length = sizeof(peer);
    if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &length) != 0) continue;
    shutdown(fd, SHUT_RDWR);
  }
}

bool IsWatchRequest(const httplib::Request& req) {
  if (req.method != "GET" || !req.has_param("watch")) return false;
  return ParseBool(req.get_param_value("watch")).value_or(false);
}

}  // namespace

// ---------------------------------------------------------------------------------------------

class FakeApiServer::Impl {
 public:
  explicit Impl(Options options)
      : now_(options.now ? std::move(options.now)
                         : [] { return std::chrono::system_clock::now(); }),
        worker_threads_(std::max<size_t>(options.worker_threads, 2)),
        keep_alive_timeout_s_(std::max(options.keep_alive_timeout_s, 1)),
        keep_alive_max_count_(std::max<size_t>(options.keep_alive_max_count, 1)),
        too_large_wait_(options.too_large_resource_version_wait),
        write_latency_(options.write_latency),
        history_window_(std::max<size_t>(options.history_window, 1)),
        bookmark_interval_(std::max(options.bookmark_interval, std::chrono::milliseconds(1))) {
    for (History& history : history_) history.list_resource_version = resource_version_;
  }

  ~Impl() { Stop(); }

  // --- Lifecycle ---

  bool Start() {
    if (listen_thread_.joinable()) return true;
    server_ = std::make_unique<httplib::Server>();
    const size_t threads = worker_threads_;
    server_->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
    server_->set_keep_alive_timeout(keep_alive_timeout_s_);
    server_->set_keep_alive_max_count(keep_alive_max_count_);
    server_->set_tcp_nodelay(true);
    httplib::Server::Handler handler = [this](const httplib::Request& req, httplib::Response& res) {
      Handle(req, res);
    };
    const std::string any = ".*";
    server_->Get(any, handler);
    server_->Post(any, handler);
    server_->Put(any, handler);
    server_->Patch(any, handler);
    server_->Delete(any, handler);
    server_->Options(any, handler);
    server_->set_exception_handler(
        [](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
          Reply(res, ApiError{500, "InternalError", "Internal error occurred: exception", {}});
        });
    int bound_port = port_.load();
    if (bound_port == 0) {
      bound_port = server_->bind_to_any_port("127.0.0.1");
      if (bound_port <= 0) {
        server_.reset();
        return false;
      }
    } else if (!server_->bind_to_port("127.0.0.1", bound_port)) {
      server_.reset();
      return false;
    }
    port_ = bound_port;
    httplib::Server* server = server_.get();
    listen_thread_ = std::thread([server] { server->listen_after_bind(); });
    // stop() is a no-op until the accept loop runs, so wait for it.
    const auto deadline = SteadyClock::now() + kStartWait;
    while (!server_->is_running() && SteadyClock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return server_->is_running();
  }

  void Stop() {
    if (!listen_thread_.joinable()) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
      for (auto& [id, watcher] : watchers_) watcher->cv.notify_all();
      state_cv_.notify_all();
    }
    server_->stop();
    ShutDownAcceptedConnections(port_.load());
    listen_thread_.join();
    server_.reset();
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = false;
  }

  int port() const { return port_.load(); }

  // --- Test-side state ---

  std::optional<json> Create(Resource r, json object) {
    if (!object.is_object() || !object.contains("metadata") || !object["metadata"].is_object() ||
        Name(object).empty()) {
      return std::nullopt;
    }
    object["kind"] = Info(r).kind;
    object["apiVersion"] = "v1";
    json& metadata = object["metadata"];
    if (r == Resource::kPods && Namespace(object).empty()) metadata["namespace"] = "default";
    if (r == Resource::kNodes) metadata.erase("namespace");
    if (r == Resource::kPods) {
      if (!object.contains("status") || !object["status"].is_object()) {
        object["status"] = json::object();
      }
      if (!object["status"].contains("phase")) object["status"]["phase"] = "Pending";
    }
    std::lock_guard<std::mutex> lock(mu_);
    const std::string key = Key(r, object);
    if (objects_[Index(r)].count(key) != 0) return std::nullopt;
    if (Str(object, {"metadata", "uid"}).empty()) metadata["uid"] = NewUid();
    if (!metadata.contains("creationTimestamp") || metadata["creationTimestamp"].is_null()) {
      metadata["creationTimestamp"] = Rfc3339(now_());
    }
    BumpResourceVersion();
    JsonPtr stored = Put(r, key, std::move(object));
    Publish(r, kAdded, stored, nullptr);
    return *stored;
  }

  std::optional<json> Update(Resource r, const std::string& key,
                             const std::function<void(json&)>& mutate) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = objects_[Index(r)].find(key);
    if (it == objects_[Index(r)].end()) return std::nullopt;
    const JsonPtr previous = it->second;
    json updated = *previous;
    mutate(updated);
    if (!updated.is_object()) updated = *previous;
    if (!updated.contains("metadata") || !updated["metadata"].is_object()) {
      updated["metadata"] = (*previous)["metadata"];
    }
    updated["kind"] = Info(r).kind;
    updated["apiVersion"] = "v1";
    Preserve(updated, *previous, "metadata", "name");
    Preserve(updated, *previous, "metadata", "namespace");
    BumpResourceVersion();
    JsonPtr stored = Put(r, key, std::move(updated));
    Publish(r, kModified, stored, previous);
    return *stored;
  }

  bool Delete(Resource r, const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = objects_[Index(r)].find(key);
    if (it == objects_[Index(r)].end()) return false;
    const JsonPtr previous = it->second;
    objects_[Index(r)].erase(it);
    BumpResourceVersion();
    json final_state = *previous;
    final_state["metadata"]["resourceVersion"] = std::to_string(resource_version_);
    Publish(r, kDeleted, std::make_shared<const json>(std::move(final_state)), previous);
    return true;
  }

  std::optional<json> Get(Resource r, const std::string& key) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = objects_[Index(r)].find(key);
    if (it == objects_[Index(r)].end()) return std::nullopt;
    return *it->second;
  }

  std::vector<json> All(Resource r) const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<json> out;
    for (const auto& [key, object] : objects_[Index(r)]) out.push_back(*object);
    return out;
  }

  std::vector<json> Events() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<json> out;
    for (const auto& [key, event] : events_) out.push_back(event);
    return out;
  }

  std::string resource_version() const {
    std::lock_guard<std::mutex> lock(mu_);
    return std::to_string(resource_version_);
  }

  void SetBearerToken(std::string token) {
    std::lock_guard<std::mutex> lock(mu_);
    token_ = std::move(token);
  }

  void AddTokenUser(std::string token, std::string user, std::vector<std::string> groups) {
    std::lock_guard<std::mutex> lock(mu_);
    token_users_[std::move(token)] = {std::move(user), std::move(groups)};
  }

  void AllowNonResource(std::string subject, std::string verb, std::string path) {
    std::lock_guard<std::mutex> lock(mu_);
    non_resource_rules_.emplace_back(std::move(subject), std::move(verb), std::move(path));
  }

  // POST /apis/authentication.k8s.io/v1/tokenreviews: the TokenReview with its status, 201.
  void TokenReview(const httplib::Request& req, httplib::Response& res) {
    json body = json::parse(req.body, nullptr, /*allow_exceptions=*/false);
    if (body.is_discarded() || !body.is_object() || Str(body, {"kind"}) != "TokenReview") {
      return Reply(res, BadRequest("the object provided is unrecognized (must be of type "
                                   "TokenReview)"));
    }
    const std::string token = Str(body, {"spec", "token"});
    std::lock_guard<std::mutex> lock(mu_);
    auto it = token_users_.find(token);
    if (it == token_users_.end()) {
      body["status"] = {{"authenticated", false}, {"error", "invalid bearer token"}};
    } else {
      body["status"] = {{"authenticated", true},
                        {"user",
                         {{"username", it->second.first},
                          {"uid", "uid-" + it->second.first},
                          {"groups", it->second.second}}}};
    }
    Reply(res, 201, body);
  }

  // POST /apis/authorization.k8s.io/v1/subjectaccessreviews: nonResourceAttributes only, as
  // RBAC's nonResourceURLs: an exact path, or a prefix ending in '*'; the user or a group.
  void SubjectAccessReview(const httplib::Request& req, httplib::Response& res) {
    json body = json::parse(req.body, nullptr, /*allow_exceptions=*/false);
    if (body.is_discarded() || !body.is_object() || Str(body, {"kind"}) != "SubjectAccessReview") {
      return Reply(res, BadRequest("the object provided is unrecognized (must be of type "
                                   "SubjectAccessReview)"));
    }
    const std::string user = Str(body, {"spec", "user"});
    const std::string verb = Str(body, {"spec", "nonResourceAttributes", "verb"});
    const std::string path = Str(body, {"spec", "nonResourceAttributes", "path"});
    std::vector<std::string> subjects{user};
    if (const json* groups = Find(body, {"spec", "groups"}); groups && groups->is_array()) {
      for (const json& g : *groups) {
        if (g.is_string()) subjects.push_back(g.get<std::string>());
      }
    }
    bool allowed = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const auto& [subject, rule_verb, rule_path] : non_resource_rules_) {
        const bool path_ok = rule_path == path || (!rule_path.empty() && rule_path.back() == '*' &&
                                                   path.compare(0, rule_path.size() - 1, rule_path,
                                                                0, rule_path.size() - 1) == 0);
        if (path_ok && rule_verb == verb &&
            std::find(subjects.begin(), subjects.end(), subject) != subjects.end()) {
          allowed = true;
        }
      }
    }
    body["status"] =
        allowed ? json{{"allowed", true}, {"reason", "RBAC: allowed"}} : json{{"allowed", false}};
    Reply(res, 201, body);
  }

  // --- Faults ---

  void AddFailure(std::string method, std::string path_prefix, int status, int count) {
    if (count <= 0) return;
    std::lock_guard<std::mutex> lock(mu_);
    failures_.push_back(FaultRule{Upper(std::move(method)), std::move(path_prefix), status,
                                  std::chrono::milliseconds(0), count});
  }

  void AddDelay(std::string method, std::string path_prefix, std::chrono::milliseconds delay,
                int count) {
    if (count <= 0) return;
    std::lock_guard<std::mutex> lock(mu_);
    delays_.push_back(FaultRule{Upper(std::move(method)), std::move(path_prefix), 0, delay, count});
  }

  void AddHold(std::string method, std::string path_prefix, int count) {
    if (count <= 0) return;
    std::lock_guard<std::mutex> lock(mu_);
    delays_.push_back(FaultRule{Upper(std::move(method)), std::move(path_prefix), 0,
                                std::chrono::milliseconds(0), count, /*hold=*/true});
  }

  void ReleaseHeld() {
    std::lock_guard<std::mutex> lock(mu_);
    ++release_generation_;
    state_cv_.notify_all();
  }

  size_t held_requests() const {
    std::lock_guard<std::mutex> lock(mu_);
    return held_;
  }

  void SetHistoryWindow(size_t events) {
    std::lock_guard<std::mutex> lock(mu_);
    history_window_ = std::max<size_t>(events, 1);
    for (History& history : history_) TrimHistory(history);
  }

  void CompactHistory() {
    std::lock_guard<std::mutex> lock(mu_);
    for (History& history : history_) {
      history.events.clear();
      history.evicted = false;
      history.list_resource_version = resource_version_;
    }
    snapshots_.clear();
  }

  void SetBookmarkInterval(std::chrono::milliseconds interval) {
    std::lock_guard<std::mutex> lock(mu_);
    bookmark_interval_ = std::max(interval, std::chrono::milliseconds(1));
    const auto now = SteadyClock::now();
    for (auto& [id, watcher] : watchers_) {
      watcher->next_bookmark = std::min(watcher->next_bookmark, now + interval);
      watcher->cv.notify_all();
    }
  }

  void BreakWatches(BreakMode mode) {
    std::unique_lock<std::mutex> lock(mu_);
    std::set<uint64_t> broken;
    for (auto& [id, watcher] : watchers_) {
      watcher->break_mode = mode;
      watcher->cv.notify_all();
      broken.insert(id);
    }
    state_cv_.wait_for(lock, kBreakWatchesWait, [&] {
      return std::none_of(broken.begin(), broken.end(),
                          [&](uint64_t id) { return watchers_.count(id) != 0; });
    });
  }

  void SendBookmarks() {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [id, watcher] : watchers_) {
      if (!watcher->bookmarks) continue;
      watcher->bookmark_requested = true;
      watcher->cv.notify_all();
    }
  }

  // --- Observation ---

  size_t RequestCount(std::string_view method, std::string_view path) const {
    const std::string wanted = Upper(std::string(method));
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<size_t>(
        std::count_if(requests_.begin(), requests_.end(), [&](const RecordedRequest& r) {
          if (r.path != path) return false;
          return wanted == "WATCH" ? r.watch : r.method == wanted;
        }));
  }

  std::vector<RecordedRequest> Requests() const {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }

  size_t open_watches() const {
    std::lock_guard<std::mutex> lock(mu_);
    return watchers_.size();
  }

  bool WaitForOpenWatches(size_t count, std::chrono::milliseconds timeout) const {
    std::unique_lock<std::mutex> lock(mu_);
    return state_cv_.wait_for(lock, timeout, [&] { return watchers_.size() >= count; });
  }

 private:
  using Snapshot = std::vector<std::pair<std::string, JsonPtr>>;

  static void Reply(httplib::Response& res, int status, const json& body) {
    res.status = status;
    res.set_content(Dump(body), "application/json");
  }
  static void Reply(httplib::Response& res, const ApiError& error) {
    Reply(res, error.code, StatusJson(error));
  }

  // --- Request handling ---

  void Handle(const httplib::Request& req, httplib::Response& res) {
    RecordedRequest record;
    record.method = req.method;
    record.path = req.path;
    record.target = req.target;
    record.content_type = req.get_header_value("Content-Type");
    record.body = req.body;
    record.watch = IsWatchRequest(req);

    const bool watch = record.watch;
    size_t index = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      index = requests_.size();
      requests_.push_back(std::move(record));
    }

    ApplyDelay(req.method, req.path, watch);
    if (write_latency_.count() > 0 && (req.method == "POST" || req.method == "PATCH" ||
                                       req.method == "PUT" || req.method == "DELETE")) {
      std::this_thread::sleep_for(write_latency_);
    }
    if (!Authorized(req)) {
      Reply(res, ApiError{401, "Unauthorized", "Unauthorized", {}});
    } else if (std::optional<FaultRule> failure =
                   TakeRule(failures_, req.method, req.path, watch)) {
      Reply(res, InjectedError(failure->status));
      if (failure->status == 429) res.set_header("Retry-After", "1");
    } else {
      Route(req, res);
    }
    ChooseResponseEncoding(req, res, watch);

    std::lock_guard<std::mutex> lock(mu_);
    requests_[index].status = res.status;
  }

  // httplib compresses whenever the request accepts it; the real server compresses only
  // non-watch responses of 128 KiB or more, and only with gzip. httplib reads the request's
  // Accept-Encoding after the handler returns, so rewrite it here (the Request object is owned by
  // httplib's connection loop and is not const there).
  static void ChooseResponseEncoding(const httplib::Request& req, httplib::Response& res,
                                     bool watch) {
    auto& headers = const_cast<httplib::Request&>(req).headers;
    const std::string accepted = ToLower(req.get_header_value("Accept-Encoding"));
    const bool gzip = !watch && res.body.size() >= kGzipThresholdBytes &&
                      accepted.find("gzip") != std::string::npos;
    headers.erase("Accept-Encoding");
    if (gzip) headers.emplace("Accept-Encoding", "gzip");
  }

  void ApplyDelay(const std::string& method, const std::string& path, bool watch) {
    std::unique_lock<std::mutex> lock(mu_);
    std::optional<FaultRule> delay = TakeRuleLocked(delays_, method, path, watch);
    if (!delay) return;
    if (delay->hold) {
      const uint64_t generation = release_generation_;
      ++held_;
      state_cv_.wait(lock, [&] { return release_generation_ != generation || stopping_; });
      --held_;
      return;
    }
    state_cv_.wait_for(lock, delay->delay, [&] { return stopping_; });
  }

  std::optional<FaultRule> TakeRule(std::vector<FaultRule>& rules, const std::string& method,
                                    const std::string& path, bool watch) {
    std::lock_guard<std::mutex> lock(mu_);
    return TakeRuleLocked(rules, method, path, watch);
  }

  static std::optional<FaultRule> TakeRuleLocked(std::vector<FaultRule>& rules,
                                                 const std::string& method, const std::string& path,
                                                 bool watch) {
    for (auto it = rules.begin(); it != rules.end(); ++it) {
      if (!it->Matches(method, path, watch)) continue;
      FaultRule taken = *it;
      if (--it->remaining <= 0) rules.erase(it);
      return taken;
    }
    return std::nullopt;
  }

  bool Authorized(const httplib::Request& req) {
    std::string token;
    {
      std::lock_guard<std::mutex> lock(mu_);
      token = token_;
    }
    if (token.empty()) return true;
    const std::string header = req.get_header_value("Authorization");
    const size_t space = header.find(' ');
    if (space == std::string::npos || ToLower(header.substr(0, space)) != "bearer") return false;
    return Trim(std::string_view(header).substr(space + 1)) == token;
  }

  void Route(const httplib::Request& req, httplib::Response& res) {
    const std::vector<std::string> s = SplitPath(req.path);
    const std::string& method = req.method;
    const bool get = method == "GET" || method == "HEAD";
    if (s.size() == 1 && (s[0] == "healthz" || s[0] == "readyz" || s[0] == "livez")) {
      res.status = 200;
      res.set_content("ok", "text/plain; charset=utf-8");
      return;
    }
    if (s.size() == 1 && s[0] == "version") {
      return Reply(res, 200,
                   json{{"major", "1"},
                        {"minor", "30"},
                        {"gitVersion", "v1.30.0-fake"},
                        {"platform", "linux/amd64"}});
    }
    if (s.size() == 4 && s[0] == "apis" && s[2] == "v1" && method == "POST") {
      if (s[1] == "authentication.k8s.io" && s[3] == "tokenreviews") return TokenReview(req, res);
      if (s[1] == "authorization.k8s.io" && s[3] == "subjectaccessreviews") {
        return SubjectAccessReview(req, res);
      }
    }
    if (s.size() < 3 || s[0] != "api" || s[1] != "v1") return Reply(res, NoSuchPath());
    if (s[2] == "nodes" && s.size() == 3) {
      if (!get) return Reply(res, MethodNotAllowed());
      return CollectionGet(req, res, Resource::kNodes, "");
    }
    if (s[2] == "nodes" && s.size() == 4) {
      if (method == "PATCH") return PatchObject(req, res, Resource::kNodes, "", s[3]);
      if (!get) return Reply(res, MethodNotAllowed());
      return GetObject(res, Resource::kNodes, s[3], s[3]);
    }
    if (s[2] == "pods" && s.size() == 3) {
      if (!get) return Reply(res, MethodNotAllowed());
      return CollectionGet(req, res, Resource::kPods, "");
    }
    if (s[2] != "namespaces" || s.size() < 5) return Reply(res, NoSuchPath());
    const std::string& ns = s[3];
    if (s[4] == "pods") {
      if (s.size() == 5) {
        if (!get) return Reply(res, MethodNotAllowed());
        return CollectionGet(req, res, Resource::kPods, ns);
      }
      if (s.size() == 6) {
        if (get) return GetObject(res, Resource::kPods, PodKey(ns, s[5]), s[5]);
        if (method == "PATCH") return PatchObject(req, res, Resource::kPods, ns, s[5]);
        return Reply(res, MethodNotAllowed());
      }
      if (s.size() == 7 && s[6] == "binding") {
        if (method != "POST") return Reply(res, MethodNotAllowed());
        return Bind(req, res, ns, s[5]);
      }
      return Reply(res, NoSuchPath());
    }
    if (s.size() == 5 && s[4] == "bindings") {
      if (method != "POST") return Reply(res, MethodNotAllowed());
      return Bind(req, res, ns, "");
    }
    if (s.size() == 5 && s[4] == "events") {
      if (method != "POST") return Reply(res, MethodNotAllowed());
      return CreateEvent(req, res, ns);
    }
    Reply(res, NoSuchPath());
  }

  void GetObject(httplib::Response& res, Resource r, const std::string& key,
                 const std::string& name) {
    std::optional<json> object = Get(r, key);
    if (!object) return Reply(res, NotFound(Info(r).plural, name));
    Reply(res, 200, *object);
  }

  void CollectionGet(const httplib::Request& req, httplib::Response& res, Resource r,
                     const std::string& namespace_name) {
    Filter filter;
    filter.namespace_name = namespace_name;
    if (std::optional<std::string> error =
            ParseLabelSelector(req.get_param_value("labelSelector"), &filter.labels)) {
      return Reply(res, BadRequest(*error));
    }
    if (std::optional<std::string> error =
            ParseFieldSelector(req.get_param_value("fieldSelector"), r, &filter.fields)) {
      return Reply(res, BadRequest(*error));
    }
    bool watch = false;
    if (req.has_param("watch")) {
      std::optional<bool> value = ParseBool(req.get_param_value("watch"));
      if (!value) {
        return Reply(res, BadRequest("strconv.ParseBool: parsing \"" +
                                     req.get_param_value("watch") + "\": invalid syntax"));
      }
      watch = *value;
    }
    if (watch) return Watch(req, res, r, std::move(filter));
    List(req, res, r, filter);
  }

  void List(const httplib::Request& req, httplib::Response& res, Resource r, const Filter& filter) {
    const std::string rv_param = req.get_param_value("resourceVersion");
    const std::string match = req.get_param_value("resourceVersionMatch");
    const std::string continue_param = req.get_param_value("continue");
    int64_t limit = 0;
    if (req.has_param("limit")) {
      std::optional<int64_t> value = ParseInt(req.get_param_value("limit"));
      if (!value) return Reply(res, BadRequest("invalid limit: " + req.get_param_value("limit")));
      limit = std::max<int64_t>(*value, 0);
    }
    if (!match.empty()) {
      if (match != "NotOlderThan" && match != "Exact") {
        return Reply(
            res, InvalidListOptions("resourceVersionMatch", "Unsupported value: \"" + match +
                                                                "\": supported values: \"Exact\", "
                                                                "\"NotOlderThan\""));
      }
      if (rv_param.empty()) {
        return Reply(res, InvalidListOptions("resourceVersionMatch",
                                             "Forbidden: resourceVersionMatch is forbidden "
                                             "unless resourceVersion is provided"));
      }
      if (!continue_param.empty()) {
        return Reply(res, InvalidListOptions("resourceVersionMatch",
                                             "Forbidden: resourceVersionMatch is forbidden when "
                                             "continue is provided"));
      }
      if (match == "Exact" && rv_param == "0") {
        return Reply(res, InvalidListOptions("resourceVersionMatch",
                                             "Forbidden: resourceVersionMatch \"exact\" is "
                                             "forbidden for resourceVersion \"0\""));
      }
    }
    if (!continue_param.empty() && !rv_param.empty() && rv_param != "0") {
      return Reply(res,
                   BadRequest("specifying resource version is not allowed when using continue"));
    }
    std::optional<uint64_t> min_rv;
    if (continue_param.empty() && !rv_param.empty() && rv_param != "0") {
      min_rv = ParseUint(rv_param);
      if (!min_rv) return Reply(res, BadRequest("invalid resource version: " + rv_param));
    }

    json body;
    {
      std::unique_lock<std::mutex> lock(mu_);
      std::shared_ptr<const Snapshot> snapshot;
      uint64_t list_rv = 0;
      std::string start;
      if (!continue_param.empty()) {
        std::optional<ContinueToken> token = DecodeContinue(continue_param);
        if (!token) {
          lock.unlock();
          return Reply(res, BadRequest("continue key is not valid: incorrect encoded start "
                                       "resourceVersion (version meta.k8s.io/v1)"));
        }
        start = token->start;
        if (token->resource_version < 0) {
          snapshot = TakeSnapshot(r);
          list_rv = resource_version_;
        } else {
          list_rv = static_cast<uint64_t>(token->resource_version);
          auto it = snapshots_.find({Index(r), list_rv});
          if (it == snapshots_.end()) {
            ApiError error = Expired(kContinueExpiredMessage);
            json status = StatusJson(error);
            status["metadata"]["continue"] = EncodeContinue(-1, start);
            lock.unlock();
            return Reply(res, error.code, status);
          }
          snapshot = it->second;
        }
      } else {
        if (min_rv && *min_rv > resource_version_) {
          state_cv_.wait_for(lock, too_large_wait_,
                             [&] { return resource_version_ >= *min_rv || stopping_; });
          if (*min_rv > resource_version_) {
            ApiError error{
                504, "Timeout",
                "Too large resource version: " + std::to_string(*min_rv) +
                    ", current: " + std::to_string(resource_version_),
                json{{"causes", json::array({json{{"reason", "ResourceVersionTooLarge"},
                                                  {"message", "Too large resource version"}}})},
                     {"retryAfterSeconds", 1}}};
            lock.unlock();
            return Reply(res, error);
          }
        }
        if (match == "Exact" && min_rv && *min_rv != resource_version_) {
          const std::string message = "too old resource version: " + std::to_string(*min_rv) +
                                      " (" + std::to_string(resource_version_) + ")";
          lock.unlock();
          return Reply(res, Expired(message));
        }
        snapshot = TakeSnapshot(r);
        list_rv = resource_version_;
        if (rv_param == "0") limit = 0;  // served from the watch cache, which ignores limit
      }

      json items = json::array();
      size_t remaining = 0;
      std::string last_key;
      auto it = std::lower_bound(snapshot->begin(), snapshot->end(), start,
                                 [](const std::pair<std::string, JsonPtr>& entry,
                                    const std::string& key) { return entry.first < key; });
      for (; it != snapshot->end(); ++it) {
        if (!filter.Matches(r, *it->second)) continue;
        if (limit > 0 && items.size() >= static_cast<size_t>(limit)) {
          ++remaining;
          continue;
        }
        items.push_back(StripTypeMeta(*it->second));
        last_key = it->first;
      }
      body = {{"kind", Info(r).list_kind},
              {"apiVersion", "v1"},
              {"metadata", {{"resourceVersion", std::to_string(list_rv)}}},
              {"items", std::move(items)}};
      if (remaining > 0) {
        body["metadata"]["continue"] =
            EncodeContinue(static_cast<int64_t>(list_rv), last_key + std::string(1, '\0'));
        if (!filter.has_selectors()) body["metadata"]["remainingItemCount"] = remaining;
        snapshots_[{Index(r), list_rv}] = snapshot;
        TrimSnapshots();
      }
    }
    Reply(res, 200, body);
  }

  void Watch(const httplib::Request& req, httplib::Response& res, Resource r, Filter filter) {
    const std::string rv_param = req.get_param_value("resourceVersion");
    std::optional<uint64_t> from;
    if (!rv_param.empty() && rv_param != "0") {
      from = ParseUint(rv_param);
      if (!from) return Reply(res, BadRequest("invalid resource version: " + rv_param));
    }
    int64_t timeout_s = 0;
    if (req.has_param("timeoutSeconds")) {
      std::optional<int64_t> value = ParseInt(req.get_param_value("timeoutSeconds"));
      if (!value) {
        return Reply(
            res, BadRequest("invalid timeoutSeconds: " + req.get_param_value("timeoutSeconds")));
      }
      timeout_s = *value;
    }
    bool bookmarks = false;
    if (req.has_param("allowWatchBookmarks")) {
      std::optional<bool> value = ParseBool(req.get_param_value("allowWatchBookmarks"));
      if (!value) {
        return Reply(res,
                     BadRequest("strconv.ParseBool: parsing \"" +
                                req.get_param_value("allowWatchBookmarks") + "\": invalid syntax"));
      }
      bookmarks = *value;
    }
    if (req.has_param("sendInitialEvents")) {
      return Reply(res, InvalidListOptions("sendInitialEvents",
                                           "Forbidden: sendInitialEvents is forbidden for watch "
                                           "unless the WatchList feature gate is enabled"));
    }

    auto watcher = std::make_shared<Watcher>();
    watcher->resource = r;
    watcher->filter = std::move(filter);
    watcher->bookmarks = bookmarks;
    const auto now = SteadyClock::now();
    if (timeout_s > 0) watcher->deadline = now + std::chrono::seconds(timeout_s);
    uint64_t id = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      watcher->next_bookmark = now + bookmark_interval_;
      if (!from) {
        for (const auto& [key, object] : objects_[Index(r)]) {
          watcher->pending.push_back(std::make_shared<const WatchRecord>(
              WatchRecord{kAdded, resource_version_, object, nullptr}));
        }
        watcher->start_resource_version = resource_version_;
      } else {
        const History& history = history_[Index(r)];
        uint64_t oldest_minus_one = history.list_resource_version;
        if (history.evicted) {
          oldest_minus_one = history.events.empty() ? resource_version_
                                                    : history.events.front()->resource_version - 1;
        }
        if (*from < oldest_minus_one) {
          ApiError error = Expired("too old resource version: " + std::to_string(*from) + " (" +
                                   std::to_string(oldest_minus_one) + ")");
          watcher->error_line = EventLine("ERROR", StatusJson(error));
          watcher->start_resource_version = std::numeric_limits<uint64_t>::max();
        } else {
          for (const RecordPtr& record : history.events) {
            if (record->resource_version > *from) watcher->pending.push_back(record);
          }
          watcher->start_resource_version = *from;
        }
      }
      id = next_watcher_id_++;
      watchers_.emplace(id, watcher);
      state_cv_.notify_all();
    }
    res.status = 200;
    res.set_chunked_content_provider(
        "application/json",
        [this, watcher](size_t, httplib::DataSink& sink) { return Pump(*watcher, sink); },
        [this, id](bool) { RemoveWatcher(id); });
  }

  // Called repeatedly by httplib on the connection's thread: waits for something to send, sends
  // it. Returning false closes the connection without the terminating chunk.
  bool Pump(Watcher& watcher, httplib::DataSink& sink) {
    std::deque<RecordPtr> batch;
    std::string tail;
    bool finish = false;
    {
      std::unique_lock<std::mutex> lock(mu_);
      for (;;) {
        if (stopping_ || watcher.break_mode == BreakMode::kAbrupt) return false;
        if (watcher.break_mode == BreakMode::kMidEvent) {
          std::string line;
          for (const RecordPtr& record : watcher.pending) {
            if (std::optional<std::string> encoded = EncodeFor(watcher, *record)) {
              line = std::move(*encoded);
              break;
            }
          }
          if (line.empty()) line = BookmarkLine(watcher.resource, resource_version_);
          lock.unlock();
          sink.write(line.data(), line.size() / 2);
          return false;
        }
        if (!watcher.error_line.empty()) {
          tail = std::move(watcher.error_line);
          watcher.error_line.clear();
          finish = true;
          break;
        }
        const auto now = SteadyClock::now();
        const bool timed_out = now >= watcher.deadline;
        const bool bookmark_due = watcher.bookmarks && (watcher.bookmark_requested ||
                                                        now >= watcher.next_bookmark || timed_out);
        if (!watcher.pending.empty() || bookmark_due || timed_out) {
          batch.swap(watcher.pending);
          if (bookmark_due) {
            if (resource_version_ >= watcher.start_resource_version) {
              tail = BookmarkLine(watcher.resource, resource_version_);
            }
            watcher.bookmark_requested = false;
            watcher.next_bookmark = now + bookmark_interval_;
          }
          finish = timed_out;
          break;
        }
        SteadyClock::time_point wake = watcher.deadline;
        if (watcher.bookmarks) wake = std::min(wake, watcher.next_bookmark);
        if (wake == SteadyClock::time_point::max()) {
          watcher.cv.wait(lock);
        } else {
          watcher.cv.wait_until(lock, wake);
        }
      }
    }
    std::string out;
    for (const RecordPtr& record : batch) {
      if (std::optional<std::string> line = EncodeFor(watcher, *record)) out += *line;
    }
    out += tail;
    if (!out.empty() && !sink.write(out.data(), out.size())) return false;
    if (finish) sink.done();
    return true;
  }

  void RemoveWatcher(uint64_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    watchers_.erase(id);
    state_cv_.notify_all();
  }

  // Parses a JSON object body of a create-style request (`kind` expected); nullopt after replying.
  static std::optional<json> ParseCreateBody(const httplib::Request& req, httplib::Response& res,
                                             const std::string& kind) {
    const std::string media = MediaType(req);
    if (!media.empty() && media != "application/json") {
      Reply(res, UnsupportedMediaType(
                     "the body of the request was in an unknown format - accepted media types "
                     "include: application/json, application/yaml, "
                     "application/vnd.kubernetes.protobuf (FakeApiServer: JSON only)"));
      return std::nullopt;
    }
    json body = json::parse(req.body, nullptr, /*allow_exceptions=*/false);
    const std::string unrecognized =
        "the object provided is unrecognized (must be of type " + kind + "): ";
    if (body.is_discarded() || !body.is_object()) {
      Reply(res, BadRequest(unrecognized + "couldn't get version/kind; json parse error"));
      return std::nullopt;
    }
    const std::string body_kind = Str(body, {"kind"});
    if (!body_kind.empty() && body_kind != kind) {
      Reply(res, BadRequest(unrecognized + "no kind \"" + body_kind +
                            "\" is registered for this endpoint"));
      return std::nullopt;
    }
    const std::string api_version = Str(body, {"apiVersion"});
    if (!api_version.empty() && api_version != "v1") {
      Reply(res, BadRequest(unrecognized + "apiVersion \"" + api_version + "\" is not v1"));
      return std::nullopt;
    }
    if (body.contains("metadata") && !body["metadata"].is_object()) {
      Reply(res, BadRequest(unrecognized + "metadata must be an object"));
      return std::nullopt;
    }
    return body;
  }

  // PATCH of a pod or a node (JSON merge patch). `ns` is empty for a node.
  void PatchObject(const httplib::Request& req, httplib::Response& res, Resource r,
                   const std::string& ns, const std::string& name) {
    const bool pod = r == Resource::kPods;
    const std::string plural = pod ? "pods" : "nodes";
    const std::string kind = pod ? "Pod" : "Node";
    const std::string media = MediaType(req);
    if (media != "application/merge-patch+json") {
      const bool real_type = media == "application/json-patch+json" ||
                             media == "application/strategic-merge-patch+json" ||
                             media == "application/apply-patch+yaml";
      return Reply(res,
                   UnsupportedMediaType(
                       real_type ? "FakeApiServer implements only application/merge-patch+json (" +
                                       media + " is accepted by a real kube-apiserver)"
                                 : "the body of the request was in an unknown format - accepted "
                                   "media types include: application/json-patch+json, "
                                   "application/merge-patch+json, application/apply-patch+yaml, "
                                   "application/strategic-merge-patch+json"));
    }
    json patch = json::parse(req.body, nullptr, /*allow_exceptions=*/false);
    if (patch.is_discarded() || !patch.is_object()) {
      return Reply(res, BadRequest("Invalid JSON Patch"));
    }

    std::unique_lock<std::mutex> lock(mu_);
    auto& objects = objects_[Index(r)];
    auto it = objects.find(pod ? PodKey(ns, name) : name);
    if (it == objects.end()) {
      lock.unlock();
      return Reply(res, NotFound(plural, name));
    }
    const JsonPtr previous = it->second;
    const json& old = *previous;
    json patched = old;
    patched.merge_patch(patch);
    if (!patched.contains("metadata") || !patched["metadata"].is_object()) {
      lock.unlock();
      return Reply(res, BadRequest("metadata must be an object"));
    }
    // checkName / EnsureObjectNamespaceMatchesRequestNamespace.
    if (Name(patched) != name) {
      lock.unlock();
      return Reply(res, BadRequest("the name of the object (" + Name(patched) +
                                   ") does not match the name on the URL (" + name + ")"));
    }
    if (!pod) {
      // rest.BeforeUpdate clears the namespace of a cluster-scoped object.
      patched["metadata"].erase("namespace");
    } else if (Namespace(patched) != ns) {
      lock.unlock();
      return Reply(res, BadRequest("the namespace of the provided object does not match the "
                                   "namespace sent on the request"));
    }
    // Optimistic concurrency: the patched object carries the current RV unless the patch set one.
    const std::string patched_rv = ResourceVersionOf(patched);
    if (!patched_rv.empty() && patched_rv != ResourceVersionOf(old)) {
      lock.unlock();
      return Reply(res, Conflict(plural, name, kOptimisticLockMessage));
    }
    // rest.BeforeUpdate and the pod or node update strategy (both keep the old status).
    const std::string old_uid = Str(old, {"metadata", "uid"});
    const std::string new_uid = Str(patched, {"metadata", "uid"});
    if (!new_uid.empty() && new_uid != old_uid) {
      lock.unlock();
      return Reply(res, Invalid(kind, name, "metadata.uid", "FieldValueInvalid",
                                "Invalid value: \"" + new_uid + "\": field is immutable"));
    }
    patched["kind"] = kind;
    patched["apiVersion"] = "v1";
    for (const char* field :
         {"uid", "creationTimestamp", "deletionTimestamp", "generation", "resourceVersion"}) {
      Preserve(patched, old, "metadata", field);
    }
    if (old.contains("status")) {
      patched["status"] = old["status"];
    } else {
      patched.erase("status");
    }
    DropEmptyMetadataFields(patched);
    // A pod's spec is immutable (but for fields gputopo never patches); a node's is not.
    const json* old_spec = Find(old, {"spec"});
    const json* new_spec = Find(patched, {"spec"});
    const bool spec_changed = (old_spec == nullptr) != (new_spec == nullptr) ||
                              (old_spec != nullptr && *old_spec != *new_spec);
    if (pod && spec_changed) {
      lock.unlock();
      return Reply(res, Invalid("Pod", name, "spec", "FieldValueForbidden", kPodSpecForbidden));
    }
    json old_normalized = old;
    DropEmptyMetadataFields(old_normalized);
    if (patched == old_normalized) {
      lock.unlock();
      return Reply(res, 200, old);  // no change: nothing is written
    }
    BumpResourceVersion();
    JsonPtr stored = Put(r, it->first, std::move(patched));
    Publish(r, kModified, stored, previous);
    lock.unlock();
    Reply(res, 200, *stored);
  }

  void Bind(const httplib::Request& req, httplib::Response& res, const std::string& ns,
            const std::string& url_name) {
    std::optional<json> parsed = ParseCreateBody(req, res, "Binding");
    if (!parsed) return;
    const json& binding = *parsed;
    const std::string name = Name(binding);
    if (!url_name.empty() && name != url_name) {
      return Reply(res, BadRequest("name in URL does not match name in Binding object"));
    }
    if (name.empty()) {
      return Reply(res, Invalid("Binding", "", "metadata.name", "FieldValueRequired",
                                "Required value: name or generateName is required"));
    }
    const std::string body_ns = Namespace(binding);
    if (!body_ns.empty() && body_ns != ns) {
      return Reply(res, BadRequest("the namespace of the provided object does not match the "
                                   "namespace sent on the request"));
    }
    // ValidatePodBinding; the real handler returns these as a bare aggregate error (a 500).
    const std::string target_kind = Str(binding, {"target", "kind"});
    const std::string node = Str(binding, {"target", "name"});
    std::vector<std::string> errors;
    if (!target_kind.empty() && target_kind != "Node") {
      errors.push_back("target.kind: Unsupported value: \"" + target_kind +
                       "\": supported values: \"Node\", \"<empty>\"");
    }
    if (node.empty()) errors.push_back("target.name: Required value");
    if (!errors.empty()) {
      std::string message =
          errors.size() == 1 ? errors[0] : "[" + errors[0] + ", " + errors[1] + "]";
      return Reply(res, ApiError{500, "", message, {}});
    }

    std::unique_lock<std::mutex> lock(mu_);
    auto& pods = objects_[Index(Resource::kPods)];
    auto it = pods.find(PodKey(ns, name));
    if (it == pods.end()) {
      lock.unlock();
      return Reply(res, NotFound("pods", name));
    }
    const JsonPtr previous = it->second;
    const json& pod = *previous;
    std::optional<ApiError> error;
    const std::string want_uid = Str(binding, {"metadata", "uid"});
    const std::string want_rv = ResourceVersionOf(binding);
    const std::string pod_uid = Str(pod, {"metadata", "uid"});
    const std::string assigned = Str(pod, {"spec", "nodeName"});
    const json* deletion = Find(pod, {"metadata", "deletionTimestamp"});
    const json* gates = Find(pod, {"spec", "schedulingGates"});
    if (!want_uid.empty() && want_uid != pod_uid) {
      error =
          Conflict("pods", name,
                   StorageInvalidObject(ns, name,
                                        "Precondition failed: UID in precondition: " + want_uid +
                                            ", UID in object meta: " + pod_uid));
    } else if (!want_rv.empty() && want_rv != ResourceVersionOf(pod)) {
      error = Conflict(
          "pods", name,
          StorageInvalidObject(ns, name,
                               "Precondition failed: ResourceVersion in precondition: " + want_rv +
                                   ", ResourceVersion in object meta: " + ResourceVersionOf(pod)));
    } else if (deletion != nullptr && !deletion->is_null()) {
      error = Conflict("pods/binding", name,
                       "pod " + name + " is being deleted, cannot be assigned to a host");
    } else if (!assigned.empty()) {
      error = Conflict("pods/binding", name,
                       "pod " + name + " is already assigned to node \"" + assigned + "\"");
    } else if (gates != nullptr && gates->is_array() && !gates->empty()) {
      error =
          Conflict("pods/binding", name, "pod " + name + " has non-empty .spec.schedulingGates");
    }
    if (error) {
      lock.unlock();
      return Reply(res, *error);
    }
    json updated = pod;
    updated["spec"]["nodeName"] = node;
    if (const json* annotations = Find(binding, {"metadata", "annotations"});
        annotations != nullptr && annotations->is_object()) {
      json& target = updated["metadata"]["annotations"];
      if (!target.is_object()) target = json::object();
      for (const auto& [key, value] : annotations->items()) target[key] = value;
    }
    UpsertPodScheduled(updated);
    BumpResourceVersion();
    JsonPtr stored = Put(Resource::kPods, it->first, std::move(updated));
    Publish(Resource::kPods, kModified, stored, previous);
    lock.unlock();
    Reply(res, 201,
          json{{"kind", "Status"},
               {"apiVersion", "v1"},
               {"metadata", json::object()},
               {"status", "Success"},
               {"code", 201}});
  }

  // podutil.UpdatePodCondition(PodScheduled=True): caller holds mu_.
  void UpsertPodScheduled(json& pod) {
    json& status = pod["status"];
    if (!status.is_object()) status = json::object();
    json& conditions = status["conditions"];
    if (!conditions.is_array()) conditions = json::array();
    json condition = {{"type", "PodScheduled"},
                      {"status", "True"},
                      {"lastProbeTime", nullptr},
                      {"lastTransitionTime", Rfc3339(now_())}};
    for (json& existing : conditions) {
      if (Str(existing, {"type"}) != "PodScheduled") continue;
      if (Str(existing, {"status"}) == "True" && existing.contains("lastTransitionTime")) {
        condition["lastTransitionTime"] = existing["lastTransitionTime"];
      }
      existing = std::move(condition);
      return;
    }
    conditions.push_back(std::move(condition));
  }

  void CreateEvent(const httplib::Request& req, httplib::Response& res, const std::string& ns) {
    std::optional<json> parsed = ParseCreateBody(req, res, "Event");
    if (!parsed) return;
    json event = std::move(*parsed);
    const std::string body_ns = Namespace(event);
    if (!body_ns.empty() && body_ns != ns) {
      return Reply(res, BadRequest("the namespace of the provided object does not match the "
                                   "namespace sent on the request"));
    }
    std::string name = Name(event);
    const std::string generate_name = Str(event, {"metadata", "generateName"});
    if (name.empty() && generate_name.empty()) {
      return Reply(res, Invalid("Event", "", "metadata.name", "FieldValueRequired",
                                "Required value: name or generateName is required"));
    }
    event["kind"] = "Event";
    event["apiVersion"] = "v1";
    json& metadata = event["metadata"];
    metadata["namespace"] = ns;
    std::unique_lock<std::mutex> lock(mu_);
    if (name.empty()) {
      do {
        name = generate_name + RandomSuffix();
      } while (events_.count(PodKey(ns, name)) != 0);
    }
    const std::string key = PodKey(ns, name);
    if (events_.count(key) != 0) {
      lock.unlock();
      return Reply(res, ApiError{409, "AlreadyExists", "events \"" + name + "\" already exists",
                                 json{{"name", name}, {"kind", "events"}}});
    }
    metadata["name"] = name;
    metadata["uid"] = NewUid();
    metadata["creationTimestamp"] = Rfc3339(now_());
    BumpResourceVersion();
    metadata["resourceVersion"] = std::to_string(resource_version_);
    events_[key] = event;
    lock.unlock();
    Reply(res, 201, event);
  }

  // --- State helpers; the caller holds mu_ ---

  void BumpResourceVersion() {
    ++resource_version_;
    state_cv_.notify_all();
  }

  JsonPtr Put(Resource r, const std::string& key, json object) {
    object["metadata"]["resourceVersion"] = std::to_string(resource_version_);
    auto stored = std::make_shared<const json>(std::move(object));
    objects_[Index(r)][key] = stored;
    return stored;
  }

  void Publish(Resource r, const char* type, JsonPtr object, JsonPtr previous) {
    auto record = std::make_shared<const WatchRecord>(
        WatchRecord{type, resource_version_, std::move(object), std::move(previous)});
    History& history = history_[Index(r)];
    history.events.push_back(record);
    TrimHistory(history);
    for (auto& [id, watcher] : watchers_) {
      if (watcher->resource != r || record->resource_version <= watcher->start_resource_version) {
        continue;
      }
      watcher->pending.push_back(record);
      watcher->cv.notify_all();
    }
  }

  void TrimHistory(History& history) {
    while (history.events.size() > history_window_) {
      history.events.pop_front();
      history.evicted = true;
    }
  }

  std::shared_ptr<const Snapshot> TakeSnapshot(Resource r) const {
    auto snapshot = std::make_shared<Snapshot>();
    snapshot->reserve(objects_[Index(r)].size());
    for (const auto& [key, object] : objects_[Index(r)]) snapshot->emplace_back(key, object);
    return snapshot;
  }

  void TrimSnapshots() {
    while (snapshots_.size() > kMaxSnapshots) {
      auto oldest = std::min_element(
          snapshots_.begin(), snapshots_.end(),
          [](const auto& a, const auto& b) { return a.first.second < b.first.second; });
      snapshots_.erase(oldest);
    }
  }

  std::string NewUid() {
    char buffer[48];
    std::snprintf(buffer, sizeof(buffer), "6b1c4a52-0000-4000-8000-%012llx",
                  static_cast<unsigned long long>(++uid_counter_));
    return buffer;
  }

  // Five characters from the real generator's alphabet, deterministic.
  std::string RandomSuffix() {
    static constexpr char kAlphabet[] = "bcdfghjklmnpqrstvwxz2456789";
    constexpr uint64_t kBase = sizeof(kAlphabet) - 1;
    uint64_t value = (++name_counter_) * 2654435761u;
    std::string suffix;
    for (int i = 0; i < 5; ++i) {
      suffix += kAlphabet[value % kBase];
      value /= kBase;
    }
    return suffix;
  }

  // Constant after construction.
  const std::function<std::chrono::system_clock::time_point()> now_;
  const size_t worker_threads_;
  const int keep_alive_timeout_s_;
  const size_t keep_alive_max_count_;
  const std::chrono::milliseconds too_large_wait_;
  const std::chrono::milliseconds write_latency_;

  // Start()/Stop() only (they are not called concurrently).
  std::unique_ptr<httplib::Server> server_;
  std::thread listen_thread_;
  std::atomic<int> port_{0};

  mutable std::mutex mu_;
  // Notified when resource_version_ advances, watchers_ changes, stopping_ is set or held
  // requests are released.
  mutable std::condition_variable state_cv_;
  // State guarded by mu_.
  uint64_t resource_version_ = 1;
  std::map<std::string, JsonPtr> objects_[kResourceCount];
  History history_[kResourceCount];
  std::map<std::string, json> events_;  // "namespace/name"
  std::map<std::pair<size_t, uint64_t>, std::shared_ptr<const Snapshot>> snapshots_;
  std::map<uint64_t, std::shared_ptr<Watcher>> watchers_;
  uint64_t next_watcher_id_ = 1;
  std::string token_;
  // TokenReview: token -> (username, groups); SubjectAccessReview: (user, verb, path) allowed.
  std::map<std::string, std::pair<std::string, std::vector<std::string>>> token_users_;
  std::vector<std::tuple<std::string, std::string, std::string>> non_resource_rules_;
  std::vector<FaultRule> failures_;
  std::vector<FaultRule> delays_;    // DelayNext and HoldNext rules
  uint64_t release_generation_ = 0;  // ReleaseHeld() calls so far
  size_t held_ = 0;                  // requests waiting for ReleaseHeld()
  std::vector<RecordedRequest> requests_;
  size_t history_window_;
  std::chrono::milliseconds bookmark_interval_;
  uint64_t uid_counter_ = 0;
  uint64_t name_counter_ = 0;
  bool stopping_ = false;
};

// ---------------------------------------------------------------------------------------------

FakeApiServer::FakeApiServer() : FakeApiServer(Options{}) {}
FakeApiServer::FakeApiServer(Options options) : impl_(std::make_unique<Impl>(std::move(options))) {}
FakeApiServer::~FakeApiServer() = default;

bool FakeApiServer::Start() { return impl_->Start(); }
void FakeApiServer::Stop() { impl_->Stop(); }
int FakeApiServer::port() const { return impl_->port(); }
std::string FakeApiServer::base_url() const {
  return "http://127.0.0.1:" + std::to_string(impl_->port());
}

std::optional<nlohmann::json> FakeApiServer::CreateNode(nlohmann::json node) {
  return impl_->Create(Resource::kNodes, std::move(node));
}
std::optional<nlohmann::json> FakeApiServer::CreatePod(nlohmann::json pod) {
  return impl_->Create(Resource::kPods, std::move(pod));
}
std::optional<nlohmann::json> FakeApiServer::UpdateNode(
    const std::string& name, const std::function<void(nlohmann::json&)>& mutate) {
  return impl_->Update(Resource::kNodes, name, mutate);
}
std::optional<nlohmann::json> FakeApiServer::UpdatePod(
    const std::string& namespace_name, const std::string& name,
    const std::function<void(nlohmann::json&)>& mutate) {
  return impl_->Update(Resource::kPods, PodKey(namespace_name, name), mutate);
}
bool FakeApiServer::DeleteNode(const std::string& name) {
  return impl_->Delete(Resource::kNodes, name);
}
bool FakeApiServer::DeletePod(const std::string& namespace_name, const std::string& name) {
  return impl_->Delete(Resource::kPods, PodKey(namespace_name, name));
}
std::optional<nlohmann::json> FakeApiServer::GetNodeObject(const std::string& name) const {
  return impl_->Get(Resource::kNodes, name);
}
std::optional<nlohmann::json> FakeApiServer::GetPodObject(const std::string& namespace_name,
                                                          const std::string& name) const {
  return impl_->Get(Resource::kPods, PodKey(namespace_name, name));
}
std::vector<nlohmann::json> FakeApiServer::Nodes() const { return impl_->All(Resource::kNodes); }
std::vector<nlohmann::json> FakeApiServer::Pods() const { return impl_->All(Resource::kPods); }
std::vector<nlohmann::json> FakeApiServer::Events() const { return impl_->Events(); }
std::string FakeApiServer::resource_version() const { return impl_->resource_version(); }

void FakeApiServer::SetBearerToken(std::string token) { impl_->SetBearerToken(std::move(token)); }
void FakeApiServer::AddTokenUser(std::string token, std::string user,
                                 std::vector<std::string> groups) {
  impl_->AddTokenUser(std::move(token), std::move(user), std::move(groups));
}
void FakeApiServer::AllowNonResource(std::string subject, std::string verb, std::string path) {
  impl_->AllowNonResource(std::move(subject), std::move(verb), std::move(path));
}

void FakeApiServer::FailNext(std::string method, std::string path_prefix, int http_status,
                             int count) {
  impl_->AddFailure(std::move(method), std::move(path_prefix), http_status, count);
}
void FakeApiServer::DelayNext(std::string method, std::string path_prefix,
                              std::chrono::milliseconds delay, int count) {
  impl_->AddDelay(std::move(method), std::move(path_prefix), delay, count);
}
void FakeApiServer::HoldNext(std::string method, std::string path_prefix, int count) {
  impl_->AddHold(std::move(method), std::move(path_prefix), count);
}
void FakeApiServer::ReleaseHeld() { impl_->ReleaseHeld(); }
size_t FakeApiServer::held_requests() const { return impl_->held_requests(); }
void FakeApiServer::SetHistoryWindow(size_t events) { impl_->SetHistoryWindow(events); }
void FakeApiServer::CompactHistory() { impl_->CompactHistory(); }
void FakeApiServer::SetBookmarkInterval(std::chrono::milliseconds interval) {
  impl_->SetBookmarkInterval(interval);
}
void FakeApiServer::BreakWatches() { impl_->BreakWatches(BreakMode::kAbrupt); }
void FakeApiServer::BreakWatchesMidEvent() { impl_->BreakWatches(BreakMode::kMidEvent); }
void FakeApiServer::SendBookmarks() { impl_->SendBookmarks(); }

size_t FakeApiServer::RequestCount(std::string_view method, std::string_view path) const {
  return impl_->RequestCount(method, path);
}
std::vector<FakeApiServer::RecordedRequest> FakeApiServer::Requests() const {
  return impl_->Requests();
}
size_t FakeApiServer::open_watches() const { return impl_->open_watches(); }
bool FakeApiServer::WaitForOpenWatches(size_t count, std::chrono::milliseconds timeout) const {
  return impl_->WaitForOpenWatches(count, timeout);
}

}  // namespace gputopo::testing
