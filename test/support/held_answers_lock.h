// HeldAnswersLock: holds an EvaluationCache's node-answer lock on a thread of its own until
// destroyed, as a background refresh preempted in the middle of an insert does. For tests of
// the request path's CacheAccess::kSkipWhenBusy (which must not wait for it).
//
// Thread safety: construct and destroy on one thread; the lock is held from the constructor's
// return to the destructor's.
#ifndef GPUTOPO_TEST_SUPPORT_HELD_ANSWERS_LOCK_H_
#define GPUTOPO_TEST_SUPPORT_HELD_ANSWERS_LOCK_H_

#include <future>
#include <thread>
#include <utility>

#include "evaluation/evaluation_cache.h"

namespace gputopo::testing {

class HeldAnswersLock {
 public:
  explicit HeldAnswersLock(evaluation::EvaluationCache& cache) {
    std::promise<void> held;
    std::future<void> is_held = held.get_future();
    std::future<void> released = release_.get_future();
    thread_ = std::thread([&cache, &held, released = std::move(released)] {
      evaluation::EvaluationCache::AnswersLockHolder lock(cache);
      held.set_value();
      released.wait();
    });
    is_held.wait();
  }
  ~HeldAnswersLock() {
    release_.set_value();
    thread_.join();
  }
  HeldAnswersLock(const HeldAnswersLock&) = delete;
  HeldAnswersLock& operator=(const HeldAnswersLock&) = delete;

 private:
  std::promise<void> release_;
  std::thread thread_;
};

}  // namespace gputopo::testing

#endif  // GPUTOPO_TEST_SUPPORT_HELD_ANSWERS_LOCK_H_
