// WakeSemaphore: permits are counted, a wait takes one, a timed wait ends at its deadline or when
// a permit is released. No test depends on how fast a thread runs: a waiter whose release comes
// from another thread has a deadline far in the future, and only an already-passed deadline is
// expected to end a wait.
#include "src/service/wake_semaphore.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <thread>

namespace gputopo::service {
namespace {

using std::chrono::hours;
using std::chrono::steady_clock;

TEST(WakeSemaphoreTest, CountsPermits) {
  WakeSemaphore semaphore;
  EXPECT_FALSE(semaphore.TryAcquire());
  semaphore.Release(3);
  EXPECT_TRUE(semaphore.TryAcquire());
  semaphore.Acquire();
  EXPECT_TRUE(semaphore.TryAcquireUntil(steady_clock::now() + hours(1)));
  EXPECT_FALSE(semaphore.TryAcquire());
}

TEST(WakeSemaphoreTest, TimedWaitEndsAtAPassedDeadlineWithoutAPermit) {
  WakeSemaphore semaphore;
  EXPECT_FALSE(semaphore.TryAcquireUntil(steady_clock::now()));
  EXPECT_FALSE(semaphore.TryAcquireUntil(steady_clock::now() - hours(1)));
  EXPECT_FALSE(semaphore.TryAcquireUntil(steady_clock::time_point::min()));
  semaphore.Release();
  // A permit that is there is taken whatever the deadline.
  EXPECT_TRUE(semaphore.TryAcquireUntil(steady_clock::now() - hours(1)));
}

TEST(WakeSemaphoreTest, ReleaseWakesASleepingWaiter) {
  WakeSemaphore semaphore;
  std::promise<void> waiting;
  std::thread untimed([&] {
    waiting.set_value();
    semaphore.Acquire();
  });
  waiting.get_future().wait();
  semaphore.Release();
  untimed.join();  // returns only once the waiter took the permit

  std::promise<bool> taken;
  std::thread timed(
      [&] { taken.set_value(semaphore.TryAcquireUntil(steady_clock::time_point::max())); });
  semaphore.Release();
  EXPECT_TRUE(taken.get_future().get());
  timed.join();
  EXPECT_FALSE(semaphore.TryAcquire()) << "each release was taken once";
}

}  // namespace
}  // namespace gputopo::service
