#include "src/app/background_priority.h"

#include <pthread.h>
#include <sched.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <system_error>

namespace gputopo::app {
namespace {

Status Refused(const std::string& what, int error) {
  return Unavailable("cannot " + what + ": " +
                     std::error_code(error, std::generic_category()).message());
}

}  // namespace

Status MakeThisThreadBackground() {
  sched_param param{};
  param.sched_priority = 0;  // the only priority SCHED_BATCH takes
  if (const int error = pthread_setschedparam(pthread_self(), SCHED_BATCH, &param); error != 0) {
    return Refused("move the thread to SCHED_BATCH", error);
  }
  // On Linux a nice value belongs to one thread when set by its id. Only ever raised: lowering
  // it takes a privilege, and a process started niced stays as nice.
  const auto self = static_cast<id_t>(gettid());
  errno = 0;
  const int current = getpriority(PRIO_PROCESS, self);
  if (current == -1 && errno != 0) return Refused("read the thread's nice value", errno);
  if (setpriority(PRIO_PROCESS, self, std::max(current, kBackgroundNice)) != 0) {
    return Refused("set the thread's nice value", errno);
  }
  return Status::Ok();
}

void StartBackgroundThread() {
  if (Status s = MakeThisThreadBackground(); !s.ok()) {
    spdlog::warn("background thread keeps normal CPU priority: {}", s.message());
  }
}

}  // namespace gputopo::app
