#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "gputopo/machine_topology.h"
#include "gputopo/well_known.h"
#include "policies/requirements/pod_requirements.h"
#include "src/codec/k8s_json.h"
#include "src/codec/topology_document.h"
#include "test/support/fixtures.h"

namespace gputopo::codec {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;

std::filesystem::path CaptureDir(const std::string& mode) {
  return gputopo::testing::SharedDir() / "k8s" / mode;
}

json ReadCapture(const std::string& mode, const std::string& file) {
  const std::string text = gputopo::testing::ReadFile(CaptureDir(mode) / file);
  return json::parse(text, nullptr, /*allow_exceptions=*/false);
}

// The Pod object inside a captured ExtenderArgs body, as compact JSON.
std::string CapturedPod(const std::string& mode, const std::string& file) {
  const json body = ReadCapture(mode, file);
  EXPECT_TRUE(body.is_object() && body.contains("Pod")) << file;
  return body.is_object() ? body.value("Pod", json()).dump() : "";
}

// The first Node object of a captured nodeCacheCapable=false filter request.
json CapturedNode() {
  const json body = ReadCapture("cache_false", "010-filter.gpu-plain-b.request.json");
  EXPECT_TRUE(body.is_object()) << "capture did not parse";
  if (!body.is_object()) return json::object();
  return body["Nodes"]["items"][0];
}

// ---------------------------------------------------------------------------------------------
// Pods from the captured requests.

struct CapturedPodCase {
  std::string mode;
  std::string file;
  std::string name;
  std::string uid;
  std::string resource_version;
  int64_t gpus;
};

class CapturedPodTest : public ::testing::TestWithParam<CapturedPodCase> {};

TEST_P(CapturedPodTest, DecodesIdentityAndGpuRequest) {
  const CapturedPodCase& c = GetParam();
  K8sDecoder decoder;
  Result<PodInfo> pod = decoder.DecodePod(CapturedPod(c.mode, c.file));
  ASSERT_TRUE(pod.ok()) << pod.status().ToString();
  EXPECT_EQ(pod->name, c.name);
  EXPECT_EQ(pod->namespace_name, "research");
  EXPECT_EQ(pod->uid, c.uid);
  EXPECT_EQ(pod->resource_version, c.resource_version);
  EXPECT_EQ(pod->gpu_request, c.gpus);
  EXPECT_EQ(pod->phase, PodPhase::kPending);
  EXPECT_FALSE(pod->deletion_requested);
  EXPECT_EQ(pod->node_name, "");
  EXPECT_EQ(pod->Key(), "research/" + c.name);
  // None of the captured pods carries a gputopo.io/ annotation.
  EXPECT_THAT(pod->annotations, IsEmpty());
}

INSTANTIATE_TEST_SUITE_P(
    Captures, CapturedPodTest,
    ::testing::Values(
        CapturedPodCase{"cache_true", "001-filter.gpu-plain-a.request.json", "gpu-plain-a",
                        "bb43edd5-aac9-43df-ae36-f2e58c030702", "207", 1},
        CapturedPodCase{"cache_true", "004-filter.trainer-a.request.json", "trainer-a",
                        "2cfa8746-4e49-49ea-8e00-101ba9e62789", "209", 1},
        CapturedPodCase{"cache_true", "006-filter.gpu-two-a.request.json", "gpu-two-a",
                        "163bf23c-d3c5-4291-9a18-33c86c736eb7", "210", 2},
        CapturedPodCase{"cache_false", "010-filter.gpu-plain-b.request.json", "gpu-plain-b",
                        "d244c00d-fd9e-4bfd-b983-ff0e46c9b4c8", "219", 1},
        CapturedPodCase{"cache_false", "013-filter.trainer-b.request.json", "trainer-b",
                        "e954306a-514e-4743-8f66-7220cff0af1f", "220", 1},
        CapturedPodCase{"cache_false", "016-filter.gpu-two-b.request.json", "gpu-two-b",
                        "6e7d8454-e56c-4c7a-9e2c-4b52e6294bda", "222", 2}),
    [](const ::testing::TestParamInfo<CapturedPodCase>& p) {
      std::string name = p.param.name;
      for (char& ch : name) {
        if (ch == '-') ch = '_';
      }
      return name;
    });

TEST(K8sDecodePodTest, TrainerHasTemplateHashAndControllerOwner) {
  K8sDecoder decoder;
  Result<PodInfo> pod =
      decoder.DecodePod(CapturedPod("cache_true", "004-filter.trainer-a.request.json"),
                        /*with_labels=*/true);
  ASSERT_TRUE(pod.ok()) << pod.status().ToString();
  EXPECT_EQ(pod->pod_template_hash, "7d9f8c6b5d");
  ASSERT_EQ(pod->owners.size(), 1u);
  EXPECT_EQ(pod->owners[0].kind, "ReplicaSet");
  EXPECT_EQ(pod->owners[0].name, "trainer");
  EXPECT_EQ(pod->owners[0].uid, "db7b86ce-3e16-4c2d-bc3f-bc2c8844da42");
  EXPECT_TRUE(pod->owners[0].controller);
  // Every label, sorted by key (for PodDisruptionBudget selectors).
  EXPECT_THAT(pod->labels,
              ElementsAre(Pair("app", "trainer"), Pair("pod-template-hash", "7d9f8c6b5d")));
  // The capture's only annotation is research/note, which gputopo drops.
  EXPECT_THAT(pod->annotations, IsEmpty());
}

TEST(K8sDecodePodTest, PlainPodHasNoOwnerAndNoTemplateHash) {
  K8sDecoder decoder;
  Result<PodInfo> pod =
      decoder.DecodePod(CapturedPod("cache_true", "001-filter.gpu-plain-a.request.json"));
  ASSERT_TRUE(pod.ok()) << pod.status().ToString();
  EXPECT_EQ(pod->pod_template_hash, "");
  EXPECT_THAT(pod->owners, IsEmpty());
}

TEST(K8sDecodePodTest, KeepsOnlyGputopoAnnotationsInOrder) {
  json pod = json::parse(CapturedPod("cache_true", "004-filter.trainer-a.request.json"));
  pod["metadata"]["annotations"] = {{"research/note", "owned by ReplicaSet"},
                                    {"gputopo.io/group", "g1"},
                                    {"example.com/gputopo.io/group", "not ours"},
                                    {"gputopo.io/locality", "required"},
                                    {"gputopo.io", "no slash: not ours"}};
  K8sDecoder decoder;
  Result<PodInfo> got = decoder.DecodePod(pod.dump());
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  // nlohmann orders object keys; the decoder keeps the order it sees.
  EXPECT_THAT(got->annotations,
              ElementsAre(Pair("gputopo.io/group", "g1"), Pair("gputopo.io/locality", "required")));
  EXPECT_EQ(FindAnnotation(got->annotations, kAnnotationGroup), "g1");
  EXPECT_EQ(FindAnnotation(got->annotations, "research/note"), std::nullopt);
}

TEST(K8sDecodePodTest, OversizedGputopoAnnotationIsAnError) {
  json pod = {{"metadata", {{"name", "p"}, {"annotations", json::object()}}},
              {"spec", json::object()}};
  pod["metadata"]["annotations"]["gputopo.io/group"] = std::string(300 * 1024, 'x');
  K8sDecoder decoder;
  Result<PodInfo> got = decoder.DecodePod(pod.dump());
  ASSERT_FALSE(got.ok());
  EXPECT_THAT(got.status().message(), HasSubstr("gputopo.io/group"));
}

TEST(K8sDecodePodTest, OversizedForeignAnnotationIsIgnored) {
  json pod = {{"metadata", {{"name", "p"}, {"annotations", json::object()}}},
              {"spec", json::object()}};
  pod["metadata"]["annotations"]["example.com/blob"] = std::string(300 * 1024, 'x');
  K8sDecoder decoder;
  Result<PodInfo> got = decoder.DecodePod(pod.dump());
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_THAT(got->annotations, IsEmpty());
}

// ---------------------------------------------------------------------------------------------
// Hand-made pods: the effective GPU request.

// A container; `resources` is left out when it is JSON null.
json Container(json resources) {
  json c = {{"name", "c"}, {"image", "img"}};
  if (!resources.is_null()) c["resources"] = std::move(resources);
  return c;
}
json ContainerWithNullResources() {
  json c = Container(nullptr);
  c["resources"] = nullptr;
  return c;
}
json Requests(json gpus) { return {{"requests", {{"cpu", "1"}, {"nvidia.com/gpu", gpus}}}}; }
json Limits(json gpus) { return {{"limits", {{"nvidia.com/gpu", gpus}}}}; }
json Sidecar(json gpus) {
  json c = Container(Requests(std::move(gpus)));
  c["restartPolicy"] = "Always";
  return c;
}

// A pod with `containers` and, unless `init` is empty, `init` as its init containers.
json MakePod(std::vector<json> containers, std::vector<json> init = {}) {
  json pod = {{"metadata", {{"name", "p"}, {"namespace", "ns"}, {"uid", "u-1"}}},
              {"spec", {{"containers", json(containers)}}},
              {"status", {{"phase", "Pending"}}}};
  if (!init.empty()) pod["spec"]["initContainers"] = json(init);
  return pod;
}
json WithSpecField(json pod, const std::string& key, json value) {
  pod["spec"][key] = std::move(value);
  return pod;
}

struct RequestCase {
  std::string label;
  json pod;
  int64_t gpus;
};

class GpuRequestTest : public ::testing::TestWithParam<RequestCase> {};

TEST_P(GpuRequestTest, EffectiveRequest) {
  const RequestCase& c = GetParam();
  K8sDecoder decoder;
  Result<PodInfo> pod = decoder.DecodePod(c.pod.dump());
  ASSERT_TRUE(pod.ok()) << pod.status().ToString();
  EXPECT_EQ(pod->gpu_request, c.gpus);
}

INSTANTIATE_TEST_SUITE_P(
    Table, GpuRequestTest,
    ::testing::Values(
        RequestCase{"RequestsOnly", MakePod({Container(Requests("1"))}), 1},
        // The API server copies limits into requests, but a client-side object may not have
        // been defaulted: limits alone still count.
        RequestCase{"LimitsOnly", MakePod({Container(Limits("2"))}), 2},
        RequestCase{"RequestsAndLimits",
                    MakePod({Container({{"requests", {{"nvidia.com/gpu", "3"}}},
                                        {"limits", {{"nvidia.com/gpu", "3"}}}})}),
                    3},
        RequestCase{"SumOfContainers",
                    MakePod({Container(Requests("1")), Container(Requests("2"))}), 3},
        RequestCase{"NoResources", MakePod({Container(nullptr)}), 0},
        RequestCase{"NullResources", MakePod({ContainerWithNullResources()}), 0},
        RequestCase{"NullRequestsList", MakePod({Container({{"requests", nullptr}})}), 0},
        RequestCase{"CpuOnly", MakePod({Container({{"requests", {{"cpu", "2"}}}})}), 0},
        RequestCase{"QuantityAsJsonNumber", MakePod({Container(Requests(2))}), 2},
        RequestCase{"MilliWholeQuantity", MakePod({Container(Requests("2000m"))}), 2},
        // containers 1+1 = 2; the init container runs alone with 3: max(2, 3) = 3.
        RequestCase{"InitLargerThanContainers",
                    MakePod({Container(Requests("1")), Container(Requests("1"))},
                            {Container(Requests("3"))}),
                    3},
        // containers 1+1 = 2; init 1: max(2, 1) = 2.
        RequestCase{"InitSmallerThanContainers",
                    MakePod({Container(Requests("1")), Container(Requests("1"))},
                            {Container(Requests("1"))}),
                    2},
        // Init containers run one at a time: max(1, max(2, 3)) = 3, not 2+3.
        RequestCase{"InitContainersDoNotAdd",
                    MakePod({Container(Requests("1"))},
                            {Container(Requests("2")), Container(Requests("3"))}),
                    3},
        // A sidecar (restartPolicy Always) runs with the containers: 2 + 1 = 3.
        RequestCase{"SidecarAddsToContainers", MakePod({Container(Requests("2"))}, {Sidecar("1")}),
                    3},
        // Sidecar 1 starts, then plain init 3 runs beside it (4); then containers 2 + sidecar 1
        // (3): max(3, 4) = 4.
        RequestCase{"InitAfterSidecarRunsBesideIt",
                    MakePod({Container(Requests("2"))}, {Sidecar("1"), Container(Requests("3"))}),
                    4},
        // Plain init 3 runs first, alone; then sidecar 1 with containers 1: max(3, 1 + 1) = 3.
        RequestCase{"InitBeforeSidecarRunsAlone",
                    MakePod({Container(Requests("1"))}, {Container(Requests("3")), Sidecar("1")}),
                    3},
        RequestCase{"NullInitContainers",
                    WithSpecField(MakePod({Container(Requests("1"))}), "initContainers", nullptr),
                    1},
        RequestCase{
            "EmptyInitContainers",
            WithSpecField(MakePod({Container(Requests("1"))}), "initContainers", json::array()), 1},
        RequestCase{"NullContainers", WithSpecField(MakePod({}), "containers", nullptr), 0}),
    [](const ::testing::TestParamInfo<RequestCase>& p) { return p.param.label; });

struct BadQuantityCase {
  std::string label;
  json pod;
  std::vector<std::string> message_parts;
};

class BadGpuQuantityTest : public ::testing::TestWithParam<BadQuantityCase> {};

TEST_P(BadGpuQuantityTest, IsAnErrorNamingTheField) {
  const BadQuantityCase& c = GetParam();
  K8sDecoder decoder;
  Result<PodInfo> pod = decoder.DecodePod(c.pod.dump());
  ASSERT_FALSE(pod.ok()) << "decoded gpu_request " << pod->gpu_request;
  for (const std::string& part : c.message_parts) {
    EXPECT_THAT(pod.status().message(), HasSubstr(part));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Table, BadGpuQuantityTest,
    ::testing::Values(
        BadQuantityCase{"FractionalRequest",
                        MakePod({Container(Requests("1.5"))}),
                        {"spec.containers", "requests[nvidia.com/gpu]", "1.5"}},
        BadQuantityCase{"GarbageLimit",
                        MakePod({Container(Limits("lots"))}),
                        {"spec.containers", "limits[nvidia.com/gpu]"}},
        BadQuantityCase{"FractionalInitRequest",
                        MakePod({Container(Requests("1"))}, {Container(Requests("500m"))}),
                        {"spec.initContainers", "requests[nvidia.com/gpu]"}},
        // One quantity beyond kMaxQuantityUnits (9.2e15) is an error, not a wrapped number.
        BadQuantityCase{"Int64MaxString",
                        MakePod({Container(Requests("9223372036854775807"))}),
                        {"requests[nvidia.com/gpu]", "9223372036854775807", "too large"}},
        BadQuantityCase{"ExponentString",
                        MakePod({Container(Requests("1e30"))}),
                        {"requests[nvidia.com/gpu]", "1e30", "too large"}},
        BadQuantityCase{"HugeBinarySuffixString",
                        MakePod({Container(Limits("99999999999999999999Ei"))}),
                        {"limits[nvidia.com/gpu]", "99999999999999999999Ei", "too large"}},
        BadQuantityCase{"OnePastTheLimitString",
                        MakePod({Container(Requests("9200000000000001"))}),
                        {"requests[nvidia.com/gpu]", "too large"}},
        // The same limits hold for a quantity written as a JSON number.
        BadQuantityCase{"Int64MaxJsonNumber",
                        MakePod({Container(Requests(INT64_MAX))}),
                        {"requests[nvidia.com/gpu]", "9223372036854775807", "too large"}},
        BadQuantityCase{"OnePastTheLimitJsonNumber",
                        MakePod({Container(Requests(int64_t{9'200'000'000'000'001}))}),
                        {"requests[nvidia.com/gpu]", "too large"}},
        BadQuantityCase{"Uint64MaxJsonNumber",
                        MakePod({Container(Requests(UINT64_MAX))}),
                        {"requests[nvidia.com/gpu]", "18446744073709551615", "whole number"}},
        BadQuantityCase{"ExponentJsonNumber",
                        MakePod({Container(Requests(1e30))}),
                        {"requests[nvidia.com/gpu]", "whole number"}},
        BadQuantityCase{"FractionalJsonNumber",
                        MakePod({Container(Requests(1.5))}),
                        {"requests[nvidia.com/gpu]", "1.5", "whole number"}},
        BadQuantityCase{"BooleanQuantity", MakePod({Container(Requests(true))}), {}},
        BadQuantityCase{"ContainersNotArray",
                        json{{"metadata", {{"name", "p"}}}, {"spec", {{"containers", "x"}}}},
                        {}}),
    [](const ::testing::TestParamInfo<BadQuantityCase>& p) { return p.param.label; });

// ---------------------------------------------------------------------------------------------
// Hand-made pods: sums too large for int64_t saturate, and RequirementsOf rejects them.

constexpr char kLargestQuantity[] = "9200000000000000";  // kMaxQuantityUnits

std::vector<json> Containers(size_t count, const json& one) {
  return std::vector<json>(count, one);
}

// RequirementsOf(pod) fails, saying the request is out of range.
void ExpectRejectedAsOutOfRange(const PodInfo& pod) {
  Result<policies::PodRequirements> req = policies::RequirementsOf(pod);
  ASSERT_FALSE(req.ok()) << "accepted with " << req->gpus << " GPUs";
  EXPECT_EQ(req.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(req.status().message(), HasSubstr("nvidia.com/gpu request"));
  EXPECT_THAT(req.status().message(), HasSubstr("out of range"));
}

TEST(K8sDecodeOverflowTest, SumThatWouldWrapToZeroSaturates) {
  // 2005 * 9.2e15 + 744073709551616 = 2^64 exactly: a wrapping sum is 0 and the pod would be
  // scheduled as needing no GPU.
  std::vector<json> containers = Containers(2005, Container(Requests(kLargestQuantity)));
  containers.push_back(Container(Requests("744073709551616")));
  K8sDecoder decoder;
  Result<PodInfo> pod = decoder.DecodePod(MakePod(std::move(containers)).dump());
  ASSERT_TRUE(pod.ok()) << pod.status().ToString();
  EXPECT_EQ(pod->gpu_request, kGpuRequestOverflow);
  ExpectRejectedAsOutOfRange(*pod);
  EXPECT_THAT(policies::RequirementsOf(*pod).status().message(), HasSubstr("add up to more"));
}

TEST(K8sDecodeOverflowTest, SumJustPastInt64Saturates) {
  // 1003 * 9.2e15 = 9.2276e18 > INT64_MAX = 9.2234e18.
  K8sDecoder decoder;
  Result<PodInfo> pod =
      decoder.DecodePod(MakePod(Containers(1003, Container(Requests(kLargestQuantity)))).dump());
  ASSERT_TRUE(pod.ok()) << pod.status().ToString();
  EXPECT_EQ(pod->gpu_request, kGpuRequestOverflow);
  ExpectRejectedAsOutOfRange(*pod);
}

TEST(K8sDecodeOverflowTest, LargestSumThatFitsIsExact) {
  // 1002 * 9.2e15 = 9.2184e18 still fits: no saturation, and still rejected as absurd.
  K8sDecoder decoder;
  Result<PodInfo> pod =
      decoder.DecodePod(MakePod(Containers(1002, Container(Requests(kLargestQuantity)))).dump());
  ASSERT_TRUE(pod.ok()) << pod.status().ToString();
  EXPECT_EQ(pod->gpu_request, int64_t{1002} * 9'200'000'000'000'000);
  ExpectRejectedAsOutOfRange(*pod);
}

TEST(K8sDecodeOverflowTest, SidecarSumSaturates) {
  K8sDecoder decoder;
  Result<PodInfo> pod = decoder.DecodePod(
      MakePod({Container(Requests("1"))}, Containers(1003, Sidecar(kLargestQuantity))).dump());
  ASSERT_TRUE(pod.ok()) << pod.status().ToString();
  EXPECT_EQ(pod->gpu_request, kGpuRequestOverflow);
  ExpectRejectedAsOutOfRange(*pod);
}

TEST(K8sDecodeOverflowTest, ContainersPlusSidecarsSaturate) {
  // Each part fits (1002 * 9.2e15 and 9.2e15); containers + sidecars does not.
  K8sDecoder decoder;
  Result<PodInfo> pod = decoder.DecodePod(
      MakePod(Containers(1002, Container(Requests(kLargestQuantity))), {Sidecar(kLargestQuantity)})
          .dump());
  ASSERT_TRUE(pod.ok()) << pod.status().ToString();
  EXPECT_EQ(pod->gpu_request, kGpuRequestOverflow);
  ExpectRejectedAsOutOfRange(*pod);
}

TEST(K8sDecodeOverflowTest, PlainInitBesideSidecarsSaturates) {
  // 1002 sidecars fit; the plain init container after them runs beside them: one too many.
  std::vector<json> init = Containers(1002, Sidecar(kLargestQuantity));
  init.push_back(Container(Requests(kLargestQuantity)));
  K8sDecoder decoder;
  Result<PodInfo> pod = decoder.DecodePod(MakePod({Container(Requests("1"))}, init).dump());
  ASSERT_TRUE(pod.ok()) << pod.status().ToString();
  EXPECT_EQ(pod->gpu_request, kGpuRequestOverflow);
  ExpectRejectedAsOutOfRange(*pod);
}

TEST(K8sDecodeOverflowTest, AbsurdSumThatFitsIsRejectedWithItsValue) {
  K8sDecoder decoder;
  Result<PodInfo> pod = decoder.DecodePod(
      MakePod({Container(Requests(kLargestQuantity)), Container(Limits(kLargestQuantity))}).dump());
  ASSERT_TRUE(pod.ok()) << pod.status().ToString();
  EXPECT_EQ(pod->gpu_request, 18'400'000'000'000'000);
  ExpectRejectedAsOutOfRange(*pod);
  EXPECT_THAT(policies::RequirementsOf(*pod).status().message(), HasSubstr("18400000000000000"));
}

// ---------------------------------------------------------------------------------------------
// Hand-made pods: metadata, spec and status.

TEST(K8sDecodePodTest, OwnerReferencesInOrderWithControllerFlag) {
  json pod = MakePod({Container(Requests("1"))});
  pod["metadata"]["ownerReferences"] = {
      {{"kind", "Job"}, {"name", "j1"}, {"uid", "u-j"}, {"controller", false}},
      {{"kind", "StatefulSet"}, {"name", "s1"}, {"uid", "u-s"}},
      {{"apiVersion", "apps/v1"},
       {"kind", "ReplicaSet"},
       {"name", "r1"},
       {"uid", "u-r"},
       {"controller", true},
       {"blockOwnerDeletion", true}}};
  K8sDecoder decoder;
  Result<PodInfo> got = decoder.DecodePod(pod.dump());
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_THAT(got->owners, ElementsAre(OwnerReference{"Job", "j1", "u-j", false},
                                       OwnerReference{"StatefulSet", "s1", "u-s", false},
                                       OwnerReference{"ReplicaSet", "r1", "u-r", true}));
}

TEST(K8sDecodePodTest, DeletionTimestampSetsDeletionRequested) {
  json pod = MakePod({Container(Requests("1"))});
  pod["metadata"]["deletionTimestamp"] = "2026-11-29T17:50:00Z";
  K8sDecoder decoder;
  Result<PodInfo> got = decoder.DecodePod(pod.dump());
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(got->deletion_requested);

  pod["metadata"]["deletionTimestamp"] = nullptr;
  got = decoder.DecodePod(pod.dump());
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_FALSE(got->deletion_requested);
}

// After preemption kube-scheduler sets status.nominatedNodeName on the preemptor; its retry's
// filter request carries it (captured: shared/k8s/preempt/cache_true/036-filter.high-8).
TEST(K8sDecodePodTest, NominatedNodeName) {
  const json request =
      json::parse(gputopo::testing::ReadFile(gputopo::testing::SharedDir() / "k8s" / "preempt" /
                                             "cache_true" / "036-filter.high-8.request.json"));
  K8sDecoder decoder;
  Result<PodInfo> got = decoder.DecodePod(request["Pod"].dump());
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->nominated_node, "gpu-node-1");
  EXPECT_EQ(got->node_name, "");

  json pod = MakePod({Container(Requests("1"))});
  got = decoder.DecodePod(pod.dump());
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->nominated_node, "");
  pod["status"]["nominatedNodeName"] = nullptr;
  got = decoder.DecodePod(pod.dump());
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->nominated_node, "");
}

TEST(K8sDecodePodTest, NodeName) {
  json pod = MakePod({Container(Requests("1"))});
  pod["spec"]["nodeName"] = "gpu-node-7";
  K8sDecoder decoder;
  Result<PodInfo> got = decoder.DecodePod(pod.dump());
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->node_name, "gpu-node-7");
}

// kube-scheduler's NodeResourcesFit request: containers summed, each init container with the
// sidecars started before it, the larger of the two, plus spec.overhead; a request missing where
// its limit is set reads the limit (what the API server defaults it to).
TEST(K8sDecodePodTest, CpuAndMemoryRequestsAreTheSchedulersEffectiveRequest) {
  json app = Container({{"requests", {{"cpu", "500m"}, {"memory", "1Gi"}}}});
  json limited = Container({{"limits", {{"cpu", "2"}, {"memory", "512Mi"}}}});
  json init = Container({{"requests", {{"cpu", "4"}, {"memory", "100M"}}}});
  json pod = MakePod({app, limited}, {init});
  pod["spec"]["overhead"] = {{"cpu", "250m"}, {"memory", "64Mi"}};
  K8sDecoder decoder;
  Result<PodInfo> got = decoder.DecodePod(pod.dump());
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  // max(0.5 + 2, 4) + 0.25 cores; max(1Gi + 512Mi, 100M) + 64Mi.
  EXPECT_EQ(got->cpu_request_milli, 4250);
  EXPECT_EQ(got->memory_request_bytes, (int64_t{1} << 30) + (int64_t{512} << 20) + (64 << 20));
  EXPECT_EQ(got->gpu_request, 0);
  // Sub-byte memory rounds up to a whole byte.
  json tiny = MakePod({Container({{"requests", {{"memory", "1500m"}}}})});
  got = decoder.DecodePod(tiny.dump());
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->memory_request_bytes, 2);
}

TEST(K8sDecodePodTest, BadCpuOrMemoryQuantityNamesTheField) {
  for (const char* resource : {"cpu", "memory"}) {
    SCOPED_TRACE(resource);
    json pod = MakePod({Container({{"requests", {{resource, "lots"}}}})});
    K8sDecoder decoder;
    Result<PodInfo> got = decoder.DecodePod(pod.dump());
    ASSERT_FALSE(got.ok());
    EXPECT_THAT(got.status().message(), HasSubstr(std::string("requests[") + resource + "]"));
    pod = MakePod({Container({{"requests", {{resource, "-1"}}}})});
    EXPECT_FALSE(decoder.DecodePod(pod.dump()).ok());
    pod = MakePod({Container(Requests("1"))});
    pod["spec"]["overhead"] = {{resource, "1e400"}};
    got = decoder.DecodePod(pod.dump());
    ASSERT_FALSE(got.ok());
    EXPECT_THAT(got.status().message(), HasSubstr("spec.overhead"));
  }
}

TEST(K8sDecodePodTest, ManyHugeCpuRequestsSaturateInsteadOfWrapping) {
  std::vector<json> containers;
  for (int i = 0; i < 4; ++i) {
    containers.push_back(Container({{"requests", {{"cpu", "9000000000000000"}}}}));
  }
  K8sDecoder decoder;
  Result<PodInfo> got = decoder.DecodePod(MakePod(containers).dump());
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->cpu_request_milli, kGpuRequestOverflow);
  EXPECT_FALSE(policies::RequirementsOf(*got).ok());
}

TEST(K8sDecodePodTest, MissingNamespaceIsDefault) {
  json pod = MakePod({Container(Requests("1"))});
  pod["metadata"].erase("namespace");
  K8sDecoder decoder;
  Result<PodInfo> got = decoder.DecodePod(pod.dump());
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->namespace_name, "default");
}

struct PhaseCase {
  json phase;
  PodPhase expected;
  bool terminal;
};

class PodPhaseTest : public ::testing::TestWithParam<PhaseCase> {};

TEST_P(PodPhaseTest, Decodes) {
  const PhaseCase& c = GetParam();
  json pod = MakePod({Container(Requests("1"))});
  pod["status"]["phase"] = c.phase;
  K8sDecoder decoder;
  Result<PodInfo> got = decoder.DecodePod(pod.dump());
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->phase, c.expected) << c.phase.dump();
  EXPECT_EQ(got->IsTerminal(), c.terminal) << c.phase.dump();
}

INSTANTIATE_TEST_SUITE_P(Table, PodPhaseTest,
                         ::testing::Values(PhaseCase{"Pending", PodPhase::kPending, false},
                                           PhaseCase{"Running", PodPhase::kRunning, false},
                                           PhaseCase{"Succeeded", PodPhase::kSucceeded, true},
                                           PhaseCase{"Failed", PodPhase::kFailed, true},
                                           PhaseCase{"Unknown", PodPhase::kUnknown, false},
                                           PhaseCase{"", PodPhase::kPending, false},
                                           PhaseCase{nullptr, PodPhase::kPending, false}));

TEST(K8sDecodePodTest, NullStatusIsPending) {
  json pod = MakePod({Container(Requests("1"))});
  pod["status"] = nullptr;
  K8sDecoder decoder;
  Result<PodInfo> got = decoder.DecodePod(pod.dump());
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->phase, PodPhase::kPending);
}

TEST(K8sDecodePodTest, MissingNameIsAnError) {
  json pod = MakePod({Container(Requests("1"))});
  pod["metadata"].erase("name");
  K8sDecoder decoder;
  Result<PodInfo> got = decoder.DecodePod(pod.dump());
  ASSERT_FALSE(got.ok());
  EXPECT_THAT(got.status().message(), HasSubstr("metadata.name"));
}

TEST(K8sDecodePodTest, MissingMetadataIsAnError) {
  K8sDecoder decoder;
  EXPECT_FALSE(decoder.DecodePod(R"({"spec":{"containers":[]}})").ok());
}

class MalformedPodTest : public ::testing::TestWithParam<std::string> {};

TEST_P(MalformedPodTest, IsAnErrorNotACrash) {
  K8sDecoder decoder;
  Result<PodInfo> got = decoder.DecodePod(GetParam());
  EXPECT_FALSE(got.ok()) << "decoded pod " << got->name;
  EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(
    Table, MalformedPodTest,
    ::testing::Values("",                                                   // empty
                      "   ",                                                // whitespace
                      "{",                                                  // truncated
                      R"({"metadata":{"name":"p")",                         // truncated
                      R"({"metadata":{"name":"p"}} x)",                     // trailing garbage
                      R"({"metadata":{"name":"p"}}{})",                     // two objects
                      R"({"metadata":{"name":"p"}},)",                      //
                      "[]",                                                 // not an object
                      R"([{"metadata":{"name":"p"}}])",                     // an array of pods
                      "null", "42", "\"pod\"", "true",                      // scalars
                      R"({"metadata":[]})",                                 // metadata array
                      R"({"metadata":{"name":7}})",                         // name not a string
                      R"({"metadata":{"name":null}})",                      //
                      R"({"metadata":{"name":"p"},"spec":[]})",             // spec array
                      R"({"metadata":{"name":"p","ownerReferences":{}}})",  // owners object
                      R"({"metadata":{"name":"p","labels":[]}})",           // labels array
                      R"({"metadata":{"name":"p"},"spec":{"containers":[1]}})",  // container number
                      R"({"metadata":{"name":"p"},"spec":{"containers":[{"resources":[]}]}})",
                      R"({"metadata":{"name":"p"}"spec":{}})",               // missing comma
                      std::string("{\"metadata\":{\"name\":\"p\0\"}}", 26),  // NUL in string
                      std::string("\xff\xfe\x00\x01", 4)));                  // binary junk

TEST(K8sDecodePodTest, TrailingWhitespaceIsFine) {
  K8sDecoder decoder;
  Result<PodInfo> got = decoder.DecodePod("{\"metadata\":{\"name\":\"p\"}} \n\t ");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->name, "p");
}

// Every proper prefix of a real Pod is incomplete JSON: an error, never a crash or a pod.
TEST(K8sDecodePodTest, EveryTruncationIsAnError) {
  const std::string full = CapturedPod("cache_true", "004-filter.trainer-a.request.json");
  ASSERT_FALSE(full.empty());
  K8sDecoder decoder;
  for (size_t len = 0; len < full.size(); ++len) {
    Result<PodInfo> got = decoder.DecodePod(std::string_view(full).substr(0, len));
    EXPECT_FALSE(got.ok()) << "prefix of " << len << " bytes decoded as a pod";
    if (got.ok()) break;
  }
  EXPECT_TRUE(decoder.DecodePod(full).ok());
}

TEST(K8sDecodePodTest, DecoderIsReusable) {
  K8sDecoder decoder;
  ASSERT_TRUE(
      decoder.DecodePod(CapturedPod("cache_true", "006-filter.gpu-two-a.request.json")).ok());
  ASSERT_FALSE(decoder.DecodePod("{broken").ok());
  Result<PodInfo> got =
      decoder.DecodePod(CapturedPod("cache_true", "004-filter.trainer-a.request.json"));
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->name, "trainer-a");
  EXPECT_EQ(got->gpu_request, 1);
  EXPECT_EQ(got->owners.size(), 1u);
}

