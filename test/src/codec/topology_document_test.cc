#include "src/codec/topology_document.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gputopo/machine_topology.h"
#include "test/support/fixtures.h"
#include "topology/link_type.h"

namespace gputopo::codec {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::IsSupersetOf;

constexpr Link kUnknownLink{};

std::string LinkText(const MachineTopology& machine, int a, int b) {
  return topology::FormatLink(machine.link(a, b));
}

// ---------------------------------------------------------------------------------------------
// Valid documents.

TEST(ParseTopologyDocumentTest, FullDocument) {
  // GPUs out of order, a link given as [1, 0], fields this version does not know.
  const std::string doc = R"({
    "version": 1,
    "replicas": 4,
    "agent": {"name": "gputopo-agent", "version": "9.9"},
    "gpus": [
      {"index": 2, "numaNode": 1, "memoryMiB": 81559},
      {"index": 0, "uuid": "GPU-aaaa", "model": "NVIDIA H100 80GB HBM3", "memoryMiB": 81559,
       "numaNode": 0, "cpuAffinity": "0-47,96-143", "pciBusId": "0000:18:00.0"},
      {"index": 1, "uuid": "GPU-bbbb", "numaNode": -1, "model": null}
    ],
    "links": [
      {"gpus": [1, 0], "type": "NV18", "bandwidthGBs": 450},
      {"gpus": [0, 2], "type": "SYS"},
      {"gpus": [2, 1], "type": "PIX"}
    ]
  })";
  Result<MachineTopology> got = ParseTopologyDocument(doc);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  const MachineTopology& m = *got;
  ASSERT_EQ(m.gpu_count(), 3);
  EXPECT_EQ(m.replicas_per_gpu(), 4);

  EXPECT_EQ(m.gpu(0).index, 0);
  EXPECT_EQ(m.gpu(0).uuid, "GPU-aaaa");
  EXPECT_EQ(m.gpu(0).model, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(m.gpu(0).memory_mib, 81559);
  EXPECT_EQ(m.gpu(0).numa_node, 0);
  EXPECT_EQ(m.gpu(0).cpu_affinity, "0-47,96-143");
  EXPECT_EQ(m.gpu(0).pci_bus_id, "0000:18:00.0");
  EXPECT_TRUE(m.gpu(0).healthy);

  EXPECT_EQ(m.gpu(1).index, 1);
  EXPECT_EQ(m.gpu(1).uuid, "GPU-bbbb");
  EXPECT_EQ(m.gpu(1).model, "");
  EXPECT_EQ(m.gpu(1).memory_mib, 0);
  EXPECT_EQ(m.gpu(1).numa_node, -1);

  EXPECT_EQ(m.gpu(2).index, 2);
  EXPECT_EQ(m.gpu(2).uuid, "");
  EXPECT_EQ(m.gpu(2).numa_node, 1);
  EXPECT_EQ(m.gpu(2).memory_mib, 81559);

  // Links are symmetric.
  EXPECT_EQ(m.link(0, 1), (Link{LinkType::kNvLink, 18}));
  EXPECT_EQ(m.link(1, 0), (Link{LinkType::kNvLink, 18}));
  EXPECT_EQ(m.link(0, 2), (Link{LinkType::kSys, 0}));
  EXPECT_EQ(m.link(2, 0), (Link{LinkType::kSys, 0}));
  EXPECT_EQ(m.link(1, 2), (Link{LinkType::kPix, 0}));
  EXPECT_EQ(m.link(0, 0), kUnknownLink);
}

TEST(ParseTopologyDocumentTest, MinimalDocumentHasUnknownLinksAndNoReplicas) {
  Result<MachineTopology> got =
      ParseTopologyDocument(R"({"version":1,"gpus":[{"index":1},{"index":0}]})");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->gpu_count(), 2);
  EXPECT_EQ(got->replicas_per_gpu(), 0);
  EXPECT_EQ(got->link(0, 1), kUnknownLink);
  EXPECT_EQ(got->gpu(0).numa_node, -1);
}

