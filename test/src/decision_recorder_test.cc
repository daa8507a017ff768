// DecisionRecorder: records committed off the request path, none lost, Flush as a barrier.
#include "src/service/decision_recorder.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "src/service/recent_pods.h"

namespace gputopo::service {
namespace {

std::shared_ptr<CycleRecord> Record(const std::string& pod) {
  auto record = std::make_shared<CycleRecord>();
  record->pod_key = pod;
  return record;
}

// Commits into a set, remembering on which thread.
struct Committed {
  std::mutex mutex;
  std::multiset<std::string> pods;
  std::vector<std::thread::id> threads;

  DecisionRecorder::CommitFn Fn() {
    return [this](std::shared_ptr<CycleRecord> record) {
      std::lock_guard<std::mutex> lock(mutex);
      pods.insert(record->pod_key);
      threads.push_back(std::this_thread::get_id());
    };
  }
  size_t size() {
    std::lock_guard<std::mutex> lock(mutex);
    return pods.size();
  }
};

TEST(DecisionRecorderTest, EveryRecordFromManyThreadsIsCommittedOnceByFlush) {
  Committed committed;
  DecisionRecorder recorder(committed.Fn(), 8);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) recorder.Submit(Record(std::to_string(t * 1000 + i)));
    });
  }
  for (auto& thread : threads) thread.join();
  recorder.Flush();
  ASSERT_EQ(committed.size(), 800u);
  for (int t = 0; t < 4; ++t) {
    for (int i = 0; i < 200; ++i) EXPECT_EQ(committed.pods.count(std::to_string(t * 1000 + i)), 1u);
  }
}

TEST(DecisionRecorderTest, CommitsOnItsOwnThread) {
  Committed committed;
  DecisionRecorder recorder(committed.Fn(), 8);
  recorder.Submit(Record("a"));
  recorder.Flush();
  ASSERT_EQ(committed.threads.size(), 1u);
  EXPECT_NE(committed.threads[0], std::this_thread::get_id());
}

TEST(DecisionRecorderTest, ThreadStartRunsOnTheRecorderThreadBeforeAnyCommit) {
  Committed committed;
  std::mutex mutex;
  std::vector<std::thread::id> started;  // GUARDED_BY(mutex)
  size_t commits_when_started = 99;      // GUARDED_BY(mutex)
  {
    DecisionRecorder recorder(committed.Fn(), 8, [&] {
      std::lock_guard<std::mutex> lock(mutex);
      started.push_back(std::this_thread::get_id());
      commits_when_started = committed.size();
    });
    recorder.Submit(Record("a"));
    recorder.Submit(Record("b"));
    recorder.Flush();
  }
  ASSERT_EQ(started.size(), 1u);
  EXPECT_EQ(commits_when_started, 0u);
  ASSERT_EQ(committed.threads.size(), 2u);
  EXPECT_EQ(committed.threads[0], started[0]);
  EXPECT_EQ(committed.threads[1], started[0]);
}

