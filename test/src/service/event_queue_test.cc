// EventQueue: Events are posted on the queue's thread, never on the submitter's; a full queue
// drops and counts; Drain waits for the posts, within its timeout.
#include "src/service/event_queue.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <vector>

namespace gputopo::service {
namespace {

// A KubeApi whose RecordEvent blocks until the test opens the gate, and records what it got.
class GatedEvents : public KubeApi {
 public:
  Result<PodInfo> GetPod(std::string_view, std::string_view) override { return NotFound("unused"); }
  Status AnnotatePod(const PodRef&, std::string_view, std::string_view, std::string_view) override {
    return Status::Ok();
  }
  Status BindPod(const PodRef&, std::string_view, std::string_view,
                 const AnnotationList&) override {
    return Status::Ok();
  }
  Status RecordEvent(const PodRef& pod, std::string_view reason,
                     std::string_view message) override {
    std::unique_lock<std::mutex> lock(mutex_);
    ++entered_;
    changed_.notify_all();
    changed_.wait(lock, [&] { return open_; });
    posted_.push_back(pod.name + " " + std::string(reason) + " " + std::string(message));
    return fail_ ? Unavailable("API server down") : Status::Ok();
  }

  void Open() {
    std::lock_guard<std::mutex> lock(mutex_);
    open_ = true;
    changed_.notify_all();
  }
  void WaitEntered(int n) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return entered_ >= n; });
  }
  void Fail() {
    std::lock_guard<std::mutex> lock(mutex_);
    fail_ = true;
  }
  std::vector<std::string> posted() {
    std::lock_guard<std::mutex> lock(mutex_);
    return posted_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool open_ = false;
  bool fail_ = false;
  int entered_ = 0;
  std::vector<std::string> posted_;
};

TEST(EventQueueTest, SubmitNeverWaitsForTheApiServer) {
  GatedEvents kube;
  EventQueue queue(kube, 2);
  // The first event is taken by the worker, which blocks in RecordEvent; the submitter does not.
  EXPECT_TRUE(queue.Submit({"ml", "a", "u1"}, "GPUsAssigned", "one"));
  kube.WaitEntered(1);
  EXPECT_TRUE(queue.Submit({"ml", "b", "u2"}, "GPUsAssigned", "two"));
  EXPECT_TRUE(queue.Submit({"ml", "c", "u3"}, "GPUsAssigned", "three"));
  // Two waiting: the queue is full, so the next is dropped and counted.
  EXPECT_FALSE(queue.Submit({"ml", "d", "u4"}, "GPUsAssigned", "four"));
  EventQueueStats stats = queue.Stats();
  EXPECT_EQ(stats.pending, 2u);
  EXPECT_EQ(stats.dropped, 1u);
  EXPECT_EQ(stats.posted, 0u);
  kube.Open();
  EXPECT_TRUE(queue.Drain(std::chrono::hours(1)));
  stats = queue.Stats();
  EXPECT_EQ(stats.posted, 3u);
  EXPECT_EQ(stats.pending, 0u);
  EXPECT_EQ(kube.posted(), (std::vector<std::string>{"a GPUsAssigned one", "b GPUsAssigned two",
                                                     "c GPUsAssigned three"}));
}

TEST(EventQueueTest, SeveralWorkersPostAtOnce) {
  GatedEvents kube;
  EventQueue queue(kube, 8, {}, 3);
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(queue.Submit({"ml", "p", "u"}, "GPUsAssigned", "m"));
  kube.WaitEntered(3);  // three posts wait on the API server together
  EXPECT_EQ(queue.Stats().pending, 1u);
  kube.Open();
  EXPECT_TRUE(queue.Drain(std::chrono::hours(1)));
  EXPECT_EQ(queue.Stats().posted, 4u);
}

TEST(EventQueueTest, FailuresAreCountedNotRetried) {
  GatedEvents kube;
  kube.Fail();
  kube.Open();
  EventQueue queue(kube, 8);
  EXPECT_TRUE(queue.Submit({"ml", "a", "u1"}, "GPUsAssigned", "one"));
  EXPECT_TRUE(queue.Drain(std::chrono::hours(1)));
  const EventQueueStats stats = queue.Stats();
  EXPECT_EQ(stats.failed, 1u);
  EXPECT_EQ(stats.posted, 0u);
  EXPECT_EQ(kube.posted().size(), 1u);
}

TEST(EventQueueTest, DrainGivesUpAfterItsTimeout) {
  GatedEvents kube;
  {
    EventQueue queue(kube, 8);
    EXPECT_TRUE(queue.Submit({"ml", "a", "u1"}, "GPUsAssigned", "one"));
    kube.WaitEntered(1);
    EXPECT_TRUE(queue.Submit({"ml", "b", "u2"}, "GPUsAssigned", "two"));
    // The worker is held in RecordEvent, so the queue cannot catch up whatever the wait.
    EXPECT_FALSE(queue.Drain(std::chrono::milliseconds(0)));
    kube.Open();  // the destructor finishes the post in progress
  }
  ASSERT_FALSE(kube.posted().empty());
  EXPECT_EQ(kube.posted()[0], "a GPUsAssigned one");
}

}  // namespace
}  // namespace gputopo::service
