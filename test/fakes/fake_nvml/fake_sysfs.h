// The sysfs that discovery reads beside the fake NVML: bus/pci/devices/<id>/numa_node for each
// GPU of a machine file (its `bus_id` and `numa` lines). For the agent's tests and agent_bench.
#ifndef GPUTOPO_TEST_FAKES_FAKE_NVML_FAKE_SYSFS_H_
#define GPUTOPO_TEST_FAKES_FAKE_NVML_FAKE_SYSFS_H_

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "topology/nvlink_count.h"

namespace gputopo::testing {

// Writes the tree under `root` (which may not exist yet).
inline void WriteFakeSysfs(const std::filesystem::path& machine_file,
                           const std::filesystem::path& root) {
  std::ifstream in(machine_file);
  std::string bus_id;
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::string key;
    std::string value;
    words >> key >> value;
    if (key == "gpu") bus_id.clear();
    if (key == "bus_id") bus_id = value;
    if (key == "numa" && !bus_id.empty()) {
      const std::filesystem::path dir =
          root / "bus/pci/devices" / topology::NormalizePciBusId(bus_id);
      std::filesystem::create_directories(dir);
      std::ofstream(dir / "numa_node") << value << "\n";
    }
  }
}

}  // namespace gputopo::testing

#endif  // GPUTOPO_TEST_FAKES_FAKE_NVML_FAKE_SYSFS_H_
