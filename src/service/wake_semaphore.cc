#include "src/service/wake_semaphore.h"

#include <cerrno>
#include <ctime>
#include <type_traits>

namespace gputopo::service {

// A deadline is converted to a CLOCK_MONOTONIC timespec as is: steady_clock is that clock, and
// its nanoseconds, as seconds, always fit time_t.
static_assert(
    std::is_same_v<std::chrono::steady_clock::time_point::clock, std::chrono::steady_clock>);
static_assert(sizeof(time_t) >= sizeof(std::chrono::seconds::rep));

WakeSemaphore::WakeSemaphore() { (void)sem_init(&sem_, /*pshared=*/0, 0); }

WakeSemaphore::~WakeSemaphore() { (void)sem_destroy(&sem_); }

void WakeSemaphore::Release(std::ptrdiff_t count) {
  for (std::ptrdiff_t i = 0; i < count; ++i) (void)sem_post(&sem_);
}

void WakeSemaphore::Acquire() {
  while (sem_wait(&sem_) != 0) {
    // EINTR: a signal handler ran; wait again.
  }
}

bool WakeSemaphore::TryAcquire() { return sem_trywait(&sem_) == 0; }

bool WakeSemaphore::TryAcquireUntil(std::chrono::steady_clock::time_point deadline) {
  const auto since_epoch = deadline.time_since_epoch();
  if (since_epoch.count() < 0) return TryAcquire();
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(since_epoch);
  timespec at{};
  at.tv_sec = static_cast<time_t>(seconds.count());
  at.tv_nsec = static_cast<long>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(since_epoch - seconds).count());
  for (;;) {
    if (sem_clockwait(&sem_, CLOCK_MONOTONIC, &at) == 0) return true;
    if (errno != EINTR) return false;  // ETIMEDOUT
  }
}

}  // namespace gputopo::service
