#include "src/codec/extender_codec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "test/support/fixtures.h"

namespace gputopo::extender {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr size_t kMaxBytes = size_t{64} << 20;

const std::string kPod =
    R"({"metadata":{"name":"p1","namespace":"ns1","uid":"u-1"},)"
    R"("spec":{"containers":[{"name":"c","resources":{"requests":{"nvidia.com/gpu":"2"}}}]}})";

// ExtenderArgs of kPod with `names_json` as NodeNames.
Result<const ExtenderArgs*> ParseWithNames(ExtenderRequestParser& parser,
                                           const std::string& names_json) {
  return parser.ParseArgs(R"({"Pod":)" + kPod + R"(,"NodeNames":)" + names_json + "}");
}

// A compact Node object as kube-scheduler sends it.
std::string NodeJson(const std::string& name, int gpus = 8) {
  return json{{"metadata", {{"name", name}, {"labels", {{"kubernetes.io/hostname", name}}}}},
              {"spec", json::object()},
              {"status", {{"allocatable", {{"nvidia.com/gpu", std::to_string(gpus)}}}}}}
      .dump();
}

std::vector<std::string> Strings(const std::vector<std::string_view>& views) {
  return {views.begin(), views.end()};
}

// ---------------------------------------------------------------------------------------------
// ExtenderRequestParser.

TEST(ExtenderRequestParserTest, NodeNamesForm) {
  ExtenderRequestParser parser(kMaxBytes);
  Result<const ExtenderArgs*> got =
      parser.ParseArgs(R"({"Pod":)" + kPod + R"(,"Nodes":null,"NodeNames":["n3","n1","n2"]})");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  const ExtenderArgs& args = **got;
  EXPECT_FALSE(args.nodes_mode);
  EXPECT_THAT(Strings(args.node_names), ElementsAre("n3", "n1", "n2"));  // request order
  EXPECT_THAT(args.node_objects, IsEmpty());
  EXPECT_EQ(args.pod.name, "p1");
  EXPECT_EQ(args.pod.namespace_name, "ns1");
  EXPECT_EQ(args.pod.uid, "u-1");
  EXPECT_EQ(args.pod.gpu_request, 2);
}

TEST(ExtenderRequestParserTest, PodLabelsAreLeftOutOfTheRequestPath) {
  // Only the PodDisruptionBudget index (fed by the API server's watch) reads labels; a request
  // keeps what it schedules by, pod-template-hash included.
  json pod = json::parse(kPod);
  pod["metadata"]["labels"] = {{"app", "web"}, {"pod-template-hash", "5d8f7c9b6d"}};
  ExtenderRequestParser parser(kMaxBytes);
  Result<const ExtenderArgs*> got =
      parser.ParseArgs(R"({"Pod":)" + pod.dump() + R"(,"Nodes":null,"NodeNames":["n1"]})");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ((*got)->pod.pod_template_hash, "5d8f7c9b6d");
  EXPECT_THAT((*got)->pod.labels, IsEmpty());
}

// The reply writers copy names that are raw tokens of the request as they stand: that is only
// right because a raw control character in any string makes the whole request malformed.
TEST(ExtenderRequestParserTest, RawControlCharacterInANameIsMalformed) {
  for (const std::string& name : {std::string("a\tb"), std::string("c\x01"), std::string("\x1f")}) {
    ExtenderRequestParser parser(kMaxBytes);
    Result<const ExtenderArgs*> args =
        parser.ParseArgs(R"({"Pod":)" + kPod + R"(,"NodeNames":["ok",")" + name + R"("]})");
    EXPECT_FALSE(args.ok()) << name;
  }
}

TEST(ExtenderRequestParserTest, NodeNamesWithoutNodesKey) {
  ExtenderRequestParser parser(kMaxBytes);
  Result<const ExtenderArgs*> got = parser.ParseArgs(R"({"NodeNames":["a"],"Pod":)" + kPod + "}");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_FALSE((*got)->nodes_mode);
  EXPECT_THAT(Strings((*got)->node_names), ElementsAre("a"));
}

TEST(ExtenderRequestParserTest, EmptyNodeNamesIsAnEmptyCandidateList) {
  ExtenderRequestParser parser(kMaxBytes);
  Result<const ExtenderArgs*> got = parser.ParseArgs(R"({"Pod":)" + kPod + R"(,"NodeNames":[]})");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_FALSE((*got)->nodes_mode);
  EXPECT_THAT((*got)->node_names, IsEmpty());
}

TEST(ExtenderRequestParserTest, KeysAreMatchedCaseInsensitively) {
  ExtenderRequestParser parser(kMaxBytes);
  Result<const ExtenderArgs*> got =
      parser.ParseArgs(R"({"pod":)" + kPod + R"(,"NODENAMES":["x","y"]})");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ((*got)->pod.name, "p1");
  EXPECT_THAT(Strings((*got)->node_names), ElementsAre("x", "y"));

  const std::string node = NodeJson("m1");
  got = parser.ParseArgs(R"({"pOd":)" + kPod + R"(,"nodes":{"ITEMS":[)" + node + "]}}");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE((*got)->nodes_mode);
  EXPECT_THAT(Strings((*got)->node_names), ElementsAre("m1"));
  EXPECT_THAT(Strings((*got)->node_objects), ElementsAre(node));
}

TEST(ExtenderRequestParserTest, NodesForm) {
  const std::vector<std::string> nodes = {NodeJson("gpu-2"), NodeJson("gpu-3", 4),
                                          NodeJson("gpu-1")};
  const std::string body = R"({"Pod":)" + kPod + R"(,"Nodes":{"metadata":{},"items":[)" + nodes[0] +
                           "," + nodes[1] + "," + nodes[2] + R"(]},"NodeNames":null})";
  ExtenderRequestParser parser(kMaxBytes);
  Result<const ExtenderArgs*> got = parser.ParseArgs(body);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  const ExtenderArgs& args = **got;
  EXPECT_TRUE(args.nodes_mode);
  EXPECT_THAT(Strings(args.node_names), ElementsAre("gpu-2", "gpu-3", "gpu-1"));
  // Each raw object is exactly the text of the item.
  EXPECT_THAT(Strings(args.node_objects), ElementsAre(nodes[0], nodes[1], nodes[2]));
}

TEST(ExtenderRequestParserTest, NodeNameFoundWhereverItIsInTheObject) {
  // metadata is not the first key and name is not the first metadata key: the raw text must
  // still be the whole object.
  const std::string node =
      R"({"kind":"Node","spec":{"taints":[{"key":"k","effect":"NoSchedule"}]},)"
      R"("metadata":{"uid":"x","labels":{"a":"b"},"name":"late","annotations":{"q":"{]"}},)"
      R"("status":{"allocatable":{"nvidia.com/gpu":"8"}}})";
  const std::string body =
      R"({"Nodes":{"items":[)" + node + "," + NodeJson("second") + R"(]},"Pod":)" + kPod + "}";
  ExtenderRequestParser parser(kMaxBytes);
  Result<const ExtenderArgs*> got = parser.ParseArgs(body);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_THAT(Strings((*got)->node_names), ElementsAre("late", "second"));
  EXPECT_THAT(Strings((*got)->node_objects), ElementsAre(node, NodeJson("second")));
}

TEST(ExtenderRequestParserTest, WhitespaceAroundNodesStillGivesTheSameObjects) {
  const std::string a = NodeJson("a");
  const std::string b = NodeJson("b");
  const std::string body =
      "{ \"Pod\" : " + kPod + " ,\n \"Nodes\" : { \"items\" : [ " + a + " ,\n " + b + " \n ] } }\n";
  ExtenderRequestParser parser(kMaxBytes);
  Result<const ExtenderArgs*> got = parser.ParseArgs(body);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ((*got)->node_objects.size(), 2u);
  EXPECT_EQ(json::parse((*got)->node_objects[0]), json::parse(a));
  EXPECT_EQ(json::parse((*got)->node_objects[1]), json::parse(b));
}

TEST(ExtenderRequestParserTest, NullNodesWithNodeNamesIsNamesMode) {
  ExtenderRequestParser parser(kMaxBytes);
  Result<const ExtenderArgs*> got =
      parser.ParseArgs(R"({"Pod":)" + kPod + R"(,"Nodes":null,"NodeNames":["only"]})");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_FALSE((*got)->nodes_mode);
  EXPECT_THAT(Strings((*got)->node_names), ElementsAre("only"));
}

TEST(ExtenderRequestParserTest, BothPresentIsNodesMode) {
  // Node objects win: a scheduler without a node cache reads only those.
  for (const std::string& body : {R"({"Pod":)" + kPod + R"(,"Nodes":{"items":[)" + NodeJson("obj") +
                                      R"(]},"NodeNames":["name-a","name-b"]})",
                                  R"({"NodeNames":["name-a","name-b"],"Pod":)" + kPod +
                                      R"(,"Nodes":{"items":[)" + NodeJson("obj") + "]}}"}) {
    ExtenderRequestParser parser(kMaxBytes);
    Result<const ExtenderArgs*> got = parser.ParseArgs(body);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_TRUE((*got)->nodes_mode);
    EXPECT_THAT(Strings((*got)->node_names), ElementsAre("obj"));
    EXPECT_EQ((*got)->node_objects.size(), 1u);
  }
}

TEST(ExtenderRequestParserTest, UnknownKeysAreIgnored) {
  ExtenderRequestParser parser(kMaxBytes);
  Result<const ExtenderArgs*> got = parser.ParseArgs(
      R"({"Extra":{"deep":[1,2,{"x":null}]},"Pod":)" + kPod + R"(,"NodeNames":["a"],"z":1})");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_THAT(Strings((*got)->node_names), ElementsAre("a"));
}

TEST(ExtenderRequestParserTest, EscapedNodeNamesAreUnescaped) {
  ExtenderRequestParser parser(kMaxBytes);
  Result<const ExtenderArgs*> got = parser.ParseArgs(
      R"({"Pod":)" + kPod + R"(,"NodeNames":["n\u002d1","a\"b","plain","c\\",""]})");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_THAT(Strings((*got)->node_names), ElementsAre("n-1", "a\"b", "plain", "c\\", ""));
}

