#include "src/agent/command_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string_view>

extern char** environ;

namespace gputopo::agent {
namespace {

constexpr size_t kMaxOutput = 16u << 20;

std::string FirstLine(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  if (line.size() > 200) line.resize(200);
  return line;
}

}  // namespace

Result<std::string> SubprocessRunner::Run(const std::vector<std::string>& argv) {
  if (argv.empty()) return InvalidArgument("no command");
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return Internal(std::string("pipe: ") + std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);  // main blocks SIGTERM for its signal thread
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  // This process's environment, less what extra_env_ sets, then extra_env_.
  std::vector<char*> env;
  for (char** var = environ; *var != nullptr; ++var) {
    const std::string_view entry(*var);
    const std::string_view name = entry.substr(0, entry.find('='));
    const bool replaced = std::any_of(extra_env_.begin(), extra_env_.end(), [&](const auto& e) {
      return std::string_view(e).substr(0, e.find('=')) == name;
    });
    if (!replaced) env.push_back(*var);
  }
  for (const std::string& var : extra_env_) env.push_back(const_cast<char*>(var.c_str()));
  env.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, argv[0].c_str(), &actions, &attr, args.data(), env.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  close(fds[1]);
  if (spawned != 0) {
    close(fds[0]);
    if (spawned == ENOENT && argv[0].find('/') == std::string::npos) {
      return NotFound("not found on PATH");
    }
    return NotFound(argv[0] + ": " + std::strerror(spawned));
  }
  std::string output;
  bool timed_out = false;
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  char buffer[65536];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int ready = poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      timed_out = ready == 0;
      break;
    }
    const ssize_t got = read(fds[0], buffer, sizeof(buffer));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    if (output.size() < kMaxOutput) output.append(buffer, static_cast<size_t>(got));
  }
  close(fds[0]);
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    return Unavailable(
        "timed out after " +
        std::to_string(std::chrono::duration_cast<std::chrono::seconds>(timeout_).count()) + "s");
  }
  if (WIFSIGNALED(status))
    return Unavailable("killed by signal " + std::to_string(WTERMSIG(status)));
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
    return Unavailable("exited with status " + std::to_string(WEXITSTATUS(status)) + ": " +
                       FirstLine(output));
  }
  return output;
}

}  // namespace gputopo::agent
