// FakeClock: time that moves only when a test says so.
#ifndef GPUTOPO_TEST_SUPPORT_FAKE_CLOCK_H_
#define GPUTOPO_TEST_SUPPORT_FAKE_CLOCK_H_

#include <atomic>
#include <chrono>

#include "gputopo/clock.h"

namespace gputopo::testing {

class FakeClock final : public Clock {
 public:
  std::chrono::system_clock::time_point Now() const override {
    return std::chrono::system_clock::time_point(std::chrono::microseconds(wall_us_.load()));
  }
  std::chrono::steady_clock::time_point MonotonicNow() const override {
    return std::chrono::steady_clock::time_point(std::chrono::microseconds(mono_us_.load()));
  }
  void Advance(std::chrono::microseconds d) {
    wall_us_ += d.count();
    mono_us_ += d.count();
  }

 private:
  // 2026-11-29T00:00:00Z
  std::atomic<int64_t> wall_us_{1'795'910'400'000'000};
  std::atomic<int64_t> mono_us_{1'000'000};
};

}  // namespace gputopo::testing

#endif  // GPUTOPO_TEST_SUPPORT_FAKE_CLOCK_H_
