// CommandRunner: runs a program and returns what it printed, behind an interface so tests can
// serve captured outputs instead (the nvidia-smi fallback of discovery uses it).
//
// Thread safety: SubprocessRunner is thread-compatible; implementations say.
#ifndef GPUTOPO_SRC_AGENT_COMMAND_RUNNER_H_
#define GPUTOPO_SRC_AGENT_COMMAND_RUNNER_H_

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "gputopo/status.h"

namespace gputopo::agent {

class CommandRunner {
 public:
  virtual ~CommandRunner() = default;
  // Runs argv[0] (searched on PATH when it has no '/') with the rest as arguments and returns
  // its standard output. Errors: "not found on PATH", "<path>: <strerror>", "exited with status
  // N: <first line of its output>", "killed by signal N", "timed out after Ns".
  virtual Result<std::string> Run(const std::vector<std::string>& argv) = 0;
};

// posix_spawnp, standard output through a pipe, standard input and error on /dev/null, signals
// unblocked in the child. A program still running after `timeout` is killed. The child's
// environment is this process's, with `extra_env` ("NAME=value" each) set on top.
class SubprocessRunner : public CommandRunner {
 public:
  explicit SubprocessRunner(std::chrono::milliseconds timeout = std::chrono::seconds(30),
                            std::vector<std::string> extra_env = {})
      : timeout_(timeout), extra_env_(std::move(extra_env)) {}
  Result<std::string> Run(const std::vector<std::string>& argv) override;

 private:
  const std::chrono::milliseconds timeout_;
  const std::vector<std::string> extra_env_;
};

}  // namespace gputopo::agent

#endif  // GPUTOPO_SRC_AGENT_COMMAND_RUNNER_H_
