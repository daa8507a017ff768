// Paths to test fixtures, and reading them.
#ifndef GPUTOPO_TEST_SUPPORT_FIXTURES_H_
#define GPUTOPO_TEST_SUPPORT_FIXTURES_H_

#include <filesystem>
#include <string>
#include <vector>

namespace gputopo::testing {

// ../shared next to the checkout (golden captures, nvidia-smi outputs, traces).
std::filesystem::path SharedDir();
// The repository root.
std::filesystem::path SourceDir();
// The whole file; fails the current test (ADD_FAILURE) and returns "" when unreadable.
std::string ReadFile(const std::filesystem::path& path);
// Regular files in `dir` whose names end with `suffix`, sorted.
std::vector<std::filesystem::path> FilesIn(const std::filesystem::path& dir,
                                           const std::string& suffix);

}  // namespace gputopo::testing

#endif  // GPUTOPO_TEST_SUPPORT_FIXTURES_H_
