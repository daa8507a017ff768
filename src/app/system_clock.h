// SystemClock: the real clock. Only main constructs one.
#ifndef GPUTOPO_SRC_APP_SYSTEM_CLOCK_H_
#define GPUTOPO_SRC_APP_SYSTEM_CLOCK_H_

#include "gputopo/clock.h"

namespace gputopo::app {

class SystemClock final : public Clock {
 public:
  std::chrono::system_clock::time_point Now() const override;
  std::chrono::steady_clock::time_point MonotonicNow() const override;
};

}  // namespace gputopo::app

#endif  // GPUTOPO_SRC_APP_SYSTEM_CLOCK_H_
