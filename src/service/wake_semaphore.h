// WakeSemaphore: a counting semaphore whose waits sleep in the kernel at once.
//
// std::counting_semaphore (libstdc++ 12) spins before it sleeps: an acquire polls 12 times and
// calls sched_yield 4 times; a timed acquire calls sched_yield for its first 64 us and then
// wakes up again and again (sleeping half the time waited so far, up to 64 ms at a time) until
// its deadline. A pool thread waiting for a delayed task did that between every two tasks, and
// on a machine whose two CPUs share a core, a busy sibling slows the request thread by half
// (BM_FilterWarmEvicted: 163 -> 277 us with a spinning thread on the other CPU). This wraps
// POSIX's sem_t (glibc): a post is one atomic add, plus a futex wake when a thread sleeps on
// it; a wait that cannot take a permit at once sleeps on the futex, with no spinning and no
// periodic wake-ups.
//
// Thread safety: thread-safe.
#ifndef GPUTOPO_SRC_SERVICE_WAKE_SEMAPHORE_H_
#define GPUTOPO_SRC_SERVICE_WAKE_SEMAPHORE_H_

#include <semaphore.h>

#include <chrono>
#include <cstddef>

namespace gputopo::service {

class WakeSemaphore {
 public:
  WakeSemaphore();
  ~WakeSemaphore();
  WakeSemaphore(const WakeSemaphore&) = delete;
  WakeSemaphore& operator=(const WakeSemaphore&) = delete;

  // Adds `count` permits (count >= 0), waking as many waiters.
  void Release(std::ptrdiff_t count = 1);
  // Takes a permit, sleeping until there is one.
  void Acquire();
  // Takes a permit if there is one now.
  bool TryAcquire();
  // Takes a permit, sleeping until there is one or until `deadline` (steady_clock, which is
  // CLOCK_MONOTONIC) has passed; false at the deadline.
  bool TryAcquireUntil(std::chrono::steady_clock::time_point deadline);

 private:
  sem_t sem_;
};

}  // namespace gputopo::service

#endif  // GPUTOPO_SRC_SERVICE_WAKE_SEMAPHORE_H_
