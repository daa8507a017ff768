#include "src/http/debug_views.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "test/support/builders.h"
#include "test/support/test_cluster.h"

namespace gputopo::http {
namespace {

using nlohmann::json;
using testing::MakeNode;
using testing::MakePod;
using testing::TestCluster;

// Occupants of GPU `gpu` in /debug/nodes/<name> as the server renders it: the node from the
// snapshot, whether a bind is in flight from the cluster state.
json OccupantsOf(TestCluster& cluster, const std::string& node, int gpu) {
  const json rendered =
      json::parse(RenderNode(*cluster.Node(node), cluster.state().ReservedPods(node)));
  return rendered["gpuList"][static_cast<size_t>(gpu)]["occupants"];
}

TEST(DebugViewsTest, AnOccupantIsReservedUntilItsBindIsConfirmed) {
  TestCluster cluster;
  cluster.Add(MakeNode().Name("n").Profile("dgx1").Replicas(1).Allocatable(8).Obj());
  const PodInfo pod = MakePod().Name("a").Gpus(1).Obj();
  ASSERT_TRUE(cluster.state().Reserve({pod, "n", {3}, cluster.Node("n")->version()}).ok());

  json occupants = OccupantsOf(cluster, "n", 3);
  ASSERT_EQ(occupants.size(), 1u);
  EXPECT_EQ(occupants[0]["pod"], pod.Key());
  EXPECT_EQ(occupants[0].value("reserved", false), true);

  cluster.state().ConfirmBinding(pod.uid, "n");
  occupants = OccupantsOf(cluster, "n", 3);
  ASSERT_EQ(occupants.size(), 1u);
  EXPECT_EQ(occupants[0]["pod"], pod.Key());
  EXPECT_FALSE(occupants[0].contains("reserved"));
}

}  // namespace
}  // namespace gputopo::http
