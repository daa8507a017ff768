// TableRefresher: runs the evaluation source's Refresh (EvaluationSource::Refresh: for
// CachedEvaluations, bringing its tables up to date with the cluster) as background work on the
// executor, so that scheduling cycles read evaluations instead of making them.
//
// A pod shape's table is otherwise brought up to date by the next cycle of that shape, on the
// request path: a multi-GPU pod's evaluation of one node takes ~20 us, so the ten nodes that
// changed since its shape was last asked about cost that cycle 0.2 ms. Told of each published
// snapshot (ClusterState's publish listener), the refresher posts one refresh. Snapshots
// published meanwhile are coalesced: at most one refresh is queued or running at a time, and it
// always refreshes against the newest. A cycle that arrives first does the work itself (the
// table's lock makes the two take turns), so a refresh is never needed for correctness.
//
// Thread safety: thread-safe. Notify is quick and never waits for a refresh.
#ifndef GPUTOPO_SRC_SERVICE_TABLE_REFRESHER_H_
#define GPUTOPO_SRC_SERVICE_TABLE_REFRESHER_H_

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>

#include "evaluation/evaluation_source.h"
#include "gputopo/executor.h"
#include "gputopo/mutex.h"
#include "policies/state/cluster_snapshot.h"
#include "src/service/task_scope.h"

namespace gputopo::service {

class TableRefresher {
 public:
  // `source` must outlive the refresher, which is the only caller of its Refresh; `executor`
  // must outlive the Notify calls.
  TableRefresher(evaluation::EvaluationSource& source, Executor& executor);
  // Waits for the refresh in progress, if any; a queued one is dropped.
  ~TableRefresher() { tasks_.Close(); }
  TableRefresher(const TableRefresher&) = delete;
  TableRefresher& operator=(const TableRefresher&) = delete;

  // The cluster changed: refresh the tables against `snapshot` soon.
  void Notify(std::shared_ptr<const policies::ClusterSnapshot> snapshot);
  // Returns once every snapshot notified before the call has been refreshed against (or
  // superseded by a newer one that has). Needs the executor to run the refresh: with a manual
  // executor, run it instead.
  void WaitIdle();
  // Nodes evaluated by refreshes so far.
  uint64_t nodes_evaluated() const;

 private:
  void Refresh();  // the posted task

  evaluation::EvaluationSource& source_;
  mutable Mutex mutex_;
  std::condition_variable idle_;  // done_ grew
  std::shared_ptr<const policies::ClusterSnapshot> latest_ GPUTOPO_GUARDED_BY(mutex_);
  bool posted_ GPUTOPO_GUARDED_BY(mutex_) = false;    // a Refresh is queued or running
  uint64_t notified_ GPUTOPO_GUARDED_BY(mutex_) = 0;  // snapshots notified
  uint64_t done_ GPUTOPO_GUARDED_BY(mutex_) = 0;      // notified snapshots refreshed against
  uint64_t nodes_evaluated_ GPUTOPO_GUARDED_BY(mutex_) = 0;
  TaskScope tasks_;  // last: closed first, while the members above exist
};

}  // namespace gputopo::service

#endif  // GPUTOPO_SRC_SERVICE_TABLE_REFRESHER_H_
