#include "src/observability/json_log.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "gputopo/excerpt.h"

namespace gputopo::observability {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::MatchesRegex;

constexpr std::string_view kFffd = "\xEF\xBF\xBD";

// A logger of its own (not registered with spdlog), writing into a string.
class JsonLogTest : public ::testing::Test {
 protected:
  JsonLogTest()
      : sink_(std::make_shared<spdlog::sinks::ostream_sink_st>(out_)), logger_("gputopo", sink_) {
    logger_.set_level(spdlog::level::trace);
    UseJsonLogs(logger_);
  }

  std::vector<std::string> Lines() const {
    std::vector<std::string> lines;
    std::istringstream in(out_.str());
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }

  // Logs `message` verbatim (no fmt formatting) and returns the one line it produced, parsed.
  json LogAndParse(std::string_view message) {
    out_.str("");
    logger_.info(message);
    const std::string text = out_.str();
    EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;
    EXPECT_EQ(text.back(), '\n');
    json parsed = json::parse(text, nullptr, /*allow_exceptions=*/false);
    EXPECT_FALSE(parsed.is_discarded()) << text;
    return parsed;
  }

  std::ostringstream out_;
  std::shared_ptr<spdlog::sinks::ostream_sink_st> sink_;
  spdlog::logger logger_;
};

TEST_F(JsonLogTest, OneObjectPerLineWithTheFourFields) {
  logger_.info("filter pod={} passed={}", "default/p1", 3);
  const std::vector<std::string> lines = Lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_THAT(lines[0], MatchesRegex("\\{\"time\":\"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:"
                                     "[0-9]{2}\\.[0-9]{3}Z\",\"level\":\"info\",\"logger\":"
                                     "\"gputopo\",\"msg\":\"filter pod=default/p1 passed=3\"\\}"));
  json parsed = json::parse(lines[0]);
  EXPECT_EQ(parsed.size(), 4u);
  EXPECT_EQ(parsed["msg"], "filter pod=default/p1 passed=3");
}

TEST_F(JsonLogTest, Levels) {
  logger_.trace("t");
  logger_.debug("d");
  logger_.info("i");
  logger_.warn("w");
  logger_.error("e");
  logger_.critical("c");
  std::vector<std::string> levels;
  for (const std::string& line : Lines()) levels.push_back(json::parse(line)["level"]);
  EXPECT_THAT(levels, ElementsAre("trace", "debug", "info", "warning", "error", "critical"));
}

TEST_F(JsonLogTest, EscapesQuotesBackslashesAndControlCharacters) {
  const std::string message = std::string("say \"hi\" \\ path\nnext\r\tend \x01\x1f\x7f") +
                              std::string(1, '\0') + "after nul";
  json parsed = LogAndParse(message);
  EXPECT_EQ(parsed["msg"], message);
  const std::string line = out_.str();
  EXPECT_NE(line.find(R"(say \"hi\" \\ path\nnext\r\tend \u0001\u001f\u007f\u0000after nul)"),
            std::string::npos)
      << line;
}

TEST_F(JsonLogTest, KeepsValidUtf8AndEmoji) {
  const std::string message = "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x9A\x80 \xF4\x8F\xBF\xBF";
  json parsed = LogAndParse(message);
  EXPECT_EQ(parsed["msg"], message);
  EXPECT_NE(out_.str().find(message), std::string::npos);  // copied, not \u-escaped
}

TEST_F(JsonLogTest, ReplacesInvalidUtf8WithReplacementCharacter) {
  const std::string r(kFffd);
  struct Case {
    std::string input;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"a\xFF"
       "b",
       "a" + r + "b"},                      // never valid
      {"\x80", r},                          // lone continuation byte
      {"\xC0\xAF", r + r},                  // overlong lead, then continuation
      {"\xE2\x82", r},                      // truncated at the end: one subpart
      {"\xE2\x82x", r + "x"},               // truncated before ASCII
      {"\xED\xA0\x80", r + r + r},          // UTF-16 surrogate
      {"\xF4\x90\x80\x80", r + r + r + r},  // above U+10FFFF
      {"\xF0\x9F\x9A", r},                  // truncated emoji
      {"\xF0\x9F\x9A\xF0\x9F\x9A\x80", r + "\xF0\x9F\x9A\x80"},  // truncated, then whole
      {"ok \xC3", "ok " + r},
  };
  for (const Case& c : cases) {
    json parsed = LogAndParse(c.input);
    EXPECT_EQ(parsed["msg"], c.expected) << "input bytes: " << c.input.size();
  }
}

