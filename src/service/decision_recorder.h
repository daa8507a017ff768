// DecisionRecorder: the CycleObserver of the server. It trims each cycle's record to what
// /debug shows and commits it (into the DecisionLog, and the filter metrics), as background
// work on the executor, so that the request path does not pay for it: at 5000 candidates
// trimming a record takes ~0.1 ms, and retiring the oldest records from the log (freeing the
// evaluations only they still held) now and then ~1 ms.
//
// Nothing is dropped: with `max_pending` records waiting, Observe commits in the caller's thread
// instead. Readers that must see every earlier cycle (/debug, /metrics) call Flush first; it
// commits what is waiting in the caller's thread and waits for commits in progress, so it never
// depends on the executor. The DecisionLog keeps records in the order the decisions started,
// whenever they arrive.
//
// Batching: with a nonzero `batch_delay`, the first record queued posts one commit task after
// that delay (or at once when half of `max_pending` is queued), and the task commits everything
// queued by then. A busy extender then wakes a background thread once per delay instead of once
// per request: a futex wake and a second runnable thread per verb, which on a small machine the
// next request's round trip pays for.
//
// Thread safety: thread-safe. `commit` runs on the executor, or on a thread that observes with
// the queue full or flushes; it must be thread-safe. Destruction commits what is pending and
// waits for commits in progress.
#ifndef GPUTOPO_SRC_SERVICE_DECISION_RECORDER_H_
#define GPUTOPO_SRC_SERVICE_DECISION_RECORDER_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "gputopo/executor.h"
#include "gputopo/mutex.h"
#include "src/service/cycle_metrics.h"
#include "src/service/cycle_observer.h"
#include "src/service/decision_log.h"
#include "src/service/task_scope.h"

namespace gputopo::service {

// Trims a cycle's record to the nodes /debug shows: the first `keep` failures, the `keep` best
// scores (ties to the earlier node), all of them when there are at most 2 * `keep`; counts and
// failure_reasons cover every candidate. The node states the record keeps replace its snapshot,
// so that a recorded cycle does not pin a whole snapshot.
void TrimForLog(CycleRecord& record, size_t keep);

struct RecorderOptions {
  size_t max_pending = 64;
  std::chrono::milliseconds batch_delay{0};
  size_t recorded_nodes = 200;  // `keep` of TrimForLog
};

class DecisionRecorder final : public CycleObserver {
 public:
  // Receives each record, trimmed.
  using CommitFn = std::function<void(std::shared_ptr<const CycleRecord>)>;

  // `executor` must outlive the Observe calls.
  DecisionRecorder(CommitFn commit, Executor& executor, RecorderOptions options);
  // Commits into `log`, and `metrics` when not null; both must outlive the recorder.
  DecisionRecorder(DecisionLog& log, CycleMetrics* metrics, Executor& executor,
                   RecorderOptions options);
  ~DecisionRecorder() override;
  DecisionRecorder(const DecisionRecorder&) = delete;
  DecisionRecorder& operator=(const DecisionRecorder&) = delete;

  void Observe(std::shared_ptr<CycleRecord> record) override;
  // Returns once every record observed before the call has been committed.
  void Flush();

 private:
  void Commit(std::shared_ptr<CycleRecord> record) const;
  // Commits everything queued now: what Flush and (with `task`) the posted task do.
  void CommitQueued(bool task);
  size_t BatchSize() const;  // queued records that end a batch delay

  const CommitFn commit_;
  const RecorderOptions options_;
  Mutex mutex_;
  std::condition_variable committed_;  // committed_count_ grew
  std::vector<std::shared_ptr<CycleRecord>> queued_ GPUTOPO_GUARDED_BY(mutex_);
  uint64_t queued_count_ GPUTOPO_GUARDED_BY(mutex_) = 0;     // records ever queued
  uint64_t committed_count_ GPUTOPO_GUARDED_BY(mutex_) = 0;  // queued records committed
  bool posted_ GPUTOPO_GUARDED_BY(mutex_) = false;  // a commit task is queued for the batch
  bool urged_ GPUTOPO_GUARDED_BY(mutex_) = false;   // ... and one to end its delay early
  TaskScope tasks_;  // last: closed first, while the members above exist
};

}  // namespace gputopo::service

#endif  // GPUTOPO_SRC_SERVICE_DECISION_RECORDER_H_
