// FakeApiServer::Impl: the fake kube-apiserver's state and request handlers, declared once here
// and defined across this folder by concern:
//   server.cc        construction, Start(), Stop()
//   routing.cc       the request pipeline (record, faults, auth, route, compression) and GETs
//   store.cc         the object store, resourceVersions and watch-cache feed
//   controls.cc      what tests drive besides objects: faults, history, bookmarks, observation
//   auth.cc          bearer token, TokenReview, SubjectAccessReview
//   list.cc          collection GETs: selectors, lists and pagination
//   watch_stream.cc  watch streams
//   patch.cc         JSON merge patch of pods and nodes
//   binding.cc       pods/binding
//   events.cc        Event creation
//   proxy.cc         pods/proxy to a pod's IP
// The contract (what is faithful to kube-apiserver, what is simplified or not implemented) is at
// the top of fake_api_server.cc.
//
// Thread safety: all mutable state is guarded by mu_; handlers run on httplib's worker threads
// and the test's calls on its own. Start() and Stop() are not called concurrently.
#ifndef GPUTOPO_TEST_SUPPORT_FAKE_API_SERVER_IMPL_H_
#define GPUTOPO_TEST_SUPPORT_FAKE_API_SERVER_IMPL_H_

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "test/support/fake_api_server.h"
#include "test/support/fake_api_server/faults.h"
#include "test/support/fake_api_server/field_selector.h"
#include "test/support/fake_api_server/resource.h"
#include "test/support/fake_api_server/status.h"
#include "test/support/fake_api_server/watch.h"
#include "test/support/fake_api_server/wire.h"

namespace gputopo::testing {

class FakeApiServer::Impl {
 public:
  using json = fake_api::json;
  using Resource = fake_api::Resource;

  explicit Impl(Options options);
  ~Impl();  // Stop()s.

  // --- Lifecycle (server.cc) ---
  bool Start();
  void Stop();
  int port() const { return port_.load(); }

  // --- Test-side state (store.cc); `key` is the store key (fake_api::Key) ---
  std::optional<json> Create(Resource r, json object);
  std::optional<json> Update(Resource r, const std::string& key,
                             const std::function<void(json&)>& mutate);
  bool Delete(Resource r, const std::string& key);
  std::optional<json> Get(Resource r, const std::string& key) const;
  std::vector<json> All(Resource r) const;
  std::vector<json> Events() const;
  std::string resource_version() const;

  // --- Authentication and authorization setup (auth.cc) ---
  void SetBearerToken(std::string token);
  void AddTokenUser(std::string token, std::string user, std::vector<std::string> groups);
  void AllowNonResource(std::string subject, std::string verb, std::string path);

  // --- Faults and watch-cache controls (controls.cc) ---
  void AddFailure(std::string method, std::string path_prefix, int status, int count);
  void AddDelay(std::string method, std::string path_prefix, std::chrono::milliseconds delay,
                int count);
  void AddHold(std::string method, std::string path_prefix, int count);
  void ReleaseHeld();
  size_t held_requests() const;
  void SetHistoryWindow(size_t events);
  void CompactHistory();
  void SetBookmarkInterval(std::chrono::milliseconds interval);
  void BreakWatches(fake_api::BreakMode mode);
  void SendBookmarks();

  // --- Observation (controls.cc) ---
  size_t RequestCount(std::string_view method, std::string_view path) const;
  std::vector<RecordedRequest> Requests() const;
  size_t open_watches() const;
  bool WaitForOpenWatches(size_t count, std::chrono::milliseconds timeout) const;

 private:
  // A list's consistent view: (key, object) in key order.
  using Snapshot = std::vector<std::pair<std::string, fake_api::JsonPtr>>;