TEST(DecisionRecorderTest, FlushWaitsForTheCommitInProgress) {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<bool> committed{false};
  DecisionRecorder recorder(
      [&](std::shared_ptr<CycleRecord>) {
        released.wait();
        committed = true;
      },
      8);
  recorder.Submit(Record("slow"));
  std::atomic<bool> flushed{false};
  std::thread flusher([&] {
    recorder.Flush();
    flushed = true;
    EXPECT_TRUE(committed.load()) << "Flush returned before the commit ended";
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(flushed.load());
  release.set_value();
  flusher.join();
  EXPECT_TRUE(flushed.load());
}

TEST(DecisionRecorderTest, AFullQueueCommitsInTheCallerNothingIsDropped) {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::mutex mutex;
  std::vector<std::pair<std::string, std::thread::id>> order;
  std::promise<void> first_started;
  DecisionRecorder recorder(
      [&](std::shared_ptr<CycleRecord> record) {
        if (record->pod_key == "first") {
          first_started.set_value();
          released.wait();
        }
        std::lock_guard<std::mutex> lock(mutex);
        order.emplace_back(record->pod_key, std::this_thread::get_id());
      },
      1);
  recorder.Submit(Record("first"));  // taken by the recorder's thread, which then blocks
  first_started.get_future().wait();
  recorder.Submit(Record("queued"));  // fills the queue
  recorder.Submit(Record("inline"));  // no room: committed here, now
  {
    std::lock_guard<std::mutex> lock(mutex);
    ASSERT_EQ(order.size(), 1u);
    EXPECT_EQ(order[0].first, "inline");
    EXPECT_EQ(order[0].second, std::this_thread::get_id());
  }
  release.set_value();
  recorder.Flush();
  std::lock_guard<std::mutex> lock(mutex);
  ASSERT_EQ(order.size(), 3u);
  EXPECT_EQ(order[1].first, "first");
  EXPECT_EQ(order[2].first, "queued");
}

// Cycle records arrive after their reply, possibly after a later bind's record: the log keeps
// the order in which the decisions started, and a pod's latest of each verb.
TEST(DecisionLogTest, KeepsDecisionsInTheOrderTheyStartedWhateverOrderTheyArrive) {
  DecisionLog log(10, 10);
  auto cycle = [&](Verb verb, uint64_t sequence) {
    auto record = Record("ml/p");
    record->verb = verb;
    record->sequence = sequence;
    return std::shared_ptr<const CycleRecord>(record);
  };
  auto bind = std::make_shared<BindRecord>();
  bind->pod_key = "ml/p";
  bind->sequence = 3;
  log.Add(std::shared_ptr<const BindRecord>(bind));
  log.Add(cycle(Verb::kPrioritize, 2));
  log.Add(cycle(Verb::kFilter, 1));
  log.Add(cycle(Verb::kFilter, 4));
  log.Add(cycle(Verb::kFilter, 0));  // an older filter of the pod, late
  std::vector<uint64_t> order;
  for (const DecisionRecord& r : log.Recent(10)) {
    std::visit([&](const auto& record) { order.push_back(record->sequence); }, r);
  }
  EXPECT_EQ(order, (std::vector<uint64_t>{4, 3, 2, 1, 0}));  // newest first
  const std::optional<PodHistory> history = log.ForPod("ml/p");
  ASSERT_TRUE(history.has_value());
  EXPECT_EQ(history->filter->sequence, 4u);
  EXPECT_EQ(history->prioritize->sequence, 2u);
  EXPECT_EQ(history->bind->sequence, 3u);
  const uint64_t first = log.NextSequence();
  EXPECT_LT(first, log.NextSequence());
}

TEST(DecisionLogTest, BoundedInBytesAsWellAsInCount) {
  // Records with a 1 MiB error each (an echoed annotation, say) in a log of 4 MiB: however many
  // arrive, at most four are kept, of the events and of the pods, and the newest always is.
  DecisionLog log(100, 100, 4u << 20);
  for (int i = 0; i < 20; ++i) {
    auto record = Record("ml/p" + std::to_string(i));
    record->sequence = log.NextSequence();
    record->error = std::string(1u << 20, 'x');
    log.Add(std::shared_ptr<const CycleRecord>(record));
  }
  const std::vector<DecisionRecord> recent = log.Recent(100);
  EXPECT_GE(recent.size(), 2u);
  EXPECT_LE(recent.size(), 4u);
  EXPECT_EQ(std::get<0>(recent[0])->pod_key, "ml/p19");
  EXPECT_TRUE(log.ForPod("ml/p19").has_value());
  EXPECT_FALSE(log.ForPod("ml/p0").has_value());
  EXPECT_FALSE(log.ForPod("ml/p15").has_value());
  // Small records are bounded by count, as before.
  DecisionLog small(3, 100, 4u << 20);
  for (int i = 0; i < 10; ++i) {
    auto record = Record("ml/s" + std::to_string(i));
    record->sequence = small.NextSequence();
    small.Add(std::shared_ptr<const CycleRecord>(record));
  }
  EXPECT_EQ(small.Recent(100).size(), 3u);
  EXPECT_TRUE(small.ForPod("ml/s0").has_value());  // 10 pods < 100: all kept
}

TEST(RecentPodsTest, BoundedInBytesAsWellAsInCount) {
  RecentPods pods(1000, 1u << 20);
  PodInfo pod;
  pod.namespace_name = "ml";
  pod.annotations = {{"gputopo.io/group", std::string(250u << 10, 'g')}};  // 250 KB
  for (int i = 0; i < 10; ++i) {
    pod.name = "p" + std::to_string(i);
    pod.uid = "u" + std::to_string(i);
    pods.Remember(pod);
  }
  EXPECT_LE(pods.bytes(), 1u << 20);
  EXPECT_TRUE(pods.Find("u9").has_value());
  EXPECT_FALSE(pods.Find("u0").has_value());
  // One pod larger than the whole cache is not kept, and evicts nothing.
  pod.uid = "huge";
  pod.annotations = {{"gputopo.io/group", std::string(2u << 20, 'h')}};
  pods.Remember(pod);
  EXPECT_FALSE(pods.Find("huge").has_value());
  EXPECT_TRUE(pods.Find("u9").has_value());
}

TEST(DecisionRecorderTest, DestructionCommitsWhatIsPending) {
  Committed committed;
  {
    DecisionRecorder recorder(committed.Fn(), 1000);
    for (int i = 0; i < 300; ++i) recorder.Submit(Record(std::to_string(i)));
  }
  EXPECT_EQ(committed.size(), 300u);
}

// With a batch delay far beyond the test's length, every way a batch ends early is exercised:
// if one did not, the test would hang until ctest's timeout and fail.
constexpr auto kForever = std::chrono::hours(1);

TEST(DecisionRecorderTest, FlushEndsABatchDelay) {
  Committed committed;
  DecisionRecorder recorder(committed.Fn(), 8, {}, kForever);
  recorder.Submit(Record("a"));
  recorder.Submit(Record("b"));
  // Gives the thread time to start waiting out the delay, so that Flush has one to end. A slow
  // run cannot fail here: the thread then sees the Flush before it waits, and commits at once.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  recorder.Flush();
  EXPECT_EQ(committed.size(), 2u);
  recorder.Submit(Record("c"));  // a second batch, after the first one ended
  recorder.Flush();
  EXPECT_EQ(committed.size(), 3u);
}

TEST(DecisionRecorderTest, HalfAQueueEndsABatchDelayWithoutFlush) {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::string> pods;  // GUARDED_BY(mutex)
  DecisionRecorder recorder(
      [&](std::shared_ptr<CycleRecord> record) {
        std::lock_guard<std::mutex> lock(mutex);
        pods.push_back(record->pod_key);
        changed.notify_all();
      },
      8, {}, kForever);
  for (int i = 0; i < 4; ++i) recorder.Submit(Record(std::to_string(i)));  // 4 = 8 / 2
  std::unique_lock<std::mutex> lock(mutex);
  changed.wait(lock, [&] { return pods.size() == 4; });
  EXPECT_EQ(pods, (std::vector<std::string>{"0", "1", "2", "3"}));
}

TEST(DecisionRecorderTest, DestructionEndsABatchDelayAndCommitsItAll) {
  Committed committed;
  {
    DecisionRecorder recorder(committed.Fn(), 1000, {}, kForever);
    for (int i = 0; i < 3; ++i) recorder.Submit(Record(std::to_string(i)));
  }
  EXPECT_EQ(committed.size(), 3u);
}

}  // namespace
}  // namespace gputopo::service