TEST(ParseTopologyDocumentTest, EveryLinkTypeParses) {
  const std::vector<std::pair<std::string, Link>> cases = {
      {"NV1", {LinkType::kNvLink, 1}}, {"NV12", {LinkType::kNvLink, 12}},
      {"PIX", {LinkType::kPix, 0}},    {"PXB", {LinkType::kPxb, 0}},
      {"PHB", {LinkType::kPhb, 0}},    {"NODE", {LinkType::kNode, 0}},
      {"SYS", {LinkType::kSys, 0}},    {"SOC", {LinkType::kSys, 0}}};
  for (const auto& [text, link] : cases) {
    json doc = {{"version", 1},
                {"gpus", {{{"index", 0}}, {{"index", 1}}}},
                {"links", {{{"gpus", {0, 1}}, {"type", text}}}}};
    Result<MachineTopology> got = ParseTopologyDocument(doc.dump());
    ASSERT_TRUE(got.ok()) << text << ": " << got.status().ToString();
    EXPECT_EQ(got->link(0, 1), link) << text;
  }
}

TEST(ParseTopologyDocumentTest, RepeatedPairWithTheSameTypeIsAccepted) {
  Result<MachineTopology> got = ParseTopologyDocument(
      R"({"version":1,"gpus":[{"index":0},{"index":1}],
          "links":[{"gpus":[0,1],"type":"NV2"},{"gpus":[1,0],"type":"NV2"}]})");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->link(0, 1), (Link{LinkType::kNvLink, 2}));
}

TEST(ParseTopologyDocumentTest, SixtyFourGpusAreAccepted) {
  json gpus = json::array();
  for (int i = 63; i >= 0; --i) gpus.push_back({{"index", i}});
  Result<MachineTopology> got = ParseTopologyDocument(json{{"version", 1}, {"gpus", gpus}}.dump());
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->gpu_count(), kMaxGpusPerNode);
  EXPECT_EQ(got->gpu(63).index, 63);
}

TEST(ParseTopologyDocumentTest, StringFieldOfExactly256CharsIsAccepted) {
  json doc = {{"version", 1}, {"gpus", {{{"index", 0}, {"model", std::string(256, 'm')}}}}};
  Result<MachineTopology> got = ParseTopologyDocument(doc.dump());
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->gpu(0).model.size(), 256u);
}

// ---------------------------------------------------------------------------------------------
// Corrupt documents.

struct CorruptCase {
  std::string label;
  std::string doc;
  std::string message;  // a part the error message must contain: the offending field
};

class CorruptTopologyDocumentTest : public ::testing::TestWithParam<CorruptCase> {};

TEST_P(CorruptTopologyDocumentTest, IsRejectedWithAMessage) {
  const CorruptCase& c = GetParam();
  Result<MachineTopology> got = ParseTopologyDocument(c.doc);
  ASSERT_FALSE(got.ok()) << "accepted: " << c.doc.substr(0, 200);
  EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(got.status().message(), HasSubstr(c.message));
}

// Two GPUs and one link; `gpus` and `links` replace the defaults.
std::string TwoGpuDoc(const std::string& gpus = R"([{"index":0},{"index":1}])",
                      const std::string& links = R"([{"gpus":[0,1],"type":"NV1"}])") {
  return R"({"version":1,"gpus":)" + gpus + R"(,"links":)" + links + "}";
}

std::string SixtyFiveGpus() {
  json gpus = json::array();
  for (int i = 0; i < 65; ++i) gpus.push_back({{"index", i}});
  return json{{"version", 1}, {"gpus", gpus}}.dump();
}

std::string GpuWithString(const std::string& key, size_t length) {
  return json{{"version", 1}, {"gpus", {{{"index", 0}, {key, std::string(length, 'x')}}}}}.dump();
}

