#include "src/codec/json_text.h"

#include <cstdio>
#include <cstring>

namespace gputopo::codec {
namespace {

// True when some byte of `text` must be escaped in a JSON string (a control character, '"' or
// '\\'). Eight bytes at a time: node names and reasons never need it, and the reply writers
// check every one of them.
inline bool WordNeedsEscaping(uint64_t word) {
  constexpr uint64_t kOnes = 0x0101010101010101ULL;
  constexpr uint64_t kHigh = 0x8080808080808080ULL;
  // A byte below 0x20, or a zero byte after xor with '"' or '\\' ("has a zero byte" is exact as
  // a yes/no answer: the borrow that can mark a wrong byte only follows a real one).
  const uint64_t quote = word ^ (kOnes * '"');
  const uint64_t backslash = word ^ (kOnes * '\\');
  return (((word - kOnes * 0x20) & ~word) | ((quote - kOnes) & ~quote) |
          ((backslash - kOnes) & ~backslash)) &
         kHigh;
}

}  // namespace

bool NeedsJsonEscaping(std::string_view text) {
  const char* data = text.data();
  const size_t size = text.size();
  uint64_t word;
  if (size < 8) {
    if (size == 0) return false;   // data may be null: no memcpy from it
    word = 0x6161616161616161ULL;  // 'a' in the bytes past the end
    std::memcpy(&word, data, size);
    return WordNeedsEscaping(word);
  }
  for (size_t i = 0; i + 8 < size; i += 8) {
    std::memcpy(&word, data + i, sizeof(word));
    if (WordNeedsEscaping(word)) return true;
  }
  std::memcpy(&word, data + size - 8, sizeof(word));  // the last 8 bytes, overlapping
  return WordNeedsEscaping(word);
}

namespace internal {

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

}  // namespace internal

namespace {

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

}  // namespace

std::string FormatRfc3339(std::chrono::system_clock::time_point time, int fraction_digits) {
  using std::chrono::duration_cast;
  const auto since_epoch = time.time_since_epoch();
  const auto second = std::chrono::floor<std::chrono::seconds>(since_epoch);
  char text[48];
  size_t n = FormatSecond(second, text);
  if (fraction_digits > 0) {
    const int digits = fraction_digits <= 3 ? 3 : 6;
    const long long fraction =
        digits == 3 ? duration_cast<std::chrono::milliseconds>(since_epoch - second).count()
                    : duration_cast<std::chrono::microseconds>(since_epoch - second).count();
    n +=
        static_cast<size_t>(std::snprintf(text + n, sizeof(text) - n, ".%0*lld", digits, fraction));
  }
  text[n++] = 'Z';
  return std::string(text, n);
}

}  // namespace gputopo::codec
