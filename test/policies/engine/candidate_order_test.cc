// CandidateOrder: the weighted score for most pods; FGD's order (replicas apart, fragmentation
// step, fixed node order) for pods that take a share of one GPU under a preset that asks.
#include "policies/engine/candidate_order.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "policies/fragmentation/fragmentation.h"
#include "policies/registry/component_registry.h"

namespace gputopo::policies {
namespace {

// Components in the pack preset's order; index 0 replica-spread, 2 fragmentation.
PresetSpec PackSpec(int steps) {
  PresetSpec spec;
  spec.name = "pack-steps";
  spec.normalization = "rank";
  spec.sharing_pod_steps = steps;
  spec.components = {{"replica-spread", 3.0, {}},
                     {"locality", 3.0, {}},
                     {"fragmentation", 10.0, {}},
                     {"packing", 0.3, {}}};
  return spec;
}

std::shared_ptr<const Preset> Build(const PresetSpec& spec) {
  auto preset = BuildPreset(spec, BuiltinComponents());
  EXPECT_TRUE(preset.ok()) << preset.status().ToString();
  return preset.ok() ? *preset : nullptr;
}

PodRequirements SharePod(int milli) {
  PodRequirements pod;
  pod.gpus = 1;
  pod.gpu_milli = milli;
  return pod;
}

NodeEvaluation Fitting(double weighted, double spread, double fragmentation) {
  NodeEvaluation e;
  e.verdict = Verdict::kFits;
  e.weighted_score = weighted;
  for (double s : {spread, 10.0, fragmentation, 5.0}) e.component_scores.push_back(s);
  return e;
}

TEST(FragmentationStepTest, IsFgdsIntegerScoreOfTheIncrease) {
  // FGD scores a placement floor(100 * sigmoid(-d / 1000)), d the increase in milli-GPUs; our
  // component scores the same d as 10 / (1 + exp(d / 500)).
  for (double d : {-4000.0, -1234.0, -300.0, 0.0, 1.0, 250.0, 999.0, 2500.0, 7000.0}) {
    SCOPED_TRACE(d);
    const int fgd = static_cast<int>(std::floor(100.0 / (1.0 + std::exp(d / 1000.0))));
    EXPECT_EQ(FragmentationStep(FragmentationScore(d), 100), fgd);
  }
  EXPECT_EQ(FragmentationStep(10.0, 100), 100) << "no increase at all: the top step";
  EXPECT_EQ(FragmentationStep(5.0, 100), 50) << "d = 0";
  EXPECT_EQ(FragmentationStep(5.0, 7), 3);
  EXPECT_EQ(FragmentationStep(0.0, 100), 0);
  EXPECT_EQ(FragmentationStep(std::nan(""), 100), 0);
  EXPECT_EQ(FragmentationStep(10.5, 100), 100) << "clamped";
}

TEST(FixedNodeOrderTest, IsAStableHashSpreadOverTheUnitInterval) {
  EXPECT_EQ(FixedNodeOrder("node-17"), FixedNodeOrder(std::string("node-") + "17"));
  // Names that differ in their last digits must not keep their numeric order (plain FNV-1a's
  // high bits nearly do): the rank correlation with the number stays small, and no two of a
  // thousand names collide.
  const int n = 1000;
  std::vector<double> order;
  for (int i = 0; i < n; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "openb-node-%04d", i);
    const double at = FixedNodeOrder(name);
    ASSERT_GE(at, 0.0);
    ASSERT_LT(at, 1.0);
    order.push_back(at);
  }
  EXPECT_EQ(std::set<double>(order.begin(), order.end()).size(), static_cast<size_t>(n));
  std::vector<int> by_order(n);
  std::iota(by_order.begin(), by_order.end(), 0);
  std::sort(by_order.begin(), by_order.end(), [&](int a, int b) { return order[a] < order[b]; });
  double sum_d2 = 0.0;
  for (int rank = 0; rank < n; ++rank) {
    const double d = rank - by_order[static_cast<size_t>(rank)];
    sum_d2 += d * d;
  }
  const double spearman = 1.0 - 6.0 * sum_d2 / (static_cast<double>(n) * (n * n - 1.0));
  EXPECT_LT(std::abs(spearman), 0.1);
  // Its quarters are about equally full.
  std::vector<int> quarters(4);
  for (double at : order) ++quarters[static_cast<size_t>(at * 4)];
  for (int q : quarters) EXPECT_GT(q, n / 4 - 60);
}

TEST(MachineOrderTest, SmallerMachinesFirstThenTheFixedOrderExactlyAfterAnyStep) {
  const std::vector<std::string> names = {"a", "b", "node-1", "node-2", "openb-node-0042"};
  for (const std::string& x : names) {
    for (const std::string& y : names) {
      // Fewer GPUs first, whatever the names.
      EXPECT_GT(MachineOrder(2, x), MachineOrder(8, y)) << x << " " << y;
      EXPECT_GT(MachineOrder(0, x), MachineOrder(1, y)) << x << " " << y;
      EXPECT_GT(MachineOrder(63, x), MachineOrder(64, y)) << x << " " << y;
      // One size: the fixed order of names.
      EXPECT_EQ(MachineOrder(8, x) > MachineOrder(8, y), FixedNodeOrder(x) > FixedNodeOrder(y));
    }
  }
  EXPECT_EQ(MachineOrder(-3, "a"), MachineOrder(0, "a")) << "clamped";
  EXPECT_EQ(MachineOrder(99, "a"), MachineOrder(64, "a")) << "clamped";
  // In [0, 1) and exact beside the largest tier and step: nodes that differ only in their place
  // keep distinct inputs, and the step still decides first.
  const double top = 2.0 * kMaxSharingPodSteps + 1.0;
  std::set<double> inputs;
  for (int gpus : {0, 1, 8, 64}) {
    for (int i = 0; i < 200; ++i) {
      const std::string name = "n" + std::to_string(i);
      const double at = MachineOrder(gpus, name);
      ASSERT_GE(at, 0.0);
      ASSERT_LT(at, 1.0);
      EXPECT_EQ((top + at) - top, at) << gpus << " " << name;
      inputs.insert(top + at);
    }
  }
  EXPECT_EQ(inputs.size(), 800u);
}

TEST(CandidateOrderTest, ASharePodGoesByStepThenTheFixedOrderNotByWeightedScore) {
  const auto preset = Build(PackSpec(100));
  ASSERT_NE(preset, nullptr);
  const CandidateOrder order(*preset, SharePod(500));
  EXPECT_TRUE(order.by_name());
  EXPECT_NE(order.Describe().find("fragmentation step of 100"), std::string::npos);

  // A higher step wins, however the weighted scores stand.
  const NodeEvaluation low_step = Fitting(9.9, 10.0, FragmentationScore(900.0));    // step 28
  const NodeEvaluation high_step = Fitting(1.0, 10.0, FragmentationScore(-900.0));  // step 71
  EXPECT_GT(order.Input(EvaluationRef::To(high_step), "a"),
            order.Input(EvaluationRef::To(low_step), "b"));
  EXPECT_GT(order.Input(EvaluationRef::To(high_step), "b"),
            order.Input(EvaluationRef::To(low_step), "a"));

  // Within one step (an increase of 0 and of -1 milli), the fixed order of names decides, for any
  // weighted score, the same way for every pod.
  const NodeEvaluation x = Fitting(9.0, 10.0, FragmentationScore(0.0));
  const NodeEvaluation y = Fitting(2.0, 10.0, FragmentationScore(-1.0));
  ASSERT_EQ(FragmentationStep(x.component_scores[2], 100),
            FragmentationStep(y.component_scores[2], 100));
  const bool a_first = FixedNodeOrder("a") > FixedNodeOrder("b");
  EXPECT_EQ(order.Input(EvaluationRef::To(x), "a") > order.Input(EvaluationRef::To(y), "b"),
            a_first);
  EXPECT_EQ(order.Input(EvaluationRef::To(y), "a") > order.Input(EvaluationRef::To(x), "b"),
            a_first);
  const CandidateOrder other(*preset, SharePod(100));
  EXPECT_EQ(other.Input(EvaluationRef::To(x), "a") > other.Input(EvaluationRef::To(y), "b"),
            a_first);

  // Replicas apart first: a GPU that holds the pod's group (replica-spread 0) comes after
  // every GPU that does not, whatever its step.
  const NodeEvaluation shares_group = Fitting(9.0, 0.0, 10.0);
  const NodeEvaluation apart = Fitting(1.0, 9.0, FragmentationScore(6000.0));
  EXPECT_EQ(FragmentationStep(apart.component_scores[2], 100), 0);
  EXPECT_GT(order.Input(EvaluationRef::To(apart), "a"),
            order.Input(EvaluationRef::To(shares_group), "b"));
  EXPECT_GT(order.Input(EvaluationRef::To(apart), "b"),
            order.Input(EvaluationRef::To(shares_group), "a"));

  // Within one step a smaller machine comes first, whatever the names; then the fixed order.
  NodeEvaluation small = x;
  NodeEvaluation large = y;
  small.node_gpus = 2;
  large.node_gpus = 8;
  for (const auto& [p, q] : {std::pair{"a", "b"}, std::pair{"b", "a"}}) {
    EXPECT_GT(order.Input(EvaluationRef::To(small), p), order.Input(EvaluationRef::To(large), q));
  }
  // A higher step still wins over a smaller machine.
  NodeEvaluation small_low = low_step;
  small_low.node_gpus = 1;
  NodeEvaluation large_high = high_step;
  large_high.node_gpus = 8;
  EXPECT_GT(order.Input(EvaluationRef::To(large_high), "a"),
            order.Input(EvaluationRef::To(small_low), "b"));

  // Rank normalization then gives one node the top priority among equal evaluations.
  std::vector<std::optional<double>> inputs;
  for (const char* name : {"n0", "n1", "n2", "n3", "n4"}) {
    inputs.push_back(order.Input(EvaluationRef::To(x), name));
  }
  const std::vector<int> priorities = NormalizeScores(inputs, order.normalization());
  EXPECT_EQ(std::count(priorities.begin(), priorities.end(), 10), 1);
  EXPECT_EQ(std::set<int>(priorities.begin(), priorities.end()).size(), 5u);
}

TEST(CandidateOrderTest, OtherPodsAndPresetsKeepTheWeightedScore) {
  const auto steps = Build(PackSpec(100));
  const auto plain = Build(PackSpec(0));
  ASSERT_NE(steps, nullptr);
  ASSERT_NE(plain, nullptr);
  EXPECT_EQ(plain->sharing_pod_order().steps, 0);
  PodRequirements whole = SharePod(1000);
  PodRequirements undeclared = SharePod(500);
  undeclared.gpu_milli.reset();  // 1000 / replicas: a share only on some nodes
  PodRequirements exclusive = SharePod(500);
  exclusive.exclusive = true;
  PodRequirements two = SharePod(500);
  two.gpus = 2;
  PodRequirements none;
  NodeEvaluation e = Fitting(7.25, 10.0, 3.0);
  e.locality_missed = true;
  for (const auto& [preset, pod] :
       std::vector<std::pair<const Preset*, PodRequirements>>{{steps.get(), whole},
                                                              {steps.get(), undeclared},
                                                              {steps.get(), exclusive},
                                                              {steps.get(), two},
                                                              {steps.get(), none},
                                                              {plain.get(), SharePod(500)}}) {
    const CandidateOrder order(*preset, pod);
    EXPECT_FALSE(order.by_name());
    EXPECT_EQ(order.Describe(), "rank");
    EXPECT_EQ(order.Input(EvaluationRef::To(e), "a"),
              NormalizationInput(7.25, true, ScoreNormalization::kRank));
    EXPECT_EQ(order.Input(EvaluationRef::To(e), "a"), order.Input(EvaluationRef::To(e), "b"));
  }
}

TEST(CandidateOrderTest, BuildPresetChecksSharingPodSteps) {
  const auto preset = Build(PackSpec(100));
  ASSERT_NE(preset, nullptr);
  EXPECT_EQ(preset->sharing_pod_order().steps, 100);
  EXPECT_EQ(preset->sharing_pod_order().fragmentation, 2u);
  EXPECT_EQ(preset->sharing_pod_order().replica_spread, std::optional<size_t>(0));

  PresetSpec no_spread = PackSpec(10);
  no_spread.components.erase(no_spread.components.begin());
  const auto without = Build(no_spread);
  ASSERT_NE(without, nullptr);
  EXPECT_EQ(without->sharing_pod_order().fragmentation, 1u);
  EXPECT_FALSE(without->sharing_pod_order().replica_spread.has_value());

  struct Case {
    const char* name;
    PresetSpec spec;
    const char* message;
  };
  PresetSpec minmax = PackSpec(100);
  minmax.normalization = "minmax";
  PresetSpec no_fragmentation = PackSpec(100);
  no_fragmentation.components.erase(no_fragmentation.components.begin() + 2);
  for (const Case& c : std::vector<Case>{{"negative", PackSpec(-1), "0..10000"},
                                         {"too many", PackSpec(10001), "0..10000"},
                                         {"minmax", minmax, "rank normalization"},
                                         {"no fragmentation", no_fragmentation, "fragmentation"}}) {
    SCOPED_TRACE(c.name);
    auto built = BuildPreset(c.spec, BuiltinComponents());
    ASSERT_FALSE(built.ok());
    EXPECT_NE(built.status().message().find("sharingPodSteps"), std::string::npos)
        << built.status().ToString();
    EXPECT_NE(built.status().message().find(c.message), std::string::npos)
        << built.status().ToString();
  }
}

}  // namespace
}  // namespace gputopo::policies
