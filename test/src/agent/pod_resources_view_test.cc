// PodResourcesView: which kubelet answer may stand in for a PodResources call made now.
#include "src/agent/pod_resources_view.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace gputopo::agent {
namespace {

std::vector<PodDeviceIds> Answer(const std::string& pod) {
  return {{"default", pod, {{"main", {"GPU-a::0"}}}}};
}

TEST(PodResourcesViewTest, TheLatestAnswerAskedForAfterTheLastInvalidation) {
  PodResourcesView view;
  EXPECT_EQ(view.Current(), nullptr) << "nothing asked yet";
  const uint64_t first = view.Begin();
  const uint64_t second = view.Begin();
  view.Finish(second, Answer("second"));
  view.Finish(first, Answer("first"));  // answered late: older than what is kept
  ASSERT_NE(view.Current(), nullptr);
  EXPECT_EQ(view.Current()->front().name, "second");

  // Asked before an invalidation, answered after it: of no use.
  const uint64_t before = view.Begin();
  view.Invalidate();
  EXPECT_EQ(view.Current(), nullptr);
  view.Finish(before, Answer("before"));
  EXPECT_EQ(view.Current(), nullptr);
  const uint64_t after = view.Begin();
  view.Finish(after, Answer("after"));
  ASSERT_NE(view.Current(), nullptr);
  EXPECT_EQ(view.Current()->front().name, "after");
}

// The observer's thread and admissions on gRPC threads use it at once (run under TSan).
TEST(PodResourcesViewTest, ConcurrentUse) {
  PodResourcesView view;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&view, t] {
      for (int i = 0; i < 500; ++i) {
        const uint64_t ticket = view.Begin();
        if ((i + t) % 7 == 0) view.Invalidate();
        view.Finish(ticket, Answer("p" + std::to_string(t)));
        PodResourcesView::Answer current = view.Current();
        if (current != nullptr) {
          EXPECT_EQ(current->size(), 1u);
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  const uint64_t last = view.Begin();
  view.Finish(last, Answer("last"));
  ASSERT_NE(view.Current(), nullptr);
  EXPECT_EQ(view.Current()->front().name, "last");
}

}  // namespace
}  // namespace gputopo::agent
