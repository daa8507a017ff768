// Background threads yield the CPU to request threads.
//
// The extender's own background work (committing decision records, refreshing evaluation
// tables) runs right after a reply, while kube-scheduler's next request may already be arriving.
// On a node with few CPUs it would otherwise take turns with the request thread. A thread in
// Linux's SCHED_IDLE class runs only when no normal thread wants its CPU, and is preempted as
// soon as one does. None of this work is needed for correctness or ever waited on by a request:
// a full recorder queue commits in the request thread, a table not yet refreshed is brought up
// to date by the next cycle.
//
// Thread safety: affects only the calling thread.
#ifndef GPUTOPO_SRC_APP_BACKGROUND_PRIORITY_H_
#define GPUTOPO_SRC_APP_BACKGROUND_PRIORITY_H_

#include "gputopo/status.h"

namespace gputopo::app {

// Puts the calling thread in SCHED_IDLE. An error (and the thread unchanged) when the system
// refuses.
Status MakeThisThreadBackground();

// The same, logging a warning when refused; what App runs first on each of its background
// threads.
void StartBackgroundThread();

}  // namespace gputopo::app

#endif  // GPUTOPO_SRC_APP_BACKGROUND_PRIORITY_H_
