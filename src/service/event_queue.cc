#include "src/service/event_queue.h"

#include <algorithm>
#include <utility>

namespace gputopo::service {

EventQueue::EventQueue(KubeApi& kube, size_t capacity, const std::function<void()>& thread_start,
                       int workers)
    : kube_(kube), capacity_(capacity) {
  for (int i = 0; i < std::max(1, workers); ++i) {
    threads_.emplace_back([this, thread_start] {
      if (thread_start) thread_start();
      Run();
    });
  }
}

EventQueue::~EventQueue() {
  {
    MutexLock lock(mutex_);
    stopping_ = true;
  }
  work_.notify_all();
  for (std::thread& t : threads_) t.join();
}

bool EventQueue::Submit(PodRef pod, std::string reason, std::string message) {
  {
    MutexLock lock(mutex_);
    if (pending_.size() >= capacity_) {
      ++stats_.dropped;
      return false;
    }
    pending_.push_back({std::move(pod), std::move(reason), std::move(message)});
    ++queued_;
  }
  work_.notify_one();
  return true;
}

bool EventQueue::Drain(std::chrono::milliseconds timeout) {
  MutexLock lock(mutex_);
  const uint64_t target = queued_;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (finished_ < target) {
    if (lock.WaitUntil(done_, deadline) == std::cv_status::timeout) return finished_ >= target;
  }
  return true;
}

EventQueueStats EventQueue::Stats() const {
  MutexLock lock(mutex_);
  EventQueueStats out = stats_;
  out.pending = pending_.size();
  return out;
}

void EventQueue::Run() {
  MutexLock lock(mutex_);
  while (true) {
    while (!stopping_ && pending_.empty()) lock.Wait(work_);
    if (stopping_) {
      stats_.dropped += pending_.size();
      finished_ += pending_.size();
      pending_.clear();
      done_.notify_all();
      return;
    }
    Event event = std::move(pending_.front());
    pending_.pop_front();
    lock.Unlock();
    const Status status = kube_.RecordEvent(event.pod, event.reason, event.message);
    lock.Lock();
    ++(status.ok() ? stats_.posted : stats_.failed);
    ++finished_;
    done_.notify_all();
  }
}

}  // namespace gputopo::service
