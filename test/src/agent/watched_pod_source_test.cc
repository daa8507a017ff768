// WatchedPodSource against the fake API server: one list, then the watch keeps the node's pods;
// a 410 or a broken watch lists again; the field selector keeps other nodes' pods out.
#include "src/agent/watched_pod_source.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "test/src/kube/kube_fixtures.h"
#include "test/support/fake_api_server.h"
#include "test/support/fake_clock.h"

namespace gputopo::agent {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

constexpr char kResource[] = "nvidia.com/gpu";

class WatchedPodSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(api_.Start());
    config_.server = api_.base_url();
    kube_ = std::make_unique<kube::KubeClient>(config_, kube::ClientOptions{}, clock_);
  }

  void Bind(const std::string& name, const std::string& node) {
    nlohmann::json pod = gputopo::testing::GpuPod("ml", name, 1);
    pod["spec"]["nodeName"] = node;
    ASSERT_TRUE(api_.CreatePod(pod).has_value());
  }

  static std::vector<std::string> Names(WatchedPodSource& source) {
    Result<std::vector<BoundPod>> pods = source.CurrentPods();
    std::vector<std::string> out;
    if (!pods.ok()) return {"error: " + pods.status().ToString()};
    for (const BoundPod& pod : *pods) out.push_back(pod.name);
    std::sort(out.begin(), out.end());
    return out;
  }

  std::unique_ptr<WatchedPodSource> Source() {
    WatchedPodSourceOptions options;
    options.retry_delay = std::chrono::milliseconds(10);
    return std::make_unique<WatchedPodSource>(*kube_, "n1", kResource, options);
  }

  gputopo::testing::FakeApiServer api_;
  gputopo::testing::FakeClock clock_;
  kube::KubeConfig config_;
  std::unique_ptr<kube::KubeClient> kube_;
};

TEST_F(WatchedPodSourceTest, ListsOnceThenFollowsTheNodesPodsFromTheWatch) {
  Bind("a", "n1");
  Bind("other", "n2");
  std::unique_ptr<WatchedPodSource> source = Source();
  EXPECT_EQ(source->CurrentPods().status().code(), StatusCode::kUnavailable);
  source->Start();
  ASSERT_TRUE(source->WaitForChanges(1));
  EXPECT_TRUE(source->synced());
  EXPECT_THAT(Names(*source), ElementsAre("a"));
  ASSERT_TRUE(api_.WaitForOpenWatches(1, std::chrono::seconds(30)));

  Bind("b", "n1");  // ADDED
  ASSERT_TRUE(source->WaitForChanges(2));
  EXPECT_THAT(Names(*source), ElementsAre("a", "b"));
  {
    // In the order the cache first had them, which a MODIFIED keeps.
    Result<std::vector<BoundPod>> pods = source->CurrentPods();
    ASSERT_TRUE(pods.ok());
    ASSERT_EQ(pods->size(), 2u);
    const BoundPod& a = (*pods)[0].name == "a" ? (*pods)[0] : (*pods)[1];
    const BoundPod& b = (*pods)[0].name == "a" ? (*pods)[1] : (*pods)[0];
    EXPECT_GT(a.arrival, 0u);
    EXPECT_GT(b.arrival, a.arrival);
  }
  ASSERT_TRUE(api_.UpdatePod("ml", "a",
                             [](nlohmann::json& pod) {
                               pod["status"]["phase"] = "Succeeded";  // holds nothing any more
                             })
                  .has_value());
  ASSERT_TRUE(source->WaitForChanges(3));
  EXPECT_THAT(Names(*source), ElementsAre("b"));
  Bind("elsewhere", "n2");  // not this node's: no event reaches the source
  ASSERT_TRUE(api_.DeletePod("ml", "b"));
  ASSERT_TRUE(source->WaitForChanges(4));
  EXPECT_THAT(Names(*source), ::testing::IsEmpty());
  EXPECT_EQ(source->changes(), 4u) << "another node's pod reached the cache";

  EXPECT_EQ(source->lists(), 1u);
  EXPECT_EQ(api_.RequestCount("GET", "/api/v1/pods"), 1u + 1u);  // the list and one watch
  bool selected = false;
  for (const auto& request : api_.Requests()) {
    if (request.watch) {
      EXPECT_THAT(request.target, HasSubstr("fieldSelector=spec.nodeName%3Dn1"));
      selected = true;
    }
  }
  EXPECT_TRUE(selected);
  // A live list is still at hand, and agrees.
  Result<std::vector<BoundPod>> live = source->ListNow();
  ASSERT_TRUE(live.ok());
  EXPECT_TRUE(live->empty());
  source->Stop();
}

TEST_F(WatchedPodSourceTest, An410ListsAgainAndMissesNothing) {
  Bind("a", "n1");
  std::unique_ptr<WatchedPodSource> source = Source();
  source->Start();
  ASSERT_TRUE(source->WaitForChanges(1));
  ASSERT_TRUE(api_.WaitForOpenWatches(1, std::chrono::seconds(30)));
  // The watch breaks; while it is down a pod is bound and the history is compacted, so the
  // resumed watch gets 410 Expired and the source must list again to see `b`.
  api_.HoldNext("WATCH", "/api/v1/pods");
  api_.BreakWatches();
  while (api_.held_requests() == 0) {  // the resumed watch has arrived, and waits
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  Bind("b", "n1");
  api_.CompactHistory();
  api_.ReleaseHeld();
  ASSERT_TRUE(source->WaitForChanges(2));
  EXPECT_THAT(Names(*source), ElementsAre("a", "b"));
  EXPECT_EQ(source->lists(), 2u);
  source->Stop();
}

TEST_F(WatchedPodSourceTest, AFailedListIsRetried) {
  Bind("a", "n1");
  api_.FailNext("GET", "/api/v1/pods", 500, 2);
  std::unique_ptr<WatchedPodSource> source = Source();
  EXPECT_TRUE(source->cached());
  source->Start();
  ASSERT_TRUE(source->WaitForChanges(1));
  EXPECT_THAT(Names(*source), ElementsAre("a"));
  EXPECT_EQ(source->lists(), 1u);  // counted once it succeeded
  source->Stop();
  source->Stop();  // idempotent
}

}  // namespace
}  // namespace gputopo::agent
