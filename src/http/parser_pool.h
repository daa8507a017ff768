// ParserPool: reusable extender request parsers, so that a request does not pay for growing a
// parser's buffers (for a full-Nodes body of 5,000 annotated nodes, 20 MiB, a fresh parser's
// structural index is mapped anew and page-faulted in on every request: 25-30 ms).
//
// Parsers that only handled bodies up to `keep_bytes` are pooled, up to `max_pooled`. Of those
// that grew past it, one is kept apart while large bodies keep coming (full Node objects at
// scale, where every filter and prioritize is large), if its last parse succeeded: a parser
// holds resident about as many index bytes as its largest body had structural characters, and
// a malformed body may be all of them. It is freed as soon as a request with a body up to
// `keep_bytes` is parsed, so that memory falls back once the large bodies stop.
//
// Thread safety: thread-safe.
#ifndef GPUTOPO_SRC_HTTP_PARSER_POOL_H_
#define GPUTOPO_SRC_HTTP_PARSER_POOL_H_

#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
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
    ~Lease() { pool_.Return(std::move(parser_), last_size_, last_ok_); }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    // Parses `body` (where it is when its capacity leaves simdjson's padding); the result
    // lives until the lease ends, and `body` must live as long.
    Result<const extender::ExtenderArgs*> ParseArgs(const std::string& body) {
      last_size_ = std::max(last_size_, body.size());
      Result<const extender::ExtenderArgs*> args = parser_->ParseArgs(body, body.capacity());
      last_ok_ = args.ok();
      return args;
    }
    // Which parser this lease holds (tests tell reuse by it).
    const extender::ExtenderRequestParser* parser() const { return parser_.get(); }

   private:
    ParserPool& pool_;
    std::unique_ptr<extender::ExtenderRequestParser> parser_;
    size_t last_size_ = 0;
    bool last_ok_ = false;
  };

  // A parser for a body of `body_bytes`.
  Lease Acquire(size_t body_bytes) {
    std::unique_ptr<extender::ExtenderRequestParser> parser;
    std::unique_ptr<extender::ExtenderRequestParser> retired;  // freed after the lock
    {
      MutexLock lock(mutex_);
      if (body_bytes > keep_bytes_ && large_ != nullptr) {
        parser = std::move(large_);
      } else {
        if (body_bytes <= keep_bytes_) retired = std::move(large_);  // the large bodies stopped
        if (!free_.empty()) {
          parser = std::move(free_.back());
          free_.pop_back();
        }
      }
    }
    if (parser == nullptr) parser = std::make_unique<extender::ExtenderRequestParser>(max_bytes_);
    return Lease(*this, std::move(parser));
  }

  // Whether a parser that grew past keep_bytes is kept (see above).
  bool HoldsLargeParser() const {
    MutexLock lock(mutex_);
    return large_ != nullptr;
  }

 private:
  void Return(std::unique_ptr<extender::ExtenderRequestParser> parser, size_t used_bytes,
              bool parsed) {
    MutexLock lock(mutex_);
    if (used_bytes > keep_bytes_) {
      if (parsed && large_ == nullptr) large_ = std::move(parser);
      return;  // else dropped, after the lock: frees its large buffers
    }
    if (free_.size() < max_pooled_) free_.push_back(std::move(parser));
  }

  const size_t max_bytes_;
  const size_t keep_bytes_;
  const size_t max_pooled_;
  mutable Mutex mutex_;
  std::vector<std::unique_ptr<extender::ExtenderRequestParser>> free_ GPUTOPO_GUARDED_BY(mutex_);
  std::unique_ptr<extender::ExtenderRequestParser> large_ GPUTOPO_GUARDED_BY(mutex_);
};

}  // namespace gputopo::http

#endif  // GPUTOPO_SRC_HTTP_PARSER_POOL_H_
