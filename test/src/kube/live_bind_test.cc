// gputopo in live mode against the fake API server, over HTTP as kube-scheduler drives it: bind
// at every failure point, restart recovery, concurrent binds, and a soak whose books must balance.
#include <gtest/gtest.h>
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "test/src/kube/live_app.h"

namespace gputopo {
namespace {

using nlohmann::json;
using testing::GpuNode;
using testing::GpuPod;
using testing::WaitFor;

// The client deadline of an app whose calls the test expects answered: long enough that no slow
// run (TSan, a loaded machine) makes one expire before the fake server answers.
constexpr std::chrono::milliseconds kAnswerDeadline = std::chrono::seconds(120);
// The client deadline of an app whose bind must time out. The server holds those replies until
// bind has answered, so the outcome does not depend on this value. The app's watcher shares the
// client: a list that takes longer is retried until one makes it.
constexpr std::chrono::milliseconds kExpiringDeadline = std::chrono::seconds(1);

// GPUs a pod holds according to the API server (its assigned-gpus annotation), if bound.
std::vector<std::string> AssignedOf(const json& pod) {
  std::vector<std::string> out;
  if (!pod["spec"].contains("nodeName")) return out;
  const json& annotations = pod["metadata"].value("annotations", json::object());
  const std::string value = annotations.value("gputopo.io/assigned-gpus", "");
  size_t start = 0;
  while (start < value.size()) {
    const size_t comma = std::min(value.find(',', start), value.size());
    out.push_back(value.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

class LiveTest : public testing::LiveAppTest {
 protected:
  using LiveAppTest::StartApp;
  std::unique_ptr<app::App> StartApp(std::chrono::milliseconds request_timeout = kAnswerDeadline) {
    app::AppOptions options = LiveOptions(request_timeout);
    options.server.http.verb_threads = 8;
    options.watcher.watch_timeout_seconds = 5;
    options.watcher.backoff_initial = std::chrono::milliseconds(20);
    options.watcher.backoff_max = std::chrono::milliseconds(200);
    return StartApp(options);
  }

  // kube-scheduler's round for one pod: filter over `nodes`, bind to the first that passed.
  // Returns the bind Error ("" on success), or the filter's reason when nothing passed.
  std::string Schedule(app::App& app, const std::string& name,
                       const std::vector<std::string>& nodes) {
    httplib::Client client("127.0.0.1", app.port());
    client.set_read_timeout(30, 0);
    const auto pod = server_.GetPodObject("ml", name);
    if (!pod) return "no such pod";
    const json args = {{"Pod", *pod}, {"Nodes", nullptr}, {"NodeNames", nodes}};
    auto filtered = client.Post("/filter", args.dump(), "application/json");
    if (!filtered || filtered->status != 200) return "filter failed";
    const json reply = json::parse(filtered->body);
    if (!reply["Error"].get<std::string>().empty()) return reply["Error"];
    if (reply["NodeNames"].empty()) return "no node passed";
    const json bind = {{"PodName", name},
                       {"PodNamespace", "ml"},
                       {"PodUID", (*pod)["metadata"]["uid"]},
                       {"Node", reply["NodeNames"][0]}};
    auto bound = client.Post("/bind", bind.dump(), "application/json");
    if (!bound || bound->status != 200) return "bind failed";
    return json::parse(bound->body)["Error"];
  }

  // What the cache holds on a node, per GPU (slots used).
  std::vector<int> CachedSlots(app::App& app, const std::string& node) {
    auto state = app.state().Snapshot()->FindShared(node);
    std::vector<int> out;
    if (state == nullptr) return out;
    for (int g = 0; g < state->gpu_count(); ++g) out.push_back(state->gpu(g).slots_used);
    return out;
  }
  // The same from the API server's point of view (bound pods' annotations).
  std::vector<int> ServerSlots(const std::string& node) {
    std::vector<int> out(8, 0);
    for (const json& pod : server_.Pods()) {
      if (pod["spec"].value("nodeName", "") != node) continue;
      const std::string phase = pod["status"].value("phase", "");
      if (phase == "Succeeded" || phase == "Failed") continue;  // holds nothing
      for (const std::string& gpu : AssignedOf(pod)) {
        // The hgx-h100 profile has no UUIDs: entries are indices.
        out[static_cast<size_t>(std::stoi(gpu))] += 1;
      }
    }
    return out;
  }
};

TEST_F(LiveTest, BindAnnotatesBindsAndRecordsAnEvent) {
  ASSERT_TRUE(server_.CreateNode(GpuNode("gpu-1")).has_value());
  ASSERT_TRUE(server_.CreatePod(GpuPod("ml", "train", 4)).has_value());
  app_ = StartApp();
  ASSERT_NE(app_, nullptr);
  ASSERT_TRUE(WaitFor([&] {
    return app_->state()
        .FindPod((*server_.GetPodObject("ml", "train"))["metadata"]["uid"].get<std::string>())
        .has_value();
  }));
  EXPECT_EQ(Schedule(*app_, "train", {"gpu-1"}), "");
  const json pod = *server_.GetPodObject("ml", "train");
  EXPECT_EQ(pod["spec"]["nodeName"], "gpu-1");
  EXPECT_EQ(AssignedOf(pod).size(), 4u);
  // One write: the Binding carried the annotation; no separate PATCH.
  EXPECT_EQ(server_.RequestCount("POST", "/api/v1/namespaces/ml/pods/train/binding"), 1u);
  EXPECT_EQ(server_.RequestCount("PATCH", "/api/v1/namespaces/ml/pods/train"), 0u);
  // The Event is posted off the request path, so it may arrive after the bind answered.
  ASSERT_TRUE(WaitFor([&] { return server_.Events().size() == 1; }));
  EXPECT_EQ(server_.Events()[0]["reason"], "GPUsAssigned");
  EXPECT_NE(server_.Events()[0]["message"].get<std::string>().find("NVLink island"),
            std::string::npos);
  // The watch confirms it: the cache and the API server agree, nothing is left reserved.
  ASSERT_TRUE(WaitFor([&] { return app_->state().Counts().reservations == 0; }));
  EXPECT_EQ(CachedSlots(*app_, "gpu-1"), ServerSlots("gpu-1"));
}

struct Fault {
  const char* what;
  const char* method;
  const char* path_suffix;  // after /api/v1/namespaces/ml/pods/<name>
  int status;               // answered instead of handling the request
  bool bound_after;         // does the pod end up bound (to our node)?
  bool error;               // does bind answer with an error?
};

TEST_F(LiveTest, EveryFailurePointRollsBackOrIsReadBack) {
  ASSERT_TRUE(server_.CreateNode(GpuNode("gpu-1")).has_value());
  const Fault faults[] = {
      {"binding conflict (stale copy), retried with a fresh one", "POST", "/binding", 409, true,
       false},
      {"binding 404 (pod deleted)", "POST", "/binding", 404, false, true},
      {"binding 403 (forbidden)", "POST", "/binding", 403, false, true},
  };
  int i = 0;
  for (const Fault& f : faults) {
    SCOPED_TRACE(f.what);
    const std::string name = "p" + std::to_string(i++);
    ASSERT_TRUE(server_.CreatePod(GpuPod("ml", name, 1)).has_value());
    if (!app_) app_ = StartApp();
    ASSERT_NE(app_, nullptr);
    const std::string path = "/api/v1/namespaces/ml/pods/" + name + f.path_suffix;
    server_.FailNext(f.method, path, f.status, 1);
    const std::string error = Schedule(*app_, name, {"gpu-1"});
    const bool bound = server_.GetPodObject("ml", name)->at("spec").contains("nodeName");
    if (!f.bound_after) {
      EXPECT_FALSE(bound) << error;
    } else {
      ASSERT_TRUE(WaitFor(
          [&] { return server_.GetPodObject("ml", name)->at("spec").contains("nodeName"); }));
    }
    EXPECT_EQ(!error.empty(), f.error) << error;
    // Either way the books balance once the watch has caught up: no GPU held for a pod that
    // is not bound, and every bound pod's GPUs held exactly once.
    ASSERT_TRUE(WaitFor([&] {
      return app_->state().Counts().reservations == 0 &&
             CachedSlots(*app_, "gpu-1") == ServerSlots("gpu-1");
    })) << "cache and API server disagree";
  }
}

// The Binding times out but lands later: bind cannot know in time and says so, keeps the GPUs
// reserved, and the watch turns the reservation into the pod's placement.
TEST_F(LiveTest, ABindingThatTimesOutAndLandsLaterBecomesThePlacement) {
  ASSERT_TRUE(server_.CreateNode(GpuNode("gpu-1")).has_value());
  ASSERT_TRUE(server_.CreatePod(GpuPod("ml", "p", 1)).has_value());
  app_ = StartApp(kExpiringDeadline);
  ASSERT_NE(app_, nullptr);
  // No answer to the Binding before bind has given up; it lands once released.
  server_.HoldNext("POST", "/api/v1/namespaces/ml/pods/p/binding");
  const std::string error = Schedule(*app_, "p", {"gpu-1"});
  EXPECT_NE(error.find("outcome unknown"), std::string::npos) << error;
  EXPECT_FALSE(server_.GetPodObject("ml", "p")->at("spec").contains("nodeName"));
  EXPECT_EQ(app_->state().Counts().reservations, 1u);  // kept: the Binding may still land
  server_.ReleaseHeld();
  ASSERT_TRUE(
      WaitFor([&] { return server_.GetPodObject("ml", "p")->at("spec").contains("nodeName"); }));
  ASSERT_TRUE(WaitFor([&] {
    return app_->state().Counts().reservations == 0 &&
           CachedSlots(*app_, "gpu-1") == ServerSlots("gpu-1");
  })) << "cache and API server disagree";
}

TEST_F(LiveTest, UnknownOutcomeKeepsTheGpusReservedUntilThePodIsSeen) {
  ASSERT_TRUE(server_.CreateNode(GpuNode("gpu-1")).has_value());
  ASSERT_TRUE(server_.CreatePod(GpuPod("ml", "p", 1)).has_value());
  app_ = StartApp(kExpiringDeadline);
  ASSERT_NE(app_, nullptr);
  // The binding times out, and so does reading the pod back: gputopo cannot know. Both replies
  // are held until bind has answered.
  server_.HoldNext("POST", "/api/v1/namespaces/ml/pods/p/binding");
  server_.HoldNext("GET", "/api/v1/namespaces/ml/pods/p");
  const std::string error = Schedule(*app_, "p", {"gpu-1"});
  EXPECT_NE(error.find("outcome unknown"), std::string::npos) << error;
  server_.ReleaseHeld();
  // The binding did go through; the watch shows it and the reservation becomes a placement
  // (never freed in between, so no other pod could take that GPU).
  ASSERT_TRUE(WaitFor([&] { return app_->state().Counts().reservations == 0; }));
  EXPECT_EQ(CachedSlots(*app_, "gpu-1"), ServerSlots("gpu-1"));
  EXPECT_EQ(ServerSlots("gpu-1")[0] + ServerSlots("gpu-1")[1] + ServerSlots("gpu-1")[2] +
                ServerSlots("gpu-1")[3] + ServerSlots("gpu-1")[4] + ServerSlots("gpu-1")[5] +
                ServerSlots("gpu-1")[6] + ServerSlots("gpu-1")[7],
            1);
}

TEST_F(LiveTest, ARestartRebuildsEverythingFromTheApiServer) {
  ASSERT_TRUE(server_.CreateNode(GpuNode("gpu-1")).has_value());
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(server_.CreatePod(GpuPod("ml", "p" + std::to_string(i), 1)).has_value());
  }
  {
    auto first = StartApp();
    ASSERT_NE(first, nullptr);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(Schedule(*first, "p" + std::to_string(i), {"gpu-1"}), "");
    first->Stop();
  }
  app_ = StartApp();  // a new process: nothing but the API server to go by
  ASSERT_NE(app_, nullptr);
  EXPECT_EQ(CachedSlots(*app_, "gpu-1"), ServerSlots("gpu-1"));
  EXPECT_EQ(Schedule(*app_, "p3", {"gpu-1"}), "");
  EXPECT_EQ(Schedule(*app_, "p4", {"gpu-1"}), "");
  std::set<std::string> gpus;
  for (const json& pod : server_.Pods()) {
    for (const std::string& g : AssignedOf(pod))
      EXPECT_TRUE(gpus.insert(g).second) << "GPU " << g << " given twice";
  }
  EXPECT_EQ(gpus.size(), 5u);
}

TEST_F(LiveTest, ConcurrentBindsNeverShareAGpu) {
  ASSERT_TRUE(server_.CreateNode(GpuNode("gpu-1")).has_value());  // 8 GPUs, 1 slot each
  for (int i = 0; i < 16; ++i) {
    ASSERT_TRUE(server_.CreatePod(GpuPod("ml", "c" + std::to_string(i), 1)).has_value());
  }
  app_ = StartApp();
  ASSERT_NE(app_, nullptr);
  ASSERT_TRUE(WaitFor([&] { return app_->state().Counts().pods == 16; }));
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = t; i < 16; i += 4)
        ok += Schedule(*app_, "c" + std::to_string(i), {"gpu-1"}).empty() ? 1 : 0;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 8);
  std::set<std::string> gpus;
  for (const json& pod : server_.Pods()) {
    for (const std::string& g : AssignedOf(pod)) EXPECT_TRUE(gpus.insert(g).second) << "GPU " << g;
  }
  EXPECT_EQ(gpus.size(), 8u);
}

TEST_F(LiveTest, SoakOfPodsComingAndGoingBalancesTheBooks) {
  ASSERT_TRUE(server_.CreateNode(GpuNode("gpu-1", 2)).has_value());
  ASSERT_TRUE(server_.CreateNode(GpuNode("gpu-2", 2)).has_value());
  app_ = StartApp();
  ASSERT_NE(app_, nullptr);
  std::mt19937 rng(7);
  std::vector<std::string> live;
  int bound = 0;
  for (int i = 0; i < 120; ++i) {
    const std::string name = "s" + std::to_string(i);
    ASSERT_TRUE(server_.CreatePod(GpuPod("ml", name, 1 + static_cast<int>(rng() % 2))).has_value());
    const std::string uid = (*server_.GetPodObject("ml", name))["metadata"]["uid"];
    WaitFor([&] { return app_->state().FindPod(uid).has_value(); }, std::chrono::seconds(2));
    if (Schedule(*app_, name, {"gpu-1", "gpu-2"}).empty()) {
      ++bound;
      live.push_back(name);
    }
    if (!live.empty() && rng() % 3 == 0) {  // pods finish or get deleted
      const size_t k = rng() % live.size();
      if (rng() % 2 == 0) {
        server_.DeletePod("ml", live[k]);
      } else {
        server_.UpdatePod("ml", live[k], [](json& p) { p["status"]["phase"] = "Succeeded"; });
      }
      live.erase(live.begin() + static_cast<long>(k));
    }
    if (i % 40 == 39) server_.BreakWatchesMidEvent();
  }
  EXPECT_GE(bound, 40);
  // Once the watch has caught up the books balance exactly, node by node, GPU by GPU.
  ASSERT_TRUE(WaitFor([&] {
    return app_->state().Counts().reservations == 0 &&
           CachedSlots(*app_, "gpu-1") == ServerSlots("gpu-1") &&
           CachedSlots(*app_, "gpu-2") == ServerSlots("gpu-2");
  })) << "cache and API server disagree";
  for (const char* node : {"gpu-1", "gpu-2"}) {
    for (int used : ServerSlots(node)) EXPECT_LE(used, 2) << node;
  }
}

// kube-scheduler's preemption, as it goes: preempt, nominate the pod (status.nominatedNodeName),
// delete the victims, and retry the pod later. Meanwhile a pod of lower priority asks for the
// freed GPUs and is refused; the preemptor then binds onto exactly them.
TEST_F(LiveTest, APodNominatedAfterPreemptionKeepsTheGpusItsVictimsFreed) {
  ASSERT_TRUE(server_.CreateNode(GpuNode("gpu-1")).has_value());
  std::map<std::string, std::string> name_of;  // uid -> name
  std::map<std::string, std::string> gpu_of;   // uid -> the GPU it holds
  for (int g = 0; g < 8; ++g) {
    json pod = GpuPod("ml", "low-" + std::to_string(g), 1,
                      {{"gputopo.io/assigned-gpus", std::to_string(g)}});
    pod["spec"]["nodeName"] = "gpu-1";
    pod["status"]["phase"] = "Running";
    const auto created = server_.CreatePod(pod);
    ASSERT_TRUE(created.has_value());
    const std::string uid = (*created)["metadata"]["uid"];
    name_of[uid] = "low-" + std::to_string(g);
    gpu_of[uid] = std::to_string(g);
  }
  json train = GpuPod("ml", "train", 2);
  train["spec"]["priority"] = 1000;
  ASSERT_TRUE(server_.CreatePod(train).has_value());
  ASSERT_TRUE(server_.CreatePod(GpuPod("ml", "other", 1)).has_value());
  app_ = StartApp();
  ASSERT_NE(app_, nullptr);
  const std::string train_uid = (*server_.GetPodObject("ml", "train"))["metadata"]["uid"];
  ASSERT_TRUE(WaitFor([&] { return app_->state().FindPod(train_uid).has_value(); }));

  httplib::Client client("127.0.0.1", app_->port());
  client.set_read_timeout(30, 0);
  json proposed = json::array();
  for (const auto& [uid, name] : name_of) {
    if (name == "low-0" || name == "low-1") proposed.push_back({{"UID", uid}});
  }
  const json args = {
      {"Pod", *server_.GetPodObject("ml", "train")},
      {"NodeNameToVictims", nullptr},
      {"NodeNameToMetaVictims", {{"gpu-1", {{"Pods", proposed}, {"NumPDBViolations", 0}}}}}};
  auto preempted = client.Post("/preempt", args.dump(), "application/json");
  ASSERT_TRUE(preempted && preempted->status == 200);
  const json victims = json::parse(preempted->body)["NodeNameToMetaVictims"]["gpu-1"]["Pods"];
  ASSERT_EQ(victims.size(), 2u) << preempted->body;
  std::vector<std::string> freed;
  for (const json& victim : victims) freed.push_back(gpu_of.at(victim["UID"]));
  std::sort(freed.begin(), freed.end());

  ASSERT_TRUE(
      server_
          .UpdatePod("ml", "train", [](json& pod) { pod["status"]["nominatedNodeName"] = "gpu-1"; })
          .has_value());
  for (const json& victim : victims)
    ASSERT_TRUE(server_.DeletePod("ml", name_of.at(victim["UID"])));
  // gputopo sees the victims gone and the claim on their GPUs.
  ASSERT_TRUE(WaitFor([&] {
    auto node = app_->state().Snapshot()->FindShared("gpu-1");
    return node != nullptr && node->nominees().size() == 1 && node->empty_gpus() == 0 &&
           node->used_slots() == 8;
  }));

  // Operators see the claim in /debug and /metrics.
  auto index = client.Get("/debug");
  ASSERT_TRUE(index && index->status == 200);
  EXPECT_EQ(json::parse(index->body)["nominatedClaims"], 1) << index->body;
  auto metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics && metrics->status == 200);
  EXPECT_NE(metrics->body.find("\ngputopo_nominated_claims 1\n"), std::string::npos);

  EXPECT_EQ(Schedule(*app_, "other", {"gpu-1"}), "no node passed");
  EXPECT_EQ(Schedule(*app_, "train", {"gpu-1"}), "");
  std::vector<std::string> assigned = AssignedOf(*server_.GetPodObject("ml", "train"));
  std::sort(assigned.begin(), assigned.end());
  EXPECT_EQ(assigned, freed);
  ASSERT_TRUE(WaitFor([&] {
    return app_->state().Snapshot()->FindShared("gpu-1")->nominees().empty() &&
           app_->state().Counts().claims == 0;
  }));
}

}  // namespace
}  // namespace gputopo
