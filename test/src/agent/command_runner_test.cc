#include "src/agent/command_runner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace gputopo::agent {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(SubprocessRunnerTest, ReturnsStandardOutput) {
  SubprocessRunner runner;
  Result<std::string> got = runner.Run({"sh", "-c", "echo one; echo two >&2; echo three"});
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, "one\nthree\n");  // standard error is not mixed in
}

TEST(SubprocessRunnerTest, MissingProgram) {
  SubprocessRunner runner;
  Result<std::string> on_path = runner.Run({"gputopo-no-such-program"});
  ASSERT_FALSE(on_path.ok());
  EXPECT_EQ(on_path.status().message(), "not found on PATH");
  Result<std::string> by_path = runner.Run({"/nonexistent/nvidia-smi"});
  ASSERT_FALSE(by_path.ok());
  EXPECT_EQ(by_path.status().message(), "/nonexistent/nvidia-smi: No such file or directory");
}

TEST(SubprocessRunnerTest, FailureSaysTheStatusAndTheFirstLine) {
  SubprocessRunner runner;
  Result<std::string> got =
      runner.Run({"sh", "-c", "echo 'NVIDIA-SMI has failed'; echo x; exit 9"});
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().message(), "exited with status 9: NVIDIA-SMI has failed");
}

TEST(SubprocessRunnerTest, KillsAProgramThatDoesNotFinish) {
  // The program blocks until killed; the runner's deadline ends it (no timing is asserted).
  SubprocessRunner runner(std::chrono::milliseconds(200));
  Result<std::string> got = runner.Run({"sh", "-c", "echo started; exec sleep 600"});
  ASSERT_FALSE(got.ok());
  EXPECT_THAT(got.status().message(), StartsWith("timed out after"));
}

}  // namespace
}  // namespace gputopo::agent
