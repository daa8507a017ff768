// The watch-driven cache against the fake API server: sync, events, broken streams, 410 Gone,
// bookmarks and readiness.
#include "src/kube/cluster_watcher.h"

#include <curl/curl.h>
#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "src/app/system_clock.h"
#include "test/src/kube/kube_fixtures.h"
#include "test/support/fake_api_server.h"
#include "test/support/fake_clock.h"
#include "test/support/test_cluster.h"

namespace gputopo::kube {
namespace {

using nlohmann::json;
using testing::FakeApiServer;
using testing::GpuNode;
using testing::GpuPod;
using testing::WaitFor;

// How long a test waits for something it expects (a call's answer, watches to open): long, so
// that no slow run (TSan, a loaded machine) gives up before it happens. No test here needs a
// deadline to expire.
constexpr std::chrono::milliseconds kAnswerDeadline = std::chrono::seconds(120);

json BoundPod(const std::string& name, const std::string& node, const std::string& gpus) {
  json pod = GpuPod("ml", name, 1, {{"gputopo.io/assigned-gpus", gpus}});
  pod["spec"]["nodeName"] = node;
  pod["status"]["phase"] = "Running";
  return pod;
}

class WatcherTest : public ::testing::Test {
 protected:
  WatcherTest()
      : server_(FakeApiServer::Options{.history_window = 1000,
                                       .bookmark_interval = std::chrono::milliseconds(100),
                                       .worker_threads = 16,
                                       .keep_alive_timeout_s = 5,
                                       .now = {}}) {}
  void SetUp() override {
    curl_global_init(CURL_GLOBAL_DEFAULT);
    ASSERT_TRUE(server_.Start());
    KubeConfig config;
    config.server = server_.base_url();
    ClientOptions client;
    client.request_timeout = kAnswerDeadline;
    client_ = std::make_unique<KubeClient>(config, client, clock_);
  }
  void StartWatcher(ClusterWatcher::GpuMismatchListener on_gpu_mismatch = nullptr,
                    cluster::DisruptionBudgetIndex* budgets = nullptr) {
    WatcherOptions options;
    options.watch_timeout_seconds = 5;
    options.backoff_initial = std::chrono::milliseconds(20);
    options.backoff_max = std::chrono::milliseconds(200);
    options.staleness = std::chrono::seconds(30);
    watcher_ = std::make_unique<ClusterWatcher>(*client_, cluster_.state(), clock_, options,
                                                std::move(on_gpu_mismatch), budgets);
    watcher_->Start();
    ASSERT_TRUE(WaitFor([&] { return watcher_->Ready(); })) << "never synced";
    ASSERT_TRUE(server_.WaitForOpenWatches(budgets != nullptr ? 3 : 2, kAnswerDeadline));
  }
  void TearDown() override {
    if (watcher_) watcher_->Stop();
    server_.Stop();
  }
  int UsedSlots(const std::string& node) const {
    auto state = cluster_.Node(node);
    return state ? state->used_slots() : -1;
  }

