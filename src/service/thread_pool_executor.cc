#include "src/service/thread_pool_executor.h"

namespace gputopo::service {

ThreadPoolExecutor::ThreadPoolExecutor(int threads, const std::function<void()>& thread_start) {
  threads_.reserve(static_cast<size_t>(threads));
  for (int i = 0; i < threads; ++i) {
    threads_.emplace_back([this, thread_start] {
      if (thread_start) thread_start();
      Run();
    });
  }
}

ThreadPoolExecutor::~ThreadPoolExecutor() {
  std::deque<Task> ready;
  std::map<std::pair<TimePoint, uint64_t>, Task> delayed;
  {
    MutexLock lock(mutex_);
    stopping_ = true;
    ready.swap(ready_);
    delayed.swap(delayed_);
  }
  work_.notify_all();
  for (std::thread& thread : threads_) thread.join();
  // `ready` and `delayed` are destroyed here, unrun, outside the lock: a task's captures may
  // post again, which then finds the executor stopping.
}

void ThreadPoolExecutor::Post(Task task) {
  {
    MutexLock lock(mutex_);
    if (stopping_) return;  // `task` is destroyed unrun, after the lock is released
    ready_.push_back(std::move(task));
  }
  work_.notify_one();
}

void ThreadPoolExecutor::PostAfter(std::chrono::nanoseconds delay, Task task) {
  if (delay <= std::chrono::nanoseconds::zero()) return Post(std::move(task));
  const TimePoint due = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(delay);
  {
    MutexLock lock(mutex_);
    if (stopping_) return;
    delayed_.emplace(std::make_pair(due, posted_++), std::move(task));
  }
  // A thread waiting for a later due time must wake to wait for this one instead.
  work_.notify_one();
}

void ThreadPoolExecutor::Run() {
  MutexLock lock(mutex_);
  while (!stopping_) {
    if (!delayed_.empty() && delayed_.begin()->first.first <= std::chrono::steady_clock::now()) {
      ready_.push_back(std::move(delayed_.begin()->second));
      delayed_.erase(delayed_.begin());
    }
    if (!ready_.empty()) {
      Task task = std::move(ready_.front());
      ready_.pop_front();
      lock.Unlock();
      task();
      task = nullptr;  // its captures are released before the lock is taken again
      lock.Lock();
      continue;
    }
    if (delayed_.empty()) {
      lock.Wait(work_);
    } else {
      // A copy: the entry may be gone (another thread took it) by the time the wait ends.
      const TimePoint due = delayed_.begin()->first.first;
      lock.WaitUntil(work_, due);
    }
  }
}

}  // namespace gputopo::service