// Names are taken unchecked and then searched for a backslash all at once: one escaped name
// anywhere among many (first, in the middle, last) is found and unescaped, the others stay
// views of the request; with none, every name is a view of the request.
TEST(ExtenderRequestParserTest, OneEscapedNameAmongManyIsUnescapedWhereverItIs) {
  for (size_t escaped : {size_t{0}, size_t{50}, size_t{99}, size_t{100}}) {
    std::string names_json = "[";
    for (size_t i = 0; i < 100; ++i) {
      names_json += (i > 0 ? "," : "");
      names_json += i == escaped ? R"("n\u002d)" + std::to_string(i) + R"(")"
                                 : R"("n-)" + std::to_string(i) + R"(")";
    }
    names_json += "]";
    ExtenderRequestParser parser(kMaxBytes);
    Result<const ExtenderArgs*> got = ParseWithNames(parser, names_json);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    const ExtenderArgs& args = **got;
    ASSERT_EQ(args.node_names.size(), 100u);
    for (size_t i = 0; i < 100; ++i) {
      EXPECT_EQ(args.node_names[i], "n-" + std::to_string(i)) << escaped;
      EXPECT_EQ(args.IsRawToken(args.node_names[i]), i != escaped) << i << " " << escaped;
    }
  }
}

// A body with simdjson's padding readable past its end (a std::string's spare capacity) is
// parsed where it is; one without is copied first. Both give the same answer.
TEST(ExtenderRequestParserTest, ParsesInPlaceOnlyWithPaddingReadable) {
  const std::string text = R"({"Pod":)" + kPod + R"(,"NodeNames":["a","b"]})";
  auto inside = [](std::string_view name, const std::string& body) {
    return name.data() >= body.data() && name.data() + name.size() <= body.data() + body.size();
  };
  ExtenderRequestParser parser(kMaxBytes);
  std::string roomy = text;
  roomy.reserve(text.size() + 256);
  Result<const ExtenderArgs*> got = parser.ParseArgs(roomy, roomy.capacity());
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_THAT(Strings((*got)->node_names), ElementsAre("a", "b"));
  EXPECT_TRUE(inside((*got)->node_names[0], roomy)) << "parsed in place";
  const std::string tight = text;
  got = parser.ParseArgs(tight, tight.size());
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_THAT(Strings((*got)->node_names), ElementsAre("a", "b"));
  EXPECT_FALSE(inside((*got)->node_names[0], tight)) << "copied: no padding to read";
  // Truncated in place: still an error, never a read past what is readable.
  std::string cut = text.substr(0, text.size() / 2);
  cut.reserve(text.size() + 256);
  EXPECT_FALSE(parser.ParseArgs(cut, cut.capacity()).ok());
}

