// Tests of RequirementsOf (annotations and request into PodRequirements) and DefaultGroupOf.
#include "policies/requirements/pod_requirements.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "test/support/builders.h"

namespace gputopo::policies {
namespace {

using namespace gputopo::testing;  // NOLINT(google-build-using-namespace)
using ::testing::HasSubstr;

PodRequirements MustParse(const PodInfo& pod) {
  Result<PodRequirements> req = RequirementsOf(pod);
  EXPECT_TRUE(req.ok()) << req.status().ToString();
  return req.ok() ? *req : PodRequirements{};
}

PodInfo WithAnnotation(const std::string& key, const std::string& value, int64_t gpus = 2) {
  return MakePod().Name("p").Gpus(gpus).Annotation(key, value).Obj();
}

// ---------------------------------------------------------------------------------------------
// Defaults

TEST(PodRequirementsTest, DefaultsDependOnTheGpuCount) {
  struct Case {
    int64_t gpus;
    Locality locality;
  };
  const std::vector<Case> cases = {
      {0, Locality::kNone}, {1, Locality::kNone}, {2, Locality::kNvLink}, {8, Locality::kNvLink}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.gpus);
    PodRequirements req = MustParse(MakePod().Name("p").Gpus(c.gpus).Obj());
    EXPECT_EQ(req.gpus, c.gpus);
    EXPECT_EQ(req.locality, c.locality);
    EXPECT_EQ(req.locality_mode, ConstraintMode::kPreferred);
    EXPECT_EQ(req.spread, SpreadMode::kPreferred);
    EXPECT_FALSE(req.exclusive);
    EXPECT_FALSE(req.gpu_milli.has_value());
    EXPECT_TRUE(req.policy.empty());
    EXPECT_EQ(req.group, "default/Pod/p");
    EXPECT_FALSE(req.group_source.empty());
  }
}

TEST(PodRequirementsTest, LargestSaneRequestIsAccepted) {
  EXPECT_EQ(MustParse(MakePod().Name("p").Gpus(kMaxGpuRequest).Obj()).gpus, 4096);
}

TEST(PodRequirementsTest, AbsurdGpuRequestsAreRejected) {
  for (int64_t gpus : {int64_t{-1}, int64_t{4097}, int64_t{1000000000}, INT64_MAX, INT64_MIN}) {
    SCOPED_TRACE(gpus);
    Result<PodRequirements> req = RequirementsOf(MakePod().Name("p").Gpus(gpus).Obj());
    ASSERT_FALSE(req.ok());
    EXPECT_EQ(req.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(req.status().message(), HasSubstr("nvidia.com/gpu"));
    EXPECT_THAT(req.status().message(), HasSubstr(std::to_string(gpus)));
    EXPECT_THAT(req.status().message(), HasSubstr("4096"));
  }
}

TEST(PodRequirementsTest, OverflowedRequestIsRejectedSayingTheSumOverflowed) {
  // The decoder saturates a sum that does not fit at kGpuRequestOverflow; it must not pass as a
  // small request, and the reason must not read as if the pod asked for exactly INT64_MAX.
  Result<PodRequirements> req = RequirementsOf(MakePod().Name("p").Gpus(kGpuRequestOverflow).Obj());
  ASSERT_FALSE(req.ok());
  EXPECT_EQ(req.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(req.status().message(), HasSubstr("nvidia.com/gpu request is out of range 0..4096"));
  EXPECT_THAT(req.status().message(), HasSubstr("add up to more than 9223372036854775807"));
}

TEST(PodRequirementsTest, RequestsJustAroundTheLimit) {
  EXPECT_TRUE(RequirementsOf(MakePod().Name("p").Gpus(kMaxGpuRequest - 1).Obj()).ok());
  EXPECT_FALSE(RequirementsOf(MakePod().Name("p").Gpus(kMaxGpuRequest + 1).Obj()).ok());
  EXPECT_FALSE(RequirementsOf(MakePod().Name("p").Gpus(kGpuRequestOverflow - 1).Obj()).ok());
}

// ---------------------------------------------------------------------------------------------
// Accepted values

TEST(PodRequirementsTest, SpreadValues) {
  struct Case {
    std::string value;
    SpreadMode want;
  };
  for (const Case& c : std::vector<Case>{{"required", SpreadMode::kRequired},
                                         {"preferred", SpreadMode::kPreferred},
                                         {"none", SpreadMode::kNone}}) {
    SCOPED_TRACE(c.value);
    EXPECT_EQ(MustParse(WithAnnotation("gputopo.io/spread", c.value)).spread, c.want);
    EXPECT_EQ(SpreadModeName(c.want), c.value);
  }
}

TEST(PodRequirementsTest, LocalityValuesOverrideTheDefaultWhateverTheCount) {
  struct Case {
    std::string value;
    int64_t gpus;
    Locality want;
  };
  const std::vector<Case> cases = {
      {"nvlink", 2, Locality::kNvLink}, {"numa", 2, Locality::kNuma}, {"none", 2, Locality::kNone},
      {"nvlink", 1, Locality::kNvLink}, {"numa", 1, Locality::kNuma}, {"none", 4, Locality::kNone},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.value + " x" + std::to_string(c.gpus));
    EXPECT_EQ(MustParse(WithAnnotation("gputopo.io/locality", c.value, c.gpus)).locality, c.want);
    EXPECT_EQ(LocalityName(c.want), c.value);
  }
}

TEST(PodRequirementsTest, LocalityModeValues) {
  EXPECT_EQ(MustParse(WithAnnotation("gputopo.io/locality-mode", "required")).locality_mode,
            ConstraintMode::kRequired);
  EXPECT_EQ(MustParse(WithAnnotation("gputopo.io/locality-mode", "preferred")).locality_mode,
            ConstraintMode::kPreferred);
  EXPECT_EQ(ConstraintModeName(ConstraintMode::kRequired), "required");
  EXPECT_EQ(ConstraintModeName(ConstraintMode::kPreferred), "preferred");
}

TEST(PodRequirementsTest, ExclusiveAcceptsGoParseBoolForms) {
  for (const char* yes : {"1", "t", "T", "TRUE", "true", "True"}) {
    SCOPED_TRACE(yes);
    EXPECT_TRUE(MustParse(WithAnnotation("gputopo.io/exclusive", yes)).exclusive);
  }
  for (const char* no : {"0", "f", "F", "FALSE", "false", "False"}) {
    SCOPED_TRACE(no);
    EXPECT_FALSE(MustParse(WithAnnotation("gputopo.io/exclusive", no)).exclusive);
  }
}

TEST(PodRequirementsTest, GpuMilliAcceptsOneToOneThousand) {
  for (int milli : {1, 250, 999, 1000}) {
    SCOPED_TRACE(milli);
    PodRequirements req = MustParse(WithAnnotation("gputopo.io/gpu-milli", std::to_string(milli)));
    ASSERT_TRUE(req.gpu_milli.has_value());
    EXPECT_EQ(*req.gpu_milli, milli);
  }
}

TEST(PodRequirementsTest, PolicyNamesAPreset) {
  EXPECT_EQ(MustParse(WithAnnotation("gputopo.io/policy", "binpack")).policy, "binpack");
}

TEST(PodRequirementsTest, UnrelatedAnnotationsAreIgnored) {
  PodInfo pod = MakePod().Name("p").Gpus(2).Annotation("gputopo.io/unknown", "x").Obj();
  PodRequirements req = MustParse(pod);
  EXPECT_EQ(req.locality, Locality::kNvLink);
  EXPECT_EQ(req.spread, SpreadMode::kPreferred);
}

TEST(PodRequirementsTest, AllAnnotationsTogether) {
  PodInfo pod = MakePod()
                    .Namespace("ml")
                    .Name("p")
                    .Gpus(4)
                    .Annotation("gputopo.io/spread", "none")
                    .Annotation("gputopo.io/locality", "numa")
                    .Annotation("gputopo.io/locality-mode", "required")
                    .Annotation("gputopo.io/exclusive", "true")
                    .Annotation("gputopo.io/gpu-milli", "500")
                    .Annotation("gputopo.io/policy", "spread")
                    .Group("team-a")
                    .Obj();
  PodRequirements want;
  want.gpus = 4;
  want.gpu_milli = 500;
  want.exclusive = true;
  want.locality = Locality::kNuma;
  want.locality_mode = ConstraintMode::kRequired;
  want.spread = SpreadMode::kNone;
  want.group = "ml/team-a";
  want.group_source = "annotation gputopo.io/group";
  want.policy = "spread";
  EXPECT_EQ(MustParse(pod), want);
}

// ---------------------------------------------------------------------------------------------
// Rejected values

TEST(PodRequirementsTest, InvalidAnnotationsAreRejectedNamingTheAnnotationAndTheAllowedValues) {
  struct Case {
    std::string key;
    std::string value;
    std::vector<std::string> allowed;  // each must appear in the message
  };
  const std::vector<Case> cases = {
      {"gputopo.io/spread", "maybe", {"required", "preferred", "none"}},
      {"gputopo.io/spread", "Required", {"required", "preferred", "none"}},
      {"gputopo.io/spread", "", {"required", "preferred", "none"}},
      {"gputopo.io/locality", "pcie", {"nvlink", "numa", "none"}},
      {"gputopo.io/locality", "NVLink", {"nvlink", "numa", "none"}},
      {"gputopo.io/locality-mode", "must", {"required", "preferred"}},
      {"gputopo.io/locality-mode", "none", {"required", "preferred"}},
      {"gputopo.io/exclusive", "yes", {"true", "false"}},
      {"gputopo.io/exclusive", "no", {"true", "false"}},
      {"gputopo.io/exclusive", "tRUE", {"true", "false"}},
      {"gputopo.io/exclusive", "", {"true", "false"}},
      {"gputopo.io/exclusive", " true", {"true", "false"}},
      {"gputopo.io/gpu-milli", "0", {"1..1000"}},
      {"gputopo.io/gpu-milli", "1001", {"1..1000"}},
      {"gputopo.io/gpu-milli", "abc", {"1..1000"}},
      {"gputopo.io/gpu-milli", "500m", {"1..1000"}},
      {"gputopo.io/gpu-milli", "-5", {"1..1000"}},
      {"gputopo.io/gpu-milli", "", {"1..1000"}},
      {"gputopo.io/gpu-milli", "0.5", {"1..1000"}},
      {"gputopo.io/gpu-milli", " 500", {"1..1000"}},
      {"gputopo.io/gpu-milli", "+500", {"1..1000"}},
      {"gputopo.io/gpu-milli", "99999999999", {"1..1000"}},
      {"gputopo.io/policy", "", {"preset"}},
      {"gputopo.io/group", "", {"1..253"}},
      {"gputopo.io/group", std::string(254, 'g'), {"1..253"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.key + "='" + c.value + "'");
    Result<PodRequirements> req = RequirementsOf(WithAnnotation(c.key, c.value));
    ASSERT_FALSE(req.ok());
    EXPECT_EQ(req.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(req.status().message(), HasSubstr(c.key + "='" + c.value + "'"));
    for (const std::string& allowed : c.allowed) {
      EXPECT_THAT(req.status().message(), HasSubstr(allowed));
    }
  }
}

TEST(PodRequirementsTest, LongestGroupNameIsAccepted) {
  EXPECT_EQ(MustParse(MakePod().Name("p").Gpus(1).Group(std::string(253, 'g')).Obj()).group,
            "default/" + std::string(253, 'g'));
}

// ---------------------------------------------------------------------------------------------
// Groups

TEST(PodRequirementsTest, DefaultGroupIsTheOwningWorkload) {
  struct Case {
    std::string name;
    PodInfo pod;
    std::string group;
  };
  PodInfo non_controller = MakePod().Namespace("ns").Name("p").Gpus(1).Obj();
  non_controller.owners.push_back({"Job", "nightly", "u1", false});
  non_controller.owners.push_back({"CronJob", "second", "u2", false});
  PodInfo controller_second = MakePod().Namespace("ns").Name("p").Gpus(1).Obj();
  controller_second.owners.push_back({"Job", "not-me", "u1", false});
  controller_second.owners.push_back({"StatefulSet", "me", "u2", true});
  PodInfo rs_no_hash = MakePod().Namespace("ns").Name("p").Gpus(1).Obj();
  rs_no_hash.owners.push_back({"ReplicaSet", "web-5d8f7c9b6d", "u1", true});
  PodInfo rs_is_hash = MakePod().Namespace("ns").Name("p").Gpus(1).Obj();
  rs_is_hash.pod_template_hash = "abc";
  rs_is_hash.owners.push_back({"ReplicaSet", "-abc", "u1", true});

  const std::vector<Case> cases = {
      {"deployment",
       MakePod().Namespace("ns").Name("web-x").Gpus(1).OwnedByDeployment("web", "5d8f7c9b6d").Obj(),
       "ns/Deployment/web"},
      {"deployment with dashes",
       MakePod().Namespace("ns").Name("p").Gpus(1).OwnedByDeployment("my-web-app", "7f").Obj(),
       "ns/Deployment/my-web-app"},
      // As captured from a real cluster: a bare ReplicaSet whose name lacks the hash suffix.
      {"replicaset without the hash suffix",
       [] {
         PodInfo p = MakePod().Namespace("research").Name("trainer-a").Gpus(1).Obj();
         p.pod_template_hash = "7d9f8c6b5d";
         p.owners.push_back({"ReplicaSet", "trainer", "db7b86ce", true});
         return p;
       }(),
       "research/ReplicaSet/trainer"},
      {"replicaset and no hash label", rs_no_hash, "ns/ReplicaSet/web-5d8f7c9b6d"},
      {"replicaset named just the suffix", rs_is_hash, "ns/ReplicaSet/-abc"},
      {"statefulset",
       MakePod().Namespace("ns").Name("db-0").Gpus(1).OwnedBy("StatefulSet", "db").Obj(),
       "ns/StatefulSet/db"},
      {"job", MakePod().Namespace("ns").Name("j-x").Gpus(1).OwnedBy("Job", "train").Obj(),
       "ns/Job/train"},
      {"no owner", MakePod().Namespace("ns").Name("solo").Gpus(1).Obj(), "ns/Pod/solo"},
      {"first owner when none is the controller", non_controller, "ns/Job/nightly"},
      {"the controller, wherever it is listed", controller_second, "ns/StatefulSet/me"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto [group, source] = DefaultGroupOf(c.pod);
    EXPECT_EQ(group, c.group);
    EXPECT_FALSE(source.empty());
    EXPECT_EQ(MustParse(c.pod).group, c.group);
  }
}

TEST(PodRequirementsTest, GroupAnnotationOverridesTheOwnerWithinTheNamespace) {
  PodInfo pod =
      MakePod().Namespace("ml").Name("p").Gpus(1).OwnedByDeployment("web").Group("x").Obj();
  PodRequirements req = MustParse(pod);
  EXPECT_EQ(req.group, "ml/x");
  EXPECT_THAT(req.group_source, HasSubstr("gputopo.io/group"));
  // DefaultGroupOf ignores the annotation.
  EXPECT_EQ(DefaultGroupOf(pod).first, "ml/Deployment/web");
}

TEST(PodRequirementsTest, GroupsInDifferentNamespacesDiffer) {
  auto group = [](const std::string& ns, bool annotated) {
    PodBuilder b = MakePod();
    b.Namespace(ns).Name("p").Gpus(1).OwnedByDeployment("web");
    if (annotated) b.Group("x");
    return MustParse(b.Obj()).group;
  };
  EXPECT_NE(group("a", false), group("b", false));
  EXPECT_NE(group("a", true), group("b", true));
  EXPECT_EQ(group("a", false), group("a", false));
  EXPECT_EQ(group("a", true), group("a", true));
}

// ---------------------------------------------------------------------------------------------
// ShareMilli

TEST(PodRequirementsTest, ShareMilli) {
  struct Case {
    std::string name;
    bool exclusive;
    std::optional<int> gpu_milli;
    int replicas;
    int want;
  };
  const std::vector<Case> cases = {
      {"exclusive takes the GPU", true, std::nullopt, 4, 1000},
      {"exclusive beats gpu-milli", true, 200, 4, 1000},
      {"declared share", false, 300, 4, 300},
      {"declared share ignores replicas", false, 300, 1, 300},
      {"1000/R, R=1", false, std::nullopt, 1, 1000},
      {"1000/R, R=2", false, std::nullopt, 2, 500},
      {"1000/R, R=3", false, std::nullopt, 3, 333},
      {"1000/R, R=8", false, std::nullopt, 8, 125},
      {"R=0 is taken as 1", false, std::nullopt, 0, 1000},
      {"R<0 is taken as 1", false, std::nullopt, -2, 1000},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    PodRequirements req;
    req.gpus = 1;
    req.exclusive = c.exclusive;
    req.gpu_milli = c.gpu_milli;
    EXPECT_EQ(req.ShareMilli(c.replicas), c.want);
  }
}

}  // namespace
}  // namespace gputopo::policies