// ---------------------------------------------------------------------------------------------
// Nodes.

TEST(K8sDecodeNodeTest, CapturedNode) {
  K8sDecoder decoder;
  Result<NodeInfo> node = decoder.DecodeNode(CapturedNode().dump());
  ASSERT_TRUE(node.ok()) << node.status().ToString();
  EXPECT_EQ(node->name, "gpu-node-2");
  EXPECT_EQ(node->resource_version, "203");
  EXPECT_EQ(node->allocatable_gpus, 8);
  EXPECT_EQ(node->label_gpu_product, std::optional<std::string>("FAKE-H100"));
  EXPECT_EQ(node->label_gpu_count, std::nullopt);
  EXPECT_EQ(node->label_gpu_replicas, std::nullopt);
  EXPECT_EQ(node->label_gpu_memory, std::nullopt);
  EXPECT_EQ(node->label_topology_profile, std::nullopt);
  EXPECT_FALSE(node->annotation_topology.has_value());
}

TEST(K8sDecodeNodeTest, EveryCapturedNodeHasEightGpus) {
  const json body = ReadCapture("cache_false", "013-filter.trainer-b.request.json");
  ASSERT_TRUE(body.is_object());
  K8sDecoder decoder;
  std::vector<std::string> names;
  for (const json& item : body["Nodes"]["items"]) {
    Result<NodeInfo> node = decoder.DecodeNode(item.dump());
    ASSERT_TRUE(node.ok()) << node.status().ToString();
    EXPECT_EQ(node->allocatable_gpus, 8) << node->name;
    names.push_back(node->name);
  }
  EXPECT_THAT(names, ElementsAre("gpu-node-2", "gpu-node-3", "gpu-node-1"));
}