// Names are read from their raw tokens: whitespace between elements is not part of a name.
TEST(ExtenderRequestParserTest, WhitespaceAroundNodeNamesIsNotPartOfThem) {
  ExtenderRequestParser parser(kMaxBytes);
  Result<const ExtenderArgs*> got = parser.ParseArgs(R"({"Pod":)" + kPod + "," +
                                                     "\"NodeNames\": [ \"a\" ,\n\t\"b\"\r\n, "
                                                     "\" c \"  ]}");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_THAT(Strings((*got)->node_names), ElementsAre("a", "b", " c "));
}

TEST(ExtenderRequestParserTest, ANodeNameThatIsNotAStringIsAnError) {
  for (const std::string names : {R"([1])", R"(["a",null])", R"(["a",{}])", R"([true])"}) {
    ExtenderRequestParser parser(kMaxBytes);
    Result<const ExtenderArgs*> got =
        parser.ParseArgs(R"({"Pod":)" + kPod + R"(,"NodeNames":)" + names + "}");
    EXPECT_FALSE(got.ok()) << names;
  }
}

struct BadBodyCase {
  std::string label;
  std::string body;
};

std::string Junk(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string out(n, '\0');
  for (char& c : out) c = static_cast<char>(rng() & 0xff);
  return out;
}

std::vector<BadBodyCase> BadBodies() {
  const std::string names = R"("NodeNames":["a"])";
  return {
      {"Empty", ""},
      {"Whitespace", "  \n"},
      {"EmptyArray", "[]"},
      {"EmptyObject", "{}"},
      {"Null", "null"},
      {"Number", "1"},
      {"String", R"("Pod")"},
      {"NoPod", "{" + names + "}"},
      {"PodNull", R"({"Pod":null,)" + names + "}"},
      {"PodNotObject", R"({"Pod":[],)" + names + "}"},
      {"PodWithoutName", R"({"Pod":{"metadata":{}},)" + names + "}"},
      {"PodBadGpuQuantity",
       R"({"Pod":{"metadata":{"name":"p"},"spec":{"containers":[{"resources":{"requests":{"nvidia.com/gpu":"half"}}}]}},)" +
           names + "}"},
      {"NeitherNodesNorNodeNames", R"({"Pod":)" + kPod + "}"},
      {"BothNull", R"({"Pod":)" + kPod + R"(,"Nodes":null,"NodeNames":null})"},
      {"NodeNamesWithNumber", R"({"Pod":)" + kPod + R"(,"NodeNames":["a",1]})"},
      {"NodeNamesNotArray", R"({"Pod":)" + kPod + R"(,"NodeNames":"a"})"},
      {"NodesNotObject", R"({"Pod":)" + kPod + R"(,"Nodes":[]})"},
      {"NodesItemsNotArray", R"({"Pod":)" + kPod + R"(,"Nodes":{"items":{}}})"},
      {"NodeItemNotObject", R"({"Pod":)" + kPod + R"(,"Nodes":{"items":["n1"]}})"},
      {"NodeItemWithoutName", R"({"Pod":)" + kPod + R"(,"Nodes":{"items":[{"metadata":{}}]}})"},
      {"NodeItemNameNotString",
       R"({"Pod":)" + kPod + R"(,"Nodes":{"items":[{"metadata":{"name":5}}]}})"},
      {"Truncated", R"({"Pod":)" + kPod + R"(,"NodeNames":["a")"},
      {"TruncatedInPod", R"({"Pod":{"metadata":{"name":"p)"},
      {"TrailingGarbage", R"({"Pod":)" + kPod + R"(,"NodeNames":["a"]} garbage)"},
      {"TwoDocuments", R"({"Pod":)" + kPod + R"(,"NodeNames":["a"]}{})"},
      {"MissingComma", R"({"Pod":)" + kPod + R"( "NodeNames":["a"]})"},
      {"DeepArrayNesting", std::string(10 << 20, '[')},
      {"DeepNestingInsideAKey",
       R"({"Pod":)" + kPod + R"(,"NodeNames":["a"],"x":)" + std::string(1 << 20, '[') + "}"},
      {"BinaryJunk", Junk(4096, 1)},
      {"JunkAfterBrace", "{" + Junk(4096, 2)},
      {"NulBytes", std::string(64, '\0')},
  };
}

class BadExtenderArgsTest : public ::testing::TestWithParam<BadBodyCase> {};

TEST_P(BadExtenderArgsTest, IsAnErrorNotACrash) {
  ExtenderRequestParser parser(kMaxBytes);
  Result<const ExtenderArgs*> got = parser.ParseArgs(GetParam().body);
  ASSERT_FALSE(got.ok()) << "accepted, " << (*got)->node_names.size() << " nodes";
  EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(got.status().message().empty());
  // The parser is still usable afterwards.
  Result<const ExtenderArgs*> good =
      parser.ParseArgs(R"({"Pod":)" + kPod + R"(,"NodeNames":["a"]})");
  ASSERT_TRUE(good.ok()) << good.status().ToString();
  EXPECT_THAT(Strings((*good)->node_names), ElementsAre("a"));
}

INSTANTIATE_TEST_SUITE_P(Table, BadExtenderArgsTest, ::testing::ValuesIn(BadBodies()),
                         [](const ::testing::TestParamInfo<BadBodyCase>& p) {
                           return p.param.label;
                         });

