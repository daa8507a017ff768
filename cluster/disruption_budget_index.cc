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
  for (const DisruptionBudgetInfo& b : budgets) budgets_[b.uid] = b;
  synced_ = true;
}

void DisruptionBudgetIndex::UpsertBudget(const DisruptionBudgetInfo& budget) {
  MutexLock lock(mutex_);
  budgets_[budget.uid] = budget;
}

void DisruptionBudgetIndex::RemoveBudget(std::string_view uid) {
  MutexLock lock(mutex_);
  budgets_.erase(std::string(uid));
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
  // Budgets in namespace/name order, each given its index when it first counts a pod.
  std::vector<const DisruptionBudgetInfo*> ordered;
  ordered.reserve(budgets_.size());
  for (const auto& [uid, budget] : budgets_) ordered.push_back(&budget);
  std::sort(ordered.begin(), ordered.end(), [](const auto* a, const auto* b) {
    return std::tie(a->namespace_name, a->name) < std::tie(b->namespace_name, b->name);
  });
  // Which budgets count each pod, by position in `ordered`; then the budgets used, renumbered
  // in that order.
  std::vector<std::pair<std::string_view, std::vector<size_t>>> counted;
  std::vector<int> index(ordered.size(), -1);
  for (std::string_view uid : uids) {
    auto pod = pods_.find(std::string(uid));
    if (pod == pods_.end()) continue;
    std::vector<size_t> positions;
    for (size_t b = 0; b < ordered.size(); ++b) {
      if (policies::CountsAgainst(*ordered[b], pod->second.namespace_name, pod->second.name,
                                  *pod->second.labels)) {
        positions.push_back(b);
        index[b] = 0;
      }
    }
    if (!positions.empty()) counted.emplace_back(uid, std::move(positions));
  }
  for (size_t b = 0; b < ordered.size(); ++b) {
    if (index[b] < 0) continue;
    index[b] = static_cast<int>(coverage.allowed.size());
    coverage.allowed.push_back(ordered[b]->disruptions_allowed);
    coverage.budgets.push_back(ordered[b]->Key());
  }
  for (auto& [uid, positions] : counted) {
    std::vector<int> budgets;
    budgets.reserve(positions.size());
    for (size_t b : positions) budgets.push_back(index[b]);
    coverage.budgets_of.emplace(std::string(uid), std::move(budgets));
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
