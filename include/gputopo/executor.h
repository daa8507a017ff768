// Executor: where background work runs. The server's work that no request waits for
// (refreshing evaluation tables, committing decision records) is posted here instead of each
// part starting a thread of its own, so that main decides how many threads there are and at
// which priority, and tests run the work by hand (test/support/manual_executor.h).
//
// Contract for implementations:
//   - Post and PostAfter never run the task in the caller; they return at once.
//   - A task runs at most once. Tasks still queued when the executor is destroyed are destroyed
//     without running: owners whose tasks must not outlive them use a TaskScope
//     (src/service/task_scope.h).
//   - Thread-safe: Post and PostAfter may be called from any thread, tasks included.
#ifndef GPUTOPO_EXECUTOR_H_
#define GPUTOPO_EXECUTOR_H_

#include <chrono>
#include <functional>

namespace gputopo {

class Executor {
 public:
  using Task = std::function<void()>;

  virtual ~Executor() = default;
  // Runs `task` soon.
  virtual void Post(Task task) = 0;
  // Runs `task` once `delay` has passed (a delay, not a deadline: later is allowed).
  virtual void PostAfter(std::chrono::nanoseconds delay, Task task) = 0;
};

}  // namespace gputopo

#endif  // GPUTOPO_EXECUTOR_H_