// Valid JSON nested far deeper than any real request, under a key gputopo ignores: rejecting it and
// skipping it are both fine; crashing (stack overflow) is not.
TEST(ExtenderRequestParserTest, DeepClosedNestingUnderAnUnknownKeyDoesNotCrash) {
  const std::string body = R"({"Pod":)" + kPod + R"(,"NodeNames":["a"],"x":)" +
                           std::string(100000, '[') + std::string(100000, ']') + "}";
  ExtenderRequestParser parser(kMaxBytes);
  Result<const ExtenderArgs*> got = parser.ParseArgs(body);
  if (got.ok()) {
    EXPECT_THAT(Strings((*got)->node_names), ElementsAre("a"));
  }
}

TEST(ExtenderRequestParserTest, ErrorMessagesSayWhatIsMissing) {
  ExtenderRequestParser parser(kMaxBytes);
  Result<const ExtenderArgs*> got = parser.ParseArgs(R"({"NodeNames":["a"]})");
  ASSERT_FALSE(got.ok());
  EXPECT_THAT(got.status().message(), HasSubstr("Pod"));
  got = parser.ParseArgs(R"({"Pod":)" + kPod + "}");
  ASSERT_FALSE(got.ok());
  EXPECT_THAT(got.status().message(), HasSubstr("NodeNames"));
  got = parser.ParseArgs(R"({"Pod":{"metadata":{}},"NodeNames":["a"]})");
  ASSERT_FALSE(got.ok());
  EXPECT_THAT(got.status().message(), HasSubstr("metadata.name"));
}

TEST(ExtenderRequestParserTest, BodyOverTheLimitIsAnError) {
  ExtenderRequestParser parser(256);
  const std::string small = R"({"Pod":)" + kPod + R"(,"NodeNames":["a"]})";
  ASSERT_LT(small.size(), 256u);
  ASSERT_TRUE(parser.ParseArgs(small).ok());
  std::string big = R"({"Pod":)" + kPod + R"(,"NodeNames":[)";
  for (int i = 0; i < 100; ++i) big += "\"node-" + std::to_string(i) + "\",";
  big += "\"last\"]}";
  EXPECT_FALSE(parser.ParseArgs(big).ok());
  // Still usable.
  EXPECT_TRUE(parser.ParseArgs(small).ok());
}

TEST(ExtenderRequestParserTest, EveryTruncationIsAnError) {
  const std::string body = R"({"Pod":)" + kPod + R"(,"Nodes":{"items":[)" + NodeJson("a") + "," +
                           NodeJson("b") + R"(]},"NodeNames":null})";
  ExtenderRequestParser parser(kMaxBytes);
  ASSERT_TRUE(parser.ParseArgs(body).ok());
  for (size_t len = 0; len < body.size(); ++len) {
    Result<const ExtenderArgs*> got = parser.ParseArgs(std::string_view(body).substr(0, len));
    EXPECT_FALSE(got.ok()) << "prefix of " << len << " bytes accepted";
    if (got.ok()) break;
  }
}

TEST(ExtenderRequestParserTest, ReuseGivesFreshResults) {
  ExtenderRequestParser parser(kMaxBytes);
  const std::string nodes_body = R"({"Pod":)" + kPod + R"(,"Nodes":{"items":[)" + NodeJson("a1") +
                                 "," + NodeJson("a2") + "]}}";
  const std::string pod_b =
      R"({"metadata":{"name":"pod-b","namespace":"nb"},"spec":{"containers":[]}})";
  const std::string names_body = R"({"Pod":)" + pod_b + R"(,"NodeNames":["b1"]})";

  Result<const ExtenderArgs*> a = parser.ParseArgs(nodes_body);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_TRUE((*a)->nodes_mode);
  EXPECT_THAT(Strings((*a)->node_names), ElementsAre("a1", "a2"));

  Result<const ExtenderArgs*> b = parser.ParseArgs(names_body);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_FALSE((*b)->nodes_mode);
  EXPECT_EQ((*b)->pod.name, "pod-b");
  EXPECT_EQ((*b)->pod.namespace_name, "nb");
  EXPECT_EQ((*b)->pod.uid, "");
  EXPECT_EQ((*b)->pod.gpu_request, 0);
  EXPECT_THAT(Strings((*b)->node_names), ElementsAre("b1"));
  EXPECT_THAT((*b)->node_objects, IsEmpty());

  ASSERT_FALSE(parser.ParseArgs("{nope").ok());

  // A larger body after a smaller one, then the first one again.
  std::string many = R"({"Pod":)" + kPod + R"(,"Nodes":{"items":[)";
  for (int i = 0; i < 50; ++i) many += (i ? "," : "") + NodeJson("big-" + std::to_string(i));
  many += "]}}";
  Result<const ExtenderArgs*> c = parser.ParseArgs(many);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ((*c)->node_names.size(), 50u);
  EXPECT_EQ((*c)->node_names[49], "big-49");
  EXPECT_EQ((*c)->node_objects[49], NodeJson("big-49"));

  a = parser.ParseArgs(nodes_body);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ((*a)->pod.name, "p1");
  EXPECT_THAT(Strings((*a)->node_names), ElementsAre("a1", "a2"));
  EXPECT_THAT(Strings((*a)->node_objects), ElementsAre(NodeJson("a1"), NodeJson("a2")));

  // The name lists keep their capacity between requests, never their names: names after
  // more names, a body with both forms (whose NodeNames are read, then dropped), then names.
  Result<const ExtenderArgs*> d =
      parser.ParseArgs(R"({"Pod":)" + pod_b + R"(,"NodeNames":["d1","d2","d3"]})");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_THAT(Strings((*d)->node_names), ElementsAre("d1", "d2", "d3"));
  d = parser.ParseArgs(R"({"Pod":)" + pod_b + R"(,"NodeNames":["e1"]})");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_THAT(Strings((*d)->node_names), ElementsAre("e1"));
  EXPECT_THAT((*d)->node_objects, IsEmpty());
  d = parser.ParseArgs(R"({"Pod":)" + pod_b + R"(,"NodeNames":["f1","f2"],"Nodes":{"items":[)" +
                       NodeJson("g1") + "]}}");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_TRUE((*d)->nodes_mode);
  EXPECT_THAT(Strings((*d)->node_names), ElementsAre("g1"));
  d = parser.ParseArgs(R"({"Pod":)" + pod_b + R"(,"NodeNames":[]})");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_FALSE((*d)->nodes_mode);
  EXPECT_THAT((*d)->node_names, IsEmpty());
  EXPECT_THAT((*d)->node_objects, IsEmpty());
}

