// The list and watch wire formats of the Kubernetes API: a page of a NodeList/PodList, and one
// watch event line ({"type": "...", "object": {...}}).
//
// Thread safety: a WatchProtocolParser is not thread-safe (it owns a simdjson parser).
#ifndef GPUTOPO_SRC_KUBE_WATCH_PROTOCOL_H_
#define GPUTOPO_SRC_KUBE_WATCH_PROTOCOL_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gputopo/status.h"

namespace gputopo::kube {

struct ListPage {
  std::string resource_version;    // metadata.resourceVersion
  std::string continue_token;      // metadata.continue; empty on the last page
  std::vector<std::string> items;  // each object's raw JSON
};

enum class WatchEventType { kAdded, kModified, kDeleted, kBookmark, kError };

struct WatchEvent {
  WatchEventType type = WatchEventType::kAdded;
  std::string object;            // the object's raw JSON
  std::string resource_version;  // the object's metadata.resourceVersion
  int code = 0;                  // for kError: the Status code (410 when the RV is too old)
  std::string message;           // for kError
};

class WatchProtocolParser {
 public:
  WatchProtocolParser();
  ~WatchProtocolParser();
  WatchProtocolParser(const WatchProtocolParser&) = delete;
  WatchProtocolParser& operator=(const WatchProtocolParser&) = delete;

  Result<ListPage> ParseList(std::string_view body);
  Result<WatchEvent> ParseEvent(std::string_view line);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gputopo::kube

#endif  // GPUTOPO_SRC_KUBE_WATCH_PROTOCOL_H_
