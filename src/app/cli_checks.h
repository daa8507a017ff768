// CLI11 validators for main's flags that take a listen address or a duration: a bad value fails
// the parse with CLI11's own message naming the flag, before anything starts.
//
// Thread safety: the validators are values; use them while parsing, on one thread.
#ifndef GPUTOPO_SRC_APP_CLI_CHECKS_H_
#define GPUTOPO_SRC_APP_CLI_CHECKS_H_

#include <CLI/CLI.hpp>
#include <chrono>
#include <string>

namespace gputopo::app {

// HOST:PORT with a port of 0..65535 (0: any free port); HOST may be empty (every address).
CLI::Validator ListenAddress();

// Adds to `cmd` the flag `name` taking a duration, "90" (seconds), "90s", "500ms", "2m" or "1h",
// stored in `seconds`; negative durations and more than a day are refused. Its default is shown
// in --help.
CLI::Option* AddDurationFlag(CLI::App* cmd, const std::string& name, double& seconds,
                             const std::string& help);

struct HostPort {
  std::string host;  // "0.0.0.0" when the flag left it empty
  int port = 0;
};
// The parts of an address ListenAddress() accepted.
HostPort SplitListen(const std::string& listen);

// Seconds (a Duration() flag's value) as milliseconds, rounded.
std::chrono::milliseconds Milliseconds(double seconds);

}  // namespace gputopo::app

#endif  // GPUTOPO_SRC_APP_CLI_CHECKS_H_