  FakeApiServer server_;
  testing::TestCluster cluster_;
  testing::FakeClock clock_;
  std::unique_ptr<KubeClient> client_;
  std::unique_ptr<ClusterWatcher> watcher_;
};

json TrainerBudget(int allowed) {
  return {{"apiVersion", "policy/v1"},
          {"kind", "PodDisruptionBudget"},
          {"metadata", {{"name", "trainer"}, {"namespace", "ml"}}},
          {"spec", {{"minAvailable", 1}, {"selector", {{"matchLabels", {{"app", "trainer"}}}}}}},
          {"status",
           {{"disruptionsAllowed", allowed},
            {"currentHealthy", 2},
            {"desiredHealthy", 1},
            {"expectedPods", 2}}}};
}

// The uid the fake server gave a pod created with label app=trainer.
std::string CreateTrainer(FakeApiServer& server, const std::string& name, const std::string& gpu) {
  json pod = BoundPod(name, "gpu-1", gpu);
  pod["metadata"]["labels"] = {{"app", "trainer"}};
  std::optional<json> stored = server.CreatePod(pod);
  EXPECT_TRUE(stored.has_value());
  return stored ? (*stored)["metadata"]["uid"].get<std::string>() : "";
}

TEST_F(WatcherTest, WatchesDisruptionBudgetsAndTheLabelsOfGpuPods) {
  ASSERT_TRUE(server_.CreateNode(GpuNode("gpu-1")).has_value());
  const std::string first = CreateTrainer(server_, "trainer-0", "0");
  ASSERT_TRUE(server_.CreateDisruptionBudget(TrainerBudget(1)).has_value());
  cluster::DisruptionBudgetIndex budgets;
  StartWatcher(nullptr, &budgets);
  ASSERT_TRUE(WaitFor([&] { return budgets.Counts().synced; })) << "budgets never listed";
  auto allowed_for = [&](const std::string& uid) {
    std::optional<policies::BudgetCoverage> c = budgets.CoverageOf({uid});
    if (!c || !c->budgets_of.contains(uid)) return -1;
    return c->allowed[c->budgets_of.at(uid).front()];
  };
  // Listed: the budget counts the pod listed with it.
  EXPECT_EQ(allowed_for(first), 1);
  EXPECT_EQ(budgets.CoverageOf({first})->budgets, std::vector<std::string>{"ml/trainer"});
  // Watched: the controller's new status, a new pod, the budget's deletion.
  ASSERT_TRUE(server_
                  .UpdateDisruptionBudget("ml", "trainer",
                                          [](json& b) { b["status"]["disruptionsAllowed"] = 0; })
                  .has_value());
  EXPECT_TRUE(WaitFor([&] { return allowed_for(first) == 0; }));
  const std::string second = CreateTrainer(server_, "trainer-1", "1");
  EXPECT_TRUE(WaitFor([&] { return allowed_for(second) == 0; }));
  ASSERT_TRUE(server_.DeletePod("ml", "trainer-1"));
  EXPECT_TRUE(WaitFor([&] { return budgets.Counts().pods == 1; }));
  ASSERT_TRUE(server_.DeleteDisruptionBudget("ml", "trainer"));
  EXPECT_TRUE(WaitFor([&] { return budgets.Counts().budgets == 0; }));
  EXPECT_EQ(allowed_for(first), -1);
}

TEST_F(WatcherTest, BudgetsTheWatcherMayNotListDoNotHoldReadiness) {
  ASSERT_TRUE(server_.CreateNode(GpuNode("gpu-1")).has_value());
  const std::string uid = CreateTrainer(server_, "trainer-0", "0");
  ASSERT_TRUE(server_.CreateDisruptionBudget(TrainerBudget(0)).has_value());
  // RBAC without poddisruptionbudgets: 403 twice; then a list that stays unanswered until the
  // test lets it go.
  server_.FailNext("GET", "/apis/policy/v1/poddisruptionbudgets", 403, 2);
  server_.HoldNext("GET", "/apis/policy/v1/poddisruptionbudgets");
  cluster::DisruptionBudgetIndex budgets;
  WatcherOptions options;
  options.backoff_initial = std::chrono::milliseconds(20);
  options.backoff_max = std::chrono::milliseconds(200);
  watcher_ = std::make_unique<ClusterWatcher>(*client_, cluster_.state(), clock_, options, nullptr,
                                              &budgets);
  watcher_->Start();
  ASSERT_TRUE(WaitFor([&] { return watcher_->Ready(); }))
      << "nodes and pods alone make the watcher ready";
  EXPECT_FALSE(budgets.CoverageOf({uid}).has_value()) << "budgets unknown: the scheduler's count";
  ASSERT_TRUE(WaitFor([&] { return server_.held_requests() == 1; }));
  server_.ReleaseHeld();
  ASSERT_TRUE(WaitFor([&] { return budgets.Counts().synced; })) << "the list is retried";
  std::optional<policies::BudgetCoverage> coverage = budgets.CoverageOf({uid});
  ASSERT_TRUE(coverage.has_value());
  EXPECT_EQ(coverage->budgets, std::vector<std::string>{"ml/trainer"});
}

TEST_F(WatcherTest, InitialSyncKeepsOnlyGpuNodesAndGpuPods) {
  ASSERT_TRUE(server_.CreateNode(GpuNode("gpu-1")).has_value());
  ASSERT_TRUE(server_.CreateNode(testing::CpuNode("cpu-1")).has_value());
  ASSERT_TRUE(server_.CreatePod(BoundPod("a", "gpu-1", "0")).has_value());
  ASSERT_TRUE(server_.CreatePod(testing::CpuPod("ml", "web")).has_value());
  ASSERT_TRUE(server_.CreatePod(GpuPod("ml", "pending", 2)).has_value());
  EXPECT_FALSE(server_.GetPodObject("ml", "web")->empty());
  StartWatcher();
  auto snapshot = cluster_.state().Snapshot();
  EXPECT_EQ(snapshot->node_count(), 1u);
  EXPECT_NE(snapshot->Find("gpu-1"), nullptr);
  EXPECT_EQ(snapshot->Find("cpu-1"), nullptr);
  EXPECT_EQ(UsedSlots("gpu-1"), 1);
  EXPECT_EQ(cluster_.state().Counts().pods, 2u);  // the two GPU pods; not "web"
}

TEST_F(WatcherTest, EventsReachTheCacheAsTheyHappen) {
  ASSERT_TRUE(server_.CreateNode(GpuNode("gpu-1")).has_value());
  StartWatcher();
  ASSERT_TRUE(server_.CreatePod(BoundPod("a", "gpu-1", "0")).has_value());
  ASSERT_TRUE(server_.CreatePod(BoundPod("b", "gpu-1", "1")).has_value());
  ASSERT_TRUE(server_.CreatePod(BoundPod("c", "gpu-1", "2")).has_value());
  ASSERT_TRUE(WaitFor([&] { return UsedSlots("gpu-1") == 3; }));
  // A pod that finished frees its GPU at once.
  server_.UpdatePod("ml", "a", [](json& p) { p["status"]["phase"] = "Succeeded"; });
  ASSERT_TRUE(WaitFor([&] { return UsedSlots("gpu-1") == 2; }));
  // Deletion requested and its containers gone: free, before the object disappears.
  server_.UpdatePod("ml", "b", [](json& p) {
    p["metadata"]["deletionTimestamp"] = "2026-11-29T10:00:00Z";
    p["status"]["containerStatuses"] = {
        {{"name", "main"}, {"state", {{"terminated", {{"exitCode", 0}}}}}}};
  });
  ASSERT_TRUE(WaitFor([&] { return UsedSlots("gpu-1") == 1; }));
  ASSERT_TRUE(server_.DeletePod("ml", "c"));
  ASSERT_TRUE(WaitFor([&] { return UsedSlots("gpu-1") == 0; }));
  // A node going away, and a new one arriving.
  ASSERT_TRUE(server_.CreateNode(GpuNode("gpu-2")).has_value());
  ASSERT_TRUE(WaitFor([&] { return cluster_.Node("gpu-2") != nullptr; }));
  ASSERT_TRUE(server_.DeleteNode("gpu-1"));
  ASSERT_TRUE(WaitFor([&] { return cluster_.Node("gpu-1") == nullptr; }));
}

// The node agent's observed-gpus reach the cache, and a mismatch with assigned-gpus is reported
// once, by the event that first shows it.
TEST_F(WatcherTest, ObservedGpusReachTheCacheAndAMismatchIsReportedOnce) {
  ASSERT_TRUE(server_.CreateNode(GpuNode("gpu-1")).has_value());
  std::mutex mutex;
  std::vector<std::string> reported;  // GUARDED_BY(mutex)
  StartWatcher([&](const PodInfo& pod) {
    std::lock_guard<std::mutex> lock(mutex);
    reported.push_back(pod.Key());
  });
  ASSERT_TRUE(server_.CreatePod(BoundPod("a", "gpu-1", "0")).has_value());
  ASSERT_TRUE(WaitFor([&] {
    auto node = cluster_.Node("gpu-1");
    return node && !node->gpu(0).occupants.empty();
  }));
  server_.UpdatePod(
      "ml", "a", [](json& p) { p["metadata"]["annotations"]["gputopo.io/observed-gpus"] = "5"; });
  ASSERT_TRUE(WaitFor([&] {
    auto node = cluster_.Node("gpu-1");
    return node && !node->gpu(5).occupants.empty() && node->gpu(0).occupants.empty();
  }));
  // Another change to the pod keeps the mismatch: not reported again. The label change is
  // applied once the next pod's event (which follows it in the stream) has been.
  server_.UpdatePod("ml", "a", [](json& p) { p["metadata"]["labels"]["touched"] = "yes"; });
  ASSERT_TRUE(server_.CreatePod(BoundPod("b", "gpu-1", "1")).has_value());
  ASSERT_TRUE(WaitFor([&] {
    auto node = cluster_.Node("gpu-1");
    return node && !node->gpu(1).occupants.empty();
  }));
  std::lock_guard<std::mutex> lock(mutex);
  EXPECT_EQ(reported, std::vector<std::string>{"ml/a"});
}

TEST_F(WatcherTest, ABrokenStreamResumesWithoutLosingOrRepeatingEvents) {
  ASSERT_TRUE(server_.CreateNode(GpuNode("gpu-1", 4)).has_value());
  StartWatcher();
  std::map<std::string, std::string> uids;
  for (int round = 0; round < 3; ++round) {
    // Both watches (nodes, pods) are open again before the next break, so each round counts.
    ASSERT_TRUE(server_.WaitForOpenWatches(2, kAnswerDeadline));
    (round % 2 == 0) ? server_.BreakWatchesMidEvent() : server_.BreakWatches();
    // Written while no watch is open: the resumed watch must replay them from its
    // resourceVersion.
    for (int i = 0; i < 4; ++i) {
      const std::string name = "r" + std::to_string(round) + "-" + std::to_string(i);
      auto created = server_.CreatePod(BoundPod(name, "gpu-1", std::to_string(i)));
      ASSERT_TRUE(created.has_value());
      uids[name] = (*created)["metadata"]["uid"];
    }
    ASSERT_TRUE(server_.DeletePod("ml", "r" + std::to_string(round) + "-0"));
  }
  // Events apply in order, so once r2-3 is in and r2-0 (deleted last) is gone, all are applied.
  ASSERT_TRUE(WaitFor([&] {
    return cluster_.state().FindPod(uids["r2-3"]).has_value() &&
           !cluster_.state().FindPod(uids["r2-0"]).has_value();
  }));
  // 12 created, 3 deleted: 9 pods, 9 slots, each counted once.
  EXPECT_EQ(UsedSlots("gpu-1"), 9);
  EXPECT_EQ(cluster_.state().Counts().pods, 9u);
  EXPECT_GE(watcher_->Stats().reconnects, 3u);
  EXPECT_EQ(watcher_->Stats().relists, 0u);  // resumed, not relisted
}

TEST_F(WatcherTest, TooOldResourceVersionListsAgain) {
  ASSERT_TRUE(server_.CreateNode(GpuNode("gpu-1", 4)).has_value());
  ASSERT_TRUE(server_.CreatePod(BoundPod("old", "gpu-1", "0")).has_value());
  StartWatcher();
  ASSERT_EQ(UsedSlots("gpu-1"), 1);
  server_.BreakWatches();
  ASSERT_TRUE(server_.DeletePod("ml", "old"));
  ASSERT_TRUE(server_.CreatePod(BoundPod("new", "gpu-1", "3")).has_value());
  server_.CompactHistory();  // the resumed watch gets 410: only a fresh list can tell
  ASSERT_TRUE(WaitFor([&] { return watcher_->Stats().relists >= 1; }));
  ASSERT_TRUE(WaitFor(
      [&] { return UsedSlots("gpu-1") == 1 && cluster_.Node("gpu-1")->gpu(3).slots_used == 1; }));
  EXPECT_EQ(cluster_.Node("gpu-1")->gpu(0).slots_used, 0);  // the deleted pod is gone
}

TEST_F(WatcherTest, BookmarksMoveTheResumePointOn) {
  ASSERT_TRUE(server_.CreateNode(GpuNode("gpu-1")).has_value());
  StartWatcher();
  ASSERT_TRUE(server_.CreatePod(GpuPod("ml", "x", 1)).has_value());
  ASSERT_TRUE(WaitFor([&] { return cluster_.state().Counts().pods == 1; }));
  // The nodes watch has had no event since gpu-1 was added, so only a bookmark can move its
  // resourceVersion on to rv (the pods watch gets there through pod x itself).
  const std::string rv = server_.resource_version();
  auto nodes_watch_resumed_at_rv = [&] {
    for (const auto& r : server_.Requests()) {
      if (r.watch && r.path == "/api/v1/nodes" &&
          r.target.find("resourceVersion=" + rv + "&") != std::string::npos) {
        return true;
      }
    }
    return false;
  };
  server_.SendBookmarks();
  // The server ends each watch after timeoutSeconds (5 s here) with one more bookmark, and the
  // watcher applies a stream's lines in order before it resumes: the next nodes watch starts from
  // rv however slow the run. (Breaking the streams instead would race the bookmark's arrival.)
  ASSERT_TRUE(WaitFor(nodes_watch_resumed_at_rv, kAnswerDeadline));
}

TEST_F(WatcherTest, ReadinessFollowsSyncAndStaleness) {
  ASSERT_TRUE(server_.CreateNode(GpuNode("gpu-1")).has_value());
  WatcherOptions options;
  options.watch_timeout_seconds = 5;
  options.backoff_initial = std::chrono::milliseconds(20);
  options.backoff_max = std::chrono::milliseconds(100);
  options.staleness = std::chrono::seconds(60);
  server_.HoldNext("GET", "/api/v1/pods");  // the pods list, held until released below
  watcher_ = std::make_unique<ClusterWatcher>(*client_, cluster_.state(), clock_, options);
  watcher_->Start();
  ASSERT_TRUE(WaitFor([&] { return server_.held_requests() == 1; }));
  EXPECT_FALSE(watcher_->Ready());  // the pods list has not come back yet
  server_.ReleaseHeld();
  ASSERT_TRUE(WaitFor([&] { return watcher_->Ready(); }));
  // The API server goes away: still ready within the staleness bound...
  const uint64_t reconnects = watcher_->Stats().reconnects;
  server_.Stop();
  // ...once the watcher has seen it gone: three failed watches mean some kind failed twice, and
  // it marked itself broken (at the fake clock's time) before trying again.
  ASSERT_TRUE(WaitFor([&] { return watcher_->Stats().reconnects >= reconnects + 3; }));
  EXPECT_TRUE(watcher_->Ready());
  clock_.Advance(std::chrono::seconds(61));
  EXPECT_FALSE(watcher_->Ready());  // ...and not past it
  ASSERT_TRUE(server_.Start());
  ASSERT_TRUE(WaitFor([&] { return watcher_->Ready(); }));
}

}  // namespace
}  // namespace gputopo::kube