TEST(K8sDecodeNodeTest, GpuLabelsAreCaptured) {
  json node = CapturedNode();
  node["metadata"]["labels"]["gputopo.io/topology-profile"] = "hgx-h100";
  node["metadata"]["labels"]["nvidia.com/gpu.count"] = "8";
  node["metadata"]["labels"]["nvidia.com/gpu.replicas"] = "4";
  node["metadata"]["labels"]["nvidia.com/gpu.memory"] = "81559";
  node["metadata"]["labels"]["nvidia.com/gpu.family"] = "hopper";  // not one we keep
  K8sDecoder decoder;
  Result<NodeInfo> got = decoder.DecodeNode(node.dump());
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->label_topology_profile, std::optional<std::string>("hgx-h100"));
  EXPECT_EQ(got->label_gpu_count, std::optional<std::string>("8"));
  EXPECT_EQ(got->label_gpu_replicas, std::optional<std::string>("4"));
  EXPECT_EQ(got->label_gpu_memory, std::optional<std::string>("81559"));
  EXPECT_EQ(got->label_gpu_product, std::optional<std::string>("FAKE-H100"));
}

TEST(K8sDecodeNodeTest, ValidTopologyAnnotation) {
  MachineTopology machine(4);
  machine.SetLink(0, 1, Link{LinkType::kNvLink, 4});
  machine.SetLink(2, 3, Link{LinkType::kPix, 0});
  TopologyFormatOptions compact;
  compact.pretty = false;
  json node = CapturedNode();
  node["metadata"]["annotations"] = {
      {"example.com/other", "x"},
      {"gputopo.io/topology", FormatTopologyDocument(machine, compact)}};
  K8sDecoder decoder;
  Result<NodeInfo> got = decoder.DecodeNode(node.dump());
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_TRUE(got->annotation_topology.has_value());
  ASSERT_TRUE(got->annotation_topology->ok()) << got->annotation_topology->status().ToString();
  EXPECT_EQ((*got->annotation_topology)->gpu_count(), 4);
  EXPECT_EQ((*got->annotation_topology)->link(1, 0), (Link{LinkType::kNvLink, 4}));
  EXPECT_EQ(**got->annotation_topology, machine);
}

