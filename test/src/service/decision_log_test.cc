// DecisionLog and RecentPods: bounded in count and bytes, records kept in the order decisions
// started.
#include "src/service/decision_log.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "src/service/recent_pods.h"

namespace gputopo::service {
namespace {

std::shared_ptr<CycleRecord> Record(const std::string& pod) {
  auto record = std::make_shared<CycleRecord>();
  record->pod_key = pod;
  return record;
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

}  // namespace
}  // namespace gputopo::service
