// The preempt verb's wire format against every preempt request a real kube-scheduler sent
// (shared/k8s/preempt), in both nodeCacheCapable modes, and against bad input.
#include "src/codec/preemption_codec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "test/support/fixtures.h"

namespace gputopo::extender {
namespace {

using nlohmann::json;
using ::testing::ElementsAreArray;

std::filesystem::path PreemptDir(const std::string& mode) {
  return gputopo::testing::SharedDir() / "k8s" / "preempt" / mode;
}

std::vector<std::filesystem::path> PreemptRequests(const std::string& mode) {
  std::vector<std::filesystem::path> out;
  for (const auto& file : gputopo::testing::FilesIn(PreemptDir(mode), ".request.json")) {
    if (file.filename().string().find("-preempt.") != std::string::npos) out.push_back(file);
  }
  return out;
}

// The body of a "<NNN>-preempt.<pod>.reply-from-test-extender.txt" (after its "HTTP 200" line).
json ReplyOf(const std::filesystem::path& request) {
  std::string name = request.filename().string();
  name.replace(name.size() - std::string(".request.json").size(), std::string::npos,
               ".reply-from-test-extender.txt");
  const std::string text = gputopo::testing::ReadFile(request.parent_path() / name);
  const size_t newline = text.find('\n');
  EXPECT_EQ(text.substr(0, newline), "HTTP 200");
  return json::parse(text.substr(newline + 1));
}

TEST(PreemptionCodecTest, ParsesEveryCapturedRequestInBothModes) {
  for (const std::string mode : {"cache_true", "cache_false"}) {
    const auto requests = PreemptRequests(mode);
    ASSERT_EQ(requests.size(), 3u) << mode;  // high-8, high-4, high-veto
    for (const auto& file : requests) {
      SCOPED_TRACE(file.string());
      Result<PreemptionArgs> args = ParsePreemptionArgs(gputopo::testing::ReadFile(file));
      ASSERT_TRUE(args.ok()) << args.status().ToString();
      EXPECT_EQ(args->full_pods, mode == "cache_false");
      EXPECT_EQ(args->pod.namespace_name, "research");
      EXPECT_EQ(args->pod.priority, 1000000);
      EXPECT_GT(args->pod.gpu_request, 0);
      // The captured reply echoes the request's victims: node for node, UID for UID.
      const json reply = ReplyOf(file);
      std::vector<std::string> names;
      for (const PreemptionNode& node : args->nodes) {
        names.push_back(node.name);
        EXPECT_TRUE(node.error.empty()) << node.name << ": " << node.error;
        const json& want = reply["NodeNameToMetaVictims"][node.name];
        std::vector<std::string> want_uids;
        for (const json& pod : want["Pods"]) want_uids.push_back(pod["UID"]);
        EXPECT_THAT(node.victim_uids, ElementsAreArray(want_uids)) << node.name;
        EXPECT_EQ(node.pdb_violations, want["NumPDBViolations"].get<int64_t>()) << node.name;
        if (args->full_pods) {
          ASSERT_EQ(node.victim_priorities.size(), node.victim_uids.size());
          for (int32_t p : node.victim_priorities) EXPECT_EQ(p, 100);
        }
      }
      std::vector<std::string> want_names;
      for (const auto& [name, entry] : reply["NodeNameToMetaVictims"].items())
        want_names.push_back(name);
      EXPECT_THAT(names, ElementsAreArray(want_names));
    }
  }
}

// The two runs created their pods afresh (other UIDs) but made the same calls: the same nodes,
// as many victims on each, the same PDB counts.
TEST(PreemptionCodecTest, BothModesCarryTheSameVictims) {
  const auto meta = PreemptRequests("cache_true");
  const auto full = PreemptRequests("cache_false");
  ASSERT_EQ(meta.size(), full.size());
  for (size_t i = 0; i < meta.size(); ++i) {
    Result<PreemptionArgs> a = ParsePreemptionArgs(gputopo::testing::ReadFile(meta[i]));
    Result<PreemptionArgs> b = ParsePreemptionArgs(gputopo::testing::ReadFile(full[i]));
    ASSERT_TRUE(a.ok() && b.ok());
    ASSERT_EQ(a->nodes.size(), b->nodes.size());
    for (size_t n = 0; n < a->nodes.size(); ++n) {
      EXPECT_EQ(a->nodes[n].name, b->nodes[n].name);
      EXPECT_EQ(a->nodes[n].victim_uids.size(), b->nodes[n].victim_uids.size());
      EXPECT_EQ(a->nodes[n].pdb_violations, b->nodes[n].pdb_violations);
    }
  }
}

TEST(PreemptionCodecTest, WritesTheResultTheSchedulerAccepted) {
  for (const auto& file : PreemptRequests("cache_true")) {
    SCOPED_TRACE(file.string());
    Result<PreemptionArgs> args = ParsePreemptionArgs(gputopo::testing::ReadFile(file));
    ASSERT_TRUE(args.ok());
    std::vector<MetaVictims> nodes;
    for (const PreemptionNode& node : args->nodes)
      nodes.push_back({node.name, &node.victim_uids, node.pdb_violations});
    const std::string written = WritePreemptionResult(nodes);
    EXPECT_EQ(json::parse(written), ReplyOf(file));
  }
  EXPECT_EQ(WritePreemptionResult({}), R"({"NodeNameToMetaVictims":{}})");
}

TEST(PreemptionCodecTest, EscapesNodeNamesAndUids) {
  const std::vector<std::string> uids = {"a\"b"};
  const std::string written = WritePreemptionResult({{"n\\1", &uids, 2}});
  const json j = json::parse(written);
  EXPECT_EQ(j["NodeNameToMetaVictims"]["n\\1"]["Pods"][0]["UID"], "a\"b");
  EXPECT_EQ(j["NodeNameToMetaVictims"]["n\\1"]["NumPDBViolations"], 2);
}

TEST(PreemptionCodecTest, RejectsBadBodies) {
  const std::string pod = R"({"metadata":{"name":"p","namespace":"ns","uid":"u"}})";
  EXPECT_FALSE(ParsePreemptionArgs("").ok());
  EXPECT_FALSE(ParsePreemptionArgs("{not json").ok());
  EXPECT_FALSE(ParsePreemptionArgs("[]").ok());
  EXPECT_EQ(ParsePreemptionArgs(R"({"NodeNameToMetaVictims":{}})").status().message(),
            "ExtenderPreemptionArgs has no Pod");
  EXPECT_FALSE(ParsePreemptionArgs(R"({"Pod":)" + pod + R"(,"NodeNameToMetaVictims":[]})").ok());
  EXPECT_FALSE(
      ParsePreemptionArgs(R"({"Pod":)" + pod + R"(,"NodeNameToMetaVictims":{"n":{"Pods":7}}})")
          .ok());
  EXPECT_FALSE(ParsePreemptionArgs(R"({"Pod":)" + pod + R"(} trailing)").ok());
  // spec.priority beyond int32.
  EXPECT_FALSE(
      ParsePreemptionArgs(R"({"Pod":{"metadata":{"name":"p"},"spec":{"priority":9999999999}}})")
          .ok());
}

TEST(PreemptionCodecTest, AnUnusableEntryFailsOnlyItsNode) {
  const std::string body =
      R"({"Pod":{"metadata":{"name":"p","namespace":"ns","uid":"u"}},"NodeNameToVictims":null,)"
      R"("NodeNameToMetaVictims":{"a":{"Pods":[{"UID":"x"}],"NumPDBViolations":-1},)"
      R"("b":{"Pods":[{"Name":"no-uid"}],"NumPDBViolations":0},"c":{"Pods":[],)"
      R"("NumPDBViolations":0},"d":null,"e":{"Pods":[{"UID":"y"},{"UID":"z"}],)"
      R"("NumPDBViolations":1}}})";
  Result<PreemptionArgs> args = ParsePreemptionArgs(body);
  ASSERT_TRUE(args.ok()) << args.status().ToString();
  ASSERT_EQ(args->nodes.size(), 5u);
  EXPECT_EQ(args->nodes[0].error, "NumPDBViolations is not a non-negative integer");
  EXPECT_EQ(args->nodes[1].error, "a victim has no UID");
  EXPECT_EQ(args->nodes[2].error, "no victims listed");
  EXPECT_EQ(args->nodes[3].error, "no victims listed");
  EXPECT_TRUE(args->nodes[4].error.empty());
  EXPECT_EQ(args->nodes[4].victim_uids, (std::vector<std::string>{"y", "z"}));
  EXPECT_EQ(args->nodes[4].pdb_violations, 1);
  EXPECT_FALSE(args->full_pods);
}

}  // namespace
}  // namespace gputopo::extender
