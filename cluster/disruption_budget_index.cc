#include "cluster/disruption_budget_index.h"

#include <algorithm>
#include <tuple>
#include <utility>

namespace gputopo::cluster {
namespace {

bool Kept(const PodInfo& pod) {
  return pod.gpu_request > 0 && !pod.IsTerminal() && !pod.labels.empty() && !pod.uid.empty();
}

}  // namespace

void DisruptionBudgetIndex::ReplaceBudgets(const std::vector<DisruptionBudgetInfo>& budgets) {
  MutexLock lock(mutex_);
  budgets_.clear();
  budget_keys_.clear();
  for (const DisruptionBudgetInfo& b : budgets) UpsertBudgetLocked(b);
  synced_ = true;
}

void DisruptionBudgetIndex::UpsertBudget(const DisruptionBudgetInfo& budget) {
  MutexLock lock(mutex_);
  UpsertBudgetLocked(budget);
}

void DisruptionBudgetIndex::RemoveBudget(std::string_view uid) {
  MutexLock lock(mutex_);
  EraseBudgetLocked(uid);
}

void DisruptionBudgetIndex::UpsertBudgetLocked(const DisruptionBudgetInfo& budget) {
  EraseBudgetLocked(budget.uid);
  BudgetKey key{budget.namespace_name, budget.name, budget.uid};
  budget_keys_.emplace(budget.uid, key);
  budgets_.insert_or_assign(std::move(key), budget);
}

void DisruptionBudgetIndex::EraseBudgetLocked(std::string_view uid) {
  auto it = budget_keys_.find(std::string(uid));
  if (it == budget_keys_.end()) return;
  budgets_.erase(it->second);
  budget_keys_.erase(it);
}

void DisruptionBudgetIndex::ReplacePods(const std::vector<PodInfo>& pods) {
  MutexLock lock(mutex_);
  pods_.clear();
  for (const PodInfo& pod : pods) PutPodLocked(pod);
}

void DisruptionBudgetIndex::UpsertPod(const PodInfo& pod) {
  MutexLock lock(mutex_);
  PutPodLocked(pod);
}

void DisruptionBudgetIndex::RemovePod(std::string_view uid) {
  MutexLock lock(mutex_);
  ErasePodLocked(uid);
}

void DisruptionBudgetIndex::PutPodLocked(const PodInfo& pod) {
  if (!Kept(pod)) {
    ErasePodLocked(pod.uid);
    return;
  }
  PodLabels& entry = pods_[pod.uid];
  entry.namespace_name = pod.namespace_name;
  entry.name = pod.name;
  if (entry.labels == nullptr || *entry.labels != pod.labels)
    entry.labels = InternLocked(pod.labels);
}

void DisruptionBudgetIndex::ErasePodLocked(std::string_view uid) { pods_.erase(std::string(uid)); }

std::shared_ptr<const LabelSet> DisruptionBudgetIndex::InternLocked(const LabelSet& labels) {
  auto it = interned_.find(labels);
  if (it != interned_.end()) {
    if (std::shared_ptr<const LabelSet> live = it->second.lock()) return live;
  }
  auto made = std::make_shared<const LabelSet>(labels);
  interned_[labels] = made;
  if (interned_.size() >= sweep_at_) {
    std::erase_if(interned_, [](const auto& entry) { return entry.second.expired(); });
    sweep_at_ = std::max<size_t>(64, interned_.size() * 2);
  }
  return made;
}

std::optional<policies::BudgetCoverage> DisruptionBudgetIndex::CoverageOf(
    const std::vector<std::string_view>& uids) const {
  MutexLock lock(mutex_);
  if (!synced_) return std::nullopt;
  policies::BudgetCoverage coverage;
  // Which budgets count each pod (a budget selects pods of its own namespace only); then the
  // budgets used, numbered in namespace/name order.
  using Budget = std::map<BudgetKey, DisruptionBudgetInfo>::value_type;
  std::vector<std::pair<std::string_view, std::vector<const Budget*>>> counted;
  std::vector<const Budget*> used;
  for (std::string_view uid : uids) {
    auto pod = pods_.find(std::string(uid));
    if (pod == pods_.end()) continue;
    const PodLabels& labels = pod->second;
    std::vector<const Budget*> budgets;
    for (auto it = budgets_.lower_bound(BudgetKey{labels.namespace_name, {}, {}});
         it != budgets_.end() && std::get<0>(it->first) == labels.namespace_name; ++it) {
      if (policies::CountsAgainst(it->second, labels.namespace_name, labels.name, *labels.labels)) {
        budgets.push_back(&*it);
      }
    }
    if (budgets.empty()) continue;
    used.insert(used.end(), budgets.begin(), budgets.end());
    counted.emplace_back(uid, std::move(budgets));
  }
  const auto by_key = [](const Budget* a, const Budget* b) { return a->first < b->first; };
  std::sort(used.begin(), used.end(), by_key);
  used.erase(std::unique(used.begin(), used.end()), used.end());
  for (const Budget* b : used) {
    coverage.allowed.push_back(b->second.disruptions_allowed);
    coverage.budgets.push_back(b->second.Key());
  }
  for (auto& [uid, budgets] : counted) {
    std::vector<int> indices;
    indices.reserve(budgets.size());
    for (const Budget* b : budgets) {
      indices.push_back(
          static_cast<int>(std::lower_bound(used.begin(), used.end(), b, by_key) - used.begin()));
    }
    coverage.budgets_of.emplace(std::string(uid), std::move(indices));
  }
  return coverage;
}

DisruptionBudgetCounts DisruptionBudgetIndex::Counts() const {
  MutexLock lock(mutex_);
  DisruptionBudgetCounts counts;
  counts.budgets = budgets_.size();
  counts.pods = pods_.size();
  for (const auto& [labels, weak] : interned_) {
    if (!weak.expired()) ++counts.label_sets;
  }
  counts.synced = synced_;
  return counts;
}

}  // namespace gputopo::cluster
