// Device IDs as kubelet reports them, mapped to physical GPUs: a table of every form, including
// garbage.
#include "src/agent/device_ids.h"

#include <gtest/gtest.h>

#include <string>

namespace gputopo::agent {
namespace {

// Four GPUs; the first three have UUIDs, the last does not (a fallback-like entry).
MachineTopology FourGpus() {
  MachineTopology t(4);
  t.gpu(0).uuid = "GPU-0a1b2c3d-0000-1111-2222-333344445555";
  t.gpu(1).uuid = "GPU-h100-1";
  t.gpu(2).uuid = "GPU-h100-2";
  return t;
}

struct Case {
  std::string id;
  DeviceIdForm form;
  std::string gpu;  // empty: not mapped
  int index;
  int replica;
  std::string reason_contains;  // empty: no reason
};

class MapDeviceIdTest : public ::testing::TestWithParam<Case> {};

TEST_P(MapDeviceIdTest, Maps) {
  const Case& c = GetParam();
  const MappedDeviceId got = MapDeviceId(c.id, FourGpus());
  EXPECT_EQ(got.form, c.form) << "'" << c.id << "': " << DeviceIdFormName(got.form);
  EXPECT_EQ(got.gpu, c.gpu) << "'" << c.id << "'";
  EXPECT_EQ(got.gpu_index, c.index) << "'" << c.id << "'";
  EXPECT_EQ(got.replica, c.replica) << "'" << c.id << "'";
  if (c.reason_contains.empty()) {
    EXPECT_EQ(got.reason, "") << "'" << c.id << "'";
  } else {
    EXPECT_NE(got.reason.find(c.reason_contains), std::string::npos)
        << "'" << c.id << "': " << got.reason;
  }
}

const DeviceIdForm kUuid = DeviceIdForm::kUuid;
const DeviceIdForm kIndex = DeviceIdForm::kIndex;
const DeviceIdForm kMig = DeviceIdForm::kMig;
const DeviceIdForm kUnknown = DeviceIdForm::kUnknown;

INSTANTIATE_TEST_SUITE_P(
    Table, MapDeviceIdTest,
    ::testing::Values(
        // NVIDIA's UUID forms, plain and replicated (time-slicing, MPS).
        Case{"GPU-0a1b2c3d-0000-1111-2222-333344445555", kUuid,
             "GPU-0a1b2c3d-0000-1111-2222-333344445555", 0, -1, ""},
        Case{"GPU-h100-1::0", kUuid, "GPU-h100-1", 1, 0, ""},
        Case{"GPU-h100-2::15", kUuid, "GPU-h100-2", 2, 15, ""},
        // A UUID this node does not list still names that GPU, with the reason.
        Case{"GPU-elsewhere::3", kUuid, "GPU-elsewhere", -1, 3, "not among this node's GPUs"},
        // Index forms, through the topology: the UUID when known, else the index.
        Case{"0", kIndex, "GPU-0a1b2c3d-0000-1111-2222-333344445555", 0, -1, ""},
        Case{"3", kIndex, "3", 3, -1, ""}, Case{"1::2", kIndex, "GPU-h100-1", 1, 2, ""},
        Case{"4", kIndex, "", -1, -1, "GPU index 4 is not on this node (it has 4 GPUs)"},
        Case{"99999999999", kUnknown, "", -1, -1, "not a GPU index"},
        // MIG devices: recognised, not handled.
        Case{"MIG-8b2c5f1e-1234-5678-9abc-def012345678", kMig, "", -1, -1, "MIG device"},
        Case{"MIG-GPU-h100-1/1/0", kMig, "", -1, -1, "not handled"},
        Case{"0:1", kMig, "", -1, -1, "MIG device"},
        // Garbage.
        Case{"", kUnknown, "", -1, -1, "empty"},
        Case{"GPU-", kUnknown, "", -1, -1, "nothing after"},
        Case{"GPU-abc::", kUnknown, "", -1, -1, "replica"},
        Case{"GPU-abc::x", kUnknown, "", -1, -1, "replica"},
        Case{"GPU-abc::-1", kUnknown, "", -1, -1, "replica"},
        Case{"GPU-abc::01", kUnknown, "", -1, -1, "replica"},
        Case{"GPU-abc::1::2", kUnknown, "", -1, -1, "replica"},
        Case{"GPU-ab c", kUnknown, "", -1, -1, "UUID has a character"},
        Case{"GPU-abc\n", kUnknown, "", -1, -1, "UUID has a character"},
        Case{"gpu-abc", kUnknown, "", -1, -1, "neither"},
        Case{" 0", kUnknown, "", -1, -1, "neither"},
        Case{"01", kUnknown, "", -1, -1, "not a GPU index"},
        Case{"-1", kUnknown, "", -1, -1, "neither"},
        Case{"0x1", kUnknown, "", -1, -1, "not a GPU index"},
        Case{"::1", kUnknown, "", -1, -1, "neither"},
        Case{std::string(64, '7'), kUnknown, "", -1, -1, "longer than 63"},
        Case{std::string("GPU-a\0b", 7), kUnknown, "", -1, -1, "UUID has a character"}));

TEST(MapDeviceIdTest, AnEmptyTopologyMapsUuidsButNoIndex) {
  const MachineTopology empty;
  EXPECT_EQ(MapDeviceId("GPU-x::1", empty).gpu, "GPU-x");
  EXPECT_FALSE(MapDeviceId("0", empty).mapped());
}

}  // namespace
}  // namespace gputopo::agent
