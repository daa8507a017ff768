// observed-gpus: the value for each pod PodResources lists, and when it needs writing.
#include "src/agent/observed_gpus.h"

#include <gtest/gtest.h>

#include "gputopo/well_known.h"
#include "test/support/builders.h"

namespace gputopo::agent {
namespace {

using ::gputopo::testing::MakePod;

MachineTopology FourGpus() {
  MachineTopology t(4);
  for (int i = 0; i < 4; ++i) t.gpu(i).uuid = "GPU-" + std::to_string(i);
  return t;
}

PodDeviceIds Listed(std::string name, std::vector<ContainerDeviceIds> containers) {
  return PodDeviceIds{"default", std::move(name), std::move(containers)};
}

TEST(ObserveGpusTest, ReplicasAndContainersBecomeDistinctGpusInIndexOrder) {
  const std::vector<PodInfo> pods = {MakePod().Name("p").OnNode("n").Assigned("GPU-1,GPU-3").Obj()};
  const std::vector<ObservedPod> got = ObserveGpus(
      pods, {Listed("p", {{"a", {"GPU-3::1", "GPU-1::0"}}, {"b", {"GPU-3::2"}}})}, FourGpus());
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].pod.uid, "uid-p");
  EXPECT_EQ(got[0].value, "GPU-1,GPU-3");  // equal to assigned-gpus when kubelet followed it
  EXPECT_TRUE(got[0].needs_write);
  EXPECT_TRUE(got[0].problems.empty());
}

TEST(ObserveGpusTest, WritesOnlyWhenTheValueChanges) {
  const std::vector<PodInfo> pods = {
      MakePod().Name("same").Annotation(std::string(kAnnotationObservedGpus), "GPU-0").Obj(),
      MakePod().Name("moved").Annotation(std::string(kAnnotationObservedGpus), "GPU-0").Obj()};
  const std::vector<ObservedPod> got = ObserveGpus(
      pods, {Listed("same", {{"c", {"GPU-0::0"}}}), Listed("moved", {{"c", {"2"}}})}, FourGpus());
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].value, "GPU-0");
  EXPECT_FALSE(got[0].needs_write);
  EXPECT_EQ(got[1].value, "GPU-2");  // the index form, through the topology
  EXPECT_EQ(got[1].current, "GPU-0");
  EXPECT_TRUE(got[1].needs_write);
}

TEST(ObserveGpusTest, IndicesNameGpusWithoutUuids) {
  MachineTopology t(2);
  const std::vector<ObservedPod> got =
      ObserveGpus({MakePod().Name("p").Obj()}, {Listed("p", {{"c", {"1", "0"}}})}, t);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].value, "0,1");
}

TEST(ObserveGpusTest, AnUnmappedDeviceLeavesThePodWithoutAValue) {
  const std::vector<PodInfo> pods = {MakePod().Name("mig").Obj(), MakePod().Name("junk").Obj()};
  const std::vector<ObservedPod> got = ObserveGpus(
      pods, {Listed("mig", {{"c", {"GPU-0", "MIG-abc"}}}), Listed("junk", {{"c", {"GPU-1::x"}}})},
      FourGpus());
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].value, "");
  EXPECT_FALSE(got[0].needs_write);
  ASSERT_EQ(got[0].problems.size(), 1u);
  EXPECT_NE(got[0].problems[0].find("container c: device ID \"MIG-abc\" is a MIG device"),
            std::string::npos)
      << got[0].problems[0];
  EXPECT_FALSE(got[1].needs_write);
  EXPECT_NE(got[1].problems[0].find("unknown form"), std::string::npos) << got[1].problems[0];
}

TEST(ObserveGpusTest, AGpuOffTheTopologyIsWrittenLastWithTheProblem) {
  const std::vector<ObservedPod> got =
      ObserveGpus({MakePod().Name("p").Obj()},
                  {Listed("p", {{"c", {"GPU-zz::0", "GPU-2::0", "GPU-aa"}}})}, FourGpus());
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].value, "GPU-2,GPU-aa,GPU-zz");
  EXPECT_TRUE(got[0].needs_write);
  EXPECT_EQ(got[0].problems.size(), 2u);
}

TEST(ObserveGpusTest, PodsNotBoundHereOrFinishedAreSkipped) {
  const std::vector<PodInfo> pods = {MakePod().Name("done").Phase(PodPhase::kSucceeded).Obj(),
                                     MakePod().Namespace("other").Name("p").Obj()};
  const std::vector<ObservedPod> got =
      ObserveGpus(pods,
                  {Listed("done", {{"c", {"GPU-0"}}}), Listed("p", {{"c", {"GPU-1"}}}),
                   Listed("unknown", {{"c", {"GPU-2"}}})},
                  FourGpus());
  EXPECT_TRUE(got.empty());  // "default/p" is not "other/p"
}

}  // namespace
}  // namespace gputopo::agent
