// FakeApiServer: an in-process stand-in for kube-apiserver on 127.0.0.1, for tests of the
// Kubernetes client, the watch-driven cache and bind.
//
// It serves the part of core/v1 that gputopo depends on: Nodes and Pods (list with pagination and
// a fieldSelector, watch, get of a pod), PATCH of a pod or a node (JSON merge patch),
// pods/binding, and Event creation. It follows the real server's wire behaviour (JSON shapes,
// Status bodies, status codes, watch-cache resume and 410 semantics, bookmarks,
// optimistic-concurrency preconditions), not any client's expectations. What gputopo never sends
// (labelSelector, most field selectors, resourceVersionMatch, ...) is not implemented and is
// answered 400 "fake API server: ... is not implemented", never ignored. The list of what is
// faithful, simplified and not implemented is at the top of fake_api_server/fake_api_server.cc.
//
// Tests drive the cluster state directly (CreatePod, UpdatePod, ...) and inject faults: failed,
// delayed or held requests, compacted history, broken watch streams.
//
// Thread safety: every public method may be called from any thread, concurrently with requests
// being served. Start() and Stop() must not race with each other.
#ifndef GPUTOPO_TEST_SUPPORT_FAKE_API_SERVER_H_
#define GPUTOPO_TEST_SUPPORT_FAKE_API_SERVER_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gputopo::testing {

class FakeApiServer {
 public:
  struct Options {
    // Watch-cache capacity per resource (nodes, pods): how many past events a watch can resume
    // from. At least 1.
    size_t history_window = 1000;
    // How often an open watch with allowWatchBookmarks=true receives a BOOKMARK.
    std::chrono::milliseconds bookmark_interval{1000};
    // HTTP worker threads; each open watch holds one.
    size_t worker_threads = 32;
    // How long an idle keep-alive connection is kept open (seconds).
    int keep_alive_timeout_s = 5;
    // Requests served on one keep-alive connection before the server closes it (httplib's
    // default; kube-apiserver sets no such limit). At least 1.
    size_t keep_alive_max_count = 5;
    // How long a list with a resourceVersion newer than the server's waits for it before the
    // 504 "Too large resource version" (the real server waits 3 s).
    std::chrono::milliseconds too_large_resource_version_wait{3000};
    // How long every write request (POST, PATCH, PUT, DELETE) waits before being handled, as a
    // real server's etcd commit does; it holds a worker thread meanwhile. 0: none.
    std::chrono::milliseconds write_latency{0};
    // Wall clock for creationTimestamp, event timestamps and PodScheduled transition times.
    std::function<std::chrono::system_clock::time_point()> now;
  };

  // One request as the server received it.
  struct RecordedRequest {
    std::string method;        // HTTP method
    std::string path;          // without the query
    std::string target;        // path and query, as sent
    std::string content_type;  // of the request body
    std::string body;
    bool watch = false;  // a GET with watch=true
    // The status answered (200 for a watch that was opened); 0 while still being handled.
    int status = 0;
  };

  FakeApiServer();
  explicit FakeApiServer(Options options);
  ~FakeApiServer();  // Stop()s.
  FakeApiServer(const FakeApiServer&) = delete;
  FakeApiServer& operator=(const FakeApiServer&) = delete;

  // --- Lifecycle ---
  // Binds 127.0.0.1 (an ephemeral port the first time, the same port after a Stop()) and serves
  // on background threads. False when the port cannot be bound. The state survives Stop/Start.
  bool Start();
  // Ends every open watch, closes every connection and joins the server threads. Idempotent.
  void Stop();
  int port() const;
  std::string base_url() const;  // "http://127.0.0.1:<port>"

