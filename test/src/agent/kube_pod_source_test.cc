#include "src/agent/kube_pod_source.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "src/agent/enforce_mode.h"

namespace gputopo::agent {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kResource[] = "nvidia.com/gpu";

TEST(DecodeBoundPodTest, ReadsWhatIdentificationNeeds) {
  const char* json = R"({
    "metadata": {"namespace": "ml", "name": "train-0", "uid": "u-1",
                 "creationTimestamp": "2024-05-01T12:34:56Z",
                 "annotations": {"gputopo.io/assigned-gpus": "GPU-a,GPU-b", "other": "x"}},
    "spec": {"schedulerName": "gputopo-scheduler", "nodeName": "n1",
             "containers": [
               {"name": "main", "resources": {"limits": {"nvidia.com/gpu": "2"}}},
               {"name": "sidecar", "resources": {}}],
             "initContainers": [
               {"name": "setup", "resources": {"requests": {"nvidia.com/gpu": 1},
                                               "limits": {"nvidia.com/gpu": 1}}}]},
    "status": {"phase": "Pending"}})";
  Result<std::optional<BoundPod>> pod = DecodeBoundPod(json, kResource);
  ASSERT_TRUE(pod.ok()) << pod.status().ToString();
  ASSERT_TRUE(pod->has_value());
  const BoundPod& p = **pod;
  EXPECT_EQ(p.Key(), "ml/train-0");
  EXPECT_EQ(p.uid, "u-1");
  EXPECT_EQ(p.scheduler_name, "gputopo-scheduler");
  EXPECT_EQ(p.assigned_gpus, "GPU-a,GPU-b");
  EXPECT_EQ(std::chrono::system_clock::to_time_t(p.created), 1714566896);
  EXPECT_THAT(p.containers,
              ElementsAre(BoundContainer{"setup", 1, true}, BoundContainer{"main", 2, false},
                          BoundContainer{"sidecar", 0, false}));
}

TEST(DecodeBoundPodTest, TimestampsWithFractionsAndOffsets) {
  auto created = [](const std::string& stamp) {
    Result<std::optional<BoundPod>> pod = DecodeBoundPod(
        R"({"metadata": {"namespace": "d", "name": "p", "creationTimestamp": ")" + stamp + R"("}})",
        kResource);
    EXPECT_TRUE(pod.ok() && pod->has_value()) << stamp;
    return pod.ok() && pod->has_value() ? std::chrono::system_clock::to_time_t((*pod)->created)
                                        : time_t{0};
  };
  EXPECT_EQ(created("2024-05-01T12:34:56.123456Z"), 1714566896);
  EXPECT_EQ(created("2024-05-01T14:34:56+02:00"), 1714566896);
}

TEST(DecodeBoundPodTest, FinishedAndDeletedPodsHoldNothing) {
  for (
      const char* json :
      {R"({"metadata": {"namespace": "d", "name": "p", "creationTimestamp": "2024-05-01T00:00:00Z"},
            "status": {"phase": "Succeeded"}})",
       R"({"metadata": {"namespace": "d", "name": "p", "creationTimestamp": "2024-05-01T00:00:00Z",
                         "deletionTimestamp": "2024-05-01T00:01:00Z"}})"}) {
    Result<std::optional<BoundPod>> pod = DecodeBoundPod(json, kResource);
    ASSERT_TRUE(pod.ok()) << pod.status().ToString();
    EXPECT_FALSE(pod->has_value());
  }
}

TEST(DecodeBoundPodTest, UnreadablePodsAreErrors) {
  struct Case {
    const char* json;
    const char* message;
  };
  const Case cases[] = {
      {"not json", "unreadable"},
      {"[]", "no metadata"},
      {R"({"metadata": {"name": "p"}})", "no name or namespace"},
      {R"({"metadata": {"namespace": "d", "name": "p", "creationTimestamp": "yesterday"}})",
       "unreadable creationTimestamp"},
      {R"({"metadata": {"namespace": "d", "name": "p", "creationTimestamp": "2024-05-01T00:00:00Z"},
           "spec": {"containers": [{"name": "c",
                    "resources": {"limits": {"nvidia.com/gpu": "500m"}}}]}})",
       "limits of nvidia.com/gpu is not a whole number"},
  };
  for (const Case& c : cases) {
    Result<std::optional<BoundPod>> pod = DecodeBoundPod(c.json, kResource);
    ASSERT_FALSE(pod.ok()) << c.json;
    EXPECT_THAT(pod.status().message(), HasSubstr(c.message)) << c.json;
  }
}

TEST(ResolveSharingTest, ReplicasConfigOrOne) {
  EnforceOptions options;
  Result<SharingConfig> one = ResolveSharing(options);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->replicas, 1);
  EXPECT_EQ(one->advertised_resource, kResource);
  options.replicas = 4;
  Result<SharingConfig> four = ResolveSharing(options);
  ASSERT_TRUE(four.ok());
  EXPECT_EQ(four->replicas, 4);
  options.time_slicing_config = "/nonexistent/config.yaml";
  Result<SharingConfig> both = ResolveSharing(options);
  ASSERT_FALSE(both.ok());
  EXPECT_THAT(both.status().message(), HasSubstr("exclusive"));
  options.replicas = 0;
  Result<SharingConfig> missing = ResolveSharing(options);
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("cannot read /nonexistent/config.yaml"));
  options.time_slicing_config.clear();
  options.replicas = 5000;
  EXPECT_FALSE(ResolveSharing(options).ok());
}

}  // namespace
}  // namespace gputopo::agent
