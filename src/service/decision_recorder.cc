#include "src/service/decision_recorder.h"

#include <algorithm>
#include <utility>

namespace gputopo::service {

DecisionRecorder::DecisionRecorder(CommitFn commit, size_t max_pending,
                                   const std::function<void()>& thread_start,
                                   std::chrono::milliseconds batch_delay)
    : commit_(std::move(commit)),
      max_pending_(max_pending),
      batch_delay_(batch_delay),
      thread_([this, thread_start] {
        if (thread_start) thread_start();
        Run();
      }) {}

DecisionRecorder::~DecisionRecorder() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  work_.notify_one();
  thread_.join();
}

void DecisionRecorder::Submit(std::shared_ptr<CycleRecord> record) {
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (pending_.size() < max_pending_) {
      pending_.push_back(std::move(record));
      ++queued_count_;
      // Within a batch the thread is already awake, waiting out the delay: leave it be.
      wake = idle_ || batch_delay_.count() == 0 || pending_.size() >= BatchSize();
    }
  }
  if (record == nullptr) {
    if (wake) work_.notify_one();
    return;
  }
  commit_(std::move(record));  // the queue is full: the caller pays, nothing is lost
}

void DecisionRecorder::Flush() {
  std::unique_lock<std::mutex> lock(mutex_);
  const uint64_t target = queued_count_;
  if (committed_count_ >= target) return;
  ++flushing_;
  work_.notify_one();  // ends a batch delay
  committed_.wait(lock, [&] { return committed_count_ >= target; });
  --flushing_;
}

size_t DecisionRecorder::BatchSize() const { return std::max<size_t>(1, max_pending_ / 2); }

void DecisionRecorder::Run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    idle_ = true;
    work_.wait(lock, [&] { return stopping_ || !pending_.empty(); });
    idle_ = false;
    if (pending_.empty()) return;  // stopping, and everything is committed
    if (batch_delay_.count() > 0) {
      // A delay, not a deadline: nothing is late if it ends early or late.
      work_.wait_for(lock, batch_delay_,
                     [&] { return stopping_ || flushing_ > 0 || pending_.size() >= BatchSize(); });
    }
    while (!pending_.empty()) {  // the whole batch, and what arrives while committing it
      std::shared_ptr<CycleRecord> record = std::move(pending_.front());
      pending_.pop_front();
      lock.unlock();
      commit_(std::move(record));
      lock.lock();
      ++committed_count_;
      committed_.notify_all();
    }
  }
}

}  // namespace gputopo::service