  // --- Cluster state, as the test sees it (no HTTP). Objects are full JSON (with kind and
  // apiVersion). Every write bumps the cluster resourceVersion and feeds the watches. ---
  // Creates the object, filling metadata.uid and creationTimestamp when absent (and for pods
  // metadata.namespace "default" and status.phase "Pending" when absent). nullopt when an object
  // of that name exists or it has no metadata.name. Returns the stored object.
  std::optional<nlohmann::json> CreateNode(nlohmann::json node);
  std::optional<nlohmann::json> CreatePod(nlohmann::json pod);
  // Applies `mutate` to a copy (name and namespace stay), stores it: MODIFIED. nullopt if absent.
  std::optional<nlohmann::json> UpdateNode(const std::string& name,
                                           const std::function<void(nlohmann::json&)>& mutate);
  std::optional<nlohmann::json> UpdatePod(const std::string& namespace_name,
                                          const std::string& name,
                                          const std::function<void(nlohmann::json&)>& mutate);
  // Removes the object at once (like a forced delete): DELETED with the final object. False if
  // absent.
  bool DeleteNode(const std::string& name);
  bool DeletePod(const std::string& namespace_name, const std::string& name);
  // PodDisruptionBudgets (policy/v1), the same way; namespace "default" when absent.
  std::optional<nlohmann::json> CreateDisruptionBudget(nlohmann::json budget);
  std::optional<nlohmann::json> UpdateDisruptionBudget(
      const std::string& namespace_name, const std::string& name,
      const std::function<void(nlohmann::json&)>& mutate);
  bool DeleteDisruptionBudget(const std::string& namespace_name, const std::string& name);
  std::optional<nlohmann::json> GetNodeObject(const std::string& name) const;
  std::optional<nlohmann::json> GetPodObject(const std::string& namespace_name,
                                             const std::string& name) const;
  // Snapshots, ordered by namespace then name.
  std::vector<nlohmann::json> Nodes() const;
  std::vector<nlohmann::json> Pods() const;
  // The core/v1 Event objects clients have POSTed (not watch events).
  std::vector<nlohmann::json> Events() const;
  // The cluster's current resourceVersion (decimal, like an etcd revision).
  std::string resource_version() const;

  // --- Authentication ---
  // When not empty, every request needs "Authorization: Bearer <token>" or gets 401.
  void SetBearerToken(std::string token);
  // TokenReview (authentication.k8s.io/v1): `token` authenticates as `user` in `groups`; any
  // other token is answered authenticated: false.
  void AddTokenUser(std::string token, std::string user, std::vector<std::string> groups = {});
  // SubjectAccessReview (authorization.k8s.io/v1), nonResourceAttributes: `subject` (a user or a
  // group) may `verb` (get, post) `path`, an exact path or a prefix ending in '*' (RBAC's
  // nonResourceURLs). Nothing else is allowed.
  void AllowNonResource(std::string subject, std::string verb, std::string path);

  // --- Fault injection ---
  // The next `count` requests matching `method` and whose path starts with `path_prefix` are
  // answered `http_status` with a Status body instead of being handled. `method` is an HTTP
  // method, "*" for any, or "WATCH" for watch requests only (a "GET" rule matches watches too).
  // A 429 also carries Retry-After: 1.
  void FailNext(std::string method, std::string path_prefix, int http_status, int count = 1);
  // The next `count` matching requests wait `delay` before being handled.
  void DelayNext(std::string method, std::string path_prefix, std::chrono::milliseconds delay,
                 int count = 1);
  // The next `count` matching requests wait, unanswered, until ReleaseHeld() or Stop(); then they
  // are handled as usual. For a test that needs a client's deadline to expire: the reply cannot
  // come before the test lets it go, however slow the machine. Matched like DelayNext (the two
  // share one list of rules, the first matching rule applies).
  void HoldNext(std::string method, std::string path_prefix, int count = 1);
  // Lets go every request held so far. Hold rules not yet used stay.
  void ReleaseHeld();
  // Requests being held now.
  size_t held_requests() const;
  // Watch-cache capacity per resource (>= 1); shrinking forgets the oldest events now.
  void SetHistoryWindow(size_t events);
  // Forgets all history, as a restarted watch cache would: a watch from any resourceVersion older
  // than the current one gets a 410 Expired ERROR event, and continue tokens issued so far 410.
  void CompactHistory();
  void SetBookmarkInterval(std::chrono::milliseconds interval);
  // Closes every open watch stream abruptly (no terminating chunk), and returns once they are
  // closed (or after 5 s).
  void BreakWatches();
  // Same, but each stream first gets the first half of an event line.
  void BreakWatchesMidEvent();
  // Sends a BOOKMARK at the current resourceVersion to every open watch that asked for bookmarks
  // (allowWatchBookmarks=true; the real server sends none to the others).
  void SendBookmarks();

  // --- Observation ---
  // Requests received (counted on arrival) with this method ("WATCH": watch GETs only) and exact
  // path (no query).
  size_t RequestCount(std::string_view method, std::string_view path) const;
  std::vector<RecordedRequest> Requests() const;
  size_t open_watches() const;
  // Waits until at least `count` watches are open (their replay is queued, so any later write
  // reaches them). False on timeout.
  bool WaitForOpenWatches(size_t count, std::chrono::milliseconds timeout) const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gputopo::testing

#endif  // GPUTOPO_TEST_SUPPORT_FAKE_API_SERVER_H_
