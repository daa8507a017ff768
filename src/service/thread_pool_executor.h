// ThreadPoolExecutor: the Executor of the running server, a fixed number of threads.
//
// Tasks run in the order they became due (posted, or their delay passed), on whichever thread is
// free. Delays are measured on std::chrono::steady_clock: this is the one place that waits in
// real time, and tests use test/support/manual_executor.h instead.
//
// Thread safety: thread-safe. `thread_start`, when given, runs first on each thread (the
// application lowers the threads' CPU priority there). The destructor finishes the tasks
// running, destroys those still queued, and joins the threads; it must not run on one of them.
#ifndef GPUTOPO_SRC_SERVICE_THREAD_POOL_EXECUTOR_H_
#define GPUTOPO_SRC_SERVICE_THREAD_POOL_EXECUTOR_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "gputopo/executor.h"
#include "gputopo/mutex.h"

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
  void Run();

  Mutex mutex_;
  std::condition_variable work_;  // a task was queued or became due, or stopping
  std::deque<Task> ready_ GPUTOPO_GUARDED_BY(mutex_);
  // Delayed tasks by due time, then by order of posting.
  std::map<std::pair<TimePoint, uint64_t>, Task> delayed_ GPUTOPO_GUARDED_BY(mutex_);
  uint64_t posted_ GPUTOPO_GUARDED_BY(mutex_) = 0;  // orders delayed tasks due at the same time
  bool stopping_ GPUTOPO_GUARDED_BY(mutex_) = false;
  std::vector<std::thread> threads_;  // last: start once the members above exist
};

}  // namespace gputopo::service

#endif  // GPUTOPO_SRC_SERVICE_THREAD_POOL_EXECUTOR_H_
