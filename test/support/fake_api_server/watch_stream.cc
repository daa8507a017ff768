// FakeApiServer::Impl's watch streams: opening a watch (from "now" with synthetic ADDED events,
// or resumed from a resourceVersion within the history window, or a 410 ERROR event), then
// pumping events, bookmarks, timeouts and injected breaks onto the chunked response.
#include <limits>

#include "test/support/fake_api_server/impl.h"

namespace gputopo::testing {

using fake_api::BadRequest;
using fake_api::BreakMode;
using fake_api::RecordPtr;
using fake_api::SteadyClock;
using fake_api::Watcher;
using fake_api::WatchRecord;

void FakeApiServer::Impl::Watch(const httplib::Request& req, httplib::Response& res, Resource r,
                                fake_api::Filter filter) {
  const std::string rv_param = req.get_param_value("resourceVersion");
  std::optional<uint64_t> from;
  if (!rv_param.empty() && rv_param != "0") {
    from = fake_api::ParseUint(rv_param);
    if (!from) return Reply(res, BadRequest("invalid resource version: " + rv_param));
  }
  int64_t timeout_s = 0;
  if (req.has_param("timeoutSeconds")) {
    std::optional<int64_t> value = fake_api::ParseInt(req.get_param_value("timeoutSeconds"));
    if (!value) {
      return Reply(res,
                   BadRequest("invalid timeoutSeconds: " + req.get_param_value("timeoutSeconds")));
    }
    timeout_s = *value;
  }
  bool bookmarks = false;
  if (req.has_param("allowWatchBookmarks")) {
    std::optional<bool> value = fake_api::ParseBool(req.get_param_value("allowWatchBookmarks"));
    if (!value) {
      return Reply(res,
                   BadRequest("strconv.ParseBool: parsing \"" +
                              req.get_param_value("allowWatchBookmarks") + "\": invalid syntax"));
    }
    bookmarks = *value;
  }

  auto watcher = std::make_shared<Watcher>();
  watcher->resource = r;
  watcher->filter = std::move(filter);
  watcher->bookmarks = bookmarks;
  const auto now = SteadyClock::now();
  if (timeout_s > 0) watcher->deadline = now + std::chrono::seconds(timeout_s);
  uint64_t id = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    watcher->next_bookmark = now + bookmark_interval_;
    if (!from) {
      for (const auto& [key, object] : objects_[Index(r)]) {
        watcher->pending.push_back(std::make_shared<const WatchRecord>(
            WatchRecord{fake_api::kAdded, resource_version_, object, nullptr}));
      }
      watcher->start_resource_version = resource_version_;
    } else {
      const fake_api::History& history = history_[Index(r)];
      const uint64_t oldest = fake_api::OldestResumable(history, resource_version_);
      if (*from < oldest) {
        fake_api::ApiError error =
            fake_api::Expired("too old resource version: " + std::to_string(*from) + " (" +
                              std::to_string(oldest) + ")");
        watcher->error_line = fake_api::EventLine("ERROR", fake_api::StatusJson(error));
        watcher->start_resource_version = std::numeric_limits<uint64_t>::max();
      } else {
        for (const RecordPtr& record : history.events) {
          if (record->resource_version > *from) watcher->pending.push_back(record);
        }
        watcher->start_resource_version = *from;
      }
    }
    id = next_watcher_id_++;
    watchers_.emplace(id, watcher);
    state_cv_.notify_all();
  }
  res.status = 200;
  res.set_chunked_content_provider(
      "application/json",
      [this, watcher](size_t, httplib::DataSink& sink) { return Pump(*watcher, sink); },
      [this, id](bool) { RemoveWatcher(id); });
}

// Called repeatedly by httplib on the connection's thread: waits for something to send, sends
// it. Returning false closes the connection without the terminating chunk.
bool FakeApiServer::Impl::Pump(Watcher& watcher, httplib::DataSink& sink) {
  std::deque<RecordPtr> batch;
  std::string tail;
  bool finish = false;
  {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      if (stopping_ || watcher.break_mode == BreakMode::kAbrupt) return false;
      if (watcher.break_mode == BreakMode::kMidEvent) {
        std::string line;
        for (const RecordPtr& record : watcher.pending) {
          if (std::optional<std::string> encoded = fake_api::EncodeFor(watcher, *record)) {
            line = std::move(*encoded);
            break;
          }
        }
        if (line.empty()) line = fake_api::BookmarkLine(watcher.resource, resource_version_);
        lock.unlock();
        sink.write(line.data(), line.size() / 2);
        return false;
      }
      if (!watcher.error_line.empty()) {
        tail = std::move(watcher.error_line);
        watcher.error_line.clear();
        finish = true;
        break;
      }
      const auto now = SteadyClock::now();
      const bool timed_out = now >= watcher.deadline;
      const bool bookmark_due = watcher.bookmarks && (watcher.bookmark_requested ||
                                                      now >= watcher.next_bookmark || timed_out);
      if (!watcher.pending.empty() || bookmark_due || timed_out) {
        batch.swap(watcher.pending);
        if (bookmark_due) {
          if (resource_version_ >= watcher.start_resource_version) {
            tail = fake_api::BookmarkLine(watcher.resource, resource_version_);
          }
          watcher.bookmark_requested = false;
          watcher.next_bookmark = now + bookmark_interval_;
        }
        finish = timed_out;
        break;
      }
      SteadyClock::time_point wake = watcher.deadline;
      if (watcher.bookmarks) wake = std::min(wake, watcher.next_bookmark);
      if (wake == SteadyClock::time_point::max()) {
        watcher.cv.wait(lock);
      } else {
        watcher.cv.wait_until(lock, wake);
      }
    }
  }
  std::string out;
  for (const RecordPtr& record : batch) {
    if (std::optional<std::string> line = fake_api::EncodeFor(watcher, *record)) out += *line;
  }
  out += tail;
  if (!out.empty() && !sink.write(out.data(), out.size())) return false;
  if (finish) sink.done();
  return true;
}

void FakeApiServer::Impl::RemoveWatcher(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  watchers_.erase(id);
  state_cv_.notify_all();
}

}  // namespace gputopo::testing
