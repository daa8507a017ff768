// ParallelFor: independent work items of one cycle shared out between the calling thread and
// helper threads (the first cycle of a new pod shape evaluates thousands of nodes at once).
//
// Items are claimed a chunk at a time by whichever thread asks first. The caller claims chunks
// too, and then waits only for chunks a helper has claimed and not finished: a helper that starts
// late, or never (a busy or manual executor), costs nothing but the chunks it would have run.
// What is computed must not depend on which thread runs which chunk.
//
// Thread safety: thread-safe. `work` runs on up to helpers.threads + 1 threads at once, on
// disjoint ranges; it must keep per-worker state apart (its `worker` argument).
#ifndef GPUTOPO_EVALUATION_PARALLEL_FOR_H_
#define GPUTOPO_EVALUATION_PARALLEL_FOR_H_

#include <cstddef>
#include <functional>

#include "gputopo/executor.h"

namespace gputopo::evaluation {

// Threads that may help the request path. The executor's threads must run at the request
// threads' priority (not a background executor's: a claimed chunk would wait for the CPU).
struct EvaluationHelpers {
  Executor* executor = nullptr;  // null: the caller does everything
  int threads = 0;               // helper tasks posted per ParallelFor, at most
};

// Calls work(worker, begin, end) once for each range of a partition of [0, items) into ranges of
// at most `chunk` items (chunk > 0), in no particular order; `worker` is 0 on the calling thread
// and 1..helpers.threads on helpers. Returns once every call has returned. Posts helper tasks
// only when there is more than one chunk.
void ParallelFor(const EvaluationHelpers& helpers, size_t items, size_t chunk,
                 const std::function<void(int worker, size_t begin, size_t end)>& work);

}  // namespace gputopo::evaluation

#endif  // GPUTOPO_EVALUATION_PARALLEL_FOR_H_
