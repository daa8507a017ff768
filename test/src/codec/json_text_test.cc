// The one JSON string escaper and the one RFC 3339 formatter (src/codec/json_text.h).
#include "src/codec/json_text.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace gputopo::codec {
namespace {

using std::chrono::sys_days;
using std::chrono::system_clock;

constexpr std::string_view kFffd = "\xEF\xBF\xBD";

TEST(JsonTextTest, EscapesQuotesBackslashesAndControlsAndReplacesBadUtf8) {
  std::string out;
  AppendJsonEscaped(std::string_view("a\"b\\c\n\r\t\x02\x7F\xFF"), out);
  EXPECT_EQ(out, "a\\\"b\\\\c\\n\\r\\t\\u0002\\u007f" + std::string(kFffd));
  out.clear();
  AppendJsonEscaped(std::string_view("caf\xC3\xA9 \xE2\x82\xAC"), out);  // valid UTF-8: as is
  EXPECT_EQ(out, "caf\xC3\xA9 \xE2\x82\xAC");
  out.clear();
  AppendJsonEscaped(std::string_view("\xC3("), out);  // a lead byte without its continuation
  EXPECT_EQ(out, std::string(kFffd) + "(");
}

TEST(JsonTextTest, NeedsJsonEscapingFindsEveryByteThatMustBeEscaped) {
  EXPECT_FALSE(NeedsJsonEscaping(""));
  EXPECT_FALSE(NeedsJsonEscaping("gpu-node-0001.example"));
  EXPECT_FALSE(NeedsJsonEscaping("caf\xC3\xA9"));
  // Every position of a 1..20-byte string, each byte that needs it.
  for (size_t size = 1; size <= 20; ++size) {
    for (size_t at = 0; at < size; ++at) {
      for (char c : {'"', '\\', '\n', '\x01', '\x1F'}) {
        std::string text(size, 'a');
        text[at] = c;
        EXPECT_TRUE(NeedsJsonEscaping(text)) << size << " " << at << " " << int(c);
      }
    }
  }
}

TEST(JsonTextTest, Rfc3339InSecondsMillisecondsOrMicrosecondsTruncated) {
  const system_clock::time_point t = sys_days{std::chrono::year{2024} / 2 / 29} +
                                     std::chrono::hours(23) + std::chrono::minutes(59) +
                                     std::chrono::seconds(59) + std::chrono::microseconds(7890);
  EXPECT_EQ(FormatRfc3339(t), "2024-02-29T23:59:59Z");
  EXPECT_EQ(FormatRfc3339(t, 3), "2024-02-29T23:59:59.007Z");
  EXPECT_EQ(FormatRfc3339(t, 6), "2024-02-29T23:59:59.007890Z");
  EXPECT_EQ(FormatRfc3339(system_clock::time_point{}, 3), "1970-01-01T00:00:00.000Z");
  // Before the epoch the fraction still counts up from the second below.
  EXPECT_EQ(FormatRfc3339(system_clock::time_point{} - std::chrono::milliseconds(1), 3),
            "1969-12-31T23:59:59.999Z");
}

}  // namespace
}  // namespace gputopo::codec