struct CorruptAnnotationCase {
  std::string label;
  json annotation;
};

class CorruptTopologyAnnotationTest : public ::testing::TestWithParam<CorruptAnnotationCase> {};

TEST_P(CorruptTopologyAnnotationTest, FailsTheAnnotationNotTheNode) {
  json node = CapturedNode();
  node["metadata"]["annotations"] = {{"gputopo.io/topology", GetParam().annotation}};
  K8sDecoder decoder;
  Result<NodeInfo> got = decoder.DecodeNode(node.dump());
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->name, "gpu-node-2");
  EXPECT_EQ(got->allocatable_gpus, 8);
  ASSERT_TRUE(got->annotation_topology.has_value());
  EXPECT_FALSE(got->annotation_topology->ok());
  EXPECT_FALSE(got->annotation_topology->status().message().empty());
}

INSTANTIATE_TEST_SUITE_P(
    Table, CorruptTopologyAnnotationTest,
    ::testing::Values(CorruptAnnotationCase{"NotJson", "{not json"},
                      CorruptAnnotationCase{"Empty", ""},
                      CorruptAnnotationCase{"NoGpus", R"({"version":1,"gpus":[]})"},
                      CorruptAnnotationCase{"DuplicateIndex",
                                            R"({"version":1,"gpus":[{"index":0},{"index":0}]})"},
                      CorruptAnnotationCase{"NullValue", nullptr},
                      CorruptAnnotationCase{"TooLarge",
                                            R"({"version":1,"gpus":[{"index":0}],"pad":")" +
                                                std::string(300 * 1024, 'x') + "\"}"}),
    [](const ::testing::TestParamInfo<CorruptAnnotationCase>& p) { return p.param.label; });

