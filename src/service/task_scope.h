// TaskScope: an owner's tasks on a shared Executor, none of which runs once the owner is gone.
//
// A part that posts tasks capturing `this` (TableRefresher, DecisionRecorder) holds a TaskScope
// and posts through it. Close (or the destructor) makes every task of the scope that has not
// started yet a no-op, and waits for those running to end; the executor may keep the no-ops
// queued for as long as it likes, since they hold only the scope's small shared state.
//
// Thread safety: thread-safe. Close must not be called from one of the scope's own tasks (it
// would wait for itself).
#ifndef GPUTOPO_SRC_SERVICE_TASK_SCOPE_H_
#define GPUTOPO_SRC_SERVICE_TASK_SCOPE_H_

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>

#include "gputopo/executor.h"
#include "gputopo/mutex.h"

namespace gputopo::service {

class TaskScope {
 public:
  // `executor` must outlive the scope's Post calls (not its queued tasks).
  explicit TaskScope(Executor& executor);
  ~TaskScope() { Close(); }
  TaskScope(const TaskScope&) = delete;
  TaskScope& operator=(const TaskScope&) = delete;

  // As Executor's, unless the scope is closed (then `task` is dropped).
  void Post(Executor::Task task);
  void PostAfter(std::chrono::nanoseconds delay, Executor::Task task);
  // Idempotent.
  void Close();

 private:
  struct Shared {
    Mutex mutex;
    std::condition_variable idle;  // running dropped to 0
    int running GPUTOPO_GUARDED_BY(mutex) = 0;
    bool closed GPUTOPO_GUARDED_BY(mutex) = false;
  };
  Executor::Task Wrap(Executor::Task task) const;

  Executor& executor_;
  const std::shared_ptr<Shared> shared_ = std::make_shared<Shared>();
};

}  // namespace gputopo::service

#endif  // GPUTOPO_SRC_SERVICE_TASK_SCOPE_H_