TEST(ExtenderRequestParserTest, ParsesFromAViewIntoALargerBuffer) {
  // The body is a view whose bytes are followed by more text: only the view counts.
  const std::string body = R"({"Pod":)" + kPod + R"(,"NodeNames":["a"]})";
  const std::string buffer = body + R"(,"NodeNames":["b"]} trailing)";
  ExtenderRequestParser parser(kMaxBytes);
  Result<const ExtenderArgs*> got =
      parser.ParseArgs(std::string_view(buffer).substr(0, body.size()));
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_THAT(Strings((*got)->node_names), ElementsAre("a"));
}

// ---------------------------------------------------------------------------------------------
// ParseBindingArgs.

TEST(ParseBindingArgsTest, CapturedBodies) {
  for (const char* mode : {"cache_true", "cache_false"}) {
    const auto files =
        gputopo::testing::FilesIn(gputopo::testing::SharedDir() / "k8s" / mode, ".request.json");
    int binds = 0;
    for (const auto& file : files) {
      if (file.filename().string().find("-bind.") == std::string::npos) continue;
      ++binds;
      SCOPED_TRACE(file.string());
      const std::string text = gputopo::testing::ReadFile(file);
      const json expected = json::parse(text);
      Result<BindingArgs> got = ParseBindingArgs(text);
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      EXPECT_EQ(got->pod_name, expected["PodName"].get<std::string>());
      EXPECT_EQ(got->pod_namespace, expected["PodNamespace"].get<std::string>());
      EXPECT_EQ(got->pod_uid, expected["PodUID"].get<std::string>());
      EXPECT_EQ(got->node, expected["Node"].get<std::string>());
    }
    EXPECT_EQ(binds, 3) << mode;
  }
}

TEST(ParseBindingArgsTest, CaseInsensitiveKeys) {
  Result<BindingArgs> got =
      ParseBindingArgs(R"({"podname":"p","PODNAMESPACE":"ns","poduid":"u","nOdE":"n1"})");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->pod_name, "p");
  EXPECT_EQ(got->pod_namespace, "ns");
  EXPECT_EQ(got->pod_uid, "u");
  EXPECT_EQ(got->node, "n1");
}

TEST(ParseBindingArgsTest, PodUidIsOptional) {
  for (const char* body : {R"({"PodName":"p","PodNamespace":"ns","Node":"n1"})",
                           R"({"PodName":"p","PodNamespace":"ns","PodUID":null,"Node":"n1"})",
                           R"({"PodName":"p","PodNamespace":"ns","PodUID":"","Node":"n1"})"}) {
    Result<BindingArgs> got = ParseBindingArgs(body);
    ASSERT_TRUE(got.ok()) << body << ": " << got.status().ToString();
    EXPECT_EQ(got->pod_uid, "") << body;
    EXPECT_EQ(got->node, "n1") << body;
  }
}

struct BadBindingCase {
  std::string label;
  std::string body;
  std::string message;
};

class BadBindingArgsTest : public ::testing::TestWithParam<BadBindingCase> {};

TEST_P(BadBindingArgsTest, IsAnError) {
  Result<BindingArgs> got = ParseBindingArgs(GetParam().body);
  ASSERT_FALSE(got.ok()) << "accepted " << GetParam().body;
  EXPECT_THAT(got.status().message(), HasSubstr(GetParam().message));
}

INSTANTIATE_TEST_SUITE_P(
    Table, BadBindingArgsTest,
    ::testing::Values(
        BadBindingCase{"MissingPodName", R"({"PodNamespace":"ns","PodUID":"u","Node":"n"})",
                       "PodName"},
        BadBindingCase{"MissingPodNamespace", R"({"PodName":"p","PodUID":"u","Node":"n"})",
                       "PodNamespace"},
        BadBindingCase{"MissingNode", R"({"PodName":"p","PodNamespace":"ns","PodUID":"u"})",
                       "Node"},
        BadBindingCase{"NullNode", R"({"PodName":"p","PodNamespace":"ns","Node":null})", "Node"},
        BadBindingCase{"EmptyPodName", R"({"PodName":"","PodNamespace":"ns","Node":"n"})",
                       "PodName"},
        BadBindingCase{"NodeNotString", R"({"PodName":"p","PodNamespace":"ns","Node":1})", ""},
        BadBindingCase{"Empty", "", ""},
        BadBindingCase{"Array", R"([{"PodName":"p","PodNamespace":"ns","Node":"n"}])", ""},
        BadBindingCase{"Truncated", R"({"PodName":"p","PodNamespace":"ns","Node":"n")", ""},
        BadBindingCase{"TrailingGarbage", R"({"PodName":"p","PodNamespace":"ns","Node":"n"}x)", ""},
        BadBindingCase{"BinaryJunk", Junk(512, 3), ""}),
    [](const ::testing::TestParamInfo<BadBindingCase>& p) { return p.param.label; });

// ---------------------------------------------------------------------------------------------
// Writers.

FilterOutcome Passed() { return FilterOutcome{true, false, {}}; }
FilterOutcome Failed(std::string_view reason) { return FilterOutcome{false, false, reason}; }
FilterOutcome Unresolvable(std::string_view reason) { return FilterOutcome{false, true, reason}; }

json Parse(const std::string& text) {
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(doc.is_discarded()) << "not JSON: " << text;
  return doc;
}

