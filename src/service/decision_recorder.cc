#include "src/service/decision_recorder.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace gputopo::service {

void TrimForLog(CycleRecord& record, size_t keep) {
  const std::vector<policies::EvaluationRef>& candidates = record.candidate_evaluations;
  if (candidates.empty()) {
    // Nothing evaluated (an error, a GPU-less filter), or trimmed already: kept as it is.
    record.snapshot.reset();
    return;
  }
  // Failures by reason: reasons are few and shared by many nodes, so count by text first.
  std::unordered_map<std::string_view, size_t> reasons;
  for (const policies::EvaluationRef& e : candidates) {
    if (!e.fits()) ++reasons[e.evaluation->reason];
  }
  for (const auto& [reason, count] : reasons) record.failure_reasons[std::string(reason)] += count;
  // Which candidates to keep, in request order.
  std::vector<size_t> kept;
  if (candidates.size() > 2 * keep) {
    // The first `keep` failures, and the `keep` best scores with ties to the earlier node: the
    // `keep` smallest (-score, index) pairs, found in linear time (a heap of the best so far
    // took most of a background thread's time at 5000 candidates in random order).
    std::vector<std::pair<double, size_t>> fitting;
    fitting.reserve(candidates.size());
    size_t failed = 0;
    for (size_t i = 0; i < candidates.size(); ++i) {
      const policies::EvaluationRef& e = candidates[i];
      if (e.fits()) {
        // A NaN score (none is expected) ranks last: sorting needs a strict weak order.
        fitting.emplace_back(std::isnan(e.weighted_score) ? std::numeric_limits<double>::infinity()
                                                          : -e.weighted_score,
                             i);
      } else {
        if (failed < keep) kept.push_back(i);
        ++failed;
      }
    }
    if (fitting.size() > keep) {
      std::nth_element(fitting.begin(), fitting.begin() + static_cast<ptrdiff_t>(keep),
                       fitting.end());
      fitting.resize(keep);
    }
    for (const auto& [score, i] : fitting) kept.push_back(i);
    std::sort(kept.begin(), kept.end());
  } else {
    kept.resize(candidates.size());
    std::iota(kept.begin(), kept.end(), size_t{0});
  }
  // unknown_nodes names the unknown candidates in order; the kept ones move to its front.
  std::vector<std::string> unknown;
  size_t unknown_seen = 0;
  size_t next = 0;  // the first candidate not yet looked at for unknown_seen
  const bool has_priorities = !record.priorities.empty();
  std::vector<int> priorities;
  record.nodes.reserve(kept.size());
  if (has_priorities) priorities.reserve(kept.size());
  for (size_t i : kept) {
    const size_t position = record.candidate_positions[i];
    CycleRecord::NodeRef ref;
    ref.evaluation = candidates[i];
    if (position == policies::ClusterSnapshot::kNotFound) {
      for (; next < i; ++next) {
        if (record.candidate_positions[next] == policies::ClusterSnapshot::kNotFound) {
          ++unknown_seen;
        }
      }
      ref.node = CycleRecord::kUnknownNode | static_cast<uint32_t>(unknown.size());
      unknown.push_back(std::move(record.unknown_nodes[unknown_seen]));
    } else {
      record.node_states.push_back(record.snapshot->nodes()[position]);
      ref.node = static_cast<uint32_t>(record.node_states.size() - 1);
    }
    record.nodes.push_back(ref);
    if (has_priorities) priorities.push_back(record.priorities[i]);
  }
  record.unknown_nodes = std::move(unknown);
  if (has_priorities) record.priorities = std::move(priorities);
  record.candidate_positions = {};
  record.candidate_evaluations = {};
  record.snapshot.reset();
}

DecisionRecorder::DecisionRecorder(CommitFn commit, Executor& executor, RecorderOptions options)
    : commit_(std::move(commit)), options_(options), tasks_(executor) {}

DecisionRecorder::DecisionRecorder(DecisionLog& log, CycleMetrics* metrics, Executor& executor,
                                   RecorderOptions options)
    : DecisionRecorder(
          [&log, metrics](std::shared_ptr<const CycleRecord> record) {
            if (metrics != nullptr) metrics->Record(*record);
            log.Add(std::move(record));
          },
          executor, options) {}

DecisionRecorder::~DecisionRecorder() {
  Flush();
  tasks_.Close();
}

void DecisionRecorder::Commit(std::shared_ptr<CycleRecord> record) const {
  TrimForLog(*record, options_.recorded_nodes);
  commit_(std::shared_ptr<const CycleRecord>(std::move(record)));
}

size_t DecisionRecorder::BatchSize() const { return std::max<size_t>(1, options_.max_pending / 2); }

void DecisionRecorder::Observe(std::shared_ptr<CycleRecord> record) {
  bool post_now = false;
  bool post_later = false;
  {
    MutexLock lock(mutex_);
    if (queued_.size() < options_.max_pending) {
      queued_.push_back(std::move(record));
      ++queued_count_;
      const bool delayed = options_.batch_delay.count() > 0;
      if (!posted_) {
        posted_ = true;
        (delayed ? post_later : post_now) = true;
      } else if (delayed && !urged_ && queued_.size() >= BatchSize()) {
        urged_ = post_now = true;  // within a batch: end its delay early, once
      }
    }
  }
  if (record != nullptr) return Commit(std::move(record));  // the queue is full: the caller pays
  if (post_now) tasks_.Post([this] { CommitQueued(true); });
  if (post_later) tasks_.PostAfter(options_.batch_delay, [this] { CommitQueued(true); });
}

void DecisionRecorder::CommitQueued(bool task) {
  std::vector<std::shared_ptr<CycleRecord>> batch;
  {
    MutexLock lock(mutex_);
    batch.swap(queued_);
    // A flush leaves the posted task be: it will find what arrives meanwhile.
    if (task) posted_ = urged_ = false;
  }
  if (batch.empty()) return;
  for (std::shared_ptr<CycleRecord>& record : batch) Commit(std::move(record));
  MutexLock lock(mutex_);
  committed_count_ += batch.size();
  committed_.notify_all();
}

void DecisionRecorder::Flush() {
  uint64_t target = 0;
  {
    MutexLock lock(mutex_);
    target = queued_count_;
  }
  CommitQueued(false);
  MutexLock lock(mutex_);
  while (committed_count_ < target) lock.Wait(committed_);
}

}  // namespace gputopo::service
