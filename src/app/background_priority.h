// Background threads yield the CPU to request threads.
//
// The extender's own background work (committing decision records, refreshing evaluation
// tables) runs right after a reply, while kube-scheduler's next request may already be arriving.
// On a node with few CPUs it would otherwise take turns with the request thread. A background
// thread runs in Linux's SCHED_BATCH class (it never preempts a request thread when it wakes)
// at nice kBackgroundNice, a tenth of a request thread's weight when both want one CPU. None of
// this work is needed for correctness: a full recorder queue commits in the request thread, a
// table not yet refreshed is brought up to date by the next cycle.
//
// Not SCHED_IDLE: the background threads take locks that request threads take too (the decision
// log, the evaluation cache's tables). A SCHED_IDLE thread preempted while holding one runs again
// only once no other thread wants the CPU, and on a loaded machine request threads waited for it
// for 0.15-1.5 s (bench/HISTORY.md, 2026-12-06). A niced thread's turn comes within a scheduling
// period: waits of at most about 15 ms in the same runs.
//
// Thread safety: affects only the calling thread.
#ifndef GPUTOPO_SRC_APP_BACKGROUND_PRIORITY_H_
#define GPUTOPO_SRC_APP_BACKGROUND_PRIORITY_H_

#include "gputopo/status.h"

namespace gputopo::app {

// The nice value of background threads (request threads keep 0).
inline constexpr int kBackgroundNice = 10;

// Puts the calling thread in SCHED_BATCH at nice kBackgroundNice (kept if the thread is nicer
// already). An error when the system refuses.
Status MakeThisThreadBackground();

// The same, logging a warning when refused; what App runs first on each of its background
// threads.
void StartBackgroundThread();

}  // namespace gputopo::app

#endif  // GPUTOPO_SRC_APP_BACKGROUND_PRIORITY_H_
