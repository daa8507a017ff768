// Every request body a real kube-scheduler sent (shared/k8s), parsed by our codec, answered by
// our writers, and compared with the reply the scheduler accepted from a test extender.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/codec/extender_codec.h"
#include "src/codec/k8s_json.h"
#include "test/support/fixtures.h"

namespace gputopo::extender {
namespace {

using nlohmann::json;
using ::testing::ElementsAreArray;
using ::testing::UnorderedElementsAreArray;

constexpr size_t kMaxBytes = size_t{64} << 20;

struct Capture {
  std::string mode;  // "cache_true" or "cache_false"
  std::filesystem::path request;
  std::string verb;  // "filter", "prioritize" or "bind"

  // "010-filter.gpu-plain-b.request.json" ->
  // ".../010-filter.gpu-plain-b.reply-from-test-extender.txt"
  std::filesystem::path Reply() const {
    std::string name = request.filename().string();
    name.replace(name.size() - std::string(".request.json").size(), std::string::npos,
                 ".reply-from-test-extender.txt");
    return request.parent_path() / name;
  }
};

// "010-filter.gpu-plain-b.request.json" -> "filter".
std::string VerbOf(const std::string& file_name) {
  const size_t dash = file_name.find('-');
  const size_t dot = file_name.find('.');
  if (dash == std::string::npos || dot == std::string::npos || dot < dash) return "";
  return file_name.substr(dash + 1, dot - dash - 1);
}

std::vector<Capture> AllCaptures() {
  std::vector<Capture> out;
  for (const char* mode : {"cache_true", "cache_false"}) {
    for (const auto& file :
         gputopo::testing::FilesIn(gputopo::testing::SharedDir() / "k8s" / mode, ".request.json")) {
      out.push_back({mode, file, VerbOf(file.filename().string())});
    }
  }
  return out;
}

// The reply body of a capture: the first line ("HTTP 200") stripped.
json ReadReply(const Capture& c) {
  const std::string text = gputopo::testing::ReadFile(c.Reply());
  const size_t newline = text.find('\n');
  EXPECT_NE(newline, std::string::npos) << c.Reply();
  EXPECT_EQ(text.substr(0, newline), "HTTP 200") << c.Reply();
  const json reply = json::parse(text.substr(newline + 1), nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(reply.is_discarded()) << c.Reply();
  return reply;
}

// Node names of a filter reply or request: NodeNames, else Nodes.items[*].metadata.name.
std::vector<std::string> NodeNamesOf(const json& doc, bool from_objects) {
  std::vector<std::string> names;
  if (from_objects) {
    for (const json& item : doc["Nodes"]["items"])
      names.push_back(item["metadata"]["name"].get<std::string>());
  } else {
    for (const json& name : doc["NodeNames"]) names.push_back(name.get<std::string>());
  }
  return names;
}

std::set<std::string> KeysOf(const json& object) {
  std::set<std::string> keys;
  for (const auto& [key, value] : object.items()) keys.insert(key);
  return keys;
}

class GoldenProtocolTest : public ::testing::TestWithParam<Capture> {};

TEST(GoldenProtocolSetTest, CapturesArePresent) {
  const std::vector<Capture> captures = AllCaptures();
  int filters = 0, prioritizes = 0, binds = 0;
  for (const Capture& c : captures) {
    filters += c.verb == "filter";
    prioritizes += c.verb == "prioritize";
    binds += c.verb == "bind";
    EXPECT_TRUE(std::filesystem::exists(c.Reply())) << c.Reply();
  }
  EXPECT_EQ(captures.size(), 18u);
  EXPECT_EQ(filters, 6);
  EXPECT_EQ(prioritizes, 6);
  EXPECT_EQ(binds, 6);
}

TEST_P(GoldenProtocolTest, ParseAndAnswerLikeTheAcceptedReply) {
  const Capture& c = GetParam();
  const std::string body = gputopo::testing::ReadFile(c.request);
  ASSERT_FALSE(body.empty());
  const json request = json::parse(body);
  const json accepted = ReadReply(c);
  const bool cache_false = c.mode == "cache_false";

  if (c.verb == "bind") {
    Result<BindingArgs> args = ParseBindingArgs(body);
    ASSERT_TRUE(args.ok()) << args.status().ToString();
    EXPECT_EQ(args->pod_name, request["PodName"].get<std::string>());
    EXPECT_EQ(args->pod_namespace, request["PodNamespace"].get<std::string>());
    EXPECT_EQ(args->pod_uid, request["PodUID"].get<std::string>());
    EXPECT_EQ(args->node, request["Node"].get<std::string>());
    const json reply = json::parse(WriteBindingResult(""));
    EXPECT_EQ(reply, json({{"Error", ""}}));
    EXPECT_EQ(reply, accepted);
    return;
  }

  ASSERT_TRUE(c.verb == "filter" || c.verb == "prioritize") << c.verb;
  ExtenderRequestParser parser(kMaxBytes);
  Result<const ExtenderArgs*> parsed = parser.ParseArgs(body);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  const ExtenderArgs& args = **parsed;

  // The pod, as nlohmann reads it from the same bytes.
  const json& pod = request["Pod"];
  EXPECT_EQ(args.pod.name, pod["metadata"]["name"].get<std::string>());
  EXPECT_EQ(args.pod.namespace_name, pod["metadata"]["namespace"].get<std::string>());
  EXPECT_EQ(args.pod.uid, pod["metadata"]["uid"].get<std::string>());
  EXPECT_EQ(args.pod.resource_version, pod["metadata"]["resourceVersion"].get<std::string>());
  int64_t gpus = 0;
  for (const json& container : pod["spec"]["containers"]) {
    gpus += std::stoll(container["resources"]["requests"]["nvidia.com/gpu"].get<std::string>());
  }
  EXPECT_EQ(args.pod.gpu_request, gpus);
  // And decoding the Pod object alone agrees with decoding it inside the request.
  codec::K8sDecoder decoder;
  Result<PodInfo> alone = decoder.DecodePod(pod.dump());
  ASSERT_TRUE(alone.ok()) << alone.status().ToString();
  EXPECT_EQ(*alone, args.pod);

  // The candidates, in request order.
  EXPECT_EQ(args.nodes_mode, cache_false);
  const std::vector<std::string> request_names = NodeNamesOf(request, cache_false);
  ASSERT_FALSE(request_names.empty());
  EXPECT_THAT(std::vector<std::string>(args.node_names.begin(), args.node_names.end()),
              ElementsAreArray(request_names));
  if (cache_false) {
    EXPECT_TRUE(request["NodeNames"].is_null());
    ASSERT_EQ(args.node_objects.size(), request["Nodes"]["items"].size());
    for (size_t i = 0; i < args.node_objects.size(); ++i) {
      EXPECT_EQ(json::parse(args.node_objects[i]), request["Nodes"]["items"][i]) << i;
      Result<NodeInfo> node = decoder.DecodeNode(args.node_objects[i]);
      ASSERT_TRUE(node.ok()) << node.status().ToString();
      EXPECT_EQ(node->name, request_names[i]);
      EXPECT_EQ(node->allocatable_gpus, 8);
    }
  } else {
    EXPECT_TRUE(request["Nodes"].is_null());
    EXPECT_TRUE(args.node_objects.empty());
  }

  if (c.verb == "filter") {
    // Every node passes.
    const std::vector<FilterOutcome> outcomes(args.node_names.size(),
                                              FilterOutcome{true, false, {}});
    const json reply = json::parse(WriteFilterResult(args, outcomes));
    ASSERT_TRUE(reply.is_object());
    ASSERT_TRUE(accepted.is_object());
    // Every key of the accepted reply is in ours (ours may add the other node list).
    for (const std::string& key : KeysOf(accepted)) {
      EXPECT_TRUE(reply.contains(key)) << "missing " << key;
    }
    EXPECT_EQ(reply["FailedNodes"], json::object());
    EXPECT_EQ(reply["FailedAndUnresolvableNodes"], json::object());
    EXPECT_EQ(reply["Error"], "");
    EXPECT_EQ(reply["FailedNodes"], accepted["FailedNodes"]);
    EXPECT_EQ(reply["FailedAndUnresolvableNodes"], accepted["FailedAndUnresolvableNodes"]);
    EXPECT_EQ(reply["Error"], accepted["Error"]);
    // The same node set, read the way this scheduler reads it.
    EXPECT_THAT(NodeNamesOf(reply, cache_false),
                UnorderedElementsAreArray(NodeNamesOf(accepted, cache_false)));
    EXPECT_THAT(NodeNamesOf(reply, cache_false), ElementsAreArray(request_names));
    if (cache_false) {
      // Without a node cache the scheduler reads only Nodes: each object must be the one it sent.
      ASSERT_TRUE(reply["Nodes"].is_object());
      ASSERT_EQ(reply["Nodes"]["items"].size(), request["Nodes"]["items"].size());
      for (size_t i = 0; i < reply["Nodes"]["items"].size(); ++i) {
        EXPECT_EQ(reply["Nodes"]["items"][i], request["Nodes"]["items"][i]) << i;
      }
      // And the accepted reply carried the same objects (in some order).
      for (const json& item : accepted["Nodes"]["items"]) {
        EXPECT_NE(std::find(reply["Nodes"]["items"].begin(), reply["Nodes"]["items"].end(), item),
                  reply["Nodes"]["items"].end())
            << item["metadata"]["name"];
      }
    } else {
      ASSERT_TRUE(reply["NodeNames"].is_array());
    }
  } else {
    std::vector<std::pair<std::string_view, int>> scores;
    for (size_t i = 0; i < args.node_names.size(); ++i) {
      scores.emplace_back(args.node_names[i], static_cast<int>(i * 3));
    }
    const json reply = json::parse(WritePriorityList(scores));
    ASSERT_TRUE(reply.is_array());
    ASSERT_TRUE(accepted.is_array());
    ASSERT_EQ(reply.size(), accepted.size());
    std::vector<std::string> ours, theirs;
    for (size_t i = 0; i < reply.size(); ++i) {
      EXPECT_EQ(KeysOf(reply[i]), KeysOf(accepted[i])) << i;
      EXPECT_TRUE(reply[i]["Host"].is_string());
      EXPECT_TRUE(reply[i]["Score"].is_number_integer());
      EXPECT_EQ(reply[i]["Score"], static_cast<int>(i * 3));
      ours.push_back(reply[i]["Host"].get<std::string>());
      theirs.push_back(accepted[i]["Host"].get<std::string>());
    }
    EXPECT_THAT(ours, UnorderedElementsAreArray(theirs));
    EXPECT_THAT(ours, ElementsAreArray(request_names));
  }
}

INSTANTIATE_TEST_SUITE_P(Captures, GoldenProtocolTest, ::testing::ValuesIn(AllCaptures()),
                         [](const ::testing::TestParamInfo<Capture>& p) {
                           std::string name =
                               p.param.mode + "_" + p.param.request.filename().string();
                           name = name.substr(0, name.size() - std::string(".request.json").size());
                           for (char& ch : name) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace gputopo::extender
