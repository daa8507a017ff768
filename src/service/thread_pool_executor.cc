#include "src/service/thread_pool_executor.h"

#include <algorithm>
#include <memory>

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
  stopping_.store(true);
  wake_.Release(static_cast<std::ptrdiff_t>(threads_.size()));
  for (std::thread& thread : threads_) thread.join();
  // What is still queued is destroyed unrun, here: a task's captures may post again, which then
  // finds the executor stopping.
  std::map<std::pair<TimePoint, uint64_t>, Task> queued;
  {
    MutexLock lock(mutex_);
    TakeIncomingLocked();
    queued.swap(queued_);
  }
}

void ThreadPoolExecutor::Post(Task task) {
  Push(std::chrono::steady_clock::now(), std::move(task));
}

void ThreadPoolExecutor::PostAfter(std::chrono::nanoseconds delay, Task task) {
  Push(std::chrono::steady_clock::now() +
           std::chrono::duration_cast<std::chrono::steady_clock::duration>(
               std::max(delay, std::chrono::nanoseconds::zero())),
       std::move(task));
}

void ThreadPoolExecutor::Push(TimePoint due, Task task) {
  if (stopping_.load()) return;  // `task` is destroyed unrun
  auto* posted = new Posted{due, std::move(task), incoming_.load(std::memory_order_relaxed)};
  while (!incoming_.compare_exchange_weak(posted->next, posted, std::memory_order_release,
                                          std::memory_order_relaxed)) {
  }
  wake_.Release();
}

void ThreadPoolExecutor::TakeIncomingLocked() {
  // The list is newest first: reversed in place, then queued in posting order.
  Posted* oldest_first = nullptr;
  for (Posted* p = incoming_.exchange(nullptr, std::memory_order_acquire); p != nullptr;) {
    Posted* next = p->next;
    p->next = oldest_first;
    oldest_first = p;
    p = next;
  }
  while (oldest_first != nullptr) {
    std::unique_ptr<Posted> taken(oldest_first);
    oldest_first = taken->next;
    queued_.emplace(std::make_pair(taken->due, taken_++), std::move(taken->task));
  }
}

void ThreadPoolExecutor::Run() {
  while (!stopping_.load()) {
    Task task;
    bool waiting_for_due = false;
    TimePoint next_due;
    {
      MutexLock lock(mutex_);
      TakeIncomingLocked();
      if (!queued_.empty()) {
        auto first = queued_.begin();
        if (first->first.first <= std::chrono::steady_clock::now()) {
          task = std::move(first->second);
          queued_.erase(first);
        } else {
          waiting_for_due = true;
          next_due = first->first.first;
        }
      }
    }
    if (task) {
      // One permit per task run, so that permits do not pile up while the pool stays busy. It
      // may be another post's: this thread takes that post itself, in its next round.
      (void)wake_.TryAcquire();
      task();
      continue;  // `task`, and so its captures, is destroyed before the lock is taken again
    }
    // A post or a stop releases the semaphore: nothing posted after the take above is missed.
    if (waiting_for_due) {
      (void)wake_.TryAcquireUntil(next_due);
    } else {
      wake_.Acquire();
    }
  }
}

}  // namespace gputopo::service