  // --- Replies and the request pipeline (routing.cc) ---
  static void Reply(httplib::Response& res, int status, const json& body);
  static void Reply(httplib::Response& res, const fake_api::ApiError& error);
  void Handle(const httplib::Request& req, httplib::Response& res);
  void ApplyDelay(const std::string& method, const std::string& path, bool watch);
  void Route(const httplib::Request& req, httplib::Response& res);
  void GetObject(httplib::Response& res, Resource r, const std::string& key,
                 const std::string& name);
  static void ChooseResponseEncoding(const httplib::Request& req, httplib::Response& res,
                                     bool watch);

  // --- auth.cc ---
  bool Authorized(const httplib::Request& req) const;
  void TokenReview(const httplib::Request& req, httplib::Response& res);
  void SubjectAccessReview(const httplib::Request& req, httplib::Response& res);

  // --- list.cc ---
  void CollectionGet(const httplib::Request& req, httplib::Response& res, Resource r,
                     const std::string& namespace_name);
  void List(const httplib::Request& req, httplib::Response& res, Resource r,
            const fake_api::Filter& filter);

  // --- watch_stream.cc ---
  void Watch(const httplib::Request& req, httplib::Response& res, Resource r,
             fake_api::Filter filter);
  bool Pump(fake_api::Watcher& watcher, httplib::DataSink& sink);
  void RemoveWatcher(uint64_t id);

  // --- patch.cc, binding.cc, events.cc ---
  void PatchObject(const httplib::Request& req, httplib::Response& res, Resource r,
                   const std::string& ns, const std::string& name);
  void Bind(const httplib::Request& req, httplib::Response& res, const std::string& ns,
            const std::string& name);
  void UpsertPodScheduled(json& pod);  // caller holds mu_
  void CreateEvent(const httplib::Request& req, httplib::Response& res, const std::string& ns);
  // pods/{target}/proxy (proxy.cc); `target` is "[scheme:]name[:port]".
  void ProxyToPod(const httplib::Request& req, httplib::Response& res, const std::string& ns,
                  const std::string& target);

  // --- Store helpers (store.cc); the caller holds mu_ ---
  void BumpResourceVersion();
  // Stores `object` at the current resourceVersion.
  fake_api::JsonPtr Put(Resource r, const std::string& key, json object);
  // Appends the change to the history and to every open watch of `r` it is new to.
  void Publish(Resource r, const char* type, fake_api::JsonPtr object, fake_api::JsonPtr previous);
  void TrimHistory(fake_api::History& history);
  std::shared_ptr<const Snapshot> TakeSnapshot(Resource r) const;
  void TrimSnapshots();
  std::string NewUid();
  std::string RandomSuffix();  // generateName's five characters, deterministic

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
  std::map<std::string, fake_api::JsonPtr> objects_[fake_api::kResourceCount];
  fake_api::History history_[fake_api::kResourceCount];
  std::map<std::string, json> events_;  // "namespace/name"
  // Paginated lists' snapshots by (resource index, list resourceVersion).
  std::map<std::pair<size_t, uint64_t>, std::shared_ptr<const Snapshot>> snapshots_;
  std::map<uint64_t, std::shared_ptr<fake_api::Watcher>> watchers_;
  uint64_t next_watcher_id_ = 1;
  std::string token_;
  // TokenReview: token -> (username, groups); SubjectAccessReview: (subject, verb, path) allowed.
  std::map<std::string, std::pair<std::string, std::vector<std::string>>> token_users_;
  std::vector<std::tuple<std::string, std::string, std::string>> non_resource_rules_;
  std::vector<fake_api::FaultRule> failures_;
  std::vector<fake_api::FaultRule> delays_;  // DelayNext and HoldNext rules
  uint64_t release_generation_ = 0;          // ReleaseHeld() calls so far
  size_t held_ = 0;                          // requests waiting for ReleaseHeld()
  std::vector<RecordedRequest> requests_;
  size_t history_window_;
  std::chrono::milliseconds bookmark_interval_;
  uint64_t uid_counter_ = 0;
  uint64_t name_counter_ = 0;
  bool stopping_ = false;
};

}  // namespace gputopo::testing

#endif  // GPUTOPO_TEST_SUPPORT_FAKE_API_SERVER_IMPL_H_
