// CycleObserver: who is told of every filter and prioritize cycle, with the cycle's record.
//
// ExtenderService's cycles are pure: they return their reply and hand the record of what they
// decided (every candidate's evaluation, for /debug) to the observer, which owns it from then
// on. The server's observer is the DecisionRecorder; tests may keep the records themselves.
//
// Thread safety: Observe is called concurrently, from request threads, before the reply is
// written: implementations must be thread-safe and quick.
#ifndef GPUTOPO_SRC_SERVICE_CYCLE_OBSERVER_H_
#define GPUTOPO_SRC_SERVICE_CYCLE_OBSERVER_H_

#include <memory>

#include "src/service/decision_log.h"

namespace gputopo::service {

class CycleObserver {
 public:
  virtual ~CycleObserver() = default;
  // `record` is the only reference to it: the observer may change it (trim it) at will.
  virtual void Observe(std::shared_ptr<CycleRecord> record) = 0;
};

}  // namespace gputopo::service

#endif  // GPUTOPO_SRC_SERVICE_CYCLE_OBSERVER_H_