TEST(K8sDecodeNodeTest, AllocatableAsNumber) {
  json node = CapturedNode();
  node["status"]["allocatable"]["nvidia.com/gpu"] = 4;
  K8sDecoder decoder;
  Result<NodeInfo> got = decoder.DecodeNode(node.dump());
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->allocatable_gpus, 4);
}

TEST(K8sDecodeNodeTest, AllocatableCpuAndMemoryOfTheCapturedNode) {
  K8sDecoder decoder;
  Result<NodeInfo> got = decoder.DecodeNode(CapturedNode().dump());
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->allocatable_cpu_milli, 31000);                  // "31"
  EXPECT_EQ(got->allocatable_memory_bytes, int64_t{250} << 30);  // "250Gi"
  json node = CapturedNode();
  node["status"]["allocatable"].erase("cpu");
  node["status"]["allocatable"]["memory"] = "lots";
  got = decoder.DecodeNode(node.dump());
  ASSERT_FALSE(got.ok());
  EXPECT_THAT(got.status().message(), HasSubstr("allocatable[memory]"));
}

TEST(K8sDecodeNodeTest, NoGpuAllocatableIsZero) {
  json node = CapturedNode();
  node["status"]["allocatable"].erase("nvidia.com/gpu");
  K8sDecoder decoder;
  Result<NodeInfo> got = decoder.DecodeNode(node.dump());
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->allocatable_gpus, 0);
}

