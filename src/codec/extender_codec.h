// kube-scheduler extender v1 wire format (k8s.io/kube-scheduler/extender/v1).
//
// Requests: ExtenderArgs {Pod, Nodes, NodeNames} for filter and prioritize, and
// ExtenderBindingArgs {PodName, PodNamespace, PodUID, Node} for bind. The extender structs have
// no JSON tags, so keys are Go field names, matched case-insensitively as Go's encoding/json
// does. Embedded Pod and Node objects are ordinary Kubernetes JSON.
//
// Replies: ExtenderFilterResult {Nodes, NodeNames, FailedNodes, FailedAndUnresolvableNodes,
// Error}, HostPriorityList [{Host, Score}], ExtenderBindingResult {Error}.
//
// Thread safety: an ExtenderRequestParser is not thread-safe; the server keeps a pool.
#ifndef GPUTOPO_SRC_CODEC_EXTENDER_CODEC_H_
#define GPUTOPO_SRC_CODEC_EXTENDER_CODEC_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gputopo/pod_info.h"
#include "gputopo/status.h"

namespace gputopo::extender {

// ExtenderArgs, parsed. The string_views point into the parser that produced them and are
// valid until its next Parse call.
struct ExtenderArgs {
  PodInfo pod;
  // True when the scheduler sent full Node objects (nodeCacheCapable: false); the reply must
  // then carry Node objects too.
  bool nodes_mode = false;
  std::vector<std::string_view> node_names;
  std::vector<std::string_view> node_objects;  // raw JSON of each Node, when nodes_mode
  // The JSON text that was parsed. NodeNames entries are in array order.
  std::string_view text;

  // Whether `name` is a view of `text`, that is a string's raw token, with its quotes right
  // before and after it and nothing in it to escape: the parser returns only tokens without a
  // backslash as views (names with escapes are unescaped elsewhere), and rejects a request
  // with a raw control character in a string. Such a name can be copied into a reply as is.
  bool IsRawToken(std::string_view name) const { return IsRawTokenOf(text, name); }
  // The same for a copy of `text` (a local the compiler need not reload).
  static bool IsRawTokenOf(std::string_view text, std::string_view name) {
    const auto at = reinterpret_cast<uintptr_t>(name.data());
    const auto begin = reinterpret_cast<uintptr_t>(text.data());
    return at > begin && at + name.size() < begin + text.size();
  }
};

struct BindingArgs {
  std::string pod_name;
  std::string pod_namespace;
  std::string pod_uid;
  std::string node;
};

class ExtenderRequestParser {
 public:
  // `max_bytes` bounds the documents this parser accepts.
  explicit ExtenderRequestParser(size_t max_bytes);
  ~ExtenderRequestParser();
  ExtenderRequestParser(const ExtenderRequestParser&) = delete;
  ExtenderRequestParser& operator=(const ExtenderRequestParser&) = delete;

  // Error when the body is not JSON, is not an object, has no Pod, has neither Nodes nor
  // NodeNames, or has a Pod gputopo cannot read. The result, which may point into `body`,
  // lives until the next ParseArgs; `body` must live as long.
  Result<const ExtenderArgs*> ParseArgs(std::string_view body);
  // The same, where `readable` bytes from body.data() may be read (a std::string's capacity):
  // with simdjson's padding readable past the end, the body is parsed where it is, not copied.
  Result<const ExtenderArgs*> ParseArgs(std::string_view body, size_t readable);

 private:
  // One parse. Unless `check_names`, NodeNames entries are taken as the raw text between their
  // quotes without looking for escapes in each: ParseArgs then looks for a backslash in all of
  // them at once, and parses again with `check_names` when it finds one.
  Result<const ExtenderArgs*> ParseOnce(std::string_view body, size_t readable, bool check_names);

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Error when the body is not an ExtenderBindingArgs with PodName, PodNamespace and Node.
Result<BindingArgs> ParseBindingArgs(std::string_view body);

// One node's filter outcome.
struct FilterOutcome {
  bool passed = false;
  bool unresolvable = false;
  std::string_view reason;  // when !passed and !omitted
  // In neither NodeNames nor the failed maps. kube-scheduler drops such a node from the
  // feasible ones silently (findNodesThatPassExtenders keeps only the reply's NodeNames).
  bool omitted = false;
};

// ExtenderFilterResult for `args` and one outcome per candidate (parallel to args.node_names).
// Mirrors the request: NodeNames in NodeNames mode, Node objects in Nodes mode.
std::string WriteFilterResult(const ExtenderArgs& args, const std::vector<FilterOutcome>& outcomes);
// ExtenderFilterResult carrying only an error (the pod fails on every node with this message).
std::string WriteFilterError(std::string_view error);
// HostPriorityList. Hosts that are raw tokens of `args`' request text (ExtenderArgs::IsRawToken)
// are copied from it with their quotes, the others written as JSON strings.
std::string WritePriorityList(const ExtenderArgs& args,
                              const std::vector<std::pair<std::string_view, int>>& scores);
// The same without a request text: every host written as a JSON string.
std::string WritePriorityList(const std::vector<std::pair<std::string_view, int>>& scores);
// ExtenderBindingResult.
std::string WriteBindingResult(std::string_view error);

// Appends `text` as a JSON string literal (quotes included).
void AppendJsonString(std::string& out, std::string_view text);

}  // namespace gputopo::extender

#endif  // GPUTOPO_SRC_CODEC_EXTENDER_CODEC_H_
