// ManualExecutor: an Executor whose tasks run only when a test says so, in the test's thread,
// with delays on a virtual clock that moves only by Advance.
//
// Thread safety: Post and PostAfter from any thread; RunReady and Advance from one thread (the
// test's). Tasks posted by running tasks are queued like any other.
#ifndef GPUTOPO_TEST_SUPPORT_MANUAL_EXECUTOR_H_
#define GPUTOPO_TEST_SUPPORT_MANUAL_EXECUTOR_H_

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <utility>

#include "gputopo/executor.h"

namespace gputopo::testing {

class ManualExecutor final : public Executor {
 public:
  void Post(Task task) override {
    std::lock_guard<std::mutex> lock(mutex_);
    ready_.push_back(std::move(task));
  }
  void PostAfter(std::chrono::nanoseconds delay, Task task) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (delay <= std::chrono::nanoseconds::zero()) {
      ready_.push_back(std::move(task));
      return;
    }
    delayed_.emplace(std::make_pair(now_ + delay, posted_++), std::move(task));
  }

  // Runs the tasks that are due, including those they post, until none is. Returns how many ran.
  int RunReady() {
    int ran = 0;
    while (true) {
      Task task;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (ready_.empty()) return ran;
        task = std::move(ready_.front());
        ready_.pop_front();
      }
      task();
      ++ran;
    }
  }
  // Moves the virtual clock; delayed tasks now due join the ready ones (in due order). Does
  // not run anything.
  void Advance(std::chrono::nanoseconds by) {
    std::lock_guard<std::mutex> lock(mutex_);
    now_ += by;
    while (!delayed_.empty() && delayed_.begin()->first.first <= now_) {
      ready_.push_back(std::move(delayed_.begin()->second));
      delayed_.erase(delayed_.begin());
    }
  }
  size_t ready() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return ready_.size();
  }
  size_t delayed() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return delayed_.size();
  }

 private:
  mutable std::mutex mutex_;
  std::deque<Task> ready_;
  std::map<std::pair<std::chrono::nanoseconds, uint64_t>, Task> delayed_;
  std::chrono::nanoseconds now_{0};
  uint64_t posted_ = 0;
};

}  // namespace gputopo::testing

#endif  // GPUTOPO_TEST_SUPPORT_MANUAL_EXECUTOR_H_
