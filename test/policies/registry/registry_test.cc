// Tests of ComponentRegistry (name -> validated factory), BuildPreset and PresetCatalog.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "policies/engine/evaluation.h"
#include "policies/engine/placement_context.h"
#include "policies/registry/component_registry.h"
#include "policies/requirements/pod_requirements.h"
#include "test/support/builders.h"
#include "test/support/test_cluster.h"

namespace gputopo::policies {
namespace {

using namespace gputopo::testing;  // NOLINT(google-build-using-namespace)
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

// A component that scores a constant, for registering under new names.
class FixedComponent final : public ScoreComponent {
 public:
  explicit FixedComponent(double score) : score_(score) {}
  std::string_view Name() const override { return "fixed"; }
  PreparedScorePtr PrepareIn(const PlacementContext& ctx,
                             std::pmr::memory_resource& memory) const override {
    return MakeSimplePreparedScore(
        ctx, memory, [score = score_](const PlacementContext&, GpuMask) { return score; },
        [](const PlacementContext&, GpuMask) { return std::string("fixed"); });
  }

 private:
  double score_;
};

ComponentArgs Numbers(std::map<std::string, double> numbers) {
  ComponentArgs args;
  args.numbers = std::move(numbers);
  return args;
}

ComponentArgs Workload(std::vector<WorkloadClass> workload) {
  ComponentArgs args;
  args.workload = std::move(workload);
  return args;
}

// ---------------------------------------------------------------------------------------------
// Built-in components

TEST(RegistryTest, BuiltinComponentsAreExactlyTheFive) {
  ComponentRegistry registry = BuiltinComponents();
  EXPECT_THAT(registry.Names(), UnorderedElementsAre("replica-spread", "locality", "fragmentation",
                                                     "slot-balance", "packing"));
  for (const std::string& name : registry.Names()) {
    SCOPED_TRACE(name);
    auto made = registry.Create(name, {});
    ASSERT_TRUE(made.ok()) << made.status().ToString();
    ASSERT_NE(*made, nullptr);
    EXPECT_EQ((*made)->Name(), name);
  }
}

TEST(RegistryTest, FragmentationLearnsItsWorkloadOnlyWhenAsked) {
  ComponentRegistry registry = BuiltinComponents();
  auto built_in = registry.Create("fragmentation", {});
  ASSERT_TRUE(built_in.ok());
  EXPECT_FALSE((*built_in)->ReadsHostResources());  // pinned, no CPU in the built-in mix
  ComponentArgs learn;
  learn.numbers = {{"learnedWorkload", 1}};
  auto learned = registry.Create("fragmentation", learn);
  ASSERT_TRUE(learned.ok()) << learned.status().ToString();
  EXPECT_TRUE((*learned)->ReadsHostResources());  // a learned mix may ask CPU
  learn.workload = {{1, 1000, 1}};
  EXPECT_FALSE(registry.Create("fragmentation", learn).ok());  // listed and learned
  ComponentArgs half;
  half.numbers = {{"learnedWorkload", 0.5}};
  EXPECT_FALSE(registry.Create("fragmentation", half).ok());
}

TEST(RegistryTest, PackingTakesItsTwoReferencesInRange) {
  ComponentRegistry registry = BuiltinComponents();
  ComponentArgs args;
  args.numbers = {{"cpuReferenceCores", 64}, {"gpuReference", 4}};
  EXPECT_TRUE(registry.Create("packing", args).ok());
  for (const auto& [key, value] : std::vector<std::pair<std::string, double>>{
           {"cpuReferenceCores", 0}, {"gpuReference", -1}, {"gpuReference", 1e9}, {"other", 1}}) {
    SCOPED_TRACE(key);
    ComponentArgs bad;
    bad.numbers = {{key, value}};
    EXPECT_FALSE(registry.Create("packing", bad).ok());
  }
}

TEST(RegistryTest, CreateUnknownNameIsNotFoundListingTheKnownNames) {
  ComponentRegistry registry = BuiltinComponents();
  auto made = registry.Create("binpack", {});
  ASSERT_FALSE(made.ok());
  EXPECT_EQ(made.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(made.status().message(), HasSubstr("binpack"));
  for (const char* known : {"replica-spread", "locality", "fragmentation", "slot-balance"}) {
    EXPECT_THAT(made.status().message(), HasSubstr(known));
  }
}

TEST(RegistryTest, ValidArgumentsAreAccepted) {
  struct Case {
    std::string component;
    ComponentArgs args;
  };
  const std::vector<Case> cases = {
      {"replica-spread", Numbers({{"islandPenalty", 0.0}})},
      {"replica-spread", Numbers({{"islandPenalty", 1.0}})},
      {"locality", Numbers({{"unmetCap", 0.0}, {"unknownScore", 10.0}, {"numaWeight", 1.0}})},
      {"locality", Numbers({{"unmetCap", 10.0}, {"unknownScore", 0.0}, {"numaWeight", 0.0}})},
      {"fragmentation", Workload({{1, 1000, 1.0}})},
      {"fragmentation", Workload({{1, 1, 0.5}, {64, 1000, 3.0}, {4, 500, 1e-6}})},
      {"slot-balance", {}},
  };
  ComponentRegistry registry = BuiltinComponents();
  for (const Case& c : cases) {
    SCOPED_TRACE(c.component);
    auto made = registry.Create(c.component, c.args);
    ASSERT_TRUE(made.ok()) << made.status().ToString();
    EXPECT_EQ((*made)->Name(), c.component);
  }
}

TEST(RegistryTest, BadArgumentsAreErrorsNamingTheProblem) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  struct Case {
    std::string component;
    ComponentArgs args;
    std::vector<std::string> message;  // each must appear
  };
  const std::vector<Case> cases = {
      {"replica-spread",
       Numbers({{"islandPenality", 0.5}}),
       {"unknown argument", "islandPenality"}},
      {"replica-spread", Numbers({{"islandPenalty", 2.0}}), {"islandPenalty"}},
      {"replica-spread", Numbers({{"islandPenalty", -0.1}}), {"islandPenalty"}},
      {"replica-spread", Numbers({{"islandPenalty", nan}}), {"islandPenalty"}},
      {"replica-spread", Workload({{1, 1000, 1.0}}), {"workload"}},
      {"locality", Numbers({{"unmetCap", -1.0}}), {"unmetCap"}},
      {"locality", Numbers({{"unmetCap", 10.5}}), {"unmetCap"}},
      {"locality", Numbers({{"unknownScore", 11.0}}), {"unknownScore"}},
      {"locality", Numbers({{"numaWeight", 1.5}}), {"numaWeight"}},
      {"locality", Numbers({{"numaWeight", inf}}), {"numaWeight"}},
      {"locality", Numbers({{"islandPenalty", 0.5}}), {"unknown argument", "islandPenalty"}},
      {"locality", Workload({{1, 1000, 1.0}}), {"workload"}},
      {"fragmentation", Workload({{0, 1000, 1.0}}), {"gpus"}},
      {"fragmentation", Workload({{65, 1000, 1.0}}), {"gpus"}},
      {"fragmentation", Workload({{1, 2000, 1.0}}), {"milli"}},
      {"fragmentation", Workload({{1, 0, 1.0}}), {"milli"}},
      {"fragmentation", Workload({{1, 1000, 0.0}}), {"weight"}},
      {"fragmentation", Workload({{1, 1000, -1.0}}), {"weight"}},
      {"fragmentation", Workload({{1, 1000, nan}}), {"weight"}},
      {"fragmentation", Workload({{1, 1000, 1.0}, {2, 1000, 0.0}}), {"weight"}},
      {"fragmentation", Numbers({{"gpus", 2.0}}), {"unknown argument", "gpus"}},
      {"slot-balance", Numbers({{"weight", 1.0}}), {"unknown argument", "weight"}},
      {"slot-balance", Workload({{1, 1000, 1.0}}), {"workload"}},
  };
  ComponentRegistry registry = BuiltinComponents();
  for (const Case& c : cases) {
    SCOPED_TRACE(c.component + ": " + c.message.front());
    auto made = registry.Create(c.component, c.args);
    ASSERT_FALSE(made.ok());
    EXPECT_EQ(made.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(made.status().message(), HasSubstr(c.component));
    for (const std::string& part : c.message) {
      EXPECT_THAT(made.status().message(), HasSubstr(part));
    }
  }
}

TEST(RegistryTest, ArgumentsReachTheComponent) {
  // A "pairs" node (NVLink pairs 0-1, 2-3, ...) with a pod of group x on GPU 0. A second pod of x
  // offered GPU 1 shares GPU 0's island: score = 10 * (1 - islandPenalty).
  TestCluster cluster;
  cluster.Add(MakeNode().Name("n").Profile("pairs").Allocatable(8).Obj());
  cluster.Add(MakePod()
                  .Name("a")
                  .Gpus(1)
                  .Group("x")
                  .OnNode("n")
                  .Assigned("0")
                  .Phase(PodPhase::kRunning)
                  .Obj());
  auto req = RequirementsOf(MakePod().Name("b").Gpus(1).Group("x").Obj());
  ASSERT_TRUE(req.ok());
  auto node = cluster.Node("n");
  ASSERT_TRUE(node->has_topology());
  PlacementContext ctx = MakePlacementContext(*req, *node);

  ComponentRegistry registry = BuiltinComponents();
  for (double penalty : {0.0, 0.25, 1.0}) {
    SCOPED_TRACE(penalty);
    auto made = registry.Create("replica-spread", Numbers({{"islandPenalty", penalty}}));
    ASSERT_TRUE(made.ok());
    const auto scorer = (*made)->Prepare(ctx);
    EXPECT_DOUBLE_EQ(scorer->Score(topology::Bit(1)), 10.0 * (1.0 - penalty));
    EXPECT_DOUBLE_EQ(scorer->Score(topology::Bit(0)), 0.0);  // the group's own GPU
  }
}

// ---------------------------------------------------------------------------------------------
// Register

TEST(RegistryTest, RegisterOfATakenNameIsAlreadyExists) {
  ComponentRegistry registry = BuiltinComponents();
  Status s = registry.Register("locality", [](const ComponentArgs&) {
    return Result<std::shared_ptr<const ScoreComponent>>(
        std::shared_ptr<const ScoreComponent>(std::make_shared<FixedComponent>(1.0)));
  });
  EXPECT_EQ(s.code(), StatusCode::kAlreadyExists);
  EXPECT_THAT(s.message(), HasSubstr("locality"));
  // The original factory stays.
  auto made = registry.Create("locality", {});
  ASSERT_TRUE(made.ok());
  EXPECT_EQ((*made)->Name(), "locality");
}

TEST(RegistryTest, RegisteredFactoryIsCalledWithTheArguments) {
  ComponentRegistry registry;
  EXPECT_THAT(registry.Names(), ::testing::IsEmpty());
  ASSERT_TRUE(
      registry
          .Register("fixed",
                    [](const ComponentArgs& args) -> Result<std::shared_ptr<const ScoreComponent>> {
                      auto it = args.numbers.find("score");
                      if (it == args.numbers.end()) return InvalidArgument("needs score");
                      return std::shared_ptr<const ScoreComponent>(
                          std::make_shared<FixedComponent>(it->second));
                    })
          .ok());
  EXPECT_THAT(registry.Names(), ElementsAre("fixed"));

  auto made = registry.Create("fixed", Numbers({{"score", 7.0}}));
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  TestCluster cluster;
  cluster.Add(MakeNode().Name("n").Profile("pcie8").Allocatable(8).Obj());
  auto req = RequirementsOf(MakePod().Name("p").Gpus(1).Obj());
  ASSERT_TRUE(req.ok());
  PlacementContext ctx = MakePlacementContext(*req, *cluster.Node("n"));
  EXPECT_DOUBLE_EQ((*made)->Prepare(ctx)->Score(topology::Bit(0)), 7.0);

  // The factory's error comes back with the component named.
  auto bad = registry.Create("fixed", {});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("fixed"));
  EXPECT_THAT(bad.status().message(), HasSubstr("needs score"));
}

// A preset holds at most Preset::kMaxComponents components, whose scores an evaluation keeps
// inline: with that many, every score is kept, in order; with one more, the preset is an error.
TEST(PresetTest, AtMostMaxComponentsAndEvaluationsKeepEveryScore) {
  ComponentRegistry registry;
  PresetSpec spec;
  spec.name = "many";
  for (size_t i = 0; i <= Preset::kMaxComponents; ++i) {
    const std::string name = "fixed" + std::to_string(i);
    const double score = static_cast<double>(i);
    ASSERT_TRUE(
        registry
            .Register(
                name,
                [score](const ComponentArgs&) -> Result<std::shared_ptr<const ScoreComponent>> {
                  return std::shared_ptr<const ScoreComponent>(
                      std::make_shared<FixedComponent>(score));
                })
            .ok());
    spec.components.push_back({name, 1.0, {}});
  }
  auto too_many = BuildPreset(spec, registry);
  ASSERT_FALSE(too_many.ok());
  EXPECT_EQ(too_many.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(too_many.status().message(), HasSubstr("more than 8"));

  spec.components.pop_back();
  auto preset = BuildPreset(spec, registry);
  ASSERT_TRUE(preset.ok()) << preset.status().ToString();
  TestCluster cluster;
  cluster.Add(MakeNode().Name("n").Profile("pcie8").Allocatable(8).Obj());
  const NodeEvaluation e = EvaluateNode(*RequirementsOf(MakePod().Name("p").Gpus(1).Obj()),
                                        *cluster.Node("n"), **preset);
  ASSERT_TRUE(e.fits());
  EXPECT_THAT(e.component_scores, ElementsAre(0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0));
}

// ---------------------------------------------------------------------------------------------
// BuildPreset

PresetSpec ValidSpec() {
  PresetSpec spec;
  spec.name = "balanced";
  spec.description = "a bit of everything";
  spec.components = {{"locality", 3.0, Numbers({{"unmetCap", 4.0}})},
                     {"replica-spread", 4.0, Numbers({{"islandPenalty", 0.25}})},
                     {"slot-balance", 0.0, {}},
                     {"fragmentation", 2.5, {}}};
  return spec;
}

TEST(PresetTest, ValidPresetKeepsComponentsInOrderWithWeights) {
  auto preset = BuildPreset(ValidSpec(), BuiltinComponents());
  ASSERT_TRUE(preset.ok()) << preset.status().ToString();
  EXPECT_EQ((*preset)->name(), "balanced");
  EXPECT_EQ((*preset)->description(), "a bit of everything");
  const auto& components = (*preset)->components();
  ASSERT_EQ(components.size(), 4u);
  const std::vector<std::pair<std::string, double>> want = {
      {"locality", 3.0}, {"replica-spread", 4.0}, {"slot-balance", 0.0}, {"fragmentation", 2.5}};
  for (size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE(i);
    ASSERT_NE(components[i].component, nullptr);
    EXPECT_EQ(components[i].component->Name(), want[i].first);
    EXPECT_DOUBLE_EQ(components[i].weight, want[i].second);
  }
}

TEST(PresetTest, LargestWeightIsAccepted) {
  PresetSpec spec;
  spec.name = "heavy";
  spec.components = {{"slot-balance", 1000.0, {}}};
  auto preset = BuildPreset(spec, BuiltinComponents());
  EXPECT_TRUE(preset.ok()) << preset.status().ToString();
}

TEST(PresetTest, InvalidPresetsAreRejected) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  struct Case {
    std::string name;
    PresetSpec spec;
    StatusCode code;
    std::vector<std::string> message;
  };
  auto spec = [](std::string name, std::vector<ComponentSpec> components) {
    PresetSpec s;
    s.name = std::move(name);
    s.components = std::move(components);
    return s;
  };
  const std::vector<Case> cases = {
      {"empty name", spec("", {{"locality", 1.0, {}}}), StatusCode::kInvalidArgument, {"name"}},
      {"duplicate component",
       spec("p", {{"locality", 1.0, {}}, {"slot-balance", 1.0, {}}, {"locality", 2.0, {}}}),
       StatusCode::kInvalidArgument,
       {"preset p", "locality", "twice"}},
      {"negative weight",
       spec("p", {{"locality", 1.0, {}}, {"slot-balance", -1.0, {}}}),
       StatusCode::kInvalidArgument,
       {"preset p", "slot-balance", "weight"}},
      {"NaN weight",
       spec("p", {{"locality", nan, {}}}),
       StatusCode::kInvalidArgument,
       {"locality", "weight"}},
      {"infinite weight",
       spec("p", {{"locality", inf, {}}}),
       StatusCode::kInvalidArgument,
       {"locality", "weight"}},
      {"-inf weight",
       spec("p", {{"locality", -inf, {}}}),
       StatusCode::kInvalidArgument,
       {"locality", "weight"}},
      {"weight above 1000",
       spec("p", {{"locality", 1000.5, {}}}),
       StatusCode::kInvalidArgument,
       {"locality", "weight"}},
      {"all weights zero",
       spec("p", {{"locality", 0.0, {}}, {"slot-balance", 0.0, {}}}),
       StatusCode::kInvalidArgument,
       {"preset p", "positive weight"}},
      {"no components", spec("p", {}), StatusCode::kInvalidArgument, {"preset p"}},
      {"unknown component",
       spec("p", {{"locality", 1.0, {}}, {"binpack", 1.0, {}}}),
       StatusCode::kNotFound,
       {"preset p", "binpack"}},
      {"bad component argument",
       spec("p", {{"replica-spread", 1.0, Numbers({{"islandPenalty", 2.0}})}}),
       StatusCode::kInvalidArgument,
       {"preset p", "replica-spread", "islandPenalty"}},
  };
  ComponentRegistry registry = BuiltinComponents();
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto preset = BuildPreset(c.spec, registry);
    ASSERT_FALSE(preset.ok());
    EXPECT_EQ(preset.status().code(), c.code) << preset.status().ToString();
    for (const std::string& part : c.message) {
      EXPECT_THAT(preset.status().message(), HasSubstr(part));
    }
  }
}

// ---------------------------------------------------------------------------------------------
// PresetCatalog

std::shared_ptr<const Preset> MakePreset(const std::string& name, const std::string& description) {
  PresetSpec spec;
  spec.name = name;
  spec.description = description;
  spec.components = {{"slot-balance", 1.0, {}}};
  auto preset = BuildPreset(spec, BuiltinComponents());
  EXPECT_TRUE(preset.ok()) << preset.status().ToString();
  return *preset;
}

TEST(PresetCatalogTest, FindAndNames) {
  PresetCatalog catalog;
  EXPECT_EQ(catalog.Find("default"), nullptr);
  EXPECT_THAT(catalog.Names(), ::testing::IsEmpty());

  auto spread = MakePreset("spread", "");
  auto binpack = MakePreset("binpack", "");
  catalog.Add(spread);
  catalog.Add(binpack);
  EXPECT_EQ(catalog.Find("spread"), spread);
  EXPECT_EQ(catalog.Find("binpack"), binpack);
  EXPECT_EQ(catalog.Find("Spread"), nullptr);
  EXPECT_EQ(catalog.Find(""), nullptr);
  EXPECT_THAT(catalog.Names(), ElementsAre("binpack", "spread"));
}

TEST(PresetCatalogTest, AddingANameAgainReplacesThePreset) {
  PresetCatalog catalog;
  catalog.Add(MakePreset("default", "old"));
  auto replacement = MakePreset("default", "new");
  catalog.Add(replacement);
  EXPECT_EQ(catalog.Find("default"), replacement);
  EXPECT_EQ(catalog.Find("default")->description(), "new");
  EXPECT_THAT(catalog.Names(), ElementsAre("default"));
}

}  // namespace
}  // namespace gputopo::policies
