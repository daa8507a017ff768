// Status and Result<T>: errors as values.
//
// gputopo code does not throw. A function that can fail returns a Status (no value) or a
// Result<T> (a value or a Status). "Does not fit" is not an error: it is a verdict (see
// policies/engine/verdict.h). Errors are for input that cannot be understood, I/O that failed,
// and conflicts with the API server.
//
// Thread safety: value types; immutable after construction, safe to share read-only.
#ifndef GPUTOPO_STATUS_H_
#define GPUTOPO_STATUS_H_

#include <cassert>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace gputopo {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,     // the input is malformed or out of range
  kNotFound,            // the object does not exist (HTTP 404)
  kAlreadyExists,       // creating something that exists
  kConflict,            // optimistic-concurrency or precondition conflict (HTTP 409)
  kGone,                // a resourceVersion is too old (HTTP 410)
  kFailedPrecondition,  // the system is not in a state where the call can succeed
  kResourceExhausted,   // a size or count limit was exceeded
  kDeadlineExceeded,    // the call timed out; its effect is unknown
  kUnavailable,         // transient failure; retrying may help
  kInternal,            // a bug or an unexpected answer
};

constexpr std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "OK";
    case StatusCode::kInvalidArgument:
      return "INVALID_ARGUMENT";
    case StatusCode::kNotFound:
      return "NOT_FOUND";
    case StatusCode::kAlreadyExists:
      return "ALREADY_EXISTS";
    case StatusCode::kConflict:
      return "CONFLICT";
    case StatusCode::kGone:
      return "GONE";
    case StatusCode::kFailedPrecondition:
      return "FAILED_PRECONDITION";
    case StatusCode::kResourceExhausted:
      return "RESOURCE_EXHAUSTED";
    case StatusCode::kDeadlineExceeded:
      return "DEADLINE_EXCEEDED";
    case StatusCode::kUnavailable:
      return "UNAVAILABLE";
    case StatusCode::kInternal:
      return "INTERNAL";
  }
  return "UNKNOWN";
}

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return {}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // "CODE: message", or "OK".
  std::string ToString() const {
    if (ok()) return "OK";
    return std::string(StatusCodeName(code_)) + ": " + message_;
  }

  // Returns a copy whose message is "context: message".
  Status WithContext(std::string_view context) const {
    if (ok()) return *this;
    return {code_, std::string(context) + ": " + message_};
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string message) {
  return {StatusCode::kInvalidArgument, std::move(message)};
}
inline Status NotFound(std::string message) { return {StatusCode::kNotFound, std::move(message)}; }
inline Status Conflict(std::string message) { return {StatusCode::kConflict, std::move(message)}; }
inline Status FailedPrecondition(std::string message) {
  return {StatusCode::kFailedPrecondition, std::move(message)};
}
inline Status ResourceExhausted(std::string message) {
  return {StatusCode::kResourceExhausted, std::move(message)};
}
inline Status Internal(std::string message) { return {StatusCode::kInternal, std::move(message)}; }
inline Status Unavailable(std::string message) {
  return {StatusCode::kUnavailable, std::move(message)};
}

// A value of type T, or the Status that explains why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : data_(std::move(value)) {}        // NOLINT(google-explicit-constructor)
  Result(Status status) : data_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    assert(!std::get<Status>(data_).ok() && "a Result holding a Status must hold an error");
  }

  bool ok() const { return std::holds_alternative<T>(data_); }

  // Precondition: ok().
  const T& value() const& { return std::get<T>(data_); }
  T& value() & { return std::get<T>(data_); }
  T&& value() && { return std::get<T>(std::move(data_)); }
  const T& operator*() const& { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

  // OK when a value is held.
  Status status() const { return ok() ? Status::Ok() : std::get<Status>(data_); }

 private:
  std::variant<T, Status> data_;
};

}  // namespace gputopo

#endif  // GPUTOPO_STATUS_H_
