// The fake API server's watch cache: the per-resource history of changes, one open watch's
// state, and how a change is rendered for a watch (as kube-apiserver's watch cache does).
//
// The functions are pure. A Watcher's mutable members are guarded by FakeApiServer::Impl::mu_;
// History is too.
#ifndef GPUTOPO_TEST_SUPPORT_FAKE_API_SERVER_WATCH_H_
#define GPUTOPO_TEST_SUPPORT_FAKE_API_SERVER_WATCH_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>

#include "test/support/fake_api_server/field_selector.h"
#include "test/support/fake_api_server/resource.h"
#include "test/support/fake_api_server/wire.h"

namespace gputopo::testing::fake_api {

using SteadyClock = std::chrono::steady_clock;

inline constexpr const char* kAdded = "ADDED";
inline constexpr const char* kModified = "MODIFIED";
inline constexpr const char* kDeleted = "DELETED";

// One change to a resource, as the watch cache keeps it.
struct WatchRecord {
  const char* type;  // kAdded, kModified, kDeleted
  uint64_t resource_version;
  JsonPtr object;    // the new state; for DELETED the final state (at the delete's RV)
  JsonPtr previous;  // the state before (MODIFIED, DELETED); null for ADDED
};
using RecordPtr = std::shared_ptr<const WatchRecord>;

struct History {
  std::deque<RecordPtr> events;        // oldest first, at most the history window
  bool evicted = false;                // events were dropped since list_resource_version
  uint64_t list_resource_version = 0;  // the watch cache's initial list
};

// The oldest resourceVersion a watch can resume from: one before the oldest retained event, or,
// while nothing was evicted since the cache's initial list, that list's RV. A watch from an older
// RV gets 410 Expired.
uint64_t OldestResumable(const History& history, uint64_t current_resource_version);

enum class BreakMode { kNone, kAbrupt, kMidEvent };

struct Watcher {
  // Constant after registration.
  Resource resource = Resource::kPods;
  Filter filter;
  bool bookmarks = false;                                             // allowWatchBookmarks=true
  SteadyClock::time_point deadline = SteadyClock::time_point::max();  // timeoutSeconds

  // Guarded by Impl::mu_.
  uint64_t start_resource_version = 0;  // only records after this one are delivered
  std::deque<RecordPtr> pending;
  std::string error_line;  // a terminal ERROR event; the stream ends after it
  SteadyClock::time_point next_bookmark;
  bool bookmark_requested = false;
  BreakMode break_mode = BreakMode::kNone;
  std::condition_variable cv;  // waited on with Impl::mu_
};

// One watch line: {"type":...,"object":...} and a newline.
std::string EventLine(const char* type, const json& object);
// A BOOKMARK at `resource_version`, its object shaped like the real server's empty one.
std::string BookmarkLine(Resource r, uint64_t resource_version);
// What `watcher` sees of `record` (the watch cache's convertToWatchEvent), or nullopt: with a
// selector, an object that starts matching arrives as ADDED and one that stops matching as
// DELETED, with its old content at the new resourceVersion.
std::optional<std::string> EncodeFor(const Watcher& watcher, const WatchRecord& record);

}  // namespace gputopo::testing::fake_api

#endif  // GPUTOPO_TEST_SUPPORT_FAKE_API_SERVER_WATCH_H_
