// ThreadPoolExecutor: the Executor of the running server, a fixed number of threads.
//
// Tasks run in the order they became due (posted, or their delay passed), on whichever thread is
// free. Delays are measured on std::chrono::steady_clock: this is the one place that waits in
// real time, and tests use test/support/manual_executor.h instead.
//
// Posting takes no lock. The server's pools run at a low CPU priority
// (src/app/background_priority.h), and request threads post to them (the DecisionRecorder's
// commit task, the TableRefresher's refresh). A poster that needed a lock the pool's threads take
// waited, on a loaded machine, whenever one of them was preempted holding it: 2-15 ms, until that
// thread's next turn on the CPU (bench/HISTORY.md, 2026-12-06). A post is pushed onto a lock-free
// list, which a pool thread empties in one atomic exchange, and counted on a semaphore that
// wakes one (WakeSemaphore: an idle pool thread sleeps, it does not spin).
//
// Thread safety: thread-safe. `thread_start`, when given, runs first on each thread (the
// application lowers the threads' CPU priority there). The destructor finishes the tasks
// running, destroys those still queued, and joins the threads; it must not run on one of them,
// and nothing may post once it has started, except the captures of the tasks it destroys (their
// posts are dropped).
#ifndef GPUTOPO_SRC_SERVICE_THREAD_POOL_EXECUTOR_H_
#define GPUTOPO_SRC_SERVICE_THREAD_POOL_EXECUTOR_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <thread>
#include <utility>
#include <vector>

#include "gputopo/executor.h"
#include "gputopo/mutex.h"
#include "src/service/wake_semaphore.h"

namespace gputopo::service {

class ThreadPoolExecutor final : public Executor {
 public:
  // Precondition: threads >= 1.
  explicit ThreadPoolExecutor(int threads, const std::function<void()>& thread_start = {});
  ~ThreadPoolExecutor() override;
  ThreadPoolExecutor(const ThreadPoolExecutor&) = delete;
  ThreadPoolExecutor& operator=(const ThreadPoolExecutor&) = delete;

  void Post(Task task) override;
  void PostAfter(std::chrono::nanoseconds delay, Task task) override;

 private:
  using TimePoint = std::chrono::steady_clock::time_point;
  // A task on its way from a poster to the pool: a node of the lock-free list `incoming_`.
  struct Posted {
    TimePoint due;
    Task task;
    Posted* next = nullptr;
  };
  void Push(TimePoint due, Task task);
  void Run();
  // Moves the tasks posted since the last call from `incoming_` into `queued_`.
  void TakeIncomingLocked() GPUTOPO_REQUIRES(mutex_);

  std::atomic<bool> stopping_{false};
  std::atomic<Posted*> incoming_{nullptr};  // newest first; owned until taken
  WakeSemaphore wake_;                      // one release per post, and one per thread to stop
  Mutex mutex_;                             // taken by the pool's threads only, never by a poster
  // Tasks by due time, then by order of taking (posting order within one take).
  std::map<std::pair<TimePoint, uint64_t>, Task> queued_ GPUTOPO_GUARDED_BY(mutex_);
  uint64_t taken_ GPUTOPO_GUARDED_BY(mutex_) = 0;
  std::vector<std::thread> threads_;  // last: start once the members above exist
};

}  // namespace gputopo::service

#endif  // GPUTOPO_SRC_SERVICE_THREAD_POOL_EXECUTOR_H_
