#include "src/service/table_refresher.h"

#include <utility>

namespace gputopo::service {

TableRefresher::TableRefresher(evaluation::EvaluationSource& source,
                               const std::function<void()>& thread_start)
    : source_(source), thread_([this, thread_start] {
        if (thread_start) thread_start();
        Run();
      }) {}

TableRefresher::~TableRefresher() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  work_.notify_one();
  thread_.join();
}

void TableRefresher::Notify(std::shared_ptr<const policies::ClusterSnapshot> snapshot) {
  std::shared_ptr<const policies::ClusterSnapshot> superseded;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    superseded = std::exchange(latest_, std::move(snapshot));
    ++notified_;
  }
  work_.notify_one();
  // `superseded` is released here, outside the lock.
}

void TableRefresher::WaitIdle() {
  std::unique_lock<std::mutex> lock(mutex_);
  const uint64_t target = notified_;
  idle_.wait(lock, [&] { return done_ >= target || stopping_; });
}

uint64_t TableRefresher::nodes_evaluated() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return nodes_evaluated_;
}

void TableRefresher::Run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    work_.wait(lock, [&] { return stopping_ || latest_ != nullptr; });
    if (stopping_) {
      idle_.notify_all();
      return;
    }
    std::shared_ptr<const policies::ClusterSnapshot> snapshot = std::move(latest_);
    const uint64_t covers = notified_;
    lock.unlock();
    const uint64_t evaluated = source_.Refresh(snapshot);
    snapshot.reset();
    lock.lock();
    nodes_evaluated_ += evaluated;
    done_ = covers;
    idle_.notify_all();
  }
}

}  // namespace gputopo::service
