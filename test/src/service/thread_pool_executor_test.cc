// ThreadPoolExecutor and TaskScope: tasks run on the pool's threads, delayed ones in due order,
// queued ones dropped at destruction; a closed scope's tasks never run, and Close waits for
// the one running. No test waits on a deadline: each waits for the event it checks.
#include "src/service/thread_pool_executor.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "src/service/task_scope.h"
#include "test/support/manual_executor.h"

namespace gputopo::service {
namespace {

using std::chrono::milliseconds;

TEST(ThreadPoolExecutorTest, RunsEveryTaskOnItsThreadsAfterThreadStart) {
  std::mutex mutex;
  std::set<std::thread::id> started;  // GUARDED_BY(mutex)
  std::vector<bool> ran_after_start;  // GUARDED_BY(mutex)
  std::promise<void> all_ran;
  std::atomic<int> remaining{100};
  ThreadPoolExecutor executor(2, [&] {
    std::lock_guard<std::mutex> lock(mutex);
    started.insert(std::this_thread::get_id());
  });
  for (int i = 0; i < 100; ++i) {
    executor.Post([&] {
      {
        std::lock_guard<std::mutex> lock(mutex);
        ran_after_start.push_back(started.count(std::this_thread::get_id()) == 1);
      }
      if (--remaining == 0) all_ran.set_value();
    });
  }
  all_ran.get_future().wait();
  std::lock_guard<std::mutex> lock(mutex);
  EXPECT_EQ(ran_after_start, std::vector<bool>(100, true));
  EXPECT_FALSE(started.count(std::this_thread::get_id())) << "a task ran in the poster";
}

TEST(ThreadPoolExecutorTest, DelayedTasksRunInDueOrderNotPostingOrder) {
  ThreadPoolExecutor executor(1);
  std::mutex mutex;
  std::vector<int> order;  // GUARDED_BY(mutex)
  std::promise<void> done;
  // Posted latest-due first; the single thread must still run them by due time. The gaps are
  // far above any scheduling jitter, and nothing here fails if the machine is slow: a late
  // thread finds all three due and runs them in due order.
  executor.PostAfter(milliseconds(60), [&] {
    std::lock_guard<std::mutex> lock(mutex);
    order.push_back(3);
    done.set_value();
  });
  executor.PostAfter(milliseconds(30), [&] {
    std::lock_guard<std::mutex> lock(mutex);
    order.push_back(2);
  });
  executor.Post([&] {
    std::lock_guard<std::mutex> lock(mutex);
    order.push_back(1);
  });
  done.get_future().wait();
  std::lock_guard<std::mutex> lock(mutex);
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
}

// Posts from many threads at once (the lock-free list they go through): each task runs exactly
// once, and each poster's immediate tasks in the order it posted them (one pool thread).
TEST(ThreadPoolExecutorTest, ConcurrentPostersTasksRunOnceEachInPostingOrder) {
  constexpr int kPosters = 4;
  constexpr int kPerPoster = 500;
  ThreadPoolExecutor executor(1);
  std::mutex mutex;
  std::vector<std::vector<int>> ran(kPosters);  // GUARDED_BY(mutex)
  std::atomic<int> delayed_ran{0};
  std::atomic<int> remaining{kPosters * kPerPoster * 2};
  std::promise<void> all_ran;
  auto done = [&] {
    if (--remaining == 0) all_ran.set_value();
  };
  std::vector<std::thread> posters;
  for (int p = 0; p < kPosters; ++p) {
    posters.emplace_back([&, p] {
      for (int i = 0; i < kPerPoster; ++i) {
        executor.Post([&, p, i] {
          {
            std::lock_guard<std::mutex> lock(mutex);
            ran[static_cast<size_t>(p)].push_back(i);
          }
          done();
        });
        executor.PostAfter(std::chrono::microseconds(i % 7), [&] {
          ++delayed_ran;
          done();
        });
      }
    });
  }
  for (std::thread& poster : posters) poster.join();
  all_ran.get_future().wait();
  EXPECT_EQ(delayed_ran.load(), kPosters * kPerPoster);
  std::lock_guard<std::mutex> lock(mutex);
  std::vector<int> in_order(kPerPoster);
  for (int i = 0; i < kPerPoster; ++i) in_order[static_cast<size_t>(i)] = i;
  for (int p = 0; p < kPosters; ++p) EXPECT_EQ(ran[static_cast<size_t>(p)], in_order) << p;
}

TEST(ThreadPoolExecutorTest, DestructionDropsQueuedTasksAndReleasesTheirCaptures) {
  auto capture = std::make_shared<int>(0);
  std::atomic<bool> ran{false};
  {
    ThreadPoolExecutor executor(1);
    executor.PostAfter(std::chrono::hours(1), [&ran, capture] { ran = true; });
    EXPECT_EQ(capture.use_count(), 2);
  }
  EXPECT_FALSE(ran.load());
  EXPECT_EQ(capture.use_count(), 1) << "the dropped task still holds its captures";
}

TEST(TaskScopeTest, AClosedScopesTasksNeverRun) {
  testing::ManualExecutor executor;
  int ran = 0;
  {
    TaskScope scope(executor);
    scope.Post([&] { ++ran; });
    scope.PostAfter(milliseconds(5), [&] { ++ran; });
    executor.RunReady();
    EXPECT_EQ(ran, 1);
    scope.Post([&] { ++ran; });  // queued, then the scope closes
  }
  executor.Advance(milliseconds(5));
  executor.RunReady();
  EXPECT_EQ(ran, 1);
}

TEST(TaskScopeTest, CloseWaitsForTheTaskRunning) {
  ThreadPoolExecutor executor(1);
  std::promise<void> started;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<bool> finished{false};
  TaskScope scope(executor);
  scope.Post([&] {
    started.set_value();
    released.wait();
    finished = true;
  });
  started.get_future().wait();
  std::atomic<bool> closed{false};
  std::thread closer([&] {
    scope.Close();
    closed = true;
    EXPECT_TRUE(finished.load()) << "Close returned while its task ran";
  });
  std::this_thread::sleep_for(milliseconds(20));  // no margin to miss: see the assertion
  EXPECT_FALSE(closed.load());
  release.set_value();
  closer.join();
  scope.Post([] { FAIL() << "posted after Close"; });
}

}  // namespace
}  // namespace gputopo::service
