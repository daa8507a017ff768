// DisruptionBudgetIndex: budgets and GPU pods' labels, as preemption reads them.
#include "cluster/disruption_budget_index.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test/support/builders.h"

namespace gputopo::cluster {
namespace {

using testing::MakePod;

PodInfo Labelled(const std::string& ns, const std::string& name, LabelSet labels,
                 int64_t gpus = 1) {
  PodInfo pod = MakePod().Namespace(ns).Name(name).Gpus(gpus).OnNode("n").Obj();
  pod.labels = std::move(labels);
  return pod;
}

DisruptionBudgetInfo Budget(const std::string& ns, const std::string& name, const std::string& app,
                            int32_t allowed) {
  DisruptionBudgetInfo b;
  b.namespace_name = ns;
  b.name = name;
  b.uid = "uid-pdb-" + ns + "-" + name;
  b.selector = LabelSelector{{{"app", LabelRequirement::Operator::kIn, {app}}}};
  b.disruptions_allowed = allowed;
  return b;
}

TEST(DisruptionBudgetIndexTest, UnsyncedUntilBudgetsAreListed) {
  DisruptionBudgetIndex index;
  index.UpsertPod(Labelled("ml", "web-0", {{"app", "web"}}));
  index.UpsertBudget(Budget("ml", "web", "web", 0));
  EXPECT_FALSE(index.CoverageOf({"uid-web-0"}).has_value())
      << "a watch event before the first list does not make the budgets known";
  index.ReplaceBudgets({Budget("ml", "web", "web", 0)});
  auto coverage = index.CoverageOf({"uid-web-0"});
  ASSERT_TRUE(coverage.has_value());
  EXPECT_EQ(coverage->budgets, std::vector<std::string>{"ml/web"});
  EXPECT_EQ(coverage->allowed, std::vector<int32_t>{0});
  EXPECT_EQ(coverage->budgets_of.at("uid-web-0"), std::vector<int>{0});
}

TEST(DisruptionBudgetIndexTest, CoverageFollowsPodsAndBudgets) {
  DisruptionBudgetIndex index;
  index.ReplaceBudgets({Budget("ml", "web", "web", 2), Budget("ml", "db", "db", 0),
                        Budget("other", "web", "web", 0)});
  index.ReplacePods({Labelled("ml", "web-0", {{"app", "web"}}),
                     Labelled("ml", "db-0", {{"app", "db"}}),
                     Labelled("ml", "cpu-0", {{"app", "web"}}, 0), Labelled("ml", "bare", {})});
  auto coverage = index.CoverageOf({"uid-web-0", "uid-db-0", "uid-cpu-0", "uid-bare", "uid-x"});
  ASSERT_TRUE(coverage.has_value());
  // Only the budgets that count one of the pods, in namespace/name order.
  EXPECT_EQ(coverage->budgets, (std::vector<std::string>{"ml/db", "ml/web"}));
  EXPECT_EQ(coverage->allowed, (std::vector<int32_t>{0, 2}));
  EXPECT_EQ(coverage->budgets_of.size(), 2u)
      << "GPU-less, label-less and unknown pods count nowhere";
  EXPECT_EQ(coverage->budgets_of.at("uid-db-0"), std::vector<int>{0});
  EXPECT_EQ(coverage->budgets_of.at("uid-web-0"), std::vector<int>{1});

  // The budget's status moves on (a watch event); the pod goes; the budget goes.
  DisruptionBudgetInfo tighter = Budget("ml", "web", "web", 0);
  index.UpsertBudget(tighter);
  EXPECT_EQ(index.CoverageOf({"uid-web-0"})->allowed, std::vector<int32_t>{0});
  index.RemovePod("uid-db-0");
  EXPECT_TRUE(index.CoverageOf({"uid-db-0"})->budgets_of.empty());
  index.RemoveBudget(tighter.uid);
  EXPECT_TRUE(index.CoverageOf({"uid-web-0"})->budgets_of.empty());

  // A pod that finishes is dropped, as is one whose labels no longer match.
  PodInfo done = Labelled("ml", "web-0", {{"app", "web"}});
  index.UpsertBudget(Budget("ml", "web", "web", 1));
  done.phase = PodPhase::kSucceeded;
  index.UpsertPod(done);
  EXPECT_TRUE(index.CoverageOf({"uid-web-0"})->budgets_of.empty());
  EXPECT_EQ(index.Counts().pods, 0u);
}

TEST(DisruptionBudgetIndexTest, ReplicasShareOneInternedLabelSet) {
  DisruptionBudgetIndex index;
  index.ReplaceBudgets({});
  for (int i = 0; i < 100; ++i) {
    index.UpsertPod(Labelled("ml", "web-" + std::to_string(i),
                             {{"app", "web"}, {"pod-template-hash", "5d8f7c9b6d"}}));
  }
  index.UpsertPod(Labelled("ml", "db-0", {{"app", "db"}}));
  DisruptionBudgetCounts counts = index.Counts();
  EXPECT_EQ(counts.pods, 101u);
  EXPECT_EQ(counts.label_sets, 2u);
  EXPECT_TRUE(counts.synced);
  for (int i = 0; i < 100; ++i) index.RemovePod("uid-web-" + std::to_string(i));
  EXPECT_EQ(index.Counts().label_sets, 1u) << "a set no pod holds is no longer counted";
}

}  // namespace
}  // namespace gputopo::cluster
