// JSON text pieces every writer of gputopo's shares: the one JSON string escaper and the one
// RFC 3339 formatter (reply writers, the JSON log, Kubernetes objects, /debug).
//
// Thread safety: pure functions.
#ifndef GPUTOPO_SRC_CODEC_JSON_TEXT_H_
#define GPUTOPO_SRC_CODEC_JSON_TEXT_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace gputopo::codec {

// True when `text` holds a byte JSON requires escaped in a string (below 0x20, '"' or '\\');
// 8 bytes at a time. Bytes of 0x80 and above need no escaping when they are valid UTF-8, which
// AppendJsonEscaped checks.
bool NeedsJsonEscaping(std::string_view text);

namespace internal {
// The length of the well-formed UTF-8 sequence at `bytes` (at most `size` long), or 0; then
// `*invalid` is how many bytes to replace with U+FFFD (at least 1).
size_t Utf8Sequence(const unsigned char* bytes, size_t size, size_t* invalid);
}  // namespace internal

// Appends `text` as the inside of a JSON string literal (no quotes): '"', '\\' and control
// bytes escaped (\n \r \t, else \u00XX, DEL too), well-formed UTF-8 copied as it is, and each
// ill-formed sequence replaced with U+FFFD, so the output is always valid JSON and valid UTF-8.
// `Out` is std::string or fmt's memory buffer (spdlog's), anything with append(begin, end).
template <typename Out>
void AppendJsonEscaped(std::string_view text, Out& out) {
  static constexpr char kHex[] = "0123456789abcdef";
  static constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD
  auto put = [&out](std::string_view s) { out.append(s.data(), s.data() + s.size()); };
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
      if (size_t length = internal::Utf8Sequence(bytes + i, size - i, &invalid); length > 0) {
        i += length;  // well-formed: copied with the run
        continue;
      }
      put(text.substr(run, i - run));
      put(kReplacement);
      i += invalid;
      run = i;
      continue;
    }
    put(text.substr(run, i - run));
    switch (c) {
      case '"':
        put("\\\"");
        break;
      case '\\':
        put("\\\\");
        break;
      case '\n':
        put("\\n");
        break;
      case '\r':
        put("\\r");
        break;
      case '\t':
        put("\\t");
        break;
      default: {
        const char escaped[6] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 0xF]};
        put(std::string_view(escaped, sizeof(escaped)));
      }
    }
    ++i;
    run = i;
  }
  put(text.substr(run));
}

// "2026-11-29T18:22:46Z" with `fraction_digits` 0 (metav1.Time, as the API server writes it),
// "2026-11-29T18:22:46.123Z" with 3 (the JSON log), "...46.123456Z" with 6 (/debug); UTC, the
// fraction truncated. Other digit counts are taken as the nearest of 0, 3 and 6 above them.
std::string FormatRfc3339(std::chrono::system_clock::time_point time, int fraction_digits = 0);

}  // namespace gputopo::codec

#endif  // GPUTOPO_SRC_CODEC_JSON_TEXT_H_
