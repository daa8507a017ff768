// Background threads leave the CPU to request threads: the calling thread, and only it, is moved
// to SCHED_BATCH at nice kBackgroundNice.
#include "src/app/background_priority.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <thread>

namespace gputopo::app {
namespace {

int PolicyOf(pthread_t thread) {
  int policy = -1;
  sched_param param{};
  EXPECT_EQ(pthread_getschedparam(thread, &policy, &param), 0);
  return policy;
}

int NiceOfThisThread() { return getpriority(PRIO_PROCESS, static_cast<id_t>(gettid())); }

TEST(BackgroundPriorityTest, MovesOnlyTheCallingThreadToANicedBatchClass) {
  const int before = PolicyOf(pthread_self());
  const int nice_before = NiceOfThisThread();
  ASSERT_NE(before, SCHED_BATCH);
  ASSERT_LT(nice_before, kBackgroundNice);
  int policy_in_thread = -1;
  int nice_in_thread = -1;
  std::thread worker([&] {
    const Status s = MakeThisThreadBackground();
    ASSERT_TRUE(s.ok()) << s.message();
    policy_in_thread = PolicyOf(pthread_self());
    nice_in_thread = NiceOfThisThread();
  });
  worker.join();
  EXPECT_EQ(policy_in_thread, SCHED_BATCH);
  EXPECT_EQ(nice_in_thread, kBackgroundNice);
  EXPECT_EQ(PolicyOf(pthread_self()), before);
  EXPECT_EQ(NiceOfThisThread(), nice_before);
}

// A thread already nicer than kBackgroundNice stays so (making it less nice would take a
// privilege, and a niced process asked for it).
TEST(BackgroundPriorityTest, NeverMakesAThreadLessNice) {
  int nice_in_thread = -1;
  std::thread worker([&] {
    ASSERT_EQ(setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), kBackgroundNice + 5), 0);
    const Status s = MakeThisThreadBackground();
    ASSERT_TRUE(s.ok()) << s.message();
    nice_in_thread = NiceOfThisThread();
  });
  worker.join();
  EXPECT_EQ(nice_in_thread, kBackgroundNice + 5);
}

}  // namespace
}  // namespace gputopo::app
