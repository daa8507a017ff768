// DecisionRecorder: every cycle record committed once, off the request path, trimmed; Flush as
// a barrier that needs no executor; batches that end on their delay, on half a queue, or on a
// flush. Driven by hand through a ManualExecutor, and once on real threads.
#include "src/service/decision_recorder.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "src/service/thread_pool_executor.h"
#include "test/support/builders.h"
#include "test/support/manual_executor.h"
#include "test/support/test_cluster.h"

namespace gputopo::service {
namespace {

using std::chrono::milliseconds;
using testing::ManualExecutor;

std::shared_ptr<CycleRecord> Record(const std::string& pod) {
  auto record = std::make_shared<CycleRecord>();
  record->pod_key = pod;
  return record;
}

// A record's candidates as RunCycle lists them, with the evaluations they point to kept alive.
class Candidates {
 public:
  // Appends candidate `name` to `record`: at its position in `index` when that knows it, else
  // unknown (its name then in unknown_nodes).
  void Add(CycleRecord& record, std::string_view name, policies::Verdict verdict,
           std::string reason, double score, const policies::FlatNameIndex* index = nullptr) {
    policies::NodeEvaluation e;
    e.verdict = verdict;
    e.reason = std::move(reason);
    e.weighted_score = score;
    owned_.push_back(std::make_shared<const policies::NodeEvaluation>(std::move(e)));
    const size_t position =
        index != nullptr ? index->Find(name) : policies::ClusterSnapshot::kNotFound;
    record.candidate_positions.push_back(position);
    record.candidate_evaluations.push_back(policies::EvaluationRef::To(*owned_.back()));
    if (position == policies::ClusterSnapshot::kNotFound) record.unknown_nodes.emplace_back(name);
  }

 private:
  std::vector<std::shared_ptr<const policies::NodeEvaluation>> owned_;
};

// The names of the nodes a trimmed record kept, in its order.
std::vector<std::string> KeptNames(const CycleRecord& record) {
  std::vector<std::string> kept;
  for (const CycleRecord::NodeRef& ref : record.nodes) kept.push_back(record.NodeName(ref));
  return kept;
}

// Commits into a list, remembering on which thread.
struct Committed {
  std::mutex mutex;
  std::vector<std::string> pods;  // GUARDED_BY(mutex), in commit order
  std::vector<std::thread::id> threads;

