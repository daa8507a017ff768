#include "src/service/table_refresher.h"

#include <algorithm>
#include <utility>

#include "policies/engine/evaluation.h"

namespace gputopo::service {

TableRefresher::TableRefresher(policies::EvaluationCache& cache,
                               const std::function<void()>& thread_start)
    : cache_(cache), thread_([this, thread_start] {
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

uint64_t TableRefresher::Refresh(const std::shared_ptr<const policies::ClusterSnapshot>& snapshot) {
  std::vector<size_t> changed;
  const bool comparable = last_ != nullptr && last_->name_index() == snapshot->name_index();
  if (comparable) {
    for (size_t position = 0; position < snapshot->nodes().size(); ++position) {
      if (snapshot->nodes()[position] != last_->nodes()[position]) changed.push_back(position);
    }
  }
  uint64_t evaluated = 0;
  std::vector<std::pair<std::shared_ptr<policies::ShapeTable>, uint64_t>> synced;
  for (const policies::EvaluationCache::TableShape& shape : cache_.RefreshableShapes()) {
    policies::PodEvaluator evaluator(shape.pod, shape.preset, &cache_);
    const auto it = std::find_if(synced_.begin(), synced_.end(),
                                 [&](const auto& entry) { return entry.first == shape.table; });
    const bool current = comparable && it != synced_.end() && it->second == last_->generation();
    evaluated += evaluator.RefreshTable(*shape.table, *snapshot, current ? &changed : nullptr);
    synced.emplace_back(shape.table, snapshot->generation());
  }
  synced_ = std::move(synced);  // tables no longer recent are forgotten
  cache_.ReleaseRetired();      // node answers the request path set aside, freed here
  last_ = snapshot;
  return evaluated;
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
    const uint64_t evaluated = Refresh(snapshot);
    snapshot.reset();
    lock.lock();
    nodes_evaluated_ += evaluated;
    done_ = covers;
    idle_.notify_all();
  }
}

}  // namespace gputopo::service
