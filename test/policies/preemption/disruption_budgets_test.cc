// PodDisruptionBudget counting as kube-scheduler's default preemption does it.
#include "policies/preemption/disruption_budgets.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gputopo::policies {
namespace {

using Op = LabelRequirement::Operator;

LabelSelector MatchLabels(std::vector<std::pair<std::string, std::string>> labels) {
  LabelSelector s;
  for (auto& [k, v] : labels) s.requirements.push_back({k, Op::kIn, {v}});
  return s;
}

DisruptionBudgetInfo Budget(std::string ns, std::string name, std::optional<LabelSelector> selector,
                            int32_t allowed, std::vector<std::string> disrupted = {}) {
  DisruptionBudgetInfo b;
  b.namespace_name = std::move(ns);
  b.name = std::move(name);
  b.uid = "uid-" + b.name;
  b.selector = std::move(selector);
  b.disruptions_allowed = allowed;
  b.disrupted_pods = std::move(disrupted);
  return b;
}

const LabelSet kWeb = {{"app", "web"}, {"tier", "gpu"}};

TEST(SelectorMatchesTest, EveryOperator) {
  EXPECT_TRUE(SelectorMatches(MatchLabels({{"app", "web"}}), kWeb));
  EXPECT_FALSE(SelectorMatches(MatchLabels({{"app", "db"}}), kWeb));
  EXPECT_FALSE(SelectorMatches(MatchLabels({{"app", "web"}, {"zone", "a"}}), kWeb));
  EXPECT_TRUE(SelectorMatches({{{"tier", Op::kIn, {"cpu", "gpu"}}}}, kWeb));
  EXPECT_FALSE(SelectorMatches({{{"tier", Op::kNotIn, {"cpu", "gpu"}}}}, kWeb));
  EXPECT_TRUE(SelectorMatches({{{"zone", Op::kNotIn, {"a"}}}}, kWeb)) << "absent key: NotIn holds";
  EXPECT_TRUE(SelectorMatches({{{"app", Op::kExists, {}}}}, kWeb));
  EXPECT_FALSE(SelectorMatches({{{"zone", Op::kExists, {}}}}, kWeb));
  EXPECT_TRUE(SelectorMatches({{{"zone", Op::kDoesNotExist, {}}}}, kWeb));
  EXPECT_FALSE(SelectorMatches({{{"app", Op::kDoesNotExist, {}}}}, kWeb));
}

TEST(CountsAgainstTest, KubeSchedulersRules) {
  const auto web = Budget("ml", "web", MatchLabels({{"app", "web"}}), 1);
  EXPECT_TRUE(CountsAgainst(web, "ml", "web-0", kWeb));
  EXPECT_FALSE(CountsAgainst(web, "other", "web-0", kWeb)) << "another namespace";
  EXPECT_FALSE(CountsAgainst(web, "ml", "web-0", {})) << "a pod without labels matches no budget";
  // NotIn matches a pod without the key, but a pod with no labels at all is never counted.
  const auto not_in = Budget("ml", "n", LabelSelector{{{"zone", Op::kNotIn, {"a"}}}}, 0);
  EXPECT_TRUE(CountsAgainst(not_in, "ml", "web-0", kWeb));
  EXPECT_FALSE(CountsAgainst(not_in, "ml", "web-0", {}));
  EXPECT_FALSE(CountsAgainst(Budget("ml", "empty", LabelSelector{}, 0), "ml", "web-0", kWeb))
      << "an empty selector matches nothing for preemption";
  EXPECT_FALSE(CountsAgainst(Budget("ml", "null", std::nullopt, 0), "ml", "web-0", kWeb))
      << "a null or invalid selector matches nothing";
  const auto disrupted = Budget("ml", "web", MatchLabels({{"app", "web"}}), 0, {"web-0"});
  EXPECT_FALSE(CountsAgainst(disrupted, "ml", "web-0", kWeb))
      << "a pod in status.disruptedPods was already counted by the API server";
  EXPECT_TRUE(CountsAgainst(disrupted, "ml", "web-1", kWeb));
}

TEST(CountPdbViolationsTest, EachVictimTakesOneFromEveryBudgetThatCountsIt) {
  BudgetCoverage coverage;
  coverage.allowed = {1, 0};
  coverage.budgets = {"ml/web", "ml/strict"};
  coverage.budgets_of = {{"a", {0}}, {"b", {0}}, {"c", {0}}, {"d", {1}}, {"e", {0, 1}}};
  EXPECT_EQ(CountPdbViolations({}, coverage), 0);
  EXPECT_EQ(CountPdbViolations({"a"}, coverage), 0) << "within disruptionsAllowed";
  EXPECT_EQ(CountPdbViolations({"a", "b"}, coverage), 1);
  EXPECT_EQ(CountPdbViolations({"a", "b", "c"}, coverage), 2);
  EXPECT_EQ(CountPdbViolations({"d"}, coverage), 1) << "disruptionsAllowed 0";
  EXPECT_EQ(CountPdbViolations({"x", "y"}, coverage), 0) << "pods no budget counts";
  // "e" takes the last of ml/web and breaks ml/strict; "a" then breaks ml/web: one violation each.
  EXPECT_EQ(CountPdbViolations({"e", "a"}, coverage), 2);
}

}  // namespace
}  // namespace gputopo::policies
