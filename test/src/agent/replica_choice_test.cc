#include "src/agent/replica_choice.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test/src/agent/agent_test_support.h"
#include "test/support/machines.h"

namespace gputopo::agent {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

std::vector<std::string> AllBut(int replicas, const std::vector<std::string>& taken = {}) {
  std::vector<std::string> out;
  for (const AdvertisedDevice& d : AdvertisedDevices(testing::Dgx1WithUuids(), replicas)) {
    if (std::find(taken.begin(), taken.end(), d.id) == taken.end()) out.push_back(d.id);
  }
  return out;
}

class ReplicaChoiceTest : public ::testing::Test {
 protected:
  std::vector<std::string> Choose(std::vector<std::string> available, int size,
                                  std::vector<std::string> must = {}, int replicas = 2) {
    return ChooseFallback({std::move(available), std::move(must), size}, machine_, shape_.get(),
                          replicas);
  }
  MachineTopology machine_ = testing::Dgx1WithUuids();
  std::shared_ptr<const topology::TopologyShape> shape_ =
      *topology::TopologyShape::Analyze(machine_);
};

TEST(AdvertisedDevicesTest, NvidiasReplicaFormatWithNumaAndHealth) {
  MachineTopology m = gputopo::testing::PcieTwoNuma(2);
  m.gpu(0).uuid = "GPU-x";
  m.gpu(1).healthy = false;  // and no UUID: the index form
  const std::vector<AdvertisedDevice> devices = AdvertisedDevices(m, 2);
  EXPECT_THAT(devices, ElementsAre(AdvertisedDevice{"GPU-x::0", 0, 0, 0, true},
                                   AdvertisedDevice{"GPU-x::1", 0, 1, 0, true},
                                   AdvertisedDevice{"1::0", 1, 0, 1, false},
                                   AdvertisedDevice{"1::1", 1, 1, 1, false}));
}

TEST_F(ReplicaChoiceTest, OneGpuIsTheLeastLoaded) {
  // Every GPU but 5 has a replica in use: 5 it is.
  std::vector<std::string> taken;
  for (int g = 0; g < 8; ++g) {
    if (g != 5) taken.push_back(testing::Dgx1Replica(g, 0));
  }
  EXPECT_THAT(Choose(AllBut(2, taken), 1), ElementsAre(testing::Dgx1Replica(5, 0)));
  // All equal: the lowest index, its lowest free replica.
  EXPECT_THAT(Choose(AllBut(2), 1), ElementsAre(testing::Dgx1Replica(0, 0)));
}

TEST_F(ReplicaChoiceTest, SeveralGpusAreDistinctAndTheBestNvlinkSet) {
  // Idle machine: the best pair is an NV2 pair, lowest indices first: 0-3.
  EXPECT_THAT(Choose(AllBut(2), 2),
              ElementsAre(testing::Dgx1Replica(0, 0), testing::Dgx1Replica(3, 0)));
  // Four: the NVLink quad 0-3.
  EXPECT_THAT(Choose(AllBut(2), 4),
              ElementsAre(testing::Dgx1Replica(0, 0), testing::Dgx1Replica(1, 0),
                          testing::Dgx1Replica(2, 0), testing::Dgx1Replica(3, 0)));
  // GPUs 0 and 3 loaded: the best pair among the idle ones (1-2, NV2).
  EXPECT_THAT(Choose(AllBut(2, {testing::Dgx1Replica(0, 0), testing::Dgx1Replica(3, 1)}), 2),
              ElementsAre(testing::Dgx1Replica(1, 0), testing::Dgx1Replica(2, 0)));
}

TEST_F(ReplicaChoiceTest, LowerLoadComesBeforeBandwidth) {
  // Only GPU 6 is idle; the second GPU is the one with the most bandwidth to it among the rest.
  std::vector<std::string> taken;
  for (int g = 0; g < 8; ++g) {
    if (g != 6) taken.push_back(testing::Dgx1Replica(g, 0));
  }
  // 6's NV2 peers: 5 and 7; 5 is the lower index.
  EXPECT_THAT(Choose(AllBut(2, taken), 2),
              UnorderedElementsAre(testing::Dgx1Replica(6, 0), testing::Dgx1Replica(5, 1)));
}

TEST_F(ReplicaChoiceTest, MustIncludeFirstThenItsBestPeer) {
  // Must include GPU 4's replica: the other GPU is 4's best free peer (0 by NV2, lowest index).
  EXPECT_THAT(Choose(AllBut(2), 2, {testing::Dgx1Replica(4, 1)}),
              ElementsAre(testing::Dgx1Replica(4, 1), testing::Dgx1Replica(0, 0)));
}

TEST_F(ReplicaChoiceTest, MoreThanTheGpusGivesMoreReplicasNeverFails) {
  // Two GPUs with free replicas, three wanted: the third is a second replica of one of them.
  std::vector<std::string> available = {testing::Dgx1Replica(2, 0), testing::Dgx1Replica(2, 1),
                                        testing::Dgx1Replica(5, 1)};
  EXPECT_THAT(Choose(available, 3),
              UnorderedElementsAre(testing::Dgx1Replica(2, 0), testing::Dgx1Replica(2, 1),
                                   testing::Dgx1Replica(5, 1)));
  // Too few devices: what there is.
  EXPECT_THAT(Choose({testing::Dgx1Replica(1, 0)}, 2), ElementsAre(testing::Dgx1Replica(1, 0)));
  EXPECT_THAT(Choose({}, 1), IsEmpty());
  // Unknown device IDs are still offered back, last.
  EXPECT_THAT(Choose({"weird-id", testing::Dgx1Replica(3, 0)}, 2),
              ElementsAre(testing::Dgx1Replica(3, 0), "weird-id"));
}

TEST_F(ReplicaChoiceTest, WithoutShapeLoadAndIndexDecide) {
  EXPECT_THAT(
      ChooseFallback({AllBut(2, {testing::Dgx1Replica(0, 0)}), {}, 2}, machine_, nullptr, 2),
      ElementsAre(testing::Dgx1Replica(1, 0), testing::Dgx1Replica(2, 0)));
}

}  // namespace
}  // namespace gputopo::agent