INSTANTIATE_TEST_SUITE_P(
    Table, CorruptTopologyDocumentTest,
    ::testing::Values(
        CorruptCase{"NotJson", "{version: 1", "not valid JSON"},
        CorruptCase{"Empty", "", "not valid JSON"},
        CorruptCase{"TrailingGarbage", TwoGpuDoc() + "x", "not valid JSON"},
        CorruptCase{"NotObject", "[1,2]", "JSON object"},
        CorruptCase{"StringDocument", R"("gpus")", "JSON object"},
        CorruptCase{"VersionMissing", R"({"gpus":[{"index":0}]})", "version"},
        CorruptCase{"VersionTwo", R"({"version":2,"gpus":[{"index":0}]})", "version"},
        CorruptCase{"VersionString", R"({"version":"1","gpus":[{"index":0}]})", "version"},
        CorruptCase{"GpusMissing", R"({"version":1})", "gpus"},
        CorruptCase{"GpusEmpty", R"({"version":1,"gpus":[]})", "gpus"},
        CorruptCase{"GpusNotArray", R"({"version":1,"gpus":{"index":0}})", "gpus"},
        CorruptCase{"SixtyFiveGpus", SixtyFiveGpus(), "64"},
        CorruptCase{"GpuNotObject", TwoGpuDoc(R"([{"index":0},1])"), "gpus[1]"},
        CorruptCase{"IndexMissing", TwoGpuDoc(R"([{"index":0},{"uuid":"GPU-1"}])"),
                    "gpus[1].index"},
        CorruptCase{"IndexDuplicate", TwoGpuDoc(R"([{"index":1},{"index":1}])"), "index 1"},
        CorruptCase{"IndexOutOfRange", TwoGpuDoc(R"([{"index":0},{"index":2}])"), "gpus[1].index"},
        CorruptCase{"IndexNegative", TwoGpuDoc(R"([{"index":-1},{"index":0}])"), "gpus[0].index"},
        CorruptCase{"IndexFloat", TwoGpuDoc(R"([{"index":0},{"index":1.5}])"), "gpus[1].index"},
        CorruptCase{"IndexString", TwoGpuDoc(R"([{"index":0},{"index":"1"}])"), "gpus[1].index"},
        CorruptCase{"IndexHuge", TwoGpuDoc(R"([{"index":0},{"index":18446744073709551615}])"),
                    "gpus[1].index"},
        CorruptCase{"NumaNode5000", TwoGpuDoc(R"([{"index":0,"numaNode":5000},{"index":1}])"),
                    "gpus[0].numaNode"},
        CorruptCase{"NumaNodeMinus2", TwoGpuDoc(R"([{"index":0,"numaNode":-2},{"index":1}])"),
                    "numaNode"},
        CorruptCase{"NumaNodeString", TwoGpuDoc(R"([{"index":0,"numaNode":"0"},{"index":1}])"),
                    "numaNode"},
        CorruptCase{"NegativeMemory", TwoGpuDoc(R"([{"index":0},{"index":1,"memoryMiB":-1}])"),
                    "gpus[1].memoryMiB"},
        CorruptCase{"FloatMemory", TwoGpuDoc(R"([{"index":0},{"index":1,"memoryMiB":1.5}])"),
                    "memoryMiB"},
        CorruptCase{"DuplicateUuid",
                    TwoGpuDoc(R"([{"index":0,"uuid":"GPU-x"},{"index":1,"uuid":"GPU-x"}])"),
                    "same uuid"},
        CorruptCase{"UuidNotString", TwoGpuDoc(R"([{"index":0,"uuid":7},{"index":1}])"), "uuid"},
        CorruptCase{"ReplicasZero", R"({"version":1,"replicas":0,"gpus":[{"index":0}]})",
                    "replicas"},
        CorruptCase{"ReplicasTooMany", R"({"version":1,"replicas":1025,"gpus":[{"index":0}]})",
                    "replicas"},
        CorruptCase{"LinksNotArray", TwoGpuDoc(R"([{"index":0},{"index":1}])", "{}"), "links"},
        CorruptCase{"LinkNotObject", TwoGpuDoc(R"([{"index":0},{"index":1}])", "[[0,1]]"),
                    "links[0]"},
        CorruptCase{"LinkMissingGpu",
                    TwoGpuDoc(R"([{"index":0},{"index":1}])", R"([{"gpus":[0,2],"type":"NV1"}])"),
                    "links[0].gpus"},
        CorruptCase{"LinkNegativeGpu",
                    TwoGpuDoc(R"([{"index":0},{"index":1}])", R"([{"gpus":[-1,0],"type":"NV1"}])"),
                    "links[0].gpus"},
        CorruptCase{"LinkSameGpuTwice",
                    TwoGpuDoc(R"([{"index":0},{"index":1}])", R"([{"gpus":[1,1],"type":"NV1"}])"),
                    "links[0].gpus"},
        CorruptCase{"LinkOneGpu",
                    TwoGpuDoc(R"([{"index":0},{"index":1}])", R"([{"gpus":[0],"type":"NV1"}])"),
                    "links[0].gpus"},
        CorruptCase{"LinkThreeGpus",
                    TwoGpuDoc(R"([{"index":0},{"index":1}])", R"([{"gpus":[0,1,0],"type":"NV1"}])"),
                    "links[0].gpus"},
        CorruptCase{"LinkGpusMissing",
                    TwoGpuDoc(R"([{"index":0},{"index":1}])", R"([{"type":"NV1"}])"),
                    "links[0].gpus"},
        CorruptCase{"LinkBadType",
                    TwoGpuDoc(R"([{"index":0},{"index":1}])", R"([{"gpus":[0,1],"type":"NVx"}])"),
                    "links[0].type"},
        CorruptCase{"LinkTypeX",
                    TwoGpuDoc(R"([{"index":0},{"index":1}])", R"([{"gpus":[0,1],"type":"X"}])"),
                    "links[0].type"},
        CorruptCase{"LinkTypeNv0",
                    TwoGpuDoc(R"([{"index":0},{"index":1}])", R"([{"gpus":[0,1],"type":"NV0"}])"),
                    "links[0].type"},
        CorruptCase{"LinkTypeLowerCase",
                    TwoGpuDoc(R"([{"index":0},{"index":1}])", R"([{"gpus":[0,1],"type":"nv1"}])"),
                    "links[0].type"},
        CorruptCase{"LinkTypeMissing",
                    TwoGpuDoc(R"([{"index":0},{"index":1}])", R"([{"gpus":[0,1]}])"),
                    "links[0].type"},
        CorruptCase{"LinkTypeNumber",
                    TwoGpuDoc(R"([{"index":0},{"index":1}])", R"([{"gpus":[0,1],"type":1}])"),
                    "links[0].type"},
        CorruptCase{"ConflictingDuplicatePair",
                    TwoGpuDoc(R"([{"index":0},{"index":1}])",
                              R"([{"gpus":[0,1],"type":"NV1"},{"gpus":[1,0],"type":"PIX"}])"),
                    "two different link types"},
        CorruptCase{"ConflictingNvLinkCount",
                    TwoGpuDoc(R"([{"index":0},{"index":1}])",
                              R"([{"gpus":[0,1],"type":"NV1"},{"gpus":[0,1],"type":"NV2"}])"),
                    "two different link types"},
        CorruptCase{"ModelTooLong", GpuWithString("model", 257), "model"},
        CorruptCase{"UuidTooLong", GpuWithString("uuid", 1000), "uuid"},
        CorruptCase{"CpuAffinityTooLong", GpuWithString("cpuAffinity", 257), "cpuAffinity"},
        CorruptCase{"DeeplyNested", std::string(100000, '[') + std::string(100000, ']'),
                    "JSON object"}),
    [](const ::testing::TestParamInfo<CorruptCase>& p) { return p.param.label; });

