#include "src/app/system_clock.h"

namespace gputopo::app {

std::chrono::system_clock::time_point SystemClock::Now() const {
  return std::chrono::system_clock::now();
}
std::chrono::steady_clock::time_point SystemClock::MonotonicNow() const {
  return std::chrono::steady_clock::now();
}

}  // namespace gputopo::app
