#include "src/observability/json_log.h"

#include <spdlog/common.h>
#include <spdlog/pattern_formatter.h>

#include <cstdio>

namespace gputopo::observability {
namespace {

void Put(std::string& out, const char* data, size_t size) { out.append(data, size); }
void Put(spdlog::memory_buf_t& out, const char* data, size_t size) {
  out.append(data, data + size);
}
template <typename Out>
void Put(Out& out, std::string_view text) {
  Put(out, text.data(), text.size());
}

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// The length of the UTF-8 sequence at p[0] when it is well-formed (Unicode Table 3-7), else 0
// and, in `*invalid`, the length of its maximal ill-formed subpart (at least 1).
size_t Utf8Sequence(const unsigned char* p, size_t available, size_t* invalid) {
  const unsigned char lead = p[0];
  size_t need = 0;
  unsigned char low = 0x80;
  unsigned char high = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    need = 1;
  } else if (lead == 0xE0) {
    need = 2;
    low = 0xA0;
  } else if ((lead >= 0xE1 && lead <= 0xEC) || lead == 0xEE || lead == 0xEF) {
    need = 2;
  } else if (lead == 0xED) {  // no UTF-16 surrogates
    need = 2;
    high = 0x9F;
  } else if (lead == 0xF0) {
    need = 3;
    low = 0x90;
  } else if (lead >= 0xF1 && lead <= 0xF3) {
    need = 3;
  } else if (lead == 0xF4) {  // nothing above U+10FFFF
    need = 3;
    high = 0x8F;
  } else {  // a continuation byte, an overlong lead (C0, C1) or F5..FF
    *invalid = 1;
    return 0;
  }
  size_t k = 1;
  for (size_t j = 0; j < need; ++j, ++k) {
    if (k >= available || p[k] < (j == 0 ? low : 0x80) || p[k] > (j == 0 ? high : 0xBF)) {
      *invalid = k;
      return 0;
    }
  }
  return k;
}

template <typename Out>
void Escape(std::string_view text, Out& out) {
  static constexpr char kHex[] = "0123456789abcdef";
  const auto* bytes = reinterpret_cast<const unsigned char*>(text.data());
  const size_t size = text.size();
  size_t run = 0;  // start of the bytes not yet written that need no escaping
  size_t i = 0;
  while (i < size) {
    const unsigned char c = bytes[i];
    if (c >= 0x20 && c < 0x7F && c != '"' && c != '\\') {
      ++i;
      continue;
    }
    if (c >= 0x80) {
      size_t invalid = 0;
      if (size_t length = Utf8Sequence(bytes + i, size - i, &invalid); length > 0) {
        i += length;  // well-formed: copied with the run
        continue;
      }
      Put(out, text.data() + run, i - run);
      Put(out, kReplacement);
      i += invalid;
      run = i;
      continue;
    }
    Put(out, text.data() + run, i - run);
    switch (c) {
      case '"':
        Put(out, "\\\"");
        break;
      case '\\':
        Put(out, "\\\\");
        break;
      case '\n':
        Put(out, "\\n");
        break;
      case '\r':
        Put(out, "\\r");
        break;
      case '\t':
        Put(out, "\\t");
        break;
      default: {
        const char escaped[6] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 0xF]};
        Put(out, escaped, sizeof(escaped));
      }
    }
    ++i;
    run = i;
  }
  Put(out, text.data() + run, size - run);
}

void TwoDigits(unsigned value, char* out) {
  out[0] = static_cast<char>('0' + value / 10);
  out[1] = static_cast<char>('0' + value % 10);
}

// Writes "YYYY-MM-DDTHH:MM:SS" for `second` into `out` (room for 32); returns the length.
size_t FormatSecond(std::chrono::seconds second, char* out) {
  using std::chrono::days;
  const std::chrono::sys_seconds time(second);
  const auto day = std::chrono::floor<days>(time);
  const std::chrono::year_month_day date(day);
  const std::chrono::hh_mm_ss clock(time - day);
  const int year = static_cast<int>(date.year());
  size_t n = 0;
  if (year >= 0 && year <= 9999) {
    TwoDigits(static_cast<unsigned>(year / 100), out);
    TwoDigits(static_cast<unsigned>(year % 100), out + 2);
    n = 4;
  } else {
    n = static_cast<size_t>(std::snprintf(out, 12, "%d", year));
  }
  out[n] = '-';
  TwoDigits(static_cast<unsigned>(date.month()), out + n + 1);
  out[n + 3] = '-';
  TwoDigits(static_cast<unsigned>(date.day()), out + n + 4);
  out[n + 6] = 'T';
  TwoDigits(static_cast<unsigned>(clock.hours().count()), out + n + 7);
  out[n + 9] = ':';
  TwoDigits(static_cast<unsigned>(clock.minutes().count()), out + n + 10);
  out[n + 12] = ':';
  TwoDigits(static_cast<unsigned>(clock.seconds().count()), out + n + 13);
  return n + 15;
}

// ".mmmZ"
void AppendMillis(std::chrono::milliseconds millis, char* out) {
  const auto value = static_cast<unsigned>(millis.count());
  out[0] = '.';
  out[1] = static_cast<char>('0' + value / 100);
  TwoDigits(value % 100, out + 2);
  out[4] = 'Z';
}

}  // namespace

void AppendJsonEscaped(std::string_view text, std::string& out) { Escape(text, out); }
void AppendJsonEscaped(std::string_view text, spdlog::memory_buf_t& out) { Escape(text, out); }

std::string FormatRfc3339Millis(std::chrono::system_clock::time_point time) {
  using std::chrono::duration_cast;
  using std::chrono::milliseconds;
  const auto since_epoch = time.time_since_epoch();
  const auto second = std::chrono::floor<std::chrono::seconds>(since_epoch);
  char text[40];
  const size_t n = FormatSecond(second, text);
  AppendMillis(duration_cast<milliseconds>(since_epoch - second), text + n);
  return std::string(text, n + 5);
}

void JsonFormatter::format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) {
  using std::chrono::duration_cast;
  using std::chrono::milliseconds;
  const auto since_epoch = msg.time.time_since_epoch();
  const auto second = std::chrono::floor<std::chrono::seconds>(since_epoch);
  if (second != cached_second_) {
    cached_size_ = FormatSecond(second, cached_text_);
    cached_second_ = second;
  }
  char millis[5];
  AppendMillis(duration_cast<milliseconds>(since_epoch - second), millis);

  const spdlog::string_view_t level = spdlog::level::to_string_view(msg.level);
  Put(dest, "{\"time\":\"");
  Put(dest, cached_text_, cached_size_);
  Put(dest, millis, sizeof(millis));
  Put(dest, "\",\"level\":\"");
  Put(dest, level.data(), level.size());
  Put(dest, "\",\"logger\":\"");
  Escape(std::string_view(msg.logger_name.data(), msg.logger_name.size()), dest);
  Put(dest, "\",\"msg\":\"");
  Escape(std::string_view(msg.payload.data(), msg.payload.size()), dest);
  Put(dest, "\"}\n");
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