// ---------------------------------------------------------------------------------------------
// Formatting.

MachineTopology SampleMachine() {
  MachineTopology m(4);
  m.set_replicas_per_gpu(2);
  for (int i = 0; i < 4; ++i) {
    m.gpu(i).uuid = "GPU-" + std::to_string(1000 + i);
    m.gpu(i).model = "NVIDIA A100-SXM4-40GB";
    m.gpu(i).memory_mib = 40960;
    m.gpu(i).numa_node = i / 2;
    m.gpu(i).cpu_affinity = i < 2 ? "0-15" : "16-31";
  }
  m.gpu(3).uuid = "";       // unknown uuid
  m.gpu(3).numa_node = -1;  // unknown NUMA node
  m.gpu(3).memory_mib = 0;  // unknown memory
  m.SetLink(0, 1, {LinkType::kNvLink, 12});
  m.SetLink(2, 3, {LinkType::kNvLink, 4});
  m.SetLink(0, 2, {LinkType::kSys, 0});
  m.SetLink(1, 2, {LinkType::kNode, 0});
  m.SetLink(1, 3, {LinkType::kPxb, 0});
  // 0-3 stays unknown.
  return m;
}

TEST(FormatTopologyDocumentTest, RoundTripsPrettyAndCompact) {
  const MachineTopology machine = SampleMachine();
  for (bool pretty : {true, false}) {
    TopologyFormatOptions options;
    options.pretty = pretty;
    const std::string text = FormatTopologyDocument(machine, options);
    Result<MachineTopology> back = ParseTopologyDocument(text);
    ASSERT_TRUE(back.ok()) << back.status().ToString() << "\n" << text;
    EXPECT_EQ(*back, machine) << text;
    EXPECT_EQ(LinkText(*back, 0, 3), "UNKNOWN");
    EXPECT_EQ(pretty, text.find('\n') != std::string::npos) << text;
  }
}

