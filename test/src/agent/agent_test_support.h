// Shared by the agent tests: the fake NVML's machines, a fake sysfs for them, profiles.
#ifndef GPUTOPO_TEST_SRC_AGENT_AGENT_TEST_SUPPORT_H_
#define GPUTOPO_TEST_SRC_AGENT_AGENT_TEST_SUPPORT_H_

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>

#include "gputopo/machine_topology.h"
#include "src/codec/topology_document.h"
#include "test/fakes/fake_nvml/fake_sysfs.h"
#include "test/support/fixtures.h"
#include "test/support/machines.h"

namespace gputopo::agent::testing {

inline std::filesystem::path MachineFile(const std::string& name) {
  return gputopo::testing::SourceDir() / "test/fakes/fake_nvml/machines" / (name + ".txt");
}

// Points the fake NVML at test/fakes/fake_nvml/machines/<name>.txt.
inline void UseMachine(const std::string& name) {
  ASSERT_TRUE(std::filesystem::exists(MachineFile(name))) << MachineFile(name);
  setenv("GPUTOPO_FAKE_NVML_MACHINE", MachineFile(name).c_str(), 1);
}

// A temporary sysfs tree holding bus/pci/devices/<id>/numa_node for each GPU of a machine file
// (its `bus_id` and `numa` lines); removed with the object.
class FakeSysfs {
 public:
  explicit FakeSysfs(const std::string& machine) {
    std::string templ = (std::filesystem::temp_directory_path() / "gputopo-sysfs-XXXXXX").string();
    root_ = mkdtemp(templ.data());
    gputopo::testing::WriteFakeSysfs(MachineFile(machine), root_);
  }
  ~FakeSysfs() {
    std::error_code ignored;
    std::filesystem::remove_all(root_, ignored);
  }
  FakeSysfs(const FakeSysfs&) = delete;
  FakeSysfs& operator=(const FakeSysfs&) = delete;

  std::string root() const { return root_.string(); }

 private:
  std::filesystem::path root_;
};

// DGX-1 (hybrid cube-mesh) with UUIDs GPU-d0..GPU-d7, and the device ID of replica `replica` of
// GPU `gpu` on it, as the device plugin advertises them ("GPU-d<gpu>::<replica>").
inline MachineTopology Dgx1WithUuids() {
  MachineTopology m = gputopo::testing::Dgx1();
  for (int i = 0; i < 8; ++i) m.gpu(i).uuid = "GPU-d" + std::to_string(i);
  return m;
}
inline std::string Dgx1Replica(int gpu, int replica) {
  return "GPU-d" + std::to_string(gpu) + "::" + std::to_string(replica);
}

// A shipped profile, through the document decoder.
inline MachineTopology Profile(const std::string& name) {
  Result<codec::ProfileDocument> profile = codec::ParseProfileDocument(gputopo::testing::ReadFile(
      gputopo::testing::SourceDir() / "topology/profiles" / (name + ".json")));
  EXPECT_TRUE(profile.ok()) << name << ": " << profile.status().ToString();
  return profile.ok() ? profile->machine : MachineTopology();
}

// Every pair's link of `got` equals `want`'s, and the GPUs' models, memory and NUMA nodes.
inline void ExpectMatchesProfile(const MachineTopology& got, const MachineTopology& want) {
  ASSERT_EQ(got.gpu_count(), want.gpu_count());
  for (int a = 0; a < got.gpu_count(); ++a) {
    EXPECT_EQ(got.gpu(a).model, want.gpu(a).model) << "GPU " << a;
    EXPECT_EQ(got.gpu(a).memory_mib, want.gpu(a).memory_mib) << "GPU " << a;
    EXPECT_EQ(got.gpu(a).numa_node, want.gpu(a).numa_node) << "GPU " << a;
    for (int b = a + 1; b < got.gpu_count(); ++b) {
      EXPECT_EQ(got.link(a, b), want.link(a, b)) << "pair " << a << "-" << b;
    }
  }
}

}  // namespace gputopo::agent::testing

#endif  // GPUTOPO_TEST_SRC_AGENT_AGENT_TEST_SUPPORT_H_
