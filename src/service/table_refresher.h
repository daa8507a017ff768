// TableRefresher: runs the evaluation source's Refresh (EvaluationSource::Refresh: for
// CachedEvaluations, bringing its tables up to date with the cluster) on its own thread, so that
// scheduling cycles read evaluations instead of making them.
//
// A pod shape's table is otherwise brought up to date by the next cycle of that shape, on the
// request path: a multi-GPU pod's evaluation of one node takes ~20 us, so the ten nodes that
// changed since its shape was last asked about cost that cycle 0.2 ms. Told of each published
// snapshot (ClusterState's publish listener), the refresher refreshes right away. Snapshots
// published while it works are coalesced: it always refreshes against the newest. A cycle that
// arrives first does the work itself (the table's lock makes the two take turns), so a refresh
// is never needed for correctness.
//
// Thread safety: thread-safe. Notify is quick and never waits for a refresh. `thread_start`,
// when given, runs first on the refresher's thread (the application lowers the thread's CPU
// priority there).
#ifndef GPUTOPO_SRC_SERVICE_TABLE_REFRESHER_H_
#define GPUTOPO_SRC_SERVICE_TABLE_REFRESHER_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "evaluation/evaluation_source.h"
#include "policies/state/cluster_snapshot.h"

namespace gputopo::service {

class TableRefresher {
 public:
  // `source` must outlive the refresher, which is the only caller of its Refresh.
  explicit TableRefresher(evaluation::EvaluationSource& source,
                          const std::function<void()>& thread_start = {});
  // Stops after the refresh in progress, if any.
  ~TableRefresher();
  TableRefresher(const TableRefresher&) = delete;
  TableRefresher& operator=(const TableRefresher&) = delete;

  // The cluster changed: refresh the tables against `snapshot` soon.
  void Notify(std::shared_ptr<const policies::ClusterSnapshot> snapshot);
  // Returns once every snapshot notified before the call has been refreshed against (or
  // superseded by a newer one that has).
  void WaitIdle();
  // Nodes evaluated by refreshes so far.
  uint64_t nodes_evaluated() const;

 private:
  void Run();

  evaluation::EvaluationSource& source_;
  mutable std::mutex mutex_;
  std::condition_variable work_;                             // a snapshot was notified, or stopping
  std::condition_variable idle_;                             // done_ grew
  std::shared_ptr<const policies::ClusterSnapshot> latest_;  // GUARDED_BY(mutex_)
  uint64_t notified_ = 0;         // GUARDED_BY(mutex_): snapshots notified
  uint64_t done_ = 0;             // GUARDED_BY(mutex_): notified snapshots refreshed against
  uint64_t nodes_evaluated_ = 0;  // GUARDED_BY(mutex_)
  bool stopping_ = false;         // GUARDED_BY(mutex_)
  std::thread thread_;            // last: starts once the members above exist
};

}  // namespace gputopo::service

#endif  // GPUTOPO_SRC_SERVICE_TABLE_REFRESHER_H_