  DecisionRecorder::CommitFn Fn() {
    return [this](std::shared_ptr<const CycleRecord> record) {
      std::lock_guard<std::mutex> lock(mutex);
      pods.push_back(record->pod_key);
      threads.push_back(std::this_thread::get_id());
    };
  }
  size_t size() {
    std::lock_guard<std::mutex> lock(mutex);
    return pods.size();
  }
};

RecorderOptions Options(size_t max_pending, milliseconds batch_delay = milliseconds(0)) {
  RecorderOptions options;
  options.max_pending = max_pending;
  options.batch_delay = batch_delay;
  return options;
}

TEST(DecisionRecorderTest, CommitsAsOneTaskOnTheExecutorNotInTheObserver) {
  ManualExecutor executor;
  Committed committed;
  DecisionRecorder recorder(committed.Fn(), executor, Options(8));
  recorder.Observe(Record("a"));
  recorder.Observe(Record("b"));
  EXPECT_EQ(committed.size(), 0u) << "committed on the request path";
  EXPECT_EQ(executor.ready(), 1u) << "one task for the records queued together";
  EXPECT_EQ(executor.RunReady(), 1);
  EXPECT_EQ(committed.pods, (std::vector<std::string>{"a", "b"}));
  recorder.Observe(Record("c"));  // the next batch posts a task of its own
  EXPECT_EQ(executor.RunReady(), 1);
  EXPECT_EQ(committed.size(), 3u);
}

TEST(DecisionRecorderTest, FlushCommitsInTheCallerWithoutTheExecutor) {
  ManualExecutor executor;  // never run: Flush must not need it
  Committed committed;
  DecisionRecorder recorder(committed.Fn(), executor, Options(8));
  recorder.Observe(Record("a"));
  recorder.Flush();
  ASSERT_EQ(committed.size(), 1u);
  EXPECT_EQ(committed.threads[0], std::this_thread::get_id());
  executor.RunReady();  // the posted task finds nothing left
  EXPECT_EQ(committed.size(), 1u) << "committed twice";
}

TEST(DecisionRecorderTest, AFullQueueCommitsInTheObserverNothingIsDropped) {
  ManualExecutor executor;
  Committed committed;
  DecisionRecorder recorder(committed.Fn(), executor, Options(2));
  recorder.Observe(Record("q1"));
  recorder.Observe(Record("q2"));
  recorder.Observe(Record("inline"));  // no room: committed here, now
  EXPECT_EQ(committed.pods, (std::vector<std::string>{"inline"}));
  executor.RunReady();
  EXPECT_EQ(committed.pods, (std::vector<std::string>{"inline", "q1", "q2"}));
}

TEST(DecisionRecorderTest, ABatchWaitsForItsDelayOrHalfAQueue) {
  ManualExecutor executor;
  Committed committed;
  DecisionRecorder recorder(committed.Fn(), executor, Options(8, milliseconds(20)));
  recorder.Observe(Record("a"));
  EXPECT_EQ(executor.RunReady(), 0) << "nothing is due before the delay";
  executor.Advance(milliseconds(19));
  EXPECT_EQ(executor.RunReady(), 0);
  executor.Advance(milliseconds(1));
  executor.RunReady();
  EXPECT_EQ(committed.size(), 1u);
  // Half of max_pending ends the next batch's delay at once.
  for (int i = 0; i < 4; ++i) recorder.Observe(Record(std::to_string(i)));
  executor.RunReady();
  EXPECT_EQ(committed.size(), 5u);
  executor.Advance(milliseconds(20));  // the batch's delayed task: nothing left for it
  executor.RunReady();
  EXPECT_EQ(committed.size(), 5u);
}

TEST(DecisionRecorderTest, DestructionCommitsWhatIsPendingAndLeavesQueuedTasksHarmless) {
  ManualExecutor executor;  // outlives the recorder, with its tasks still queued
  Committed committed;
  {
    DecisionRecorder recorder(committed.Fn(), executor, Options(1000, milliseconds(20)));
    for (int i = 0; i < 300; ++i) recorder.Observe(Record(std::to_string(i)));
  }
  EXPECT_EQ(committed.size(), 300u);
  executor.Advance(milliseconds(20));
  executor.RunReady();  // would touch the destroyed recorder without its TaskScope
  EXPECT_EQ(committed.size(), 300u);
}

TEST(DecisionRecorderTest, TrimsEachRecordToWhatDebugShowsAndCountsEveryReason) {
  ManualExecutor executor;
  std::vector<std::shared_ptr<const CycleRecord>> got;
  RecorderOptions options = Options(8);
  options.recorded_nodes = 2;
  DecisionRecorder recorder([&](std::shared_ptr<const CycleRecord> r) { got.push_back(r); },
                            executor, options);
  // Ten candidates: six fail (two reasons), four pass with scores 1..4.
  Candidates candidates;
  auto record = Record("ml/p");
  record->verb = Verb::kPrioritize;
  for (int i = 0; i < 10; ++i) {
    if (i < 6) {
      candidates.Add(*record, "n" + std::to_string(i), policies::Verdict::kUnschedulable,
                     i % 2 ? "full" : "unhealthy", 0);
    } else {
      candidates.Add(*record, "n" + std::to_string(i), policies::Verdict::kFits, "", i - 5);
    }
    record->priorities.push_back(i);
  }
  recorder.Observe(std::move(record));
  executor.RunReady();
  ASSERT_EQ(got.size(), 1u);
  const CycleRecord& trimmed = *got[0];
  EXPECT_EQ(trimmed.failure_reasons,
            (std::map<std::string, size_t>{{"full", 3}, {"unhealthy", 3}}));
  // The first two failures and the two best scores (n8, n9), in request order.
  EXPECT_EQ(KeptNames(trimmed), (std::vector<std::string>{"n0", "n1", "n8", "n9"}));
  EXPECT_EQ(trimmed.priorities, (std::vector<int>{0, 1, 8, 9}));
}

TEST(DecisionRecorderTest, TrimmingKeepsTheEarlierOfEqualScoresAndTheBestWhereverTheyAre) {
  // Twenty passing nodes: scores 5, except 9 at n13 and 7 at n17; keep 3. Besides the two best,
  // the earliest of the 5s (n0) is kept, whatever the order the scan met them in.
  Candidates candidates;
  CycleRecord record;
  for (int i = 0; i < 20; ++i) {
    candidates.Add(record, "n" + std::to_string(i), policies::Verdict::kFits, "",
                   i == 13   ? 9
                   : i == 17 ? 7
                             : 5);
  }
  TrimForLog(record, 3);
  EXPECT_EQ(KeptNames(record), (std::vector<std::string>{"n0", "n13", "n17"}));
}

TEST(DecisionRecorderTest, TrimmingKeepsKnownNodesStatesAndUnknownNodesNames) {
  // Candidates in request order: ghost0 (unknown), a, ghost1 (unknown), b, c. A GPU-less pod
  // fits a node gputopo does not know with the top score, so ghost1 is among the best; ghost0,
  // an earlier unknown name, is not kept, and the kept unknown must still be named ghost1.
  testing::TestCluster cluster;
  for (const char* name : {"a", "b", "c"}) {
    cluster.Add(testing::MakeNode().Name(name).Profile("dgx1").Replicas(1).Allocatable(8).Obj());
  }
  Candidates candidates;
  CycleRecord record;
  record.snapshot = cluster.state().Snapshot();
  const policies::FlatNameIndex* index = record.snapshot->name_index().get();
  candidates.Add(record, "ghost0", policies::Verdict::kFits, "", 0, index);
  candidates.Add(record, "a", policies::Verdict::kFits, "", 5, index);
  candidates.Add(record, "ghost1", policies::Verdict::kFits, "", 9, index);
  candidates.Add(record, "b", policies::Verdict::kFits, "", 7, index);
  candidates.Add(record, "c", policies::Verdict::kUnschedulable, "full", 0, index);
  record.priorities = {0, 5, 10, 7, 0};
  TrimForLog(record, 2);  // 5 > 2 * 2: the first 2 failures (c) and the 2 best (ghost1, b)
  EXPECT_EQ(KeptNames(record), (std::vector<std::string>{"ghost1", "b", "c"}));
  EXPECT_EQ(record.priorities, (std::vector<int>{10, 7, 0}));
  EXPECT_EQ(record.unknown_nodes, (std::vector<std::string>{"ghost1"}));
  EXPECT_EQ(record.node_states.size(), 2u) << "the states of b and c only";
  EXPECT_EQ(record.StateOf(record.nodes[1]).name(), "b");
  EXPECT_EQ(record.snapshot, nullptr) << "a recorded cycle does not pin its snapshot";
  EXPECT_TRUE(record.candidate_evaluations.empty());
  EXPECT_EQ(record.failure_reasons, (std::map<std::string, size_t>{{"full", 1}}));

  TrimForLog(record, 2);  // trimming again changes nothing
  EXPECT_EQ(KeptNames(record), (std::vector<std::string>{"ghost1", "b", "c"}));
  EXPECT_EQ(record.priorities, (std::vector<int>{10, 7, 0}));
  EXPECT_EQ(record.failure_reasons, (std::map<std::string, size_t>{{"full", 1}}));
}

TEST(DecisionRecorderTest, RecordsFromManyThreadsOnRealThreadsAreCommittedOnce) {
  Committed committed;
  std::atomic<int> starts{0};
  {
    ThreadPoolExecutor executor(2, [&] { ++starts; });
    DecisionRecorder recorder(committed.Fn(), executor, Options(8, milliseconds(1)));
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < 200; ++i) recorder.Observe(Record(std::to_string(t * 1000 + i)));
      });
    }
    for (auto& thread : threads) thread.join();
    recorder.Flush();
    EXPECT_EQ(committed.size(), 800u);
  }
  std::multiset<std::string> pods(committed.pods.begin(), committed.pods.end());
  for (int t = 0; t < 4; ++t) {
    for (int i = 0; i < 200; ++i) EXPECT_EQ(pods.count(std::to_string(t * 1000 + i)), 1u);
  }
  EXPECT_EQ(starts.load(), 2);
}

TEST(DecisionRecorderTest, FlushWaitsForTheCommitInProgress) {
  ThreadPoolExecutor executor(1);
  std::promise<void> started;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<bool> committed{false};
  DecisionRecorder recorder(
      [&](std::shared_ptr<const CycleRecord>) {
        started.set_value();
        released.wait();
        committed = true;
      },
      executor, Options(8));
  recorder.Observe(Record("slow"));
  started.get_future().wait();  // the executor's thread is inside the commit
  std::atomic<bool> flushed{false};
  std::thread flusher([&] {
    recorder.Flush();
    flushed = true;
    EXPECT_TRUE(committed.load()) << "Flush returned before the commit ended";
  });
  // No margin to miss: whenever the flusher gets here, the commit cannot end before release.
  std::this_thread::sleep_for(milliseconds(20));
  EXPECT_FALSE(flushed.load());
  release.set_value();
  flusher.join();
  EXPECT_TRUE(flushed.load());
}

}  // namespace
}  // namespace gputopo::service
