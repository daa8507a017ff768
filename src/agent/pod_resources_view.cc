#include "src/agent/pod_resources_view.h"

#include <utility>

namespace gputopo::agent {

uint64_t PodResourcesView::Begin() {
  MutexLock lock(mutex_);
  return ++next_ticket_;
}

PodResourcesView::Answer PodResourcesView::Finish(uint64_t ticket,
                                                  std::vector<PodDeviceIds> answer) {
  Answer made = std::make_shared<const std::vector<PodDeviceIds>>(std::move(answer));
  MutexLock lock(mutex_);
  if (ticket > kept_ticket_) {
    kept_ticket_ = ticket;
    kept_ = made;
  }
  return made;
}

void PodResourcesView::Invalidate() {
  MutexLock lock(mutex_);
  invalid_up_to_ = next_ticket_;
}

PodResourcesView::Answer PodResourcesView::Current() const {
  MutexLock lock(mutex_);
  return kept_ticket_ > invalid_up_to_ ? kept_ : nullptr;
}

}  // namespace gputopo::agent
