// JSON logs: an spdlog formatter that writes one JSON object per line, for log collectors
// (Loki, Elasticsearch, Cloud Logging) that parse structured lines:
//
//   {"time":"2026-11-29T18:22:46.123Z","level":"info","logger":"","msg":"filter pod=..."}
//
// "time" is RFC 3339 in UTC with milliseconds; "level" is spdlog's level name ("trace",
// "debug", "info", "warning", "error", "critical"), the same word the text format prints;
// "logger" is the logger's name (empty for spdlog's default logger). The message is escaped so
// that every line is valid JSON whatever it holds: quotes and backslashes are escaped, line
// feed, carriage return and tab as \n, \r, \t, other control characters and DEL as \u00XX, and
// each maximal ill-formed UTF-8 subsequence becomes U+FFFD (as the Unicode standard recommends);
// valid UTF-8, emoji included, is copied as is.
//
// Installing a format is a call on the logger the caller passes; nothing here keeps state of
// its own. For the process-wide default logger: UseJsonLogs(*spdlog::default_logger()).
//
// Thread safety: JsonFormatter is thread-compatible (it caches the last second it formatted);
// spdlog gives every sink its own clone and calls it under the sink's lock. UseJsonLogs and
// UseTextLogs are as thread-safe as spdlog::logger::set_formatter: call them at startup, before
// other threads log.
#ifndef GPUTOPO_SRC_OBSERVABILITY_JSON_LOG_H_
#define GPUTOPO_SRC_OBSERVABILITY_JSON_LOG_H_

#include <spdlog/formatter.h>
#include <spdlog/logger.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace gputopo::observability {

// The pattern of the text logs: local time with milliseconds, the coloured level, the message.
inline constexpr std::string_view kTextLogPattern = "%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v";

class JsonFormatter final : public spdlog::formatter {
 public:
  JsonFormatter() = default;

  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override;
  std::unique_ptr<spdlog::formatter> clone() const override;

 private:
  // "YYYY-MM-DDTHH:MM:SS" of cached_second_, reused while the second does not change.
  std::chrono::seconds cached_second_{std::chrono::seconds::min()};
  std::string cached_text_;
};

// The text format: kTextLogPattern, with the message's control characters escaped (line feed,
// carriage return and tab as \n, \r, \t, others and DEL as \xNN), so that input echoed in a
// message (a pod name with a newline) cannot forge log lines.
class TextFormatter final : public spdlog::formatter {
 public:
  TextFormatter();
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override;
  std::unique_ptr<spdlog::formatter> clone() const override;

 private:
  std::unique_ptr<spdlog::formatter> pattern_;
};

// Appends `text` with control characters escaped as TextFormatter does.
void AppendControlEscaped(std::string_view text, std::string& out);

// Installs JsonFormatter on every sink of `logger`.
void UseJsonLogs(spdlog::logger& logger);
// Installs the text pattern kTextLogPattern (local time) on every sink of `logger`.
void UseTextLogs(spdlog::logger& logger);

}  // namespace gputopo::observability

#endif  // GPUTOPO_SRC_OBSERVABILITY_JSON_LOG_H_