TEST(FormatTopologyDocumentTest, RoundTripsWithoutReplicas) {
  MachineTopology machine(2);
  machine.SetLink(0, 1, {LinkType::kPhb, 0});
  const std::string text = FormatTopologyDocument(machine);
  const json doc = json::parse(text);
  EXPECT_FALSE(doc.contains("replicas"));
  EXPECT_EQ(doc["version"], 1);
  Result<MachineTopology> back = ParseTopologyDocument(text);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, machine);
}

TEST(FormatTopologyDocumentTest, DocumentShape) {
  const json doc = json::parse(FormatTopologyDocument(SampleMachine()));
  EXPECT_EQ(doc["version"], 1);
  EXPECT_EQ(doc["replicas"], 2);
  ASSERT_EQ(doc["gpus"].size(), 4u);
  EXPECT_EQ(doc["gpus"][0]["uuid"], "GPU-1000");
  EXPECT_EQ(doc["gpus"][0]["memoryMiB"], 40960);
  EXPECT_EQ(doc["gpus"][2]["numaNode"], 1);
  EXPECT_FALSE(doc["gpus"][3].contains("uuid"));
  EXPECT_FALSE(doc["gpus"][3].contains("numaNode"));
  EXPECT_FALSE(doc["gpus"][3].contains("memoryMiB"));
  // Unknown links are left out: 6 pairs, one unknown.
  ASSERT_EQ(doc["links"].size(), 5u);
  EXPECT_EQ(doc["links"][0]["gpus"], json::array({0, 1}));
  EXPECT_EQ(doc["links"][0]["type"], "NV12");
}

TEST(FormatTopologyDocumentTest, CommentsBecomeNotesAndAreIgnoredOnParse) {
  TopologyFormatOptions options;
  options.comments = {"row GPU3 had a blank cell", "second note"};
  const std::string text = FormatTopologyDocument(SampleMachine(), options);
  const json doc = json::parse(text);
  EXPECT_EQ(doc["notes"], json::array({"row GPU3 had a blank cell", "second note"}));
  Result<MachineTopology> back = ParseTopologyDocument(text);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, SampleMachine());
}

TEST(FormatTopologyDocumentTest, PciBusIdAndHealthRoundTrip) {
  MachineTopology machine(2);
  machine.gpu(0).pci_bus_id = "00000000:07:00.0";
  machine.gpu(1).pci_bus_id = "00000000:0F:00.0";
  machine.gpu(1).healthy = false;
  machine.gpu(1).health_reason = "nvmlDeviceGetUUID: GPU is lost";
  const std::string text = FormatTopologyDocument(machine);
  const json doc = json::parse(text);
  EXPECT_EQ(doc["gpus"][0]["pciBusId"], "00000000:07:00.0");
  // A healthy GPU says nothing about health; an unhealthy one says false and why.
  EXPECT_FALSE(doc["gpus"][0].contains("healthy"));
  EXPECT_FALSE(doc["gpus"][0].contains("healthReason"));
  EXPECT_EQ(doc["gpus"][1]["healthy"], false);
  EXPECT_EQ(doc["gpus"][1]["healthReason"], "nvmlDeviceGetUUID: GPU is lost");
  Result<MachineTopology> back = ParseTopologyDocument(text);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, machine);
}

TEST(ParseTopologyDocumentTest, HealthFields) {
  // Documents without the fields (every one written before them) read as healthy.
  Result<MachineTopology> old = ParseTopologyDocument(R"({"version":1,"gpus":[{"index":0}]})");
  ASSERT_TRUE(old.ok()) << old.status().ToString();
  EXPECT_TRUE(old->gpu(0).healthy);
  EXPECT_EQ(old->gpu(0).pci_bus_id, "");
  // A reason beside "healthy": true is ignored.
  Result<MachineTopology> healthy = ParseTopologyDocument(
      R"({"version":1,"gpus":[{"index":0,"healthy":true,"healthReason":"stale"}]})");
  ASSERT_TRUE(healthy.ok()) << healthy.status().ToString();
  EXPECT_TRUE(healthy->gpu(0).healthy);
  EXPECT_EQ(healthy->gpu(0).health_reason, "");
  Result<MachineTopology> bad =
      ParseTopologyDocument(R"({"version":1,"gpus":[{"index":0,"healthy":"no"}]})");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("gpus[0].healthy"));
  EXPECT_FALSE(ParseTopologyDocument(R"({"version":1,"gpus":[{"index":0,"pciBusId":7}]})").ok());
}

