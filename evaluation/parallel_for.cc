#include "evaluation/parallel_for.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <memory>

#include "gputopo/mutex.h"

namespace gputopo::evaluation {
namespace {

// Lives as long as the last helper task that was posted, which may start after ParallelFor has
// returned: such a task finds nothing left to claim and never touches `work`.
struct Claims {
  Claims(size_t items_in, size_t chunk_in, const std::function<void(int, size_t, size_t)>& work_in)
      : items(items_in), chunk(chunk_in), work(&work_in) {}

  const size_t items;
  const size_t chunk;
  // Read only by a thread holding an unfinished claim: ParallelFor has not returned then.
  const std::function<void(int, size_t, size_t)>* const work;
  std::atomic<size_t> next{0};  // the first item not yet claimed
  Mutex mutex;
  std::condition_variable all_done;
  size_t finished GPUTOPO_GUARDED_BY(mutex) = 0;  // items whose call has returned

  // Claims and runs chunks until none is left.
  void Run(int worker) {
    for (;;) {
      const size_t begin = next.fetch_add(chunk, std::memory_order_relaxed);
      if (begin >= items) return;
      const size_t end = std::min(items, begin + chunk);
      (*work)(worker, begin, end);
      MutexLock lock(mutex);
      finished += end - begin;
      if (finished == items) all_done.notify_all();
    }
  }
};

}  // namespace

void ParallelFor(const EvaluationHelpers& helpers, size_t items, size_t chunk,
                 const std::function<void(int worker, size_t begin, size_t end)>& work) {
  if (items == 0) return;
  chunk = std::max<size_t>(chunk, 1);
  const auto claims = std::make_shared<Claims>(items, chunk, work);
  if (helpers.executor != nullptr && items > chunk) {
    const size_t useful = (items + chunk - 1) / chunk - 1;  // chunks beyond the caller's first
    const int posted = static_cast<int>(std::min<size_t>(useful, std::max(helpers.threads, 0)));
    for (int worker = 1; worker <= posted; ++worker) {
      helpers.executor->Post([claims, worker] { claims->Run(worker); });
    }
  }
  claims->Run(0);
  MutexLock lock(claims->mutex);
  while (claims->finished != items) lock.Wait(claims->all_done);
}

}  // namespace gputopo::evaluation