TEST(WriteFilterResultTest, NamesMode) {
  ExtenderArgs args;
  args.node_names = {"n3", "n1", "n2", "n4", "n5"};
  const std::vector<FilterOutcome> outcomes = {
      Passed(),
      Failed("needs 4 GPUs, 2 free"),
      Passed(),
      Unresolvable("corrupt \"topology\" annotation"),
      Failed("line\nbreak"),
  };
  const json reply = Parse(WriteFilterResult(args, outcomes));
  ASSERT_TRUE(reply.is_object());
  EXPECT_TRUE(reply.contains("Nodes"));
  EXPECT_TRUE(reply["Nodes"].is_null());
  EXPECT_EQ(reply["NodeNames"], json::array({"n3", "n2"}));  // passed, in request order
  EXPECT_EQ(reply["FailedNodes"], json({{"n1", "needs 4 GPUs, 2 free"}, {"n5", "line\nbreak"}}));
  EXPECT_EQ(reply["FailedAndUnresolvableNodes"], json({{"n4", "corrupt \"topology\" annotation"}}));
  EXPECT_EQ(reply["Error"], "");
}

TEST(WriteFilterResultTest, OmittedNodesAreInNeitherListInBothModes) {
  // --filter-decides: nodes that fit but were not chosen leave the reply altogether, which
  // kube-scheduler reads as not feasible, with no reason to show.
  FilterOutcome omitted;
  omitted.omitted = true;
  const std::vector<std::string> objects = {NodeJson("g1"), NodeJson("g2"), NodeJson("g3")};
  ExtenderArgs args;
  args.node_names = {"g1", "g2", "g3"};
  const std::vector<FilterOutcome> outcomes = {omitted, Passed(), Failed("full")};
  json reply = Parse(WriteFilterResult(args, outcomes));
  EXPECT_EQ(reply["NodeNames"], json::array({"g2"}));
  EXPECT_EQ(reply["FailedNodes"], json({{"g3", "full"}}));
  EXPECT_EQ(reply["FailedAndUnresolvableNodes"], json::object());
  args.nodes_mode = true;
  args.node_objects = {objects[0], objects[1], objects[2]};
  reply = Parse(WriteFilterResult(args, outcomes));
  ASSERT_EQ(reply["Nodes"]["items"].size(), 1u);
  EXPECT_EQ(reply["Nodes"]["items"][0], json::parse(objects[1]));
  EXPECT_EQ(reply["FailedNodes"], json({{"g3", "full"}}));
}

TEST(WriteFilterResultTest, NamesModeAllFail) {
  ExtenderArgs args;
  args.node_names = {"a", "b"};
  const json reply = Parse(WriteFilterResult(args, {Failed("x"), Unresolvable("y")}));
  EXPECT_EQ(reply["NodeNames"], json::array());
  EXPECT_EQ(reply["FailedNodes"], json({{"a", "x"}}));
  EXPECT_EQ(reply["FailedAndUnresolvableNodes"], json({{"b", "y"}}));
}

TEST(WriteFilterResultTest, NoCandidates) {
  ExtenderArgs args;
  const json reply = Parse(WriteFilterResult(args, {}));
  EXPECT_EQ(reply["NodeNames"], json::array());
  EXPECT_EQ(reply["FailedNodes"], json::object());
  EXPECT_EQ(reply["FailedAndUnresolvableNodes"], json::object());
  EXPECT_EQ(reply["Error"], "");
}

TEST(WriteFilterResultTest, NodesModeReturnsTheOriginalObjects) {
  const std::vector<std::string> objects = {NodeJson("g2"), NodeJson("g3", 4), NodeJson("g1")};
  ExtenderArgs args;
  args.nodes_mode = true;
  args.node_names = {"g2", "g3", "g1"};
  args.node_objects = {objects[0], objects[1], objects[2]};
  const json reply = Parse(WriteFilterResult(args, {Passed(), Failed("full"), Passed()}));
  ASSERT_TRUE(reply.is_object());
  ASSERT_TRUE(reply["Nodes"].is_object());
  EXPECT_EQ(reply["Nodes"]["metadata"], json::object());
  ASSERT_TRUE(reply["Nodes"]["items"].is_array());
  ASSERT_EQ(reply["Nodes"]["items"].size(), 2u);
  EXPECT_EQ(reply["Nodes"]["items"][0], json::parse(objects[0]));
  EXPECT_EQ(reply["Nodes"]["items"][1], json::parse(objects[2]));
  EXPECT_EQ(reply["NodeNames"], json::array({"g2", "g1"}));
  EXPECT_EQ(reply["FailedNodes"], json({{"g3", "full"}}));
  EXPECT_EQ(reply["FailedAndUnresolvableNodes"], json::object());
  EXPECT_EQ(reply["Error"], "");
}

// Passing names that sit in the request as `"a","b"` are copied from it a run at a time; the
// reply must be byte for byte what writing each name gives, whatever breaks the runs: failed
// nodes, whitespace, escapes (unescaped elsewhere, and escaped again on the way out).
TEST(WriteFilterResultTest, NamesCopiedFromTheRequestInRunsAreWrittenExactly) {
  const std::string names_json =
      R"(["n0","n1","n2", "n3" ,"n4","es\"c","n6","t\u0041b","n8","","n10","n11","n12","n13"])";
  ExtenderRequestParser parser(kMaxBytes);
  Result<const ExtenderArgs*> parsed = ParseWithNames(parser, names_json);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  const ExtenderArgs& args = **parsed;
  ASSERT_EQ(args.node_names.size(), 14u);
  EXPECT_EQ(args.node_names[7], "tAb");
  std::vector<std::vector<FilterOutcome>> cases;
  cases.emplace_back(14, Passed());
  cases.emplace_back(14, Failed("full"));
  std::vector<FilterOutcome> mixed(14, Passed());
  for (size_t i : {1, 2, 9, 13}) mixed[i] = Failed("full");
  mixed[4] = Unresolvable("corrupt");
  cases.push_back(mixed);
  ExtenderArgs per_name = args;
  per_name.text = {};  // no request text: every name written on its own
  for (const std::vector<FilterOutcome>& outcomes : cases) {
    const std::string reply = WriteFilterResult(args, outcomes);
    EXPECT_EQ(reply, WriteFilterResult(per_name, outcomes));
    json want = json::array();
    for (size_t i = 0; i < outcomes.size(); ++i) {
      if (outcomes[i].passed) want.push_back(std::string(args.node_names[i]));
    }
    EXPECT_EQ(Parse(reply)["NodeNames"], want);
  }
}

