#include "src/observability/json_log.h"

#include <spdlog/common.h>
#include <spdlog/pattern_formatter.h>

#include <cstdio>

#include "src/codec/json_text.h"

namespace gputopo::observability {
void JsonFormatter::format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) {
  using std::chrono::duration_cast;
  using std::chrono::milliseconds;
  const auto since_epoch = msg.time.time_since_epoch();
  const auto second = std::chrono::floor<std::chrono::seconds>(since_epoch);
  if (second != cached_second_) {
    cached_text_ = codec::FormatRfc3339(std::chrono::system_clock::time_point(second));
    cached_text_.pop_back();  // the 'Z'
    cached_second_ = second;
  }
  const auto millis =
      static_cast<unsigned>(duration_cast<milliseconds>(since_epoch - second).count());
  const char fraction[5] = {'.', static_cast<char>('0' + millis / 100),
                            static_cast<char>('0' + millis / 10 % 10),
                            static_cast<char>('0' + millis % 10), 'Z'};
  auto put = [&dest](std::string_view s) { dest.append(s.data(), s.data() + s.size()); };
  const spdlog::string_view_t level = spdlog::level::to_string_view(msg.level);
  put("{\"time\":\"");
  put(cached_text_);
  put(std::string_view(fraction, sizeof(fraction)));
  put("\",\"level\":\"");
  put(std::string_view(level.data(), level.size()));
  put("\",\"logger\":\"");
  codec::AppendJsonEscaped(std::string_view(msg.logger_name.data(), msg.logger_name.size()), dest);
  put("\",\"msg\":\"");
  codec::AppendJsonEscaped(std::string_view(msg.payload.data(), msg.payload.size()), dest);
  put("\"}\n");
}

std::unique_ptr<spdlog::formatter> JsonFormatter::clone() const {
  return std::make_unique<JsonFormatter>();
}

void UseJsonLogs(spdlog::logger& logger) {
  logger.set_formatter(std::make_unique<JsonFormatter>());
}

void AppendControlEscaped(std::string_view text, std::string& out) {
  static constexpr char kHex[] = "0123456789abcdef";
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u != 0x7F) {
      out.push_back(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else {
      out += "\\x";
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 0xF]);
    }
  }
}

TextFormatter::TextFormatter()
    : pattern_(std::make_unique<spdlog::pattern_formatter>(std::string(kTextLogPattern))) {}

void TextFormatter::format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) {
  const std::string_view payload(msg.payload.data(), msg.payload.size());
  bool clean = true;
  for (const char c : payload) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7F) {
      clean = false;
      break;
    }
  }
  if (clean) return pattern_->format(msg, dest);
  std::string escaped;
  escaped.reserve(payload.size() + 16);
  AppendControlEscaped(payload, escaped);
  spdlog::details::log_msg copy = msg;
  copy.payload = spdlog::string_view_t(escaped.data(), escaped.size());
  pattern_->format(copy, dest);
}

std::unique_ptr<spdlog::formatter> TextFormatter::clone() const {
  return std::make_unique<TextFormatter>();
}

void UseTextLogs(spdlog::logger& logger) {
  logger.set_formatter(std::make_unique<TextFormatter>());
}

}  // namespace gputopo::observability
