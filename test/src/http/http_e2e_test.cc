// gputopo over real HTTP on loopback: the captured kube-scheduler bodies, the debug endpoints,
// bad input, and concurrent binds.
#include <gtest/gtest.h>
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <thread>

#include "test/src/http/server_fixture.h"
#include "test/support/fixtures.h"

namespace gputopo {
namespace {

using nlohmann::json;
using testing::BaseCluster;
using testing::H100Document;
using testing::Node;
using testing::Pod;
using testing::ReadFile;
using testing::ServerTest;
using testing::SharedDir;

TEST_F(ServerTest, FilterAnswersEveryCandidateWithAReason) {
  const json cluster = BaseCluster();
  StartWith(cluster);
  const json reply = PostJson(
      "/filter", Args(PodObject(cluster, "train"), {"plain", "h100", "ghost", "broken"}).dump());
  EXPECT_EQ(reply["Error"], "");
  EXPECT_TRUE(reply["Nodes"].is_null());
  EXPECT_EQ(reply["NodeNames"], json({"plain", "h100"}));  // a subset, in request order
  EXPECT_EQ(reply["FailedNodes"].size(), 1u);
  EXPECT_NE(reply["FailedNodes"]["ghost"].get<std::string>().find("unknown to gputopo"),
            std::string::npos);
  EXPECT_EQ(reply["FailedAndUnresolvableNodes"]["broken"], "gputopo: node topology invalid");
  // Why the broken node failed, in detail, on /debug.
  const json node = Get("/debug/nodes/broken");
  EXPECT_NE(node["error"].get<std::string>().find("not valid JSON"), std::string::npos);
}

// In the node view a GPU without NVLink is an island of its own. The summary's islandCount
// agrees with the islands listed; nvlinkIslands counts those NVLink joins (0 on a PCIe node).
TEST_F(ServerTest, NodeSummaryCountsTheIslandsTheNodeViewLists) {
  // 4 GPUs: 0-1 on NVLink, 2 and 3 on PCIe only.
  json mixed = {{"version", 1}, {"gpus", json::array()}, {"links", json::array()}};
  for (int i = 0; i < 4; ++i) {
    mixed["gpus"].push_back({{"index", i}, {"numaNode", 0}});
    for (int j = i + 1; j < 4; ++j) {
      mixed["links"].push_back({{"gpus", {i, j}}, {"type", i == 0 && j == 1 ? "NV4" : "PIX"}});
    }
  }
  json cluster = BaseCluster();
  cluster["items"].push_back(
      Node("mixed", 4, json::object(), {{"gputopo.io/topology", mixed.dump()}}));
  cluster["items"].push_back(Node("pcie", 4, {{"gputopo.io/topology-profile", "pcie-4gpu-2numa"}}));
  StartWith(cluster);
  struct Want {
    int islands;
    int nvlink_islands;
  };
  const std::map<std::string, Want> want = {
      {"h100", {1, 1}},   // NVLink all to all
      {"mixed", {3, 1}},  // [0,1] [2] [3]
      {"pcie", {4, 0}},   // a PCIe profile: four one-GPU islands
      {"plain", {4, 0}},  // links unknown
  };
  const json all = Get("/debug/nodes");
  std::map<std::string, json> summaries;
  for (const json& n : all["nodes"]) summaries[n["name"]] = n;
  for (const auto& [name, w] : want) {
    SCOPED_TRACE(name);
    const json node = Get("/debug/nodes/" + name);
    ASSERT_TRUE(node["islands"].is_array()) << node.dump();
    EXPECT_EQ(node["islands"].size(), static_cast<size_t>(w.islands));
    int joined = 0;
    for (const json& island : node["islands"]) joined += island.size() >= 2 ? 1 : 0;
    EXPECT_EQ(joined, w.nvlink_islands);
    for (const json& view : {summaries[name], node}) {
      EXPECT_EQ(view.value("islandCount", -1), w.islands) << view.dump();
      EXPECT_EQ(view.value("nvlinkIslands", -1), w.nvlink_islands) << view.dump();
    }
  }
}

// A 4-GPU pod prefers one NVLink island (the default for N > 1): /debug marks the node whose
// links are known and cannot give it one, and not the node that can.
TEST_F(ServerTest, DebugMarksTheNodesWhereAMultiGpuPodMissesItsIsland) {
  json cluster = BaseCluster();
  cluster["items"].push_back(Node("pcie", 4, {{"gputopo.io/topology-profile", "pcie-4gpu-2numa"}}));
  StartWith(cluster);
  const json reply =
      PostJson("/filter", Args(PodObject(cluster, "train"), {"pcie", "h100"}).dump());
  ASSERT_EQ(reply["NodeNames"].size(), 2u) << reply.dump();
  const json why = Get("/debug/pods/ml/train");
  std::map<std::string, json> nodes;
  for (const json& n : why["filter"]["nodes"]) nodes[n["node"]] = n;
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes["pcie"].value("localityMissed", false), true) << nodes["pcie"].dump();
  EXPECT_FALSE(nodes["h100"].contains("localityMissed")) << nodes["h100"].dump();
}

TEST_F(ServerTest, PrioritizeThenBindChoosesTheBestNodeAndRecordsTheGpus) {
  const json cluster = BaseCluster();
  StartWith(cluster);
  const json args = Args(PodObject(cluster, "train"), {"plain", "h100"});
  const json scores = PostJson("/prioritize", args.dump());
  ASSERT_TRUE(scores.is_array());
  ASSERT_EQ(scores.size(), 2u);
  std::map<std::string, int> by_host;
  for (const json& s : scores) by_host[s["Host"]] = s["Score"];
  // 4 GPUs on NVLink beat 4 GPUs with unknown links.
  EXPECT_GT(by_host["h100"], by_host["plain"]);
  EXPECT_LE(by_host["h100"], 10);
  const json bound = PostBind("ml", "train", "h100");
  EXPECT_EQ(bound["Error"], "");
  // The pod now carries its GPUs, four distinct UUIDs, and is bound.
  const json list = Get("/debug/snapshot");
  const json pod = PodObject(list, "train");
  EXPECT_EQ(pod["spec"]["nodeName"], "h100");
  const std::string assigned = pod["metadata"]["annotations"]["gputopo.io/assigned-gpus"];
  std::set<std::string> gpus;
  for (size_t start = 0; start <= assigned.size();) {
    size_t comma = std::min(assigned.find(',', start), assigned.size());
    gpus.insert(assigned.substr(start, comma - start));
    start = comma + 1;
  }
  EXPECT_EQ(gpus.size(), 4u) << assigned;
  for (const std::string& g : gpus) EXPECT_EQ(g.rfind("GPU-h100-", 0), 0u) << g;
  // The explanation: chosen node, GPUs, placement, components.
  const json why = Get("/debug/pods/ml/train");
  EXPECT_EQ(why["bind"]["node"], "h100");
  EXPECT_EQ(why["bind"]["gpus"].size(), 4u);
  EXPECT_NE(why["bind"]["placement"].get<std::string>().find("NVLink island 0"), std::string::npos);
  EXPECT_EQ(why["prioritize"]["nodes"][0]["node"], "h100");
  EXPECT_EQ(why["prioritize"]["nodes"][0]["components"].size(), 3u);  // the default preset's
  EXPECT_EQ(why["prioritize"]["nodes"][0]["priority"], 10);
  EXPECT_EQ(why["gpus"]["node"], "h100");
  EXPECT_EQ(why["gpus"]["assigned"], assigned);
  EXPECT_EQ(why["gpus"]["observed"], "");
  EXPECT_EQ(why["gpus"]["mismatch"], false);
  // The node view shows the occupants.
  const json node = Get("/debug/nodes/h100");
  int occupied = 0;
  for (const json& gpu : node["gpuList"]) occupied += gpu["occupants"].empty() ? 0 : 1;
  EXPECT_GE(occupied, 4);
  // The node agent reports that kubelet gave the pod other GPUs: both views show the two side
  // by side, and the node view puts the pod where it really is.
  std::optional<PodInfo> cached = app_->state().FindPod(pod["metadata"]["uid"].get<std::string>());
  ASSERT_TRUE(cached.has_value());
  std::string observed;  // four GPUs gputopo did not choose
  std::vector<int> elsewhere;
  for (int g = 0; g < 8 && elsewhere.size() < 4; ++g) {
    const std::string label = "GPU-h100-" + std::to_string(g);
    if (gpus.count(label) != 0) continue;
    elsewhere.push_back(g);
    observed += (observed.empty() ? "" : ",") + label;
  }
  ASSERT_EQ(elsewhere.size(), 4u);
  cached->annotations.emplace_back("gputopo.io/observed-gpus", observed);
  app_->state().UpsertPod(*cached);
  const json mismatch = Get("/debug/pods/ml/train")["gpus"];
  EXPECT_EQ(mismatch["assigned"], assigned);
  EXPECT_EQ(mismatch["observed"], observed);
  EXPECT_EQ(mismatch["mismatch"], true);
  const json real = Get("/debug/nodes/h100");
  for (int g : elsewhere) {
    SCOPED_TRACE(g);
    const json& occupants = real["gpuList"][static_cast<size_t>(g)]["occupants"];
    ASSERT_EQ(occupants.size(), 1u);
    EXPECT_EQ(occupants[0]["pod"], "ml/train");
    EXPECT_EQ(occupants[0]["observed"], true);
    EXPECT_EQ(occupants[0]["mismatch"], true);
    EXPECT_EQ(occupants[0]["assignedGpus"], assigned);
  }
  const json decisions = Get("/debug/decisions");
  EXPECT_EQ(decisions["decisions"][0]["verb"], "bind");
}

TEST_F(ServerTest, RecordedDecisionsDoNotPinTheSnapshotsTheyWereMadeOn) {
  // /debug keeps hundreds of recent cycles; each must hold only the nodes it shows, not the
  // whole cluster snapshot (tens of KiB per snapshot at thousands of nodes).
  const json cluster = BaseCluster();
  StartWith(cluster);
  std::weak_ptr<const policies::ClusterSnapshot> before = app_->state().Snapshot();
  const json args = Args(PodObject(cluster, "train"), {"plain", "h100", "nowhere"});
  ASSERT_TRUE(PostJson("/filter", args.dump()).is_object());
  ASSERT_TRUE(PostJson("/prioritize", args.dump()).is_array());
  const json bound = PostBind("ml", "train", "h100");
  ASSERT_EQ(bound["Error"], "");
  app_->table_refresher().WaitIdle();  // it may still be refreshing against the old one
  // A record waiting for the recorder's batch holds its snapshot until committed; reading
  // /debug commits every one first.
  const json why = Get("/debug/pods/ml/train");
  EXPECT_TRUE(before.expired());  // the bind published a new one; nothing holds the old
  // The recorded cycles still name and explain their nodes, as they were then.
  std::set<std::string> named;
  for (const json& n : why["filter"]["nodes"]) named.insert(n["node"]);
  EXPECT_EQ(named, (std::set<std::string>{"plain", "h100", "nowhere"}));
  EXPECT_EQ(why["prioritize"]["nodes"][0]["node"], "h100");
  EXPECT_EQ(why["prioritize"]["nodes"][0]["gpus"].size(), 4u);
}

// A bind changes a node; the pod shapes asked about recently are evaluated on it in the
// background (TableRefresher), so the next pod of a shape evaluates nothing on the request path.
TEST_F(ServerTest, AfterABindTheNextPodOfAShapeIsEvaluatedFromTheCacheAlone) {
  json cluster = BaseCluster();
  for (int i = 0; i < 2; ++i) {
    cluster["items"].push_back(Pod("batch", "job-" + std::to_string(i), 2));
  }
  StartWith(cluster);
  const std::vector<std::string> nodes = {"h100", "plain"};
  const json first = PostJson("/filter", Args(PodObject(cluster, "job-0"), nodes).dump());
  ASSERT_EQ(first["NodeNames"], json({"h100", "plain"}));
  EXPECT_EQ(Get("/debug/pods/batch/job-0")["filter"]["evaluated"], 2);  // a new shape
  const json bound = PostBind("batch", "job-0", "h100");
  ASSERT_EQ(bound["Error"], "");
  app_->table_refresher().WaitIdle();
  EXPECT_GE(app_->table_refresher().nodes_evaluated(), 1u);  // h100 changed
  ASSERT_TRUE(PostJson("/filter", Args(PodObject(cluster, "job-1"), nodes).dump()).is_object());
  const json second = Get("/debug/pods/batch/job-1")["filter"];
  EXPECT_EQ(second["candidates"], 2);
  EXPECT_EQ(second["evaluated"], 0);
}

// The base cluster plus three 8-GPU H100 nodes, g2 with 3 GPUs taken.
json WithThreeH100s() {
  json cluster = BaseCluster();
  for (const std::string name : {"g1", "g2", "g3"}) {
    cluster["items"].push_back(Node(name, 32, {{"nvidia.com/gpu.replicas", "4"}},
                                    {{"gputopo.io/topology", H100Document()}}));
  }
  cluster["items"].push_back(Pod("ml", "busy", 3, {{"gputopo.io/assigned-gpus", "0,1,2"}}, "g2"));
  return cluster;
}

// kube-scheduler's prioritize follows the pod's filter with the nodes that passed, in the order
// the reply listed them. While the cluster is unchanged, the filter's evaluations are reused;
// otherwise prioritize evaluates, and either way the scores are the same.
TEST_F(ServerTest, PrioritizeReusesTheFilterEvaluationsOnlyWhileNothingChanged) {
  const json cluster = WithThreeH100s();
  StartWith(cluster);
  const json train = PodObject(cluster, "train");
  auto scores_of = [](const json& list) {
    std::map<std::string, int> out;
    for (const json& host : list) out[host["Host"]] = host["Score"];
    return out;
  };
  auto prioritize = [&](const json& names) {
    return scores_of(PostJson("/prioritize", Args(train, names).dump()));
  };
  const json passed = PostJson(
      "/filter", Args(train, {"g1", "plain", "h100", "g2", "nowhere", "g3"}).dump())["NodeNames"];
  ASSERT_GE(passed.size(), 3u);
  const std::map<std::string, int> reused = prioritize(passed);
  json why = Get("/debug/pods/ml/train")["prioritize"];
  EXPECT_EQ(why["evaluationsFrom"], "filter");
  EXPECT_EQ(why["evaluated"], 0);
  // A subsequence of the filter's candidates is reused too.
  json fewer = passed;
  fewer.erase(fewer.begin());
  (void)prioritize(fewer);
  EXPECT_EQ(Get("/debug/pods/ml/train")["prioritize"]["evaluationsFrom"], "filter");
  // Another order is not kube-scheduler's: evaluated (from the cache), with the same scores.
  json reversed = passed;
  std::reverse(reversed.begin(), reversed.end());
  EXPECT_EQ(prioritize(reversed), reused);
  EXPECT_FALSE(Get("/debug/pods/ml/train")["prioritize"].contains("evaluationsFrom"));
  // Another pod bound in between changes the cluster: the filter's answers are not reused.
  ASSERT_EQ(PostBind("ml", "web-0", "g1")["Error"], "");
  const std::map<std::string, int> after_bind = prioritize(passed);
  EXPECT_FALSE(Get("/debug/pods/ml/train")["prioritize"].contains("evaluationsFrom"));
  EXPECT_EQ(after_bind, prioritize(reversed));  // what evaluating now gives
}

// --filter-decides: the filter passes prioritize's best node alone (kube-scheduler then skips
// scoring), and /debug names it beside every node that fit.
TEST_F(ServerTest, FilterDecidesPassesPrioritizesBestNodeAloneAndDebugNamesIt) {
  const json cluster = WithThreeH100s();
  StartWith(cluster, 64u << 20, /*filter_decides=*/true);
  const json train = PodObject(cluster, "train");
  const json names = {"g1", "plain", "h100", "g2", "nowhere", "g3"};
  const json scores = PostJson("/prioritize", Args(train, names).dump());
  int top = -1;
  std::set<std::string> best;
  for (const json& host : scores) {
    if (host["Score"].get<int>() > top) best.clear();
    top = std::max(top, host["Score"].get<int>());
    if (host["Score"].get<int>() == top) best.insert(host["Host"]);
  }
  const json reply = PostJson("/filter", Args(train, names).dump());
  ASSERT_EQ(reply["NodeNames"].size(), 1u) << reply.dump();
  const std::string chosen = reply["NodeNames"][0];
  EXPECT_EQ(best.count(chosen), 1u) << chosen << " is not among prioritize's best";
  EXPECT_EQ(reply["FailedNodes"].size(), 1u) << "only the unknown node has a reason";
  EXPECT_TRUE(reply["FailedNodes"].contains("nowhere"));
  const json why = Get("/debug/pods/ml/train")["filter"];
  EXPECT_EQ(why["decided"], chosen);
  EXPECT_GE(why["passed"].get<int>(), 3) << why.dump();
}

// /debug keeps only some nodes of a large cycle, but counts all of them.
TEST_F(ServerTest, DebugCountsEveryCandidateOfALargeCycle) {
  const json cluster = BaseCluster();
  StartWith(cluster);
  std::vector<std::string> nodes = {"h100"};
  for (int i = 0; i < 600; ++i) nodes.push_back("unknown-" + std::to_string(i));
  ASSERT_TRUE(PostJson("/filter", Args(PodObject(cluster, "train"), nodes).dump()).is_object());
  const json filter = Get("/debug/pods/ml/train")["filter"];
  EXPECT_EQ(filter["candidates"], 601);
  EXPECT_EQ(filter["passed"], 1);
  EXPECT_EQ(filter["failed"], 600);
  EXPECT_EQ(Get("/debug/decisions")["decisions"][0]["candidates"], 601);
}

TEST_F(ServerTest, ReplicasOfOneGroupGetDistinctGpus) {
  const json cluster = BaseCluster();
  StartWith(cluster);
  std::set<std::string> gpus;
  for (int i = 0; i < 4; ++i) {
    const std::string name = "web-" + std::to_string(i);
    const json filter = PostJson("/filter", Args(PodObject(cluster, name), {"h100"}).dump());
    ASSERT_EQ(filter["NodeNames"], json({"h100"}));
    const json bound = PostBind("ml", name, "h100");
    ASSERT_EQ(bound["Error"], "") << name;
    gpus.insert(Get("/debug/pods/ml/" + name)["bind"]["gpus"][0].get<std::string>());
  }
  EXPECT_EQ(gpus.size(), 4u);
}

TEST_F(ServerTest, BadPodAnnotationFailsTheFilterWithItsReason) {
  const json cluster = BaseCluster();
  StartWith(cluster);
  const json reply = PostJson("/filter", Args(PodObject(cluster, "typo"), {"h100"}).dump());
  EXPECT_NE(reply["Error"].get<std::string>().find("gputopo.io/gpu-milli='5000'"),
            std::string::npos);
  auto res = client_->Post("/prioritize", Args(PodObject(cluster, "typo"), {"h100"}).dump(),
                           "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  const json bound = PostBind("ml", "typo", "h100");
  EXPECT_NE(bound["Error"].get<std::string>().find("gpu-milli"), std::string::npos);
}

TEST_F(ServerTest, MalformedRequestsGetTheProtocolErrorAndTheServerKeepsServing) {
  const json cluster = BaseCluster();
  StartWith(cluster, /*max_body=*/1u << 20);
  const std::string before = client_->Get("/debug/nodes")->body;
  const std::vector<std::string> bodies = {
      "",
      "{",
      "[]",
      "null",
      "{\"Pod\":null,\"NodeNames\":[\"h100\"]}",
      "{\"NodeNames\":[\"h100\"]}",
      "{\"Pod\":{\"metadata\":{\"name\":\"x\"}}}",
      "{\"Pod\":{}, \"NodeNames\":[1,2]}",
      std::string(5000, '['),
      "\x01\x02\xff\xfe",
      "{\"Pod\":{\"metadata\":{\"name\":\"x\"},\"spec\":{\"containers\":[{\"resources\":{"
      "\"limits\":{\"nvidia.com/gpu\":\"lots\"}}}]}},\"NodeNames\":[]}"};
  for (const std::string& body : bodies) {
    const json filter = PostJson("/filter", body);
    EXPECT_FALSE(filter["Error"].get<std::string>().empty()) << body.substr(0, 40);
    auto res = client_->Post("/prioritize", body, "application/json");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 400) << body.substr(0, 40);
    const json bind = PostJson("/bind", body);
    EXPECT_FALSE(bind["Error"].get<std::string>().empty()) << body.substr(0, 40);
  }
  // Over the body limit: 413 with an Error body.
  auto big = client_->Post("/filter", std::string(2u << 20, ' '), "application/json");
  ASSERT_TRUE(big);
  EXPECT_EQ(big->status, 413);
  EXPECT_NE(big->body.find("larger than"), std::string::npos);
  // Compressed bodies are refused.
  httplib::Headers gzip = {{"Content-Encoding", "gzip"}};
  auto zipped = client_->Post("/filter", gzip, "\x1f\x8b", "application/json");
  ASSERT_TRUE(zipped);
  EXPECT_EQ(zipped->status, 415);
  // Absurd values on a well-formed pod.
  json absurd = PodObject(cluster, "train");
  absurd["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "100000000";
  EXPECT_FALSE(
      PostJson("/filter", Args(absurd, {"h100"}).dump())["Error"].get<std::string>().empty());
  // Still serving, state untouched.
  EXPECT_EQ(client_->Get("/healthz")->status, 200);
  EXPECT_EQ(client_->Get("/debug/nodes")->body, before);
  const json ok = PostJson("/filter", Args(PodObject(cluster, "train"), {"h100"}).dump());
  EXPECT_EQ(ok["NodeNames"], json({"h100"}));
}

// All-pod mode: kube-scheduler sends CPU-only pods too. They pass every node, the ones gputopo
// does not keep included; bind places them with a plain Binding; their CPU then counts on the
// node they went to.
TEST_F(ServerTest, AllPodModeBindsAGpuLessPodAndCountsItsCpu) {
  json cluster = BaseCluster();
  cluster["items"][0]["status"]["allocatable"]["cpu"] = "32";
  cluster["items"][0]["status"]["allocatable"]["memory"] = "256Gi";
  json cpu_pod = Pod("ml", "cpu-job", 0);
  cpu_pod["spec"]["containers"][0]["resources"] = {{"requests", {{"cpu", "4"}, {"memory", "8Gi"}}}};
  cluster["items"].push_back(cpu_pod);
  StartWith(cluster);
  const json args = Args(cpu_pod, {"h100", "cpu-only-node"});
  const json filtered = PostJson("/filter", args.dump());
  EXPECT_EQ(filtered["NodeNames"], json({"h100", "cpu-only-node"})) << filtered.dump();
  const json scores = PostJson("/prioritize", args.dump());
  ASSERT_EQ(scores.size(), 2u);
  EXPECT_EQ(scores[1]["Host"], "cpu-only-node");
  EXPECT_EQ(scores[1]["Score"], 10);  // strands no GPU there
  EXPECT_EQ(PostBind("ml", "cpu-job", "h100")["Error"], "");
  const json pod = PodObject(Get("/debug/snapshot"), "cpu-job");
  EXPECT_EQ(pod["spec"]["nodeName"], "h100");
  EXPECT_FALSE(
      pod["metadata"].value("annotations", json::object()).contains("gputopo.io/assigned-gpus"));
  const json node = Get("/debug/nodes/h100");
  EXPECT_EQ(node["cpuMilli"]["allocatable"], 32000);
  EXPECT_EQ(node["cpuMilli"]["requested"], 4000);
  EXPECT_EQ(node["memoryBytes"]["requested"], int64_t{8} << 30);
  const json index = Get("/debug");
  EXPECT_EQ(index["hostPods"], 1);
  EXPECT_TRUE(index["learnedWorkload"]["classes"].is_array());
}

TEST_F(ServerTest, BindFailuresLeaveNoReservationBehind) {
  const json cluster = BaseCluster();
  StartWith(cluster);
  auto bind = [&](const std::string& name, const std::string& uid, const std::string& node) {
    return PostJson(
               "/bind",
               json({{"PodName", name}, {"PodNamespace", "ml"}, {"PodUID", uid}, {"Node", node}})
                   .dump())["Error"]
        .get<std::string>();
  };
  const std::string nodes_before = client_->Get("/debug/nodes")->body;
  EXPECT_NE(bind("nobody", "uid-nobody", "h100").find("not found"), std::string::npos);
  EXPECT_NE(bind("train", "uid-other", "h100").find("uid"), std::string::npos);
  EXPECT_NE(bind("train", "uid-train", "ghost").find("unknown"), std::string::npos);
  // A node whose topology is corrupt can hold nothing.
  EXPECT_NE(bind("train", "uid-train", "broken").find("no longer fits"), std::string::npos);
  EXPECT_NE(bind("running", "uid-running", "h100").find("already bound"), std::string::npos);
  // Nothing was reserved by the failures. (Counts are per node: compare the whole view.)
  const json after = json::parse(client_->Get("/debug/nodes")->body);
  const json before = json::parse(nodes_before);
  EXPECT_EQ(after["nodes"], before["nodes"]);
  EXPECT_EQ(Get("/debug")["bindsInFlight"], 0);
}

// What /ui loads for its overview at 5000 nodes stays under 1 MiB: the page and one page of the
// node list (100 nodes), with every node of that page full and each of its 32 pods in a group of
// its own, the longest names Kubernetes allows (the most a summary holds).
TEST_F(ServerTest, UiOverviewAt5000NodesLoadsUnderOneMebibyte) {
  constexpr int kNodes = 5000;
  constexpr int kPage = 100;
  json items = json::array();
  auto padded = [](int i) {
    std::string digits = std::to_string(i);
    return std::string(4 - digits.size(), '0') + digits;
  };
  for (int i = 0; i < kNodes; ++i) {
    const std::string name = "gpu-node-" + padded(i);
    items.push_back(
        Node(name, 32,
             {{"gputopo.io/topology-profile", "dgx1-v100"}, {"nvidia.com/gpu.replicas", "4"}}));
    if (i >= kPage) continue;
    for (int p = 0; p < 32; ++p) {
      std::string group = "team-" + padded(i) + "-" + std::to_string(p) + "-";
      group += std::string(63 - group.size(), 'g');
      items.push_back(
          Pod("ml", name + "-pod-" + std::to_string(p), 1,
              {{"gputopo.io/assigned-gpus", std::to_string(p / 4)}, {"gputopo.io/group", group}},
              name));
    }
  }
  StartWith({{"apiVersion", "v1"}, {"kind", "List"}, {"items", items}});
  auto page = client_->Get("/ui");
  auto first = client_->Get("/debug/nodes?offset=0&limit=" + std::to_string(kPage));
  ASSERT_TRUE(page && first && page->status == 200 && first->status == 200);
  const json list = json::parse(first->body);
  ASSERT_EQ(list["total"], kNodes);
  ASSERT_EQ(list["nodes"].size(), static_cast<size_t>(kPage));
  for (const json& n : list["nodes"]) {
    ASSERT_EQ(n["slotsUsed"], 32) << n["name"];  // the page measured is the fullest one
    ASSERT_EQ(n["gpuGroups"][0].size(), 4u) << n["name"];
  }
  const size_t bytes = page->body.size() + first->body.size();
  RecordProperty("overview_bytes", std::to_string(bytes));
  EXPECT_LT(bytes, size_t{1} << 20) << bytes << " bytes";
  // Unpaginated, the same cluster's node list alone would not be.
  auto all = client_->Get("/debug/nodes");
  ASSERT_TRUE(all);
  RecordProperty("unpaginated_bytes", std::to_string(all->body.size()));
  EXPECT_GT(all->body.size(), size_t{1} << 20);
}

// The bodies a real kube-scheduler sent, replayed byte for byte against a cluster holding the
// same nodes and pods.
class GoldenReplayTest : public ServerTest {
 protected:
  json CapturedCluster() {
    const json request =
        json::parse(ReadFile(SharedDir() / "k8s/cache_false/010-filter.gpu-plain-b.request.json"));
    json items = json::array();
    for (json node : request["Nodes"]["items"]) {
      node["apiVersion"] = "v1";
      node["kind"] = "Node";
      items.push_back(node);
    }
    for (const char* dir : {"cache_true", "cache_false"}) {
      for (const auto& path : testing::FilesIn(SharedDir() / "k8s" / dir, ".request.json")) {
        if (path.filename().string().find("-filter.") == std::string::npos) continue;
        json pod = json::parse(ReadFile(path))["Pod"];
        pod["apiVersion"] = "v1";
        pod["kind"] = "Pod";
        items.push_back(pod);
      }
    }
    return {{"apiVersion", "v1"}, {"kind", "List"}, {"items", items}};
  }
};

TEST_F(GoldenReplayTest, CapturedBodiesGetRepliesShapedLikeTheAcceptedOnes) {
  StartWith(CapturedCluster());
  int filters = 0;
  int binds = 0;
  for (const char* dir : {"cache_true", "cache_false"}) {
    for (const auto& path : testing::FilesIn(SharedDir() / "k8s" / dir, ".request.json")) {
      const std::string name = path.filename().string();
      const std::string body = ReadFile(path);
      const json request = json::parse(body);
      std::string reply_path = path.string();
      reply_path.replace(reply_path.find(".request.json"), 13, ".reply-from-test-extender.txt");
      std::string accepted_text = ReadFile(reply_path);
      const json accepted = json::parse(accepted_text.substr(accepted_text.find('\n') + 1));
      if (name.find("-filter.") != std::string::npos) {
        ++filters;
        const json reply = PostJson("/filter", body);
        EXPECT_EQ(reply["Error"], "") << name;
        for (const auto& [key, value] : accepted.items())
          EXPECT_TRUE(reply.contains(key)) << name << " " << key;
        if (request["Nodes"].is_null()) {
          EXPECT_EQ(reply["NodeNames"], request["NodeNames"]) << name;  // all three fit
        } else {
          ASSERT_TRUE(reply["Nodes"].is_object()) << name;
          EXPECT_EQ(reply["Nodes"]["items"], request["Nodes"]["items"]) << name;
        }
      } else if (name.find("-prioritize.") != std::string::npos) {
        const json reply = PostJson("/prioritize", body);
        ASSERT_TRUE(reply.is_array()) << name;
        ASSERT_EQ(reply.size(), accepted.size()) << name;
        for (const json& hp : reply) {
          EXPECT_TRUE(hp["Host"].is_string());
          EXPECT_GE(hp["Score"].get<int>(), 0);
          EXPECT_LE(hp["Score"].get<int>(), 10);
        }
      } else {
        ++binds;
        const json reply = PostJson("/bind", body);
        EXPECT_EQ(reply, accepted) << name;  // {"Error": ""}
      }
    }
  }
  EXPECT_EQ(filters, 6);
  EXPECT_EQ(binds, 6);
  // Every captured pod is bound to the node the scheduler chose, with its GPUs recorded.
  const json list = Get("/debug/snapshot");
  int annotated = 0;
  for (const json& item : list["items"]) {
    if (item["kind"] != "Pod") continue;
    EXPECT_FALSE(item["spec"].value("nodeName", "").empty()) << item["metadata"]["name"];
    annotated += item["metadata"]["annotations"].contains("gputopo.io/assigned-gpus") ? 1 : 0;
  }
  EXPECT_EQ(annotated, 6);
}

}  // namespace
}  // namespace gputopo