TEST(K8sDecodeNodeTest, BadAllocatableIsAnError) {
  json node = CapturedNode();
  node["status"]["allocatable"]["nvidia.com/gpu"] = "abc";
  K8sDecoder decoder;
  Result<NodeInfo> got = decoder.DecodeNode(node.dump());
  ASSERT_FALSE(got.ok());
  EXPECT_THAT(got.status().message(), HasSubstr("allocatable"));
}

TEST(K8sDecodeNodeTest, MissingNameIsAnError) {
  json node = CapturedNode();
  node["metadata"].erase("name");
  K8sDecoder decoder;
  Result<NodeInfo> got = decoder.DecodeNode(node.dump());
  ASSERT_FALSE(got.ok());
  EXPECT_THAT(got.status().message(), HasSubstr("metadata.name"));
}

class MalformedNodeTest : public ::testing::TestWithParam<std::string> {};

TEST_P(MalformedNodeTest, IsAnErrorNotACrash) {
  K8sDecoder decoder;
  Result<NodeInfo> got = decoder.DecodeNode(GetParam());
  EXPECT_FALSE(got.ok()) << "decoded node " << got->name;
}

INSTANTIATE_TEST_SUITE_P(Table, MalformedNodeTest,
                         ::testing::Values("", "{", "[]", R"([{"metadata":{"name":"n"}}])", "null",
                                           "7", R"({"metadata":{"name":"n"}} junk)",
                                           R"({"metadata":{"name":"n"},"status":[]})",
                                           R"({"metadata":{"name":"n","labels":[1]}})",
                                           R"({"metadata":{"name":"n"})", "\x01\x02\x03"));

