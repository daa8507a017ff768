#include "src/service/decision_recorder.h"

#include <utility>

namespace gputopo::service {

DecisionRecorder::DecisionRecorder(CommitFn commit, size_t max_pending,
                                   const std::function<void()>& thread_start)
    : commit_(std::move(commit)), max_pending_(max_pending), thread_([this, thread_start] {
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
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (pending_.size() < max_pending_) {
      pending_.push_back(std::move(record));
      ++queued_count_;
    }
  }
  if (record == nullptr) {
    work_.notify_one();
    return;
  }
  commit_(std::move(record));  // the queue is full: the caller pays, nothing is lost
}

void DecisionRecorder::Flush() {
  std::unique_lock<std::mutex> lock(mutex_);
  const uint64_t target = queued_count_;
  committed_.wait(lock, [&] { return committed_count_ >= target; });
}

void DecisionRecorder::Run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    work_.wait(lock, [&] { return stopping_ || !pending_.empty(); });
    if (pending_.empty()) return;  // stopping, and everything is committed
    std::shared_ptr<CycleRecord> record = std::move(pending_.front());
    pending_.pop_front();
    lock.unlock();
    commit_(std::move(record));
    lock.lock();
    ++committed_count_;
    committed_.notify_all();
  }
}

}  // namespace gputopo::service
