// ParserPool: reusable extender request parsers, so that a request does not pay for growing a
// parser's buffers. A parser that grew past `keep_bytes` (a huge full-Nodes body) is dropped
// after use rather than pooled, so that memory falls back after the burst.
//
// Thread safety: thread-safe.
#ifndef GPUTOPO_SRC_HTTP_PARSER_POOL_H_
#define GPUTOPO_SRC_HTTP_PARSER_POOL_H_

#include <algorithm>
#include <memory>
#include <mutex>
#include <vector>

#include "gputopo/mutex.h"
#include "src/codec/extender_codec.h"

namespace gputopo::http {

class ParserPool {
 public:
  ParserPool(size_t max_bytes, size_t keep_bytes, size_t max_pooled)
      : max_bytes_(max_bytes), keep_bytes_(keep_bytes), max_pooled_(max_pooled) {}

  class Lease {
   public:
    Lease(ParserPool& pool, std::unique_ptr<extender::ExtenderRequestParser> parser)
        : pool_(pool), parser_(std::move(parser)) {}
    ~Lease() { pool_.Return(std::move(parser_), last_size_); }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    // Parses `body` (where it is when its capacity leaves simdjson's padding); the result
    // lives until the lease ends, and `body` must live as long.
    Result<const extender::ExtenderArgs*> ParseArgs(const std::string& body) {
      last_size_ = std::max(last_size_, body.size());
      return parser_->ParseArgs(body, body.capacity());
    }

   private:
    ParserPool& pool_;
    std::unique_ptr<extender::ExtenderRequestParser> parser_;
    size_t last_size_ = 0;
  };

  Lease Acquire() {
    MutexLock lock(mutex_);
    if (!free_.empty()) {
      auto parser = std::move(free_.back());
      free_.pop_back();
      return Lease(*this, std::move(parser));
    }
    return Lease(*this, std::make_unique<extender::ExtenderRequestParser>(max_bytes_));
  }

 private:
  void Return(std::unique_ptr<extender::ExtenderRequestParser> parser, size_t used_bytes) {
    if (used_bytes > keep_bytes_) return;  // drop: frees its large buffers
    MutexLock lock(mutex_);
    if (free_.size() < max_pooled_) free_.push_back(std::move(parser));
  }

  const size_t max_bytes_;
  const size_t keep_bytes_;
  const size_t max_pooled_;
  Mutex mutex_;
  std::vector<std::unique_ptr<extender::ExtenderRequestParser>> free_ GPUTOPO_GUARDED_BY(mutex_);
};

}  // namespace gputopo::http

#endif  // GPUTOPO_SRC_HTTP_PARSER_POOL_H_