TEST(FormatTopologyDocumentTest, InvalidUtf8DoesNotThrow) {
  MachineTopology machine(1);
  machine.gpu(0).model = "bad \xff\xfe model \xc3";
  machine.gpu(0).uuid = "GPU-\x80";
  std::string text;
  EXPECT_NO_THROW(text = FormatTopologyDocument(machine));
  // The output is valid JSON (bad bytes replaced) and parses back as a document.
  const json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(doc.is_discarded()) << text;
  EXPECT_THAT(doc["gpus"][0]["model"].get<std::string>(), HasSubstr("model"));
  Result<MachineTopology> back = ParseTopologyDocument(text);
  EXPECT_TRUE(back.ok()) << back.status().ToString();
}

// ---------------------------------------------------------------------------------------------
// Profiles.

TEST(ParseProfileDocumentTest, ReadsNameAndDescription) {
  Result<ProfileDocument> got = ParseProfileDocument(
      R"({"name":"tiny","description":"two GPUs","version":1,
          "gpus":[{"index":0},{"index":1}],"links":[{"gpus":[0,1],"type":"NV4"}]})");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->name, "tiny");
  EXPECT_EQ(got->description, "two GPUs");
  EXPECT_EQ(got->machine.gpu_count(), 2);
  EXPECT_EQ(got->machine.link(0, 1), (Link{LinkType::kNvLink, 4}));
}

TEST(ParseProfileDocumentTest, RequiresAName) {
  for (const std::string& name_field :
       {std::string(""), std::string(R"("name":"",)"), std::string(R"("name":7,)"),
        std::string(R"("name":null,)")}) {
    const std::string doc = "{" + name_field + R"("version":1,"gpus":[{"index":0}]})";
    Result<ProfileDocument> got = ParseProfileDocument(doc);
    ASSERT_FALSE(got.ok()) << doc;
    EXPECT_THAT(got.status().message(), HasSubstr("name")) << doc;
  }
}

TEST(ParseProfileDocumentTest, CorruptMachineIsRejected) {
  EXPECT_FALSE(ParseProfileDocument(R"({"name":"x","version":1,"gpus":[]})").ok());
  EXPECT_FALSE(ParseProfileDocument("not json").ok());
}

std::filesystem::path ProfileDir() { return gputopo::testing::SourceDir() / "topology/profiles"; }

TEST(ShippedProfilesTest, EveryProfileParsesIsNamedAfterItsFileAndListsEveryPair) {
  const std::vector<std::filesystem::path> files = gputopo::testing::FilesIn(ProfileDir(), ".json");
  for (const std::filesystem::path& file : files) {
    SCOPED_TRACE(file.filename().string());
    const std::string text = gputopo::testing::ReadFile(file);
    Result<ProfileDocument> profile = ParseProfileDocument(text);
    ASSERT_TRUE(profile.ok()) << profile.status().ToString();
    EXPECT_EQ(profile->name, file.stem().string());
    EXPECT_FALSE(profile->description.empty());
    const MachineTopology& m = profile->machine;
    ASSERT_GE(m.gpu_count(), 1);
    // Every pair is listed in the document and known in the machine.
    const json doc = json::parse(text);
    std::set<std::pair<int, int>> listed;
    for (const json& link : doc.value("links", json::array())) {
      const int a = link["gpus"][0].get<int>();
      const int b = link["gpus"][1].get<int>();
      listed.insert({std::min(a, b), std::max(a, b)});
    }
    for (int a = 0; a < m.gpu_count(); ++a) {
      for (int b = a + 1; b < m.gpu_count(); ++b) {
        EXPECT_EQ(listed.count({a, b}), 1u) << "pair " << a << "-" << b << " is not listed";
        EXPECT_NE(m.link(a, b), kUnknownLink) << "pair " << a << "-" << b;
      }
    }
    // And the profile survives a format/parse round trip.
    Result<MachineTopology> back = ParseTopologyDocument(FormatTopologyDocument(m));
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(*back, m);
  }
}

TEST(ShippedProfilesTest, ExpectedProfilesExist) {
  std::vector<std::string> stems;
  for (const std::filesystem::path& file : gputopo::testing::FilesIn(ProfileDir(), ".json")) {
    stems.push_back(file.stem().string());
  }
  EXPECT_THAT(stems, IsSupersetOf({"dgx1-v100", "dgx-a100", "hgx-h100", "pcie-8gpu-2numa",
                                   "pcie-4gpu-2numa"}));
}

}  // namespace
}  // namespace gputopo::codec
