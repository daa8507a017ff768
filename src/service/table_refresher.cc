#include "src/service/table_refresher.h"

#include <utility>

namespace gputopo::service {

TableRefresher::TableRefresher(evaluation::EvaluationSource& source, Executor& executor)
    : source_(source), tasks_(executor) {}

void TableRefresher::Notify(std::shared_ptr<const policies::ClusterSnapshot> snapshot) {
  std::shared_ptr<const policies::ClusterSnapshot> superseded;
  bool post = false;
  {
    MutexLock lock(mutex_);
    superseded = std::exchange(latest_, std::move(snapshot));
    ++notified_;
    post = !std::exchange(posted_, true);
  }
  if (post) tasks_.Post([this] { Refresh(); });
  // `superseded` is released here, outside the lock.
}

void TableRefresher::WaitIdle() {
  MutexLock lock(mutex_);
  const uint64_t target = notified_;
  while (done_ < target) lock.Wait(idle_);
}

uint64_t TableRefresher::nodes_evaluated() const {
  MutexLock lock(mutex_);
  return nodes_evaluated_;
}

void TableRefresher::Refresh() {
  MutexLock lock(mutex_);
  std::shared_ptr<const policies::ClusterSnapshot> snapshot = std::move(latest_);
  const uint64_t covers = notified_;
  lock.Unlock();
  const uint64_t evaluated = snapshot != nullptr ? source_.Refresh(snapshot) : 0;
  snapshot.reset();
  lock.Lock();
  nodes_evaluated_ += evaluated;
  done_ = covers;
  idle_.notify_all();
  // A snapshot notified meanwhile gets a task of its own, so that other background work
  // (committing decision records) takes turns with a stream of refreshes.
  const bool again = latest_ != nullptr;
  posted_ = again;
  lock.Unlock();
  if (again) tasks_.Post([this] { Refresh(); });
}

}  // namespace gputopo::service