TEST(WriteFilterResultTest, NodesModeFromParsedRequest) {
  const std::vector<std::string> objects = {NodeJson("x1"), NodeJson("x2")};
  ExtenderRequestParser parser(kMaxBytes);
  Result<const ExtenderArgs*> args = parser.ParseArgs(
      R"({"Pod":)" + kPod + R"(,"Nodes":{"items":[)" + objects[0] + "," + objects[1] + "]}}");
  ASSERT_TRUE(args.ok()) << args.status().ToString();
  const json reply = Parse(WriteFilterResult(**args, {Failed("no"), Passed()}));
  ASSERT_EQ(reply["Nodes"]["items"].size(), 1u);
  EXPECT_EQ(reply["Nodes"]["items"][0], json::parse(objects[1]));
  EXPECT_EQ(reply["NodeNames"], json::array({"x2"}));
}

TEST(WriteFilterErrorTest, CarriesTheMessage) {
  const json reply = Parse(WriteFilterError("snapshot \"v7\" is not ready\n"));
  ASSERT_TRUE(reply.is_object());
  EXPECT_EQ(reply["Error"], "snapshot \"v7\" is not ready\n");
  EXPECT_TRUE(reply["Nodes"].is_null());
  EXPECT_TRUE(reply["NodeNames"].is_null());
  EXPECT_EQ(reply["FailedNodes"], json::object());
  EXPECT_EQ(reply["FailedAndUnresolvableNodes"], json::object());
}

TEST(WritePriorityListTest, HostsAndScoresInOrder) {
  const json reply = Parse(WritePriorityList({{"n2", 10}, {"n1", 0}, {"n\"3", 7}}));
  ASSERT_TRUE(reply.is_array());
  ASSERT_EQ(reply.size(), 3u);
  EXPECT_EQ(reply[0], json({{"Host", "n2"}, {"Score", 10}}));
  EXPECT_EQ(reply[1], json({{"Host", "n1"}, {"Score", 0}}));
  EXPECT_EQ(reply[2], json({{"Host", "n\"3"}, {"Score", 7}}));
  EXPECT_TRUE(reply[0]["Score"].is_number_integer());
}

// Thousands of hosts, some needing escapes and some longer than the writer's estimate allows
// for: every one comes back, in order, with its score.
TEST(WritePriorityListTest, ManyHostsRoundTrip) {
  std::vector<std::string> hosts;
  for (int i = 0; i < 5000; ++i) {
    std::string host = "gpu-node-" + std::to_string(i);
    if (i % 97 == 0) host += "\"\\\n";
    if (i % 1000 == 0) host += std::string(300, '"');
    hosts.push_back(host);
  }
  std::vector<std::pair<std::string_view, int>> scores;
  for (size_t i = 0; i < hosts.size(); ++i) {
    // The longest integer the writer can meet, once.
    scores.emplace_back(hosts[i],
                        i == 7 ? std::numeric_limits<int>::min() : static_cast<int>(i % 11));
  }
  const json reply = Parse(WritePriorityList(scores));
  ASSERT_EQ(reply.size(), hosts.size());
  for (size_t i = 0; i < hosts.size(); ++i) {
    ASSERT_EQ(reply[i]["Host"], hosts[i]);
    ASSERT_EQ(reply[i]["Score"], scores[i].second);
  }
}

TEST(WriteFilterResultTest, ManyNodesWithEscapesRoundTrip) {
  std::vector<std::string> names;
  std::vector<std::string> reasons;
  for (int i = 0; i < 3000; ++i) {
    names.push_back("n" + std::to_string(i) + (i % 50 == 0 ? std::string(200, '\\') : ""));
    reasons.push_back("needs " + std::to_string(i % 8) + " GPUs" +
                      (i % 70 == 0 ? std::string(400, '\n') : ""));
  }
  ExtenderArgs args;
  std::vector<FilterOutcome> outcomes;
  for (int i = 0; i < 3000; ++i) {
    args.node_names.push_back(names[static_cast<size_t>(i)]);
    const std::string& reason = reasons[static_cast<size_t>(i)];
    outcomes.push_back(i % 3 == 0 ? Passed() : i % 3 == 1 ? Failed(reason) : Unresolvable(reason));
  }
  const json reply = Parse(WriteFilterResult(args, outcomes));
  json passed = json::array();
  json failed = json::object();
  json unresolvable = json::object();
  for (size_t i = 0; i < names.size(); ++i) {
    if (i % 3 == 0) passed.push_back(names[i]);
    if (i % 3 == 1) failed[names[i]] = reasons[i];
    if (i % 3 == 2) unresolvable[names[i]] = reasons[i];
  }
  EXPECT_EQ(reply["NodeNames"], passed);
  EXPECT_EQ(reply["FailedNodes"], failed);
  EXPECT_EQ(reply["FailedAndUnresolvableNodes"], unresolvable);
}

// Hosts that sit in the request as raw tokens are copied from it with their quotes; the reply
// must be byte for byte what writing each host as a JSON string gives, for names with escapes
// (unescaped elsewhere), whitespace around tokens, empty names and hosts from anywhere else.
TEST(WritePriorityListTest, HostsCopiedFromTheRequestAreWrittenExactly) {
  const std::string names_json = R"(["n0", "n1" ,"es\"c","t\u0041b","","n5"])";
  ExtenderRequestParser parser(kMaxBytes);
  Result<const ExtenderArgs*> parsed = ParseWithNames(parser, names_json);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  const ExtenderArgs& args = **parsed;
  ASSERT_EQ(args.node_names.size(), 6u);
  const std::string elsewhere = "q\"uoted";
  std::vector<std::pair<std::string_view, int>> scores;
  for (size_t i = 0; i < args.node_names.size(); ++i) {
    scores.emplace_back(args.node_names[i], static_cast<int>(i));
  }
  scores.emplace_back(elsewhere, 10);
  const std::string reply = WritePriorityList(args, scores);
  EXPECT_EQ(reply, WritePriorityList(scores));
  const json parsed_reply = Parse(reply);
  ASSERT_EQ(parsed_reply.size(), 7u);
  EXPECT_EQ(parsed_reply[1], json({{"Host", "n1"}, {"Score", 1}}));
  EXPECT_EQ(parsed_reply[2]["Host"], "es\"c");
  EXPECT_EQ(parsed_reply[3]["Host"], "tAb");
  EXPECT_EQ(parsed_reply[4]["Host"], "");
  EXPECT_EQ(parsed_reply[6], json({{"Host", "q\"uoted"}, {"Score", 10}}));
}

