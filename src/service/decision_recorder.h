// DecisionRecorder: hands cycle records to their commit step (trimming, the DecisionLog,
// metrics) on its own thread, after the reply has been written, so that the request path does
// not pay for it: at 5000 candidates trimming a record takes ~0.1 ms, and retiring the oldest
// records from the log (freeing the evaluations only they still held) now and then ~1 ms.
//
// Nothing is dropped: with `max_pending` records waiting, Submit commits in the caller's thread
// instead. Readers that must see every earlier cycle (/debug, /metrics) call Flush first; the
// DecisionLog keeps records in the order the decisions started, whenever they arrive.
//
// Batching: with a nonzero `batch_delay`, the thread, once woken by a record, waits up to that
// long (or until half of `max_pending` is queued, or a Flush) before committing everything
// queued. A busy extender then wakes it once per delay instead of once per request: a futex
// wake and a second runnable thread per verb, which on a small machine the next request's
// round trip pays for. Flush never waits for the delay.
//
// Thread safety: thread-safe. `commit` runs on the recorder's thread, or on a submitting thread
// when the queue is full; it must be thread-safe. `thread_start`, when given, runs first on the
// recorder's thread (the application lowers the thread's CPU priority there).
#ifndef GPUTOPO_SRC_SERVICE_DECISION_RECORDER_H_
#define GPUTOPO_SRC_SERVICE_DECISION_RECORDER_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "src/service/decision_log.h"

namespace gputopo::service {

class DecisionRecorder {
 public:
  using CommitFn = std::function<void(std::shared_ptr<CycleRecord>)>;

  DecisionRecorder(CommitFn commit, size_t max_pending,
                   const std::function<void()>& thread_start = {},
                   std::chrono::milliseconds batch_delay = std::chrono::milliseconds(0));
  // Commits what is still pending, then stops the thread.
  ~DecisionRecorder();
  DecisionRecorder(const DecisionRecorder&) = delete;
  DecisionRecorder& operator=(const DecisionRecorder&) = delete;

  // Takes ownership of `record`: the caller must not touch it afterwards.
  void Submit(std::shared_ptr<CycleRecord> record);
  // Returns once every record submitted before the call has been committed.
  void Flush();

 private:
  void Run();
  size_t BatchSize() const;  // queued records that end a batch delay

  const CommitFn commit_;
  const size_t max_pending_;
  const std::chrono::milliseconds batch_delay_;
  std::mutex mutex_;
  std::condition_variable work_;                      // a record was queued, or stopping
  std::condition_variable committed_;                 // committed_count_ grew
  std::deque<std::shared_ptr<CycleRecord>> pending_;  // GUARDED_BY(mutex_)
  uint64_t queued_count_ = 0;                         // GUARDED_BY(mutex_): records ever queued
  uint64_t committed_count_ = 0;  // GUARDED_BY(mutex_): queued records committed
  bool stopping_ = false;         // GUARDED_BY(mutex_)
  bool idle_ = false;             // GUARDED_BY(mutex_): the thread waits for a first record
  int flushing_ = 0;              // GUARDED_BY(mutex_): Flush calls waiting
  std::thread thread_;            // last: starts once the members above exist
};

}  // namespace gputopo::service

#endif  // GPUTOPO_SRC_SERVICE_DECISION_RECORDER_H_
