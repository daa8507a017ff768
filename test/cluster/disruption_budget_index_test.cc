// DisruptionBudgetIndex: budgets and GPU pods' labels, as preemption reads them.
#include "cluster/disruption_budget_index.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "policies/preemption/disruption_budgets.h"
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

// What CoverageOf must answer, by brute force: every budget tried against every pod.
policies::BudgetCoverage CoverageByBruteForce(const std::vector<DisruptionBudgetInfo>& budgets,
                                              const std::vector<PodInfo>& pods,
                                              const std::vector<std::string_view>& uids) {
  std::vector<const DisruptionBudgetInfo*> ordered;
  for (const DisruptionBudgetInfo& b : budgets) ordered.push_back(&b);
  std::sort(ordered.begin(), ordered.end(), [](const auto* a, const auto* b) {
    return std::tie(a->namespace_name, a->name, a->uid) <
           std::tie(b->namespace_name, b->name, b->uid);
  });
  std::map<std::string, std::vector<size_t>> matched;
  std::set<size_t> used;
  for (std::string_view uid : uids) {
    for (const PodInfo& pod : pods) {
      if (pod.uid != uid || pod.gpu_request <= 0) continue;
      for (size_t b = 0; b < ordered.size(); ++b) {
        if (policies::CountsAgainst(*ordered[b], pod.namespace_name, pod.name, pod.labels)) {
          matched[pod.uid].push_back(b);
          used.insert(b);
        }
      }
    }
  }
  policies::BudgetCoverage coverage;
  std::map<size_t, int> number;
  for (size_t b : used) {
    number[b] = static_cast<int>(coverage.budgets.size());
    coverage.budgets.push_back(ordered[b]->Key());
    coverage.allowed.push_back(ordered[b]->disruptions_allowed);
  }
  for (const auto& [uid, positions] : matched) {
    std::vector<int>& of = coverage.budgets_of[uid];
    for (size_t b : positions) of.push_back(number.at(b));
  }
  return coverage;
}

TEST(DisruptionBudgetIndexTest, CoverageMatchesEveryBudgetTriedAgainstEveryPod) {
  // Namespaces that sort next to each other ("ml", "ml-a", "mla"), budgets that overlap and
  // select across apps, budgets updated and removed, and pods of every namespace on one node.
  const std::vector<std::string> namespaces = {"a", "ml", "ml-a", "mla", "z"};
  const std::vector<std::string> apps = {"web", "db", "cache"};
  std::mt19937 rng(7);
  for (int round = 0; round < 40; ++round) {
    std::vector<DisruptionBudgetInfo> budgets;
    const int budget_count = static_cast<int>(rng() % 12);
    for (int b = 0; b < budget_count; ++b) {
      DisruptionBudgetInfo budget =
          Budget(namespaces[rng() % namespaces.size()], "pdb-" + std::to_string(b),
                 apps[rng() % apps.size()], static_cast<int32_t>(rng() % 3));
      if (rng() % 4 == 0) {  // selects two apps
        budget.selector->requirements[0].values.push_back(apps[rng() % apps.size()]);
      }
      budgets.push_back(std::move(budget));
    }
    std::vector<PodInfo> pods;
    for (int p = 0; p < 10; ++p) {
      pods.push_back(Labelled(namespaces[rng() % namespaces.size()], "pod-" + std::to_string(p),
                              {{"app", apps[rng() % apps.size()]}}, rng() % 5 == 0 ? 0 : 1));
    }
    DisruptionBudgetIndex index;
    index.ReplaceBudgets({});
    for (const DisruptionBudgetInfo& b : budgets) index.UpsertBudget(b);
    index.ReplacePods(pods);
    // Some budgets change status or go, through watch events.
    for (DisruptionBudgetInfo& b : budgets) {
      if (rng() % 3 == 0) {
        b.disruptions_allowed += 1;
        index.UpsertBudget(b);
      }
    }
    if (!budgets.empty() && rng() % 2 == 0) {
      index.RemoveBudget(budgets.front().uid);
      budgets.erase(budgets.begin());
    }
    std::vector<std::string_view> uids;
    for (const PodInfo& pod : pods) {
      if (rng() % 3 != 0) uids.push_back(pod.uid);
    }
    const auto coverage = index.CoverageOf(uids);
    ASSERT_TRUE(coverage.has_value());
    const policies::BudgetCoverage want = CoverageByBruteForce(budgets, pods, uids);
    EXPECT_EQ(coverage->budgets, want.budgets) << "round " << round;
    EXPECT_EQ(coverage->allowed, want.allowed) << "round " << round;
    ASSERT_EQ(coverage->budgets_of.size(), want.budgets_of.size()) << "round " << round;
    for (const auto& [uid, of] : want.budgets_of) {
      auto it = coverage->budgets_of.find(uid);
      ASSERT_NE(it, coverage->budgets_of.end()) << uid << ", round " << round;
      EXPECT_EQ(it->second, of) << uid << ", round " << round;
    }
  }
}

}  // namespace
}  // namespace gputopo::cluster
