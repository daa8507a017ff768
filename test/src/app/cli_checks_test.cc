// The flag checks of main (src/app/cli_checks.h), through a real CLI11 parse: good values are
// converted, bad ones fail the parse with a message naming the flag.
#include "src/app/cli_checks.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace gputopo::app {
namespace {

// Parses `args` (without the program name); the error message, empty when it parsed.
std::string Parse(CLI::App& cli, std::vector<std::string> args) {
  std::reverse(args.begin(), args.end());  // CLI11 takes the vector last argument first
  try {
    cli.parse(args);
  } catch (const CLI::ParseError& e) {
    return e.what();
  }
  return "";
}

TEST(CliChecksTest, ListenAddressesAreHostColonPortWithAPortUpTo65535) {
  for (const std::string ok : {"127.0.0.1:8888", ":0", "0.0.0.0:65535", "[::1]:80"}) {
    CLI::App cli;
    std::string listen;
    cli.add_option("--listen", listen)->check(ListenAddress());
    EXPECT_EQ(Parse(cli, {"--listen", ok}), "") << ok;
    EXPECT_EQ(listen, ok);
  }
  for (const std::string bad : {"8888", "host:", "host:65536", "host:12x", "host:123456"}) {
    CLI::App cli;
    std::string listen;
    cli.add_option("--listen", listen)->check(ListenAddress());
    EXPECT_THAT(Parse(cli, {"--listen", bad}), ::testing::HasSubstr("--listen")) << bad;
  }
  EXPECT_EQ(SplitListen(":8888").host, "0.0.0.0");
  EXPECT_EQ(SplitListen(":8888").port, 8888);
  EXPECT_EQ(SplitListen("[::1]:80").host, "[::1]");
}

TEST(CliChecksTest, DurationsTakeUnitsAndSecondsByDefault) {
  const std::vector<std::pair<std::string, double>> cases = {
      {"90", 90}, {"90s", 90}, {"500ms", 0.5}, {"2m", 120}, {"1h", 3600}, {"0", 0}};
  for (const auto& [text, want] : cases) {
    CLI::App cli;
    double seconds = -1;
    AddDurationFlag(&cli, "--grace", seconds, "");
    EXPECT_EQ(Parse(cli, {"--grace", text}), "") << text;
    EXPECT_DOUBLE_EQ(seconds, want) << text;
  }
  for (const std::string bad : {"ten", "10 parsecs", "-5s", "2d", "25h", "1H"}) {
    CLI::App cli;
    double seconds = 10;
    AddDurationFlag(&cli, "--grace", seconds, "");
    EXPECT_THAT(Parse(cli, {"--grace", bad}), ::testing::HasSubstr("--grace")) << bad;
  }
  EXPECT_EQ(Milliseconds(0.5).count(), 500);
  EXPECT_EQ(Milliseconds(90).count(), 90000);
}

}  // namespace
}  // namespace gputopo::app
