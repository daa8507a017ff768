// The preempt verb over HTTP, on the cluster a real kube-scheduler preempted in
// shared/k8s/preempt: its request bodies posted byte for byte, in both nodeCacheCapable modes,
// and the answers compared with what it accepted; then a time-sliced node where the scheduler's
// replica counting is wrong, bad input, and /debug.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "test/src/http/server_fixture.h"
#include "test/support/fixtures.h"

namespace gputopo::testing {
namespace {

std::filesystem::path Capture(const std::string& mode, const std::string& file) {
  return SharedDir() / "k8s" / "preempt" / mode / file;
}

json CapturedReply(const std::string& mode, const std::string& stem) {
  const std::string text = ReadFile(Capture(mode, stem + ".reply-from-test-extender.txt"));
  return json::parse(text.substr(text.find('\n') + 1));
}

// Per node, the set of victim UIDs and NumPDBViolations of an ExtenderPreemptionResult.
std::map<std::string, std::pair<std::set<std::string>, int64_t>> Victims(const json& result) {
  std::map<std::string, std::pair<std::set<std::string>, int64_t>> out;
  for (const auto& [node, entry] : result["NodeNameToMetaVictims"].items()) {
    std::set<std::string> uids;
    for (const json& pod : entry["Pods"]) uids.insert(pod["UID"].get<std::string>());
    out[node] = {uids, entry["NumPDBViolations"].get<int64_t>()};
  }
  return out;
}

// The captured cluster before `high-8`: three 8-GPU nodes (here with an NVLink topology), full
// of the low-priority pods the cache_false request carries whole, each given GPUs in order. The
// two runs created their pods afresh: for `mode` cache_true, each pod gets the UID the
// cache_true request lists in its place (both runs made the same calls in the same order, and
// high-8's request lists every pod).
json CapturedCluster(const std::string& mode, bool high8_admitted) {
  const json request =
      json::parse(ReadFile(Capture("cache_false", "035-preempt.high-8.request.json")));
  const json meta = json::parse(ReadFile(Capture("cache_true", "035-preempt.high-8.request.json")));
  json items = json::array();
  for (int n = 1; n <= 4; ++n) {
    items.push_back(Node("gpu-node-" + std::to_string(n), 8, json::object(),
                         {{"gputopo.io/topology", H100Document()}}));
  }
  for (const auto& [node, entry] : request["NodeNameToVictims"].items()) {
    if (high8_admitted && node == "gpu-node-1") continue;  // its pods were preempted
    int next_gpu = 0;
    for (size_t i = 0; i < entry["Pods"].size(); ++i) {
      json pod = entry["Pods"][i];
      if (mode == "cache_true") {
        pod["metadata"]["uid"] = meta["NodeNameToMetaVictims"][node]["Pods"][i]["UID"];
      }
      pod["apiVersion"] = "v1";
      pod["kind"] = "Pod";
      const int gpus =
          std::stoi(pod["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"]
                        .get<std::string>());
      std::string assigned;
      for (int g = 0; g < gpus; ++g)
        assigned += (g > 0 ? "," : "") + std::string("GPU-h100-") + std::to_string(next_gpu++);
      pod["metadata"]["annotations"]["gputopo.io/assigned-gpus"] = assigned;
      pod["status"]["phase"] = "Running";
      items.push_back(pod);
    }
  }
  if (high8_admitted) {
    json high8 = Pod("research", "high-8", 8,
                     {{"gputopo.io/assigned-gpus",
                       "GPU-h100-0,GPU-h100-1,GPU-h100-2,GPU-h100-3,GPU-h100-4,GPU-h100-5,"
                       "GPU-h100-6,GPU-h100-7"}},
                     "gpu-node-1");
    high8["spec"]["priority"] = 1000000;
    items.push_back(high8);
  }
  return {{"apiVersion", "v1"},
          {"kind", "List"},
          {"metadata", {{"resourceVersion", ""}}},
          {"items", items}};
}

class PreemptTest : public ServerTest {};

TEST_F(PreemptTest, AnswersTheCapturedRequestsAsTheSchedulerNeeded) {
  for (const bool high8_admitted : {false, true}) {
    for (const std::string mode : {"cache_true", "cache_false"}) {
      StartWith(CapturedCluster(mode, high8_admitted));
      const std::string stem = high8_admitted ? "038-preempt.high-4" : "035-preempt.high-8";
      SCOPED_TRACE(mode + " " + stem);
      const json reply = PostJson("/preempt", ReadFile(Capture(mode, stem + ".request.json")));
      // On these NVLink nodes the scheduler's victims are exactly what gputopo's filter needs
      // gone (high-8 needs every GPU; high-4 gets four GPUs either way), so the answer is the
      // capture's: the same nodes, victims and PDB counts (gpu-node-2's guarded-0 for high-8).
      EXPECT_EQ(Victims(reply), Victims(CapturedReply(mode, stem))) << reply.dump();
      const json debug =
          Get(high8_admitted ? "/debug/pods/research/high-4" : "/debug/pods/research/high-8");
      ASSERT_TRUE(debug.contains("preempt")) << debug.dump();
      EXPECT_EQ(debug["preempt"]["victimsSentAs"], mode == "cache_true" ? "uids" : "pods");
      for (const json& node : debug["preempt"]["nodes"]) {
        EXPECT_TRUE(node["kept"].get<bool>()) << node.dump();
        EXPECT_TRUE(node["asProposed"].get<bool>()) << node.dump();
        EXPECT_FALSE(node["victims"].empty());
        // Pod keys, not UIDs: gputopo knows every victim.
        EXPECT_EQ(node["victims"][0].get<std::string>().rfind("research/", 0), 0u) << node.dump();
      }
      app_->Stop();
      app_.reset();
    }
  }
}

// A DGX-class node time-sliced 2 ways: 16 replicas on 8 GPUs, every replica held.
json TimeSlicedCluster() {
  json items = json::array();
  items.push_back(Node("ts", 16, {{"nvidia.com/gpu.replicas", "2"}},
                       {{"gputopo.io/topology", H100Document()}}));
  for (int g = 0; g < 8; ++g) {
    for (int k = 0; k < 2; ++k) {
      json pod = Pod("batch", "low-" + std::to_string(g) + "-" + std::to_string(k), 1,
                     {{"gputopo.io/assigned-gpus", "GPU-h100-" + std::to_string(g)}}, "ts");
      pod["spec"]["priority"] = 10;
      items.push_back(pod);
    }
  }
  items.push_back(Pod("batch", "low-elsewhere", 1, json::object(), ""));
  return {{"apiVersion", "v1"},
          {"kind", "List"},
          {"metadata", {{"resourceVersion", ""}}},
          {"items", items}};
}

json PreemptArgs(const json& pod, const json& meta_victims) {
  return {{"Pod", pod}, {"NodeNameToVictims", nullptr}, {"NodeNameToMetaVictims", meta_victims}};
}

TEST_F(PreemptTest, ReplacesReplicasOfOneGpuWithOneReplicaOfEachOfTwo) {
  StartWith(TimeSlicedCluster());
  json pod = Pod("research", "pair", 2);
  pod["spec"]["priority"] = 1000;
  // The scheduler's count: two replicas are two GPUs - both of GPU 0.
  const json args = PreemptArgs(
      pod,
      {{"ts",
        {{"Pods", {{{"UID", "uid-low-0-0"}}, {{"UID", "uid-low-0-1"}}}}, {"NumPDBViolations", 0}}},
       {"gone", {{"Pods", {{{"UID", "x"}}}}, {"NumPDBViolations", 0}}}});
  const json reply = PostJson("/preempt", args.dump());
  const auto victims = Victims(reply);
  ASSERT_EQ(victims.count("gone"), 0u) << "a node gputopo does not know is dropped";
  ASSERT_EQ(victims.count("ts"), 1u) << reply.dump();
  const std::set<std::string>& uids = victims.at("ts").first;
  ASSERT_EQ(uids.size(), 2u);
  std::set<char> gpus;
  for (const std::string& uid : uids) gpus.insert(uid[8]);  // "uid-low-<g>-<k>"
  EXPECT_EQ(gpus.size(), 2u) << "two replicas of one GPU do not make room for a 2-GPU pod";

  const json debug = Get("/debug/pods/research/pair");
  const json& nodes = debug["preempt"]["nodes"];
  ASSERT_EQ(nodes.size(), 2u) << debug.dump();
  // In request order: nlohmann writes the object's keys sorted.
  EXPECT_EQ(nodes[0]["node"], "gone");
  EXPECT_FALSE(nodes[0]["kept"].get<bool>());
  EXPECT_EQ(nodes[0]["reason"],
            "gputopo: node unknown to gputopo (not a GPU node, or not seen yet)");
  EXPECT_EQ(nodes[1]["node"], "ts");
  EXPECT_FALSE(nodes[1]["asProposed"].get<bool>());
  EXPECT_EQ(nodes[1]["victims"].size(), 2u);
  EXPECT_EQ(nodes[1]["spared"], 1);
  EXPECT_EQ(nodes[1]["added"], 1);
  const json decisions = Get("/debug/decisions");
  ASSERT_FALSE(decisions["decisions"].empty());
  EXPECT_EQ(decisions["decisions"][0]["verb"], "preempt");
  EXPECT_EQ(decisions["decisions"][0]["kept"], 1);
}

TEST_F(PreemptTest, BadInputGetsAnHttpErrorAndAnUnreadablePodKeepsNoNode) {
  StartWith(TimeSlicedCluster());
  auto res = client_->Post("/preempt", "{not json", "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  EXPECT_NE(res->body.find("gputopo: bad request: malformed ExtenderPreemptionArgs JSON"),
            std::string::npos)
      << res->body;
  // A corrupt gputopo annotation: gputopo would not place this pod, so nothing is evicted.
  json pod = Pod("research", "typo", 1, {{"gputopo.io/gpu-milli", "5000"}});
  pod["spec"]["priority"] = 1000;
  const json reply = PostJson(
      "/preempt",
      PreemptArgs(pod, {{"ts", {{"Pods", {{{"UID", "uid-low-0-0"}}}}, {"NumPDBViolations", 0}}}})
          .dump());
  EXPECT_EQ(reply, json::parse(R"({"NodeNameToMetaVictims":{}})"));
  const json debug = Get("/debug/pods/research/typo");
  EXPECT_NE(debug["preempt"]["error"].get<std::string>().find("gpu-milli"), std::string::npos)
      << debug.dump();
  // The server still serves, and its state is untouched.
  const json filter = PostJson("/filter", Args(Pod("batch", "low-elsewhere", 1), {"ts"}).dump());
  EXPECT_TRUE(filter["Error"].get<std::string>().empty());
}

}  // namespace
}  // namespace gputopo::testing
