// FakeApiServer::Impl's test controls beside the objects: fault rules, the watch-cache history,
// bookmarks, broken watches, and the record of requests received.
#include <algorithm>
#include <set>

#include "test/support/fake_api_server/impl.h"

namespace gputopo::testing {
namespace {

constexpr auto kBreakWatchesWait = std::chrono::seconds(5);

}  // namespace

using fake_api::FaultRule;
using fake_api::History;
using fake_api::ToUpper;

void FakeApiServer::Impl::AddFailure(std::string method, std::string path_prefix, int status,
                                     int count) {
  if (count <= 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  failures_.push_back(FaultRule{ToUpper(method), std::move(path_prefix), status,
                                std::chrono::milliseconds(0), count});
}

void FakeApiServer::Impl::AddDelay(std::string method, std::string path_prefix,
                                   std::chrono::milliseconds delay, int count) {
  if (count <= 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  delays_.push_back(FaultRule{ToUpper(method), std::move(path_prefix), 0, delay, count});
}

void FakeApiServer::Impl::AddHold(std::string method, std::string path_prefix, int count) {
  if (count <= 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  delays_.push_back(FaultRule{ToUpper(method), std::move(path_prefix), 0,
                              std::chrono::milliseconds(0), count, /*hold=*/true});
}

void FakeApiServer::Impl::ReleaseHeld() {
  std::lock_guard<std::mutex> lock(mu_);
  ++release_generation_;
  state_cv_.notify_all();
}

size_t FakeApiServer::Impl::held_requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return held_;
}

void FakeApiServer::Impl::SetHistoryWindow(size_t events) {
  std::lock_guard<std::mutex> lock(mu_);
  history_window_ = std::max<size_t>(events, 1);
  for (History& history : history_) TrimHistory(history);
}

void FakeApiServer::Impl::CompactHistory() {
  std::lock_guard<std::mutex> lock(mu_);
  for (History& history : history_) {
    history.events.clear();
    history.evicted = false;
    history.list_resource_version = resource_version_;
  }
  snapshots_.clear();
}

void FakeApiServer::Impl::SetBookmarkInterval(std::chrono::milliseconds interval) {
  std::lock_guard<std::mutex> lock(mu_);
  bookmark_interval_ = std::max(interval, std::chrono::milliseconds(1));
  const auto now = fake_api::SteadyClock::now();
  for (auto& [id, watcher] : watchers_) {
    watcher->next_bookmark = std::min(watcher->next_bookmark, now + interval);
    watcher->cv.notify_all();
  }
}

void FakeApiServer::Impl::BreakWatches(fake_api::BreakMode mode) {
  std::unique_lock<std::mutex> lock(mu_);
  std::set<uint64_t> broken;
  for (auto& [id, watcher] : watchers_) {
    watcher->break_mode = mode;
    watcher->cv.notify_all();
    broken.insert(id);
  }
  state_cv_.wait_for(lock, kBreakWatchesWait, [&] {
    return std::none_of(broken.begin(), broken.end(),
                        [&](uint64_t id) { return watchers_.count(id) != 0; });
  });
}

void FakeApiServer::Impl::SendBookmarks() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [id, watcher] : watchers_) {
    if (!watcher->bookmarks) continue;
    watcher->bookmark_requested = true;
    watcher->cv.notify_all();
  }
}

size_t FakeApiServer::Impl::RequestCount(std::string_view method, std::string_view path) const {
  const std::string wanted = ToUpper(method);
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<size_t>(
      std::count_if(requests_.begin(), requests_.end(), [&](const RecordedRequest& r) {
        if (r.path != path) return false;
        return wanted == "WATCH" ? r.watch : r.method == wanted;
      }));
}

std::vector<FakeApiServer::RecordedRequest> FakeApiServer::Impl::Requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

size_t FakeApiServer::Impl::open_watches() const {
  std::lock_guard<std::mutex> lock(mu_);
  return watchers_.size();
}

bool FakeApiServer::Impl::WaitForOpenWatches(size_t count,
                                             std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  return state_cv_.wait_for(lock, timeout, [&] { return watchers_.size() >= count; });
}

}  // namespace gputopo::testing
