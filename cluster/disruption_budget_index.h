// DisruptionBudgetIndex: the PodDisruptionBudgets of the cluster and the labels of its GPU pods,
// so that preemption counts PDB violations as kube-scheduler does (policies/preemption/
// disruption_budgets.h) instead of bounding them from the scheduler's own count.
//
// Fed by the API server watch: budgets from their own reflector, pods from the pods reflector
// (only GPU pods that have not finished and have labels are kept; victims are among them). Label
// sets are interned, since the replicas of a workload share theirs, so a pod costs its uid, name
// and one pointer.
//
// Until the budgets have been listed once (synced()), CoverageOf answers nullopt and preemption
// falls back to the scheduler's count: a cluster whose RBAC does not let gputopo list budgets
// still preempts, as before.
//
// Thread safety: thread-safe; every call takes one internal mutex.
#ifndef GPUTOPO_CLUSTER_DISRUPTION_BUDGET_INDEX_H_
#define GPUTOPO_CLUSTER_DISRUPTION_BUDGET_INDEX_H_

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "gputopo/disruption_budget.h"
#include "gputopo/mutex.h"
#include "gputopo/pod_info.h"
#include "policies/preemption/disruption_budgets.h"

namespace gputopo::cluster {

struct DisruptionBudgetCounts {
  size_t budgets = 0;
  size_t pods = 0;        // GPU pods whose labels are kept
  size_t label_sets = 0;  // distinct label sets among them
  bool synced = false;
};

class DisruptionBudgetIndex {
 public:
  DisruptionBudgetIndex() = default;
  DisruptionBudgetIndex(const DisruptionBudgetIndex&) = delete;
  DisruptionBudgetIndex& operator=(const DisruptionBudgetIndex&) = delete;

  // A fresh list of every budget: replaces them all, and marks the index synced.
  void ReplaceBudgets(const std::vector<DisruptionBudgetInfo>& budgets);
  void UpsertBudget(const DisruptionBudgetInfo& budget);
  void RemoveBudget(std::string_view uid);

  // A fresh list of pods: replaces them all. Pods that request no GPU, have finished or have no
  // labels are not kept.
  void ReplacePods(const std::vector<PodInfo>& pods);
  void UpsertPod(const PodInfo& pod);
  void RemovePod(std::string_view uid);

  // The budgets that count any of `uids` (pods unknown here count against none), indexed from 0
  // in the order of their namespace/name; nullopt until synced.
  std::optional<policies::BudgetCoverage> CoverageOf(
      const std::vector<std::string_view>& uids) const;

  DisruptionBudgetCounts Counts() const;

 private:
  struct PodLabels {
    std::string namespace_name;
    std::string name;
    std::shared_ptr<const LabelSet> labels;  // interned
  };
  void PutPodLocked(const PodInfo& pod) GPUTOPO_REQUIRES(mutex_);
  void ErasePodLocked(std::string_view uid) GPUTOPO_REQUIRES(mutex_);
  std::shared_ptr<const LabelSet> InternLocked(const LabelSet& labels) GPUTOPO_REQUIRES(mutex_);

  // (namespace, name, uid): budgets in the order CoverageOf numbers them, one namespace's
  // together, so that a pod is matched against its own namespace's budgets only.
  using BudgetKey = std::tuple<std::string, std::string, std::string>;
  void UpsertBudgetLocked(const DisruptionBudgetInfo& budget) GPUTOPO_REQUIRES(mutex_);
  void EraseBudgetLocked(std::string_view uid) GPUTOPO_REQUIRES(mutex_);

  mutable Mutex mutex_;
  bool synced_ GPUTOPO_GUARDED_BY(mutex_) = false;
  std::map<BudgetKey, DisruptionBudgetInfo> budgets_ GPUTOPO_GUARDED_BY(mutex_);
  std::unordered_map<std::string, BudgetKey> budget_keys_ GPUTOPO_GUARDED_BY(mutex_);  // by uid
  std::unordered_map<std::string, PodLabels> pods_ GPUTOPO_GUARDED_BY(mutex_);
  // Interned label sets; an entry whose every pod is gone expires, and is swept when the table
  // has doubled since the last sweep.
  std::map<LabelSet, std::weak_ptr<const LabelSet>> interned_ GPUTOPO_GUARDED_BY(mutex_);
  size_t sweep_at_ GPUTOPO_GUARDED_BY(mutex_) = 64;
};

}  // namespace gputopo::cluster

#endif  // GPUTOPO_CLUSTER_DISRUPTION_BUDGET_INDEX_H_