TEST(K8sDecodeNodeTest, EveryTruncationIsAnError) {
  const std::string full = CapturedNode().dump();
  ASSERT_GT(full.size(), 100u);
  K8sDecoder decoder;
  for (size_t len = 0; len < full.size(); ++len) {
    Result<NodeInfo> got = decoder.DecodeNode(std::string_view(full).substr(0, len));
    EXPECT_FALSE(got.ok()) << "prefix of " << len << " bytes decoded as a node";
    if (got.ok()) break;
  }
  EXPECT_TRUE(decoder.DecodeNode(full).ok());
}

// A PodDisruptionBudget as the API server lists it (policy/v1, kind and apiVersion stripped
// from list items, status written by the disruption controller).
json BudgetObject() {
  return json::parse(R"({
    "metadata": {"name": "trainer", "namespace": "research", "uid": "4f6d2a1e-0000-4000-8000-1",
                 "resourceVersion": "812", "generation": 1},
    "spec": {"minAvailable": 2,
             "selector": {"matchLabels": {"app": "trainer"},
                          "matchExpressions": [
                            {"key": "tier", "operator": "NotIn", "values": ["cpu"]},
                            {"key": "canary", "operator": "DoesNotExist"}]}},
    "status": {"observedGeneration": 1, "disruptionsAllowed": 1, "currentHealthy": 3,
               "desiredHealthy": 2, "expectedPods": 3,
               "disruptedPods": {"trainer-b": "2026-12-03T10:00:00Z",
                                 "trainer-a": "2026-12-03T10:00:01Z"},
               "conditions": [{"type": "DisruptionAllowed", "status": "True"}]}})");
}