// Raw-token hosts of every length from 0 to 80 bytes (each way the writer copies a short name),
// first in the list or after a written one, with scores inside and outside kube-scheduler's
// 0..10: byte for byte what nlohmann writes for the same list.
TEST(WritePriorityListTest, EveryHostLengthAndScoreAsNlohmannWritesThem) {
  std::string names_json = "[";
  for (size_t length = 0; length <= 80; ++length) {
    std::string name;
    for (size_t k = 0; k < length; ++k) name += static_cast<char>('a' + (length + k) % 26);
    names_json += (length > 0 ? ",\"" : "\"") + name + "\"";
  }
  names_json += "]";
  ExtenderRequestParser parser(kMaxBytes);
  Result<const ExtenderArgs*> parsed = ParseWithNames(parser, names_json);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  const ExtenderArgs& args = **parsed;
  ASSERT_EQ(args.node_names.size(), 81u);
  std::vector<int> scores_to_try = {100, -100, 1234, std::numeric_limits<int>::min(),
                                    std::numeric_limits<int>::max()};
  for (int score = -1; score <= 11; ++score) scores_to_try.push_back(score);
  const std::string elsewhere = "not-from-the-request";
  for (bool written_first : {false, true}) {
    std::vector<std::pair<std::string_view, int>> scores;
    json expected = json::array();
    if (written_first) {
      scores.emplace_back(elsewhere, 5);
      expected.push_back({{"Host", elsewhere}, {"Score", 5}});
    }
    for (size_t i = 0; i < args.node_names.size(); ++i) {
      ASSERT_TRUE(args.IsRawToken(args.node_names[i])) << i;
      const int score = scores_to_try[i % scores_to_try.size()];
      scores.emplace_back(args.node_names[i], score);
      expected.push_back({{"Host", std::string(args.node_names[i])}, {"Score", score}});
    }
    EXPECT_EQ(WritePriorityList(args, scores), expected.dump()) << written_first;
    EXPECT_EQ(WritePriorityList(scores), expected.dump()) << written_first;
  }
}

TEST(WritePriorityListTest, Empty) { EXPECT_EQ(Parse(WritePriorityList({})), json::array()); }

TEST(WriteBindingResultTest, EmptyAndWithError) {
  EXPECT_EQ(Parse(WriteBindingResult("")), json({{"Error", ""}}));
  EXPECT_EQ(Parse(WriteBindingResult("pod ns/p: \\ conflict")),
            json({{"Error", "pod ns/p: \\ conflict"}}));
}

TEST(AppendJsonStringTest, EscapesAndRoundTrips) {
  const std::vector<std::string> inputs = {
      "",
      "plain",
      "quote \" inside",
      "back\\slash",
      "new\nline",
      "cr\r tab\t",
      std::string("\x01\x02\x1f", 3),
      std::string("nul\0byte", 8),
      "del \x7f",
      "UTF-8: \xc3\xbc \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x9a\x80",
      "/slash",
  };
  for (const std::string& input : inputs) {
    std::string out = "prefix:";
    AppendJsonString(out, input);
    ASSERT_EQ(out.rfind("prefix:", 0), 0u) << "appends, does not replace";
    const std::string literal = out.substr(7);
    const json parsed = json::parse(literal, nullptr, /*allow_exceptions=*/false);
    ASSERT_TRUE(parsed.is_string()) << literal;
    EXPECT_EQ(parsed.get<std::string>(), input) << literal;
    // No raw control characters survive.
    for (char c : literal) EXPECT_GE(static_cast<unsigned char>(c), 0x20) << literal;
  }
}

// The clean-text check reads eight bytes at a time: every byte value at every position of a
// word, and in the bytes after the last whole word, must be escaped exactly when JSON says so.
TEST(AppendJsonStringTest, EveryByteAtEveryPositionRoundTrips) {
  for (size_t length : {size_t{1}, size_t{7}, size_t{8}, size_t{9}, size_t{16}, size_t{21}}) {
    for (size_t at = 0; at < length; ++at) {
      for (int byte = 0; byte < 0x80; ++byte) {
        std::string input(length, 'a');
        input[at] = static_cast<char>(byte);
        std::string out;
        AppendJsonString(out, input);
        const bool must_escape = byte < 0x20 || byte == '"' || byte == '\\';
        ASSERT_EQ(out.size() != input.size() + 2, must_escape)
            << "byte " << byte << " at " << at << " of " << length;
        const json parsed = json::parse(out, nullptr, /*allow_exceptions=*/false);
        ASSERT_TRUE(parsed.is_string()) << out;
        ASSERT_EQ(parsed.get<std::string>(), input);
      }
    }
  }
}

// A default-constructed view has no data pointer at all.
TEST(AppendJsonStringTest, EmptyViewWithoutData) {
  std::string out;
  AppendJsonString(out, std::string_view());
  EXPECT_EQ(out, "\"\"");
  ExtenderArgs args;
  args.node_names = {std::string_view()};
  EXPECT_EQ(Parse(WriteFilterResult(args, {Failed(std::string_view())}))["FailedNodes"],
            json({{"", ""}}));
}

TEST(AppendJsonStringTest, ExactEscapes) {
  std::string out;
  AppendJsonString(out, "a\"b\\c\nd");
  EXPECT_EQ(out, R"("a\"b\\c\nd")");
  out.clear();
  AppendJsonString(out, std::string("\x01", 1));
  EXPECT_EQ(out, R"("\u0001")");
  out.clear();
  // UTF-8 bytes are copied as they are, not \u-escaped.
  AppendJsonString(out, "\xc3\xbc");
  EXPECT_EQ(out, "\"\xc3\xbc\"");
}

}  // namespace
}  // namespace gputopo::extender
