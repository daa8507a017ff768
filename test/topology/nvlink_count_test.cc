#include "topology/nvlink_count.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gputopo::topology {
namespace {

NvLinkEnd ToGpu(const std::string& bus_id) { return {NvLinkPeer::kGpu, bus_id}; }
NvLinkEnd ToSwitch() { return {NvLinkPeer::kSwitch, "00000000:C0:00.0"}; }

TEST(NormalizePciBusIdTest, SysfsForm) {
  EXPECT_EQ(NormalizePciBusId("00000000:07:00.0"), "0000:07:00.0");
  EXPECT_EQ(NormalizePciBusId("00000000:B1:1F.7"), "0000:b1:1f.7");
  EXPECT_EQ(NormalizePciBusId("0000:b1:00.0"), "0000:b1:00.0");
  EXPECT_EQ(NormalizePciBusId("00000001:07:00.0"), "0001:07:00.0");
  EXPECT_EQ(NormalizePciBusId("07:00.0"), "0000:07:00.0");
  EXPECT_EQ(NormalizePciBusId("10000000:07:00.0"), "");  // domain past 16 bits
  EXPECT_EQ(NormalizePciBusId(""), "");
  EXPECT_EQ(NormalizePciBusId("GPU-1234"), "");
  EXPECT_EQ(NormalizePciBusId("0000:07:00"), "");
  EXPECT_EQ(NormalizePciBusId("0000:zz:00.0"), "");
}

TEST(CountNvLinksTest, DirectLinksByRemoteBusId) {
  // GPU 0 has two links to GPU 1 and one to GPU 2; bus IDs differ in form and case.
  std::vector<GpuNvLinks> gpus = {
      {"00000000:06:00.0",
       true,
       {ToGpu("0000:07:00.0"), ToGpu("00000000:07:00.0"), ToGpu("00000000:0a:00.0")}},
      {"00000000:07:00.0", true, {ToGpu("00000000:06:00.0"), ToGpu("00000000:06:00.0")}},
      {"00000000:0A:00.0", true, {ToGpu("00000000:06:00.0")}},
  };
  const NvLinkCounts counts = CountNvLinks(gpus);
  EXPECT_EQ(counts.count(0, 1), 2);
  EXPECT_EQ(counts.count(1, 0), 2);
  EXPECT_EQ(counts.count(0, 2), 1);
  EXPECT_EQ(counts.count(1, 2), 0);
  EXPECT_EQ(counts.unmatched_links, 0);
}

TEST(CountNvLinksTest, APairCountsTheLinksBothEndsReport) {
  std::vector<GpuNvLinks> gpus = {
      {"0000:06:00.0", true, {ToGpu("0000:07:00.0"), ToGpu("0000:07:00.0")}},
      {"0000:07:00.0", true, {ToGpu("0000:06:00.0")}},
  };
  EXPECT_EQ(CountNvLinks(gpus).count(0, 1), 1);
}

TEST(CountNvLinksTest, NvSwitchPairsTakeTheSmallerSwitchCount) {
  // 18, 18 and 16 links to switches: pairs get min(a, b), not a sum or the links to one switch.
  std::vector<GpuNvLinks> gpus(3);
  for (int i = 0; i < 3; ++i) {
    gpus[static_cast<size_t>(i)].pci_bus_id = "0000:1" + std::to_string(i) + ":00.0";
    gpus[static_cast<size_t>(i)].active.assign(i == 2 ? 16 : 18, ToSwitch());
  }
  const NvLinkCounts counts = CountNvLinks(gpus);
  EXPECT_EQ(counts.count(0, 1), 18);
  EXPECT_EQ(counts.count(0, 2), 16);
  EXPECT_EQ(counts.count(2, 1), 16);
  EXPECT_EQ(counts.count(1, 1), 0);
}

TEST(CountNvLinksTest, OtherPeersUnknownKindsAndUnknownGpus) {
  std::vector<GpuNvLinks> gpus = {
      {"0000:06:00.0",
       true,
       {{NvLinkPeer::kOther, "0000:04:00.0"},    // an NPU: not counted, not unmatched
        {NvLinkPeer::kUnknown, "0000:07:00.0"},  // kind unknown but a GPU's bus ID: counted
        ToGpu("0000:99:00.0")}},                 // a GPU that is none of ours: unmatched
      {"0000:07:00.0", true, {{NvLinkPeer::kUnknown, "0000:06:00.0"}}},
      {"0000:08:00.0", false, {}},  // links unreadable
  };
  const NvLinkCounts counts = CountNvLinks(gpus);
  EXPECT_EQ(counts.count(0, 1), 1);
  EXPECT_EQ(counts.unmatched_links, 1);
  EXPECT_TRUE(counts.known(0, 1));
  EXPECT_FALSE(counts.known(0, 2));
  EXPECT_FALSE(counts.known(2, 1));
}

}  // namespace
}  // namespace gputopo::topology