TEST(K8sDecodeDisruptionBudgetTest, ReadsSelectorStatusAndDisruptedPods) {
  K8sDecoder decoder;
  Result<DisruptionBudgetInfo> budget = decoder.DecodeDisruptionBudget(BudgetObject().dump());
  ASSERT_TRUE(budget.ok()) << budget.status().ToString();
  EXPECT_EQ(budget->Key(), "research/trainer");
  EXPECT_EQ(budget->uid, "4f6d2a1e-0000-4000-8000-1");
  EXPECT_EQ(budget->resource_version, "812");
  EXPECT_EQ(budget->disruptions_allowed, 1);
  EXPECT_THAT(budget->disrupted_pods, ElementsAre("trainer-a", "trainer-b"));
  ASSERT_TRUE(budget->selector.has_value()) << budget->selector_error;
  using Op = LabelRequirement::Operator;
  // Requirements are ANDed: their order (here nlohmann's sorted keys) does not matter.
  const std::vector<LabelRequirement> expected = {{"app", Op::kIn, {"trainer"}},
                                                  {"tier", Op::kNotIn, {"cpu"}},
                                                  {"canary", Op::kDoesNotExist, {}}};
  EXPECT_THAT(budget->selector->requirements, ::testing::UnorderedElementsAreArray(expected));
}

TEST(K8sDecodeDisruptionBudgetTest, SelectorKubeRejectsIsCarriedNotFatal) {
  K8sDecoder decoder;
  for (const json& expression :
       {json{{"key", "tier"}, {"operator", "Near"}, {"values", {"a"}}},
        json{{"key", "tier"}, {"operator", "In"}, {"values", json::array()}},
        json{{"key", "tier"}, {"operator", "Exists"}, {"values", {"a"}}}}) {
    json object = BudgetObject();
    object["spec"]["selector"]["matchExpressions"] = json::array({expression});
    Result<DisruptionBudgetInfo> budget = decoder.DecodeDisruptionBudget(object.dump());
    ASSERT_TRUE(budget.ok()) << budget.status().ToString();
    EXPECT_FALSE(budget->selector.has_value()) << expression.dump();
    EXPECT_FALSE(budget->selector_error.empty());
  }
  json null_selector = BudgetObject();
  null_selector["spec"].erase("selector");
  Result<DisruptionBudgetInfo> none = decoder.DecodeDisruptionBudget(null_selector.dump());
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->selector.has_value());
  EXPECT_TRUE(none->selector_error.empty());
}

TEST(K8sDecodeDisruptionBudgetTest, BrokenObjectsAreErrors) {
  K8sDecoder decoder;
  json no_uid = BudgetObject();
  no_uid["metadata"].erase("uid");
  EXPECT_FALSE(decoder.DecodeDisruptionBudget(no_uid.dump()).ok());
  json negative = BudgetObject();
  negative["status"]["disruptionsAllowed"] = -1;
  EXPECT_FALSE(decoder.DecodeDisruptionBudget(negative.dump()).ok());
  json huge = BudgetObject();
  huge["status"]["disruptionsAllowed"] = 1LL << 40;
  EXPECT_FALSE(decoder.DecodeDisruptionBudget(huge.dump()).ok());
  EXPECT_FALSE(decoder.DecodeDisruptionBudget("{\"metadata\": ").ok());
  EXPECT_FALSE(decoder.DecodeDisruptionBudget("[]").ok());
}

}  // namespace
}  // namespace gputopo::codec
