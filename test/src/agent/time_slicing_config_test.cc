#include "src/agent/time_slicing_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>

namespace gputopo::agent {
namespace {

using ::testing::HasSubstr;

constexpr char kResource[] = "nvidia.com/gpu";

TEST(TimeSlicingConfigTest, ReadsNvidiasExample) {
  // The example of NVIDIA's k8s-device-plugin README (flags are ignored).
  const char* yaml = R"(
version: v1
flags:
  migStrategy: none
sharing:
  timeSlicing:
    resources:
    - name: nvidia.com/gpu
      replicas: 10
)";
  Result<SharingConfig> config = ParseTimeSlicingConfig(yaml, kResource);
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->replicas, 10);
  EXPECT_EQ(config->advertised_resource, "nvidia.com/gpu");
  EXPECT_FALSE(config->fail_requests_greater_than_one);
}

TEST(TimeSlicingConfigTest, BareNameIsInNvidiasDomainAndOtherResourcesAreSkipped) {
  const char* yaml = R"(
version: v1
sharing:
  timeSlicing:
    failRequestsGreaterThanOne: true
    resources:
    - name: nvidia.com/mig-1g.5gb
      replicas: 2
    - name: gpu
      replicas: 4
)";
  Result<SharingConfig> config = ParseTimeSlicingConfig(yaml, kResource);
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->replicas, 4);
  EXPECT_TRUE(config->fail_requests_greater_than_one);
}

TEST(TimeSlicingConfigTest, RenameAndRenameByDefault) {
  Result<SharingConfig> by_default = ParseTimeSlicingConfig(R"(
version: v1
sharing:
  timeSlicing:
    renameByDefault: true
    resources:
    - name: nvidia.com/gpu
      replicas: 2
)",
                                                            kResource);
  ASSERT_TRUE(by_default.ok()) << by_default.status().ToString();
  EXPECT_EQ(by_default->advertised_resource, "nvidia.com/gpu.shared");
  Result<SharingConfig> renamed = ParseTimeSlicingConfig(R"(
version: v1
sharing:
  timeSlicing:
    renameByDefault: true
    resources:
    - name: nvidia.com/gpu
      rename: gpu-sliced
      replicas: 2
)",
                                                         kResource);
  ASSERT_TRUE(renamed.ok()) << renamed.status().ToString();
  EXPECT_EQ(renamed->advertised_resource, "nvidia.com/gpu-sliced");
}

TEST(TimeSlicingConfigTest, NoSharingMeansOneReplica) {
  for (const char* yaml : {"version: v1\n", "version: v1\nsharing: {}\n",
                           "version: v1\nsharing:\n  timeSlicing:\n    resources: []\n"}) {
    Result<SharingConfig> config = ParseTimeSlicingConfig(yaml, kResource);
    ASSERT_TRUE(config.ok()) << yaml << config.status().ToString();
    EXPECT_EQ(config->replicas, 1) << yaml;
  }
}

TEST(TimeSlicingConfigTest, CorruptConfigsAreClearErrors) {
  struct Case {
    const char* yaml;
    const char* message;
  };
  const Case cases[] = {
      {"version: v1\nsharing: [unclosed", "not YAML"},
      {"- a\n- b\n", "not a mapping"},
      {"sharing: {}\n", "no version"},
      {"version: v2\n", "unsupported version"},
      {"version: v1\nsharing: 3\n", "sharing is not a mapping"},
      {"version: v1\nsharing:\n  mps:\n    resources: []\n", "sharing.mps is not supported"},
      {"version: v1\nsharing:\n  timeSlicing:\n    resources: {}\n", "resources is not a list"},
      {"version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - replicas: 2\n",
       "resources[0].name is missing"},
      {"version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n",
       "resources[0].replicas is missing or not an integer"},
      {"version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n"
       "      replicas: four\n",
       "replicas is missing or not an integer"},
      {"version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n"
       "      replicas: 0\n",
       "replicas is 0, want 1..1024"},
      {"version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n"
       "      replicas: 2\n    - name: gpu\n      replicas: 3\n",
       "listed twice"},
      {"version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n"
       "      replicas: 2\n      devices: [0, 1]\n",
       "devices: only \"all\""},
      {"version: v1\nsharing:\n  timeSlicing:\n    renameByDefault: maybe\n",
       "renameByDefault is not a boolean"},
  };
  for (const Case& c : cases) {
    Result<SharingConfig> config = ParseTimeSlicingConfig(c.yaml, kResource);
    ASSERT_FALSE(config.ok()) << c.yaml;
    EXPECT_EQ(config.status().code(), StatusCode::kInvalidArgument) << c.yaml;
    EXPECT_THAT(config.status().message(), HasSubstr("time-slicing config: ")) << c.yaml;
    EXPECT_THAT(config.status().message(), HasSubstr(c.message)) << c.yaml;
  }
}

TEST(TimeSlicingConfigTest, LoadNamesTheFile) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("gputopo-ts-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string good = (dir / "good.yaml").string();
  const std::string bad = (dir / "bad.yaml").string();
  std::ofstream(good) << "version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
                         "    - name: nvidia.com/gpu\n      replicas: 3\n";
  std::ofstream(bad) << "version: v1\nsharing:\n  timeSlicing: [\n";
  Result<SharingConfig> loaded = LoadTimeSlicingConfig(good, kResource);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(loaded->replicas, 3);
  Result<SharingConfig> corrupt = LoadTimeSlicingConfig(bad, kResource);
  ASSERT_FALSE(corrupt.ok());
  EXPECT_THAT(corrupt.status().message(), HasSubstr(bad));
  EXPECT_THAT(corrupt.status().message(), HasSubstr("not YAML"));
  Result<SharingConfig> missing = LoadTimeSlicingConfig((dir / "none.yaml").string(), kResource);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  std::filesystem::remove_all(dir);
}

TEST(TimeSlicingConfigTest, TheShippedConfigMapReads) {
  // manifests/agent/enforce: the ConfigMap the enforce DaemonSet mounts (key "any").
  const YAML::Node config_map = YAML::LoadFile(std::string(GPUTOPO_SOURCE_DIR) +
                                               "/manifests/agent/enforce/time-slicing-config.yaml");
  Result<SharingConfig> config =
      ParseTimeSlicingConfig(config_map["data"]["any"].as<std::string>(), kResource);
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->replicas, 4);
  EXPECT_EQ(config->advertised_resource, kResource);
}

}  // namespace
}  // namespace gputopo::agent
