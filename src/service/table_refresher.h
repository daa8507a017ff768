// TableRefresher: keeps the evaluation cache's shape tables up to date with the cluster, on its
// own thread, so that scheduling cycles read evaluations instead of making them.
//
// A shape's table is otherwise brought up to date by the next cycle of that shape, on the
// request path: a multi-GPU pod's evaluation of one node takes ~20 us, so the ten nodes that
// changed since its shape was last asked about cost that cycle 0.2 ms. Told of each published
// snapshot (ClusterState's publish listener), the refresher evaluates the changed nodes for
// every recent shape right away. Snapshots published while it works are coalesced: it always
// refreshes against the newest. A cycle that arrives first does the work itself (the table's
// lock makes the two take turns), so a refresh is never needed for correctness.
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
#include <utility>
#include <vector>

#include "policies/engine/evaluation_cache.h"
#include "policies/state/cluster_snapshot.h"

namespace gputopo::service {

class TableRefresher {
 public:
  // `cache` must outlive the refresher.
  explicit TableRefresher(policies::EvaluationCache& cache,
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
  // Refreshes every recent table against `snapshot`; returns the nodes evaluated.
  uint64_t Refresh(const std::shared_ptr<const policies::ClusterSnapshot>& snapshot);

  policies::EvaluationCache& cache_;
  mutable std::mutex mutex_;
  std::condition_variable work_;                             // a snapshot was notified, or stopping
  std::condition_variable idle_;                             // done_ grew
  std::shared_ptr<const policies::ClusterSnapshot> latest_;  // GUARDED_BY(mutex_)
  uint64_t notified_ = 0;         // GUARDED_BY(mutex_): snapshots notified
  uint64_t done_ = 0;             // GUARDED_BY(mutex_): notified snapshots refreshed against
  uint64_t nodes_evaluated_ = 0;  // GUARDED_BY(mutex_)
  bool stopping_ = false;         // GUARDED_BY(mutex_)
  // The refresher thread's own: the snapshot it last refreshed against, and for each table the
  // generation it was last brought up to; a table that is current as of last_ only needs the
  // nodes that changed since (found by comparing the two snapshots' node pointers).
  std::shared_ptr<const policies::ClusterSnapshot> last_;
  std::vector<std::pair<std::shared_ptr<policies::ShapeTable>, uint64_t>> synced_;
  std::thread thread_;  // last: starts once the members above exist
};

}  // namespace gputopo::service

#endif  // GPUTOPO_SRC_SERVICE_TABLE_REFRESHER_H_
