// Clock: the only way gputopo code reads time, so that tests can replay decisions exactly.
//
// Thread safety: implementations must be safe to call from any thread.
#ifndef GPUTOPO_CLOCK_H_
#define GPUTOPO_CLOCK_H_

#include <chrono>

namespace gputopo {

class Clock {
 public:
  virtual ~Clock() = default;
  // Wall-clock time, for timestamps people read.
  virtual std::chrono::system_clock::time_point Now() const = 0;
  // Monotonic time, for durations and timeouts.
  virtual std::chrono::steady_clock::time_point MonotonicNow() const = 0;
};

}  // namespace gputopo

#endif  // GPUTOPO_CLOCK_H_
