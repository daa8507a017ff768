#include "src/app/background_priority.h"

#include <pthread.h>
#include <sched.h>
#include <spdlog/spdlog.h>

#include <string>
#include <system_error>

namespace gputopo::app {

Status MakeThisThreadBackground() {
  sched_param param{};
  param.sched_priority = 0;  // the only priority SCHED_IDLE takes
  const int error = pthread_setschedparam(pthread_self(), SCHED_IDLE, &param);
  if (error != 0) {
    return Unavailable(std::string("cannot move the thread to SCHED_IDLE: ") +
                       std::error_code(error, std::generic_category()).message());
  }
  return Status::Ok();
}

void StartBackgroundThread() {
  if (Status s = MakeThisThreadBackground(); !s.ok()) {
    spdlog::warn("background thread keeps normal CPU priority: {}", s.message());
  }
}

}  // namespace gputopo::app