TEST_F(JsonLogTest, EscapesTheLoggerName) {
  spdlog::logger named("we\"ird\n", sink_);
  UseJsonLogs(named);
  out_.str("");
  named.info("x");
  json parsed = json::parse(out_.str());
  EXPECT_EQ(parsed["logger"], "we\"ird\n");
}

TEST_F(JsonLogTest, TextLogsUseThePattern) {
  UseTextLogs(logger_);
  logger_.warn("plain {}", 1);
  EXPECT_THAT(Lines(), ElementsAre(MatchesRegex(
                           "[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3} "
                           "warning plain 1")));
  UseJsonLogs(logger_);
  out_.str("");
  logger_.warn("back");
  EXPECT_EQ(json::parse(out_.str())["msg"], "back");
}

TEST_F(JsonLogTest, TextLogsEscapeControlCharactersSoNoLineIsForged) {
  UseTextLogs(logger_);
  // A pod name from the network with a newline and a fake log line after it.
  logger_.info("filter pod={} ok", "ml/a\n2026-12-01T00:00:00.000 error forged\r\t\x1b[31m\x7f");
  const std::vector<std::string> lines = Lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_THAT(lines[0], ::testing::EndsWith("info filter pod=ml/a\\n2026-12-01T00:00:00.000 error "
                                            "forged\\r\\t\\x1b[31m\\x7f ok"));
}

TEST(ExcerptTest, LongInputIsCutWithItsLengthAndNoSplitCharacter) {
  EXPECT_EQ(Excerpt("short"), "short");
  const std::string long_name(1u << 20, 'a');
  const std::string cut = Excerpt(long_name);
  EXPECT_EQ(cut, std::string(kMaxEchoBytes, 'a') + "...(1048576 bytes)");
  // "é" is two bytes; cutting at 3 would split the second one.
  EXPECT_EQ(Excerpt("a\xC3\xA9\xC3\xA9", 4), "a\xC3\xA9...(5 bytes)");
}

TEST(JsonFormatterTest, TimeIsRfc3339UtcWithMilliseconds) {
  using std::chrono::milliseconds;
  using std::chrono::sys_days;
  const auto time = sys_days{std::chrono::year{2026} / 11 / 29} + std::chrono::hours(18) +
                    std::chrono::minutes(22) + std::chrono::seconds(46) + milliseconds(123) +
                    std::chrono::microseconds(999);  // truncated, not rounded
  JsonFormatter formatter;
  spdlog::details::log_msg msg(std::chrono::time_point_cast<spdlog::log_clock::duration>(time),
                               spdlog::source_loc{}, "l", spdlog::level::err, "m");
  spdlog::memory_buf_t buffer;
  formatter.format(msg, buffer);
  EXPECT_EQ(std::string(buffer.data(), buffer.size()),
            "{\"time\":\"2026-11-29T18:22:46.123Z\",\"level\":\"error\",\"logger\":\"l\","
            "\"msg\":\"m\"}\n");

  // The cached second is replaced when the second changes; a clone formats the same.
  msg.time += std::chrono::milliseconds(900);
  buffer.clear();
  formatter.clone()->format(msg, buffer);
  EXPECT_THAT(std::string(buffer.data(), buffer.size()),
              ::testing::HasSubstr("\"2026-11-29T18:22:47.023Z\""));
  buffer.clear();
  formatter.format(msg, buffer);
  EXPECT_THAT(std::string(buffer.data(), buffer.size()),
              ::testing::HasSubstr("\"2026-11-29T18:22:47.023Z\""));
}

}  // namespace
}  // namespace gputopo::observability
