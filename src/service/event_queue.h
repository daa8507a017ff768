// EventQueue: Kubernetes Events about pods, posted off the request path.
//
// Bind answers kube-scheduler as soon as the Binding is created; the GPUsAssigned Event (one
// more API round trip) is queued here and posted by `workers` threads (each post waits on the
// API server: with 10 ms writes one worker posts about 100 a second). The queue is bounded:
// when `capacity` events are waiting, a new one is dropped and counted (Events are best effort:
// kube-apiserver itself drops them under load). A failed post is counted, not retried.
//
// Thread safety: thread-safe. `thread_start`, when given, runs first on each worker thread (the
// application lowers their CPU priority there). With one worker, Events are posted in order.
#ifndef GPUTOPO_SRC_SERVICE_EVENT_QUEUE_H_
#define GPUTOPO_SRC_SERVICE_EVENT_QUEUE_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gputopo/kube_api.h"
#include "gputopo/mutex.h"

namespace gputopo::service {

struct EventQueueStats {
  uint64_t posted = 0;   // accepted by the API server
  uint64_t failed = 0;   // the API server refused them or could not be reached
  uint64_t dropped = 0;  // the queue was full
  size_t pending = 0;    // waiting now
};

class EventQueue {
 public:
  // `kube` must outlive the queue.
  EventQueue(KubeApi& kube, size_t capacity, const std::function<void()>& thread_start = {},
             int workers = 1);
  // Finishes the posts in progress, drops (and counts) what is still pending, and stops the
  // threads. Call Drain first to post them.
  ~EventQueue();
  EventQueue(const EventQueue&) = delete;
  EventQueue& operator=(const EventQueue&) = delete;

  // Queues a Normal event on `pod`. False (and counted as dropped) when the queue is full.
  bool Submit(PodRef pod, std::string reason, std::string message);
  // Waits until every event submitted before the call has been posted or has failed, or until
  // `timeout` has passed. True when the queue caught up.
  bool Drain(std::chrono::milliseconds timeout);
  EventQueueStats Stats() const;

 private:
  struct Event {
    PodRef pod;
    std::string reason;
    std::string message;
  };
  void Run();

  KubeApi& kube_;
  const size_t capacity_;
  mutable Mutex mutex_;
  std::condition_variable work_;  // an event was queued, or stopping
  std::condition_variable done_;  // finished_ grew
  std::deque<Event> pending_ GPUTOPO_GUARDED_BY(mutex_);
  uint64_t queued_ GPUTOPO_GUARDED_BY(mutex_) = 0;    // events ever accepted
  uint64_t finished_ GPUTOPO_GUARDED_BY(mutex_) = 0;  // accepted events posted or failed
  EventQueueStats stats_ GPUTOPO_GUARDED_BY(mutex_);  // without `pending`
  bool stopping_ GPUTOPO_GUARDED_BY(mutex_) = false;
  std::vector<std::thread> threads_;  // last: start once the members above exist
};

}  // namespace gputopo::service

#endif  // GPUTOPO_SRC_SERVICE_EVENT_QUEUE_H_
