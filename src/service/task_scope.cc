#include "src/service/task_scope.h"

#include <utility>

namespace gputopo::service {

TaskScope::TaskScope(Executor& executor) : executor_(executor) {}

Executor::Task TaskScope::Wrap(Executor::Task task) const {
  return [shared = shared_, task = std::move(task)] {
    {
      MutexLock lock(shared->mutex);
      if (shared->closed) return;
      ++shared->running;
    }
    task();
    MutexLock lock(shared->mutex);
    if (--shared->running == 0) shared->idle.notify_all();
  };
}

void TaskScope::Post(Executor::Task task) {
  {
    MutexLock lock(shared_->mutex);
    if (shared_->closed) return;
  }
  executor_.Post(Wrap(std::move(task)));
}

void TaskScope::PostAfter(std::chrono::nanoseconds delay, Executor::Task task) {
  {
    MutexLock lock(shared_->mutex);
    if (shared_->closed) return;
  }
  executor_.PostAfter(delay, Wrap(std::move(task)));
}

void TaskScope::Close() {
  MutexLock lock(shared_->mutex);
  shared_->closed = true;
  while (shared_->running != 0) lock.Wait(shared_->idle);
}

}  // namespace gputopo::service
