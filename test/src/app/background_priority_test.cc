// Background threads really leave the CPU to request threads: the calling thread, and only it,
// is moved to SCHED_IDLE.
#include "src/app/background_priority.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>

#include <thread>

namespace gputopo::app {
namespace {

int PolicyOf(pthread_t thread) {
  int policy = -1;
  sched_param param{};
  EXPECT_EQ(pthread_getschedparam(thread, &policy, &param), 0);
  return policy;
}

TEST(BackgroundPriorityTest, MovesOnlyTheCallingThreadToSchedIdle) {
  const int before = PolicyOf(pthread_self());
  ASSERT_NE(before, SCHED_IDLE);
  int policy_in_thread = -1;
  std::thread worker([&] {
    const Status s = MakeThisThreadBackground();
    ASSERT_TRUE(s.ok()) << s.message();
    policy_in_thread = PolicyOf(pthread_self());
  });
  worker.join();
  EXPECT_EQ(policy_in_thread, SCHED_IDLE);
  EXPECT_EQ(PolicyOf(pthread_self()), before);
}

}  // namespace
}  // namespace gputopo::app
