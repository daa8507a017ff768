// Tests of ClusterState (the cache of nodes, pods and reservations) and of the NodeStates it
// builds (one node's GPUs and who holds them). In namespace policies, whose types they use most.
#include "cluster/cluster_state.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "policies/state/node_state.h"
#include "test/support/builders.h"
#include "test/support/machines.h"
#include "test/support/test_cluster.h"
#include "topology/profile_catalog.h"
#include "topology/shape_interner.h"
#include "topology/topology_resolver.h"

namespace gputopo::policies {
namespace {

using namespace gputopo::testing;  // NOLINT(google-build-using-namespace)
using cluster::ClusterCounts;
using cluster::ClusterState;
using cluster::GpusMismatch;
using cluster::Reservation;
using cluster::SplitAssignedGpus;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using topology::Bit;

constexpr int kGpus = 8;

// An HGX H100 node described by its gputopo.io/topology annotation: GPU i has UUID
// "GPU-h100-i". `replicas` time-slice replicas per GPU, all advertised.
NodeInfo H100Node(const std::string& name, int replicas = 1) {
  return MakeNode()
      .Name(name)
      .Topology(HgxH100())
      .Replicas(replicas)
      .Allocatable(int64_t{kGpus} * replicas)
      .Obj();
}

// A DGX-1 node from the "dgx1" profile: its GPUs have no UUIDs, so they are named by index.
NodeInfo Dgx1Node(const std::string& name, int replicas = 1) {
  return MakeNode()
      .Name(name)
      .Profile("dgx1")
      .Replicas(replicas)
      .Allocatable(int64_t{kGpus} * replicas)
      .Obj();
}

// A pod of Deployment "web" bound to `node` holding `assigned`.
PodInfo BoundPod(const std::string& name, const std::string& node, const std::string& assigned,
                 int64_t gpus = 1) {
  return MakePod()
      .Name(name)
      .Gpus(gpus)
      .OwnedByDeployment("web")
      .OnNode(node)
      .Assigned(assigned)
      .Phase(PodPhase::kRunning)
      .Obj();
}

PodInfo PendingPod(const std::string& name, int64_t gpus = 1) {
  return MakePod().Name(name).Gpus(gpus).OwnedByDeployment("web").Obj();
}

// GPUs of `node` that hold at least one pod.
std::vector<int> UsedGpus(const NodeState& node) {
  std::vector<int> used;
  for (int i = 0; i < node.gpu_count(); ++i) {
    if (!node.gpu(i).occupants.empty()) used.push_back(i);
  }
  return used;
}

class ClusterStateTest : public ::testing::Test {
 protected:
  ClusterState& state() { return cluster_.state(); }
  std::shared_ptr<const NodeState> Node(const std::string& name) { return cluster_.Node(name); }

  Reservation ReservationOf(const PodInfo& pod, const std::string& node, std::vector<int> gpus) {
    Reservation r;
    r.pod = pod;
    r.node = node;
    r.gpus = std::move(gpus);
    auto current = Node(node);
    r.node_version = current == nullptr ? 0 : current->version();
    return r;
  }

  TestCluster cluster_;
};

// ---------------------------------------------------------------------------------------------
// Nodes and pods

TEST_F(ClusterStateTest, BoundPodOccupiesExactlyItsAssignedGpus) {
  cluster_.Add(H100Node("h1", /*replicas=*/2));
  cluster_.Add(BoundPod("web-1", "h1", "GPU-h100-3,GPU-h100-5", /*gpus=*/2));

  auto node = Node("h1");
  ASSERT_NE(node, nullptr);
  ASSERT_TRUE(node->has_topology()) << node->topology_error();
  EXPECT_EQ(node->replicas(), 2);
  EXPECT_EQ(node->total_slots(), 16);
  EXPECT_THAT(UsedGpus(*node), ElementsAre(3, 5));
  for (int gpu : {3, 5}) {
    SCOPED_TRACE(gpu);
    const GpuOccupancy& g = node->gpu(gpu);
    EXPECT_EQ(g.slots_used, 1);
    EXPECT_EQ(g.milli_used, 500);  // 1000 / R, R = 2
    EXPECT_FALSE(g.exclusive);
    ASSERT_EQ(g.occupants.size(), 1u);
    EXPECT_EQ(g.occupants[0].pod_uid, "uid-web-1");
    EXPECT_EQ(g.occupants[0].pod_key, "default/web-1");
    EXPECT_EQ(g.occupants[0].group, "default/Deployment/web");
    EXPECT_EQ(g.occupants[0].milli, 500);
    EXPECT_FALSE(state().ReservedPods(node->name()).contains(g.occupants[0].pod_uid));
    EXPECT_EQ(node->gpu_free_slots(gpu), 1);
    EXPECT_EQ(node->gpu_free_milli(gpu), 500);
  }
  EXPECT_EQ(node->used_slots(), 2);
  EXPECT_EQ(node->free_slots(), 14);
  EXPECT_EQ(node->unplaced_slots(), 0);
  EXPECT_THAT(node->unplaced(), IsEmpty());
  EXPECT_EQ(node->empty_gpus(), topology::FirstN(kGpus) & ~(Bit(3) | Bit(5)));
  EXPECT_EQ(node->GroupGpus("default/Deployment/web"), Bit(3) | Bit(5));
  EXPECT_EQ(node->GroupGpus("default/Deployment/other"), 0u);

  ClusterCounts counts = state().Counts();
  EXPECT_EQ(counts.nodes, 1u);
  EXPECT_EQ(counts.pods, 1u);
  EXPECT_EQ(counts.placed_pods, 1u);
  EXPECT_EQ(counts.reservations, 0u);
}

TEST_F(ClusterStateTest, AssignedGpusAreReadAsUuidsOrIndices) {
  struct Case {
    std::string name;
    NodeInfo node;
    std::string assigned;
    std::vector<int> gpus;
  };
  const std::vector<Case> cases = {
      {"uuids", H100Node("u1"), "GPU-h100-0,GPU-h100-7", {0, 7}},
      {"indices on a node with uuids", H100Node("u2"), "2,6", {2, 6}},
      {"mixed, with spaces", H100Node("u3"), " GPU-h100-1 , 4 ", {1, 4}},
      {"indices on a node without uuids", Dgx1Node("d1"), "0,5", {0, 5}},
      {"out of order", Dgx1Node("d2"), "6,1", {1, 6}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    cluster_.Add(c.node);
    cluster_.Add(BoundPod("pod-" + c.node.name, c.node.name, c.assigned, 2));
    auto node = Node(c.node.name);
    ASSERT_NE(node, nullptr);
    EXPECT_EQ(UsedGpus(*node), c.gpus);
    EXPECT_EQ(node->used_slots(), 2);
    EXPECT_EQ(node->unplaced_slots(), 0);
  }
}

TEST_F(ClusterStateTest, GpuLabelIsTheUuidElseTheIndex) {
  cluster_.Add(H100Node("h1"));
  cluster_.Add(Dgx1Node("d1"));
  EXPECT_EQ(Node("h1")->GpuLabel(4), "GPU-h100-4");
  EXPECT_EQ(Node("d1")->GpuLabel(4), "4");
  auto parsed = Node("h1")->ParseAssigned({"GPU-h100-2", "5"});
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_THAT(*parsed, ElementsAre(2, 5));
}

TEST_F(ClusterStateTest, BoundPodWithoutAnnotationIsUnplaced) {
  cluster_.Add(H100Node("h1"));
  cluster_.Add(MakePod().Name("legacy").Gpus(2).OnNode("h1").Phase(PodPhase::kRunning).Obj());

  auto node = Node("h1");
  EXPECT_THAT(UsedGpus(*node), IsEmpty());
  EXPECT_EQ(node->empty_gpus(), topology::FirstN(kGpus));
  EXPECT_EQ(node->unplaced_slots(), 2);
  EXPECT_EQ(node->used_slots(), 2);
  EXPECT_EQ(node->free_slots(), 6);
  ASSERT_EQ(node->unplaced().size(), 1u);
  EXPECT_EQ(node->unplaced()[0].pod_uid, "uid-legacy");
  EXPECT_EQ(node->unplaced()[0].pod_key, "default/legacy");
  EXPECT_EQ(node->unplaced()[0].slots, 2);
  EXPECT_THAT(node->unplaced()[0].reason, HasSubstr("gputopo.io/assigned-gpus"));
  EXPECT_EQ(state().Counts().placed_pods, 1u);  // it holds slots of the node
}

TEST_F(ClusterStateTest, AnnotationNamingAnUnknownGpuIsUnplacedWithAReason) {
  struct Case {
    std::string assigned;
    std::string bad_entry;
  };
  const std::vector<Case> cases = {
      {"GPU-nope", "GPU-nope"},
      {"8", "8"},  // the node has GPUs 0..7
      {"-1", "-1"},
      {"abc", "abc"},
      {"GPU-h100-0,GPU-a100-1", "GPU-a100-1"},  // one bad entry: the whole pod is unplaced
      {"3x", "3x"},
  };
  int n = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.assigned);
    const std::string name = "h" + std::to_string(n++);
    cluster_.Add(H100Node(name));
    cluster_.Add(BoundPod("pod-" + name, name, c.assigned, 2));
    auto node = Node(name);
    EXPECT_THAT(UsedGpus(*node), IsEmpty());
    EXPECT_EQ(node->unplaced_slots(), 2);
    EXPECT_EQ(node->free_slots(), 6);
    ASSERT_EQ(node->unplaced().size(), 1u);
    EXPECT_THAT(node->unplaced()[0].reason, HasSubstr("'" + c.bad_entry + "'"));
    EXPECT_THAT(node->unplaced()[0].reason, HasSubstr(name));
  }
}

TEST_F(ClusterStateTest, ReplicasBeyondTheListedGpusAreUnplaced) {
  cluster_.Add(H100Node("h1"));
  cluster_.Add(BoundPod("web-1", "h1", "GPU-h100-0", /*gpus=*/3));

  auto node = Node("h1");
  EXPECT_THAT(UsedGpus(*node), ElementsAre(0));
  EXPECT_EQ(node->unplaced_slots(), 2);
  EXPECT_EQ(node->used_slots(), 3);
  EXPECT_EQ(node->free_slots(), 5);
  ASSERT_EQ(node->unplaced().size(), 1u);
  EXPECT_EQ(node->unplaced()[0].slots, 2);
  EXPECT_THAT(node->unplaced()[0].reason, HasSubstr("more replicas"));
}

// ---------------------------------------------------------------------------------------------
// Shares

TEST_F(ClusterStateTest, ShareIsOneOverReplicasUnlessDeclaredAndExclusiveTakesTheGpu) {
  struct Case {
    std::string name;
    int replicas;
    std::vector<std::pair<std::string, std::string>> annotations;
    int milli;
    bool exclusive;
    int free_slots;  // of the pod's GPU
    int free_milli;
  };
  const std::vector<Case> cases = {
      {"R=1", 1, {}, 1000, false, 0, 0},
      {"R=2", 2, {}, 500, false, 1, 500},
      {"R=3 rounds down", 3, {}, 333, false, 2, 667},
      {"R=4", 4, {}, 250, false, 3, 750},
      {"gpu-milli overrides", 4, {{"gputopo.io/gpu-milli", "300"}}, 300, false, 3, 700},
      {"gpu-milli may exceed 1/R", 4, {{"gputopo.io/gpu-milli", "900"}}, 900, false, 3, 100},
      {"exclusive", 4, {{"gputopo.io/exclusive", "true"}}, 1000, true, 0, 0},
      {"exclusive beats gpu-milli",
       4,
       {{"gputopo.io/exclusive", "1"}, {"gputopo.io/gpu-milli", "100"}},
       1000,
       true,
       0,
       0},
      {"exclusive false", 4, {{"gputopo.io/exclusive", "false"}}, 250, false, 3, 750},
      // An invalid annotation does not stop the pod from counting: it takes the default share.
      {"invalid annotation", 2, {{"gputopo.io/gpu-milli", "lots"}}, 500, false, 1, 500},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    TestCluster cluster;
    cluster.Add(Dgx1Node("d1", c.replicas));
    PodBuilder pod = MakePod();
    pod.Name("p").Gpus(1).OnNode("d1").Assigned("2").Phase(PodPhase::kRunning);
    for (const auto& [key, value] : c.annotations) pod.Annotation(key, value);
    cluster.Add(pod.Obj());

    auto node = cluster.Node("d1");
    const GpuOccupancy& g = node->gpu(2);
    EXPECT_EQ(g.slots_used, 1);
    EXPECT_EQ(g.milli_used, c.milli);
    EXPECT_EQ(g.exclusive, c.exclusive);
    ASSERT_EQ(g.occupants.size(), 1u);
    EXPECT_EQ(g.occupants[0].milli, c.milli);
    EXPECT_EQ(g.occupants[0].exclusive, c.exclusive);
    EXPECT_EQ(node->gpu_free_slots(2), c.free_slots);
    EXPECT_EQ(node->gpu_free_milli(2), c.free_milli);
    // Other GPUs are untouched.
    EXPECT_EQ(node->gpu_free_slots(3), c.replicas);
    EXPECT_EQ(node->gpu_free_milli(3), 1000);
  }
}

TEST_F(ClusterStateTest, SharesOfPodsOnOneGpuAddUp) {
  cluster_.Add(Dgx1Node("d1", 4));
  cluster_.Add(BoundPod("a", "d1", "1"));
  cluster_.Add(BoundPod("b", "d1", "1"));
  PodInfo c = BoundPod("c", "d1", "1");
  c.annotations.emplace_back("gputopo.io/gpu-milli", "400");
  cluster_.Add(c);

  auto node = Node("d1");
  EXPECT_EQ(node->gpu(1).slots_used, 3);
  EXPECT_EQ(node->gpu(1).milli_used, 250 + 250 + 400);
  EXPECT_EQ(node->gpu(1).occupants.size(), 3u);
  EXPECT_EQ(node->gpu_free_slots(1), 1);
  EXPECT_EQ(node->gpu_free_milli(1), 100);
  EXPECT_EQ(node->used_slots(), 3);
  EXPECT_EQ(node->free_slots(), 29);
}

// ---------------------------------------------------------------------------------------------
// Node lifecycle

TEST_F(ClusterStateTest, PodsBoundBeforeTheNodeIsKnownCountWhenItArrives) {
  cluster_.Add(BoundPod("early", "h1", "GPU-h100-4"));
  EXPECT_EQ(state().Snapshot()->Find("h1"), nullptr);
  EXPECT_EQ(state().Counts().pods, 1u);

  cluster_.Add(H100Node("h1"));
  auto node = Node("h1");
  ASSERT_NE(node, nullptr);
  EXPECT_THAT(UsedGpus(*node), ElementsAre(4));
  EXPECT_EQ(node->used_slots(), 1);
}

TEST_F(ClusterStateTest, RemoveNodeDropsItAndReAddingCountsItsPodsAgain) {
  cluster_.Add(H100Node("h1"));
  cluster_.Add(H100Node("h2"));
  cluster_.Add(BoundPod("web-1", "h1", "GPU-h100-0,GPU-h100-1", 2));

  auto before = state().Snapshot();
  state().RemoveNode("h1");
  auto after = state().Snapshot();
  EXPECT_EQ(after->Find("h1"), nullptr);
  EXPECT_EQ(after->FindIndex("h1"), ClusterSnapshot::kNotFound);
  EXPECT_EQ(after->node_count(), 1u);
  ASSERT_NE(after->Find("h2"), nullptr);
  EXPECT_EQ(after->nodes()[after->FindIndex("h2")]->name(), "h2");
  EXPECT_EQ(state().Counts().nodes, 1u);
  EXPECT_GT(after->generation(), before->generation());
  // The snapshot taken before still has it.
  ASSERT_NE(before->Find("h1"), nullptr);
  EXPECT_EQ(before->Find("h1")->used_slots(), 2);

  // Removing an unknown node changes nothing.
  state().RemoveNode("nope");
  EXPECT_EQ(state().Snapshot()->node_count(), 1u);

  cluster_.Add(H100Node("h1"));
  auto node = Node("h1");
  ASSERT_NE(node, nullptr);
  EXPECT_THAT(UsedGpus(*node), ElementsAre(0, 1));
  EXPECT_EQ(node->used_slots(), 2);
  EXPECT_EQ(state().Snapshot()->node_count(), 2u);
}

TEST_F(ClusterStateTest, UpsertNodeAgainKeepsItsPods) {
  cluster_.Add(Dgx1Node("d1", 1));
  cluster_.Add(BoundPod("web-1", "d1", "3"));
  // Relabelled with more replicas: the pod's share follows.
  cluster_.Add(Dgx1Node("d1", 2));
  auto node = Node("d1");
  EXPECT_EQ(state().Snapshot()->node_count(), 1u);
  EXPECT_EQ(node->replicas(), 2);
  EXPECT_EQ(node->gpu(3).slots_used, 1);
  EXPECT_EQ(node->gpu(3).milli_used, 500);
  EXPECT_EQ(node->free_slots(), 15);
}

// ---------------------------------------------------------------------------------------------
// Pods that hold nothing

TEST_F(ClusterStateTest, TerminalPodsAndPodsWithoutGpusHoldNothing) {
  struct Case {
    std::string name;
    PodPhase phase;
    int64_t gpus;
  };
  const std::vector<Case> cases = {
      {"succeeded", PodPhase::kSucceeded, 1},
      {"failed", PodPhase::kFailed, 2},
      {"no gpu request", PodPhase::kRunning, 0},
      {"negative gpu request", PodPhase::kRunning, -1},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    TestCluster cluster;
    cluster.Add(H100Node("h1"));
    cluster.Add(MakePod()
                    .Name("p")
                    .Gpus(c.gpus)
                    .OnNode("h1")
                    .Assigned("GPU-h100-0,GPU-h100-1")
                    .Phase(c.phase)
                    .Obj());
    auto node = cluster.Node("h1");
    EXPECT_THAT(UsedGpus(*node), IsEmpty());
    EXPECT_EQ(node->used_slots(), 0);
    EXPECT_EQ(node->free_slots(), 8);
    EXPECT_EQ(cluster.state().Counts().pods, 0u);
    EXPECT_FALSE(cluster.state().FindPod("uid-p").has_value());
  }
}

TEST_F(ClusterStateTest, RunningPodThatFinishesFreesItsGpus) {
  for (PodPhase end : {PodPhase::kSucceeded, PodPhase::kFailed}) {
    SCOPED_TRACE(static_cast<int>(end));
    TestCluster cluster;
    cluster.Add(H100Node("h1"));
    PodInfo pod = BoundPod("job-1", "h1", "GPU-h100-2,GPU-h100-3", 2);
    cluster.Add(pod);
    ASSERT_EQ(cluster.Node("h1")->used_slots(), 2);

    pod.phase = end;
    cluster.Add(pod);
    EXPECT_THAT(UsedGpus(*cluster.Node("h1")), IsEmpty());
    EXPECT_EQ(cluster.Node("h1")->used_slots(), 0);
    EXPECT_EQ(cluster.state().Counts().pods, 0u);
  }
}

TEST_F(ClusterStateTest, RemovePodFreesItsGpus) {
  cluster_.Add(H100Node("h1"));
  cluster_.Add(BoundPod("a", "h1", "GPU-h100-2"));
  cluster_.Add(BoundPod("b", "h1", "GPU-h100-3"));
  state().RemovePod("uid-a");
  EXPECT_THAT(UsedGpus(*Node("h1")), ElementsAre(3));
  EXPECT_EQ(state().Counts().pods, 1u);
  EXPECT_FALSE(state().FindPod("uid-a").has_value());
  ASSERT_TRUE(state().FindPod("uid-b").has_value());
  EXPECT_EQ(state().FindPod("uid-b")->name, "b");

  state().RemovePod("uid-unknown");  // harmless
  EXPECT_THAT(UsedGpus(*Node("h1")), ElementsAre(3));
}

// ---------------------------------------------------------------------------------------------
// No double counting

TEST_F(ClusterStateTest, SamePodUpsertedManyTimesCountsOnce) {
  cluster_.Add(H100Node("h1", 2));
  PodInfo pod = BoundPod("web-1", "h1", "GPU-h100-6");
  for (int rv = 1; rv <= 5; ++rv) {
    pod.resource_version = std::to_string(rv);
    cluster_.Add(pod);
  }
  auto node = Node("h1");
  EXPECT_EQ(node->gpu(6).slots_used, 1);
  EXPECT_EQ(node->gpu(6).milli_used, 500);
  EXPECT_EQ(node->gpu(6).occupants.size(), 1u);
  EXPECT_EQ(node->used_slots(), 1);
  EXPECT_EQ(state().Counts().pods, 1u);
  EXPECT_EQ(state().FindPod("uid-web-1")->resource_version, "5");
}

TEST_F(ClusterStateTest, PodSeenOnAnotherNodeMoves) {
  cluster_.Add(H100Node("h1"));
  cluster_.Add(H100Node("h2"));
  cluster_.Add(BoundPod("web-1", "h1", "GPU-h100-0"));
  cluster_.Add(BoundPod("web-1", "h2", "GPU-h100-1"));

  EXPECT_THAT(UsedGpus(*Node("h1")), IsEmpty());
  EXPECT_EQ(Node("h1")->used_slots(), 0);
  EXPECT_THAT(UsedGpus(*Node("h2")), ElementsAre(1));
  EXPECT_EQ(Node("h2")->used_slots(), 1);
  ClusterCounts counts = state().Counts();
  EXPECT_EQ(counts.pods, 1u);
  EXPECT_EQ(counts.placed_pods, 1u);

  // And back again, this time without an annotation.
  cluster_.Add(MakePod().Name("web-1").Gpus(1).OnNode("h1").Phase(PodPhase::kRunning).Obj());
  EXPECT_EQ(Node("h1")->unplaced_slots(), 1);
  EXPECT_EQ(Node("h2")->used_slots(), 0);
}

TEST_F(ClusterStateTest, ChangedAnnotationOnTheSameNodeMovesTheGpus) {
  cluster_.Add(H100Node("h1"));
  cluster_.Add(BoundPod("web-1", "h1", "GPU-h100-0"));
  cluster_.Add(BoundPod("web-1", "h1", "GPU-h100-7"));
  EXPECT_THAT(UsedGpus(*Node("h1")), ElementsAre(7));
  EXPECT_EQ(Node("h1")->used_slots(), 1);
}

// ---------------------------------------------------------------------------------------------
// Reservations

TEST_F(ClusterStateTest, ReserveWithTheCurrentVersionTakesTheGpus) {
  cluster_.Add(H100Node("h1"));
  const PodInfo pod = PendingPod("web-1", 2);
  cluster_.Add(pod);
  const uint64_t version = Node("h1")->version();
  const uint64_t generation = state().Snapshot()->generation();

  Status s = state().Reserve(ReservationOf(pod, "h1", {2, 3}));
  ASSERT_TRUE(s.ok()) << s.ToString();

  auto snapshot = state().Snapshot();
  EXPECT_GT(snapshot->generation(), generation);
  const NodeState* node = snapshot->Find("h1");
  EXPECT_NE(node->version(), version);
  EXPECT_THAT(UsedGpus(*node), ElementsAre(2, 3));
  for (int gpu : {2, 3}) {
    ASSERT_EQ(node->gpu(gpu).occupants.size(), 1u);
    EXPECT_TRUE(state().ReservedPods(node->name()).contains(node->gpu(gpu).occupants[0].pod_uid));
    EXPECT_EQ(node->gpu(gpu).occupants[0].pod_uid, "uid-web-1");
    EXPECT_EQ(node->gpu(gpu).occupants[0].group, "default/Deployment/web");
  }
  EXPECT_EQ(node->used_slots(), 2);
  ClusterCounts counts = state().Counts();
  EXPECT_EQ(counts.pods, 1u);
  EXPECT_EQ(counts.placed_pods, 1u);
  EXPECT_EQ(counts.reservations, 1u);
}

TEST_F(ClusterStateTest, ReserveOfAPodNotYetSeenWorks) {
  cluster_.Add(Dgx1Node("d1"));
  Status s = state().Reserve(ReservationOf(PendingPod("new"), "d1", {5}));
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_THAT(UsedGpus(*Node("d1")), ElementsAre(5));
  EXPECT_EQ(state().Counts().reservations, 1u);
}

TEST_F(ClusterStateTest, ReserveWithAStaleVersionConflictsAndChangesNothing) {
  cluster_.Add(H100Node("h1"));
  const PodInfo pod = PendingPod("web-1");
  cluster_.Add(pod);
  Reservation r = ReservationOf(pod, "h1", {0});
  // Someone else's pod lands on the node after the decision was made.
  cluster_.Add(BoundPod("other", "h1", "GPU-h100-4"));
  auto before = state().Snapshot();

  Status s = state().Reserve(r);
  EXPECT_EQ(s.code(), StatusCode::kConflict) << s.ToString();
  EXPECT_THAT(s.message(), HasSubstr("h1"));

  auto after = state().Snapshot();
  EXPECT_EQ(after, before);  // nothing published
  EXPECT_THAT(UsedGpus(*after->Find("h1")), ElementsAre(4));
  ClusterCounts counts = state().Counts();
  EXPECT_EQ(counts.reservations, 0u);
  EXPECT_EQ(counts.placed_pods, 1u);

  // Deciding again on the current version succeeds.
  Status again = state().Reserve(ReservationOf(pod, "h1", {0}));
  EXPECT_TRUE(again.ok()) << again.ToString();
}

TEST_F(ClusterStateTest, ReserveOfAPodThatAlreadyHoldsGpusConflicts) {
  cluster_.Add(H100Node("h1"));
  cluster_.Add(H100Node("h2"));
  // Bound through the API.
  const PodInfo bound = BoundPod("bound", "h1", "GPU-h100-0");
  cluster_.Add(bound);
  Status s = state().Reserve(ReservationOf(bound, "h2", {0}));
  EXPECT_EQ(s.code(), StatusCode::kConflict) << s.ToString();
  EXPECT_THAT(s.message(), HasSubstr("default/bound"));
  EXPECT_THAT(UsedGpus(*Node("h2")), IsEmpty());

  // Already reserved by a bind in flight.
  const PodInfo pending = PendingPod("pending");
  ASSERT_TRUE(state().Reserve(ReservationOf(pending, "h1", {1})).ok());
  Status twice = state().Reserve(ReservationOf(pending, "h2", {1}));
  EXPECT_EQ(twice.code(), StatusCode::kConflict) << twice.ToString();
  EXPECT_THAT(UsedGpus(*Node("h2")), IsEmpty());
  EXPECT_THAT(UsedGpus(*Node("h1")), ElementsAre(0, 1));
  EXPECT_EQ(state().Counts().reservations, 1u);
}

TEST_F(ClusterStateTest, ReserveRejectsUnknownNodesBadGpusAndNodesWithoutTopology) {
  cluster_.Add(H100Node("h1"));
  cluster_.Add(MakeNode().Name("broken").CorruptTopology("not json").Allocatable(8).Obj());
  const PodInfo pod = PendingPod("web-1");

  Reservation unknown = ReservationOf(pod, "nope", {0});
  unknown.node_version = Node("h1")->version();
  EXPECT_EQ(state().Reserve(unknown).code(), StatusCode::kNotFound);

  EXPECT_EQ(state().Reserve(ReservationOf(pod, "h1", {8})).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(state().Reserve(ReservationOf(pod, "h1", {-1})).code(), StatusCode::kInvalidArgument);
  Status broken = state().Reserve(ReservationOf(pod, "broken", {0}));
  EXPECT_EQ(broken.code(), StatusCode::kFailedPrecondition) << broken.ToString();
  EXPECT_THAT(broken.message(), HasSubstr("not json"));

  EXPECT_EQ(state().Counts().reservations, 0u);
  EXPECT_THAT(UsedGpus(*Node("h1")), IsEmpty());
}

TEST_F(ClusterStateTest, ConfirmBindingTurnsTheReservationIntoAPlacement) {
  cluster_.Add(H100Node("h1"));
  const PodInfo pod = PendingPod("web-1");
  ASSERT_TRUE(state().Reserve(ReservationOf(pod, "h1", {6})).ok());
  const uint64_t version = Node("h1")->version();
  const uint64_t generation = state().Snapshot()->generation();
  EXPECT_THAT(state().ReservedPods("h1"), ElementsAre("uid-web-1"));
  EXPECT_EQ(state().Counts().reservations, 1u);

  // The reservation already placed the pod: confirming it changes no node state and publishes
  // no snapshot; only the cluster state's reservation ends.
  state().ConfirmBinding("uid-web-1", "h1");
  auto node = Node("h1");
  EXPECT_EQ(node->version(), version);
  EXPECT_EQ(state().Snapshot()->generation(), generation);
  EXPECT_THAT(state().ReservedPods("h1"), IsEmpty());
  ASSERT_EQ(node->gpu(6).occupants.size(), 1u);
  EXPECT_FALSE(state().ReservedPods(node->name()).contains(node->gpu(6).occupants[0].pod_uid));
  EXPECT_EQ(node->used_slots(), 1);
  ClusterCounts counts = state().Counts();
  EXPECT_EQ(counts.reservations, 0u);
  EXPECT_EQ(counts.placed_pods, 1u);
  ASSERT_TRUE(state().FindPod("uid-web-1").has_value());
  EXPECT_EQ(state().FindPod("uid-web-1")->node_name, "h1");

  // Cancelling now does nothing: the bind happened.
  state().CancelReservation("uid-web-1");
  EXPECT_THAT(UsedGpus(*Node("h1")), ElementsAre(6));
}

// The bind writes the annotation and the node in one Binding; the watch then shows the pod as
// the API server holds it. ConfirmBinding keeps the Binding's annotations, so that event (in
// whatever order the API server lists the annotations) rebuilds and publishes nothing more.
TEST_F(ClusterStateTest, TheWatchedBindAfterConfirmBindingPublishesNothing) {
  cluster_.Add(H100Node("h1"));
  PodInfo pod = PendingPod("web-1");
  pod.annotations.emplace_back("gputopo.io/policy", "pack");
  pod.resource_version = "5";
  ASSERT_TRUE(state().Reserve(ReservationOf(pod, "h1", {6})).ok());
  state().ConfirmBinding(pod.uid, "h1", {{"gputopo.io/assigned-gpus", "GPU-h100-6"}});
  const uint64_t generation = state().Snapshot()->generation();
  const auto node = Node("h1");

  PodInfo watched = pod;
  watched.resource_version = "6";
  watched.node_name = "h1";
  watched.annotations = {{"gputopo.io/assigned-gpus", "GPU-h100-6"}, {"gputopo.io/policy", "pack"}};
  EXPECT_FALSE(state().UpsertPod(watched));
  EXPECT_EQ(state().Snapshot()->generation(), generation);
  EXPECT_EQ(Node("h1"), node);
  EXPECT_THAT(UsedGpus(*Node("h1")), ElementsAre(6));

  // Another controller's annotation is a change: it is kept, and published.
  watched.resource_version = "7";
  watched.annotations.emplace_back("gputopo.io/group", "other");
  (void)state().UpsertPod(watched);
  EXPECT_GT(state().Snapshot()->generation(), generation);
}

TEST_F(ClusterStateTest, ConfirmBindingOnAnotherNodeIsIgnored) {
  cluster_.Add(H100Node("h1"));
  cluster_.Add(H100Node("h2"));
  ASSERT_TRUE(state().Reserve(ReservationOf(PendingPod("web-1"), "h1", {6})).ok());
  state().ConfirmBinding("uid-web-1", "h2");
  state().ConfirmBinding("uid-unknown", "h1");
  EXPECT_TRUE(state().ReservedPods("h1").contains(Node("h1")->gpu(6).occupants[0].pod_uid));
  EXPECT_EQ(state().Counts().reservations, 1u);
}

TEST_F(ClusterStateTest, CancelReservationFreesTheGpus) {
  cluster_.Add(H100Node("h1"));
  const PodInfo pod = PendingPod("web-1", 2);
  cluster_.Add(pod);
  ASSERT_TRUE(state().Reserve(ReservationOf(pod, "h1", {0, 1})).ok());

  state().CancelReservation("uid-web-1");
  auto node = Node("h1");
  EXPECT_THAT(UsedGpus(*node), IsEmpty());
  EXPECT_EQ(node->used_slots(), 0);
  ClusterCounts counts = state().Counts();
  EXPECT_EQ(counts.reservations, 0u);
  EXPECT_EQ(counts.placed_pods, 0u);
  EXPECT_EQ(counts.pods, 1u);  // still a pending pod

  // It can be reserved again.
  Status s = state().Reserve(ReservationOf(pod, "h1", {2, 3}));
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_THAT(UsedGpus(*Node("h1")), ElementsAre(2, 3));

  state().CancelReservation("uid-unknown");  // harmless
  EXPECT_THAT(UsedGpus(*Node("h1")), ElementsAre(2, 3));
}

TEST_F(ClusterStateTest, CancelReservationLeavesBoundPodsAlone) {
  cluster_.Add(H100Node("h1"));
  cluster_.Add(BoundPod("bound", "h1", "GPU-h100-0"));
  state().CancelReservation("uid-bound");
  EXPECT_THAT(UsedGpus(*Node("h1")), ElementsAre(0));
}

TEST_F(ClusterStateTest, PendingUpdateKeepsTheReservation) {
  cluster_.Add(H100Node("h1"));
  const PodInfo pod = PendingPod("web-1", 2);
  cluster_.Add(pod);
  ASSERT_TRUE(state().Reserve(ReservationOf(pod, "h1", {4, 5})).ok());

  // Bind patched the annotation; the watch shows the pod still pending.
  PodInfo patched = pod;
  patched.annotations.emplace_back("gputopo.io/assigned-gpus", "GPU-h100-4,GPU-h100-5");
  patched.resource_version = "2";
  cluster_.Add(patched);

  auto node = Node("h1");
  EXPECT_THAT(UsedGpus(*node), ElementsAre(4, 5));
  for (int gpu : {4, 5}) {
    ASSERT_EQ(node->gpu(gpu).occupants.size(), 1u);
    EXPECT_TRUE(state().ReservedPods(node->name()).contains(node->gpu(gpu).occupants[0].pod_uid));
  }
  EXPECT_EQ(node->used_slots(), 2);
  EXPECT_EQ(state().Counts().reservations, 1u);
  EXPECT_EQ(state().FindPod("uid-web-1")->resource_version, "2");
}

TEST_F(ClusterStateTest, BoundUpdateOnTheSameNodeConvertsTheReservation) {
  struct Case {
    std::string name;
    NodeInfo node;
    std::string assigned;  // "": no annotation
  };
  const std::vector<Case> cases = {
      {"same uuids", H100Node("h1"), "GPU-h100-2,GPU-h100-3"},
      {"same indices", Dgx1Node("d1"), "2,3"},
      {"no annotation yet", H100Node("h1"), ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    TestCluster cluster;
    cluster.Add(c.node);
    const PodInfo pod = PendingPod("web-1", 2);
    cluster.Add(pod);
    Reservation r;
    r.pod = pod;
    r.node = c.node.name;
    r.gpus = {2, 3};
    r.node_version = cluster.Node(c.node.name)->version();
    ASSERT_TRUE(cluster.state().Reserve(r).ok());

    PodInfo bound = pod;
    bound.node_name = c.node.name;
    bound.phase = PodPhase::kRunning;
    if (!c.assigned.empty()) bound.annotations.emplace_back("gputopo.io/assigned-gpus", c.assigned);
    cluster.Add(bound);

    auto node = cluster.Node(c.node.name);
    EXPECT_THAT(UsedGpus(*node), ElementsAre(2, 3));
    for (int gpu : {2, 3}) {
      EXPECT_EQ(node->gpu(gpu).slots_used, 1);
      ASSERT_EQ(node->gpu(gpu).occupants.size(), 1u);
      EXPECT_FALSE(
          state().ReservedPods(node->name()).contains(node->gpu(gpu).occupants[0].pod_uid));
    }
    EXPECT_EQ(node->used_slots(), 2);
    EXPECT_EQ(node->unplaced_slots(), 0);
    ClusterCounts counts = cluster.state().Counts();
    EXPECT_EQ(counts.reservations, 0u);
    EXPECT_EQ(counts.placed_pods, 1u);
    EXPECT_EQ(counts.pods, 1u);
  }
}

TEST_F(ClusterStateTest, BoundUpdateWithOtherGpusReplacesTheReservation) {
  cluster_.Add(H100Node("h1"));
  const PodInfo pod = PendingPod("web-1");
  ASSERT_TRUE(state().Reserve(ReservationOf(pod, "h1", {0})).ok());
  PodInfo bound = pod;
  bound.node_name = "h1";
  bound.annotations.emplace_back("gputopo.io/assigned-gpus", "GPU-h100-7");
  cluster_.Add(bound);
  auto node = Node("h1");
  EXPECT_THAT(UsedGpus(*node), ElementsAre(7));
  EXPECT_EQ(node->used_slots(), 1);
  EXPECT_EQ(state().Counts().reservations, 0u);
}

TEST_F(ClusterStateTest, BoundUpdateOnAnotherNodeMovesTheReservedPod) {
  cluster_.Add(H100Node("h1"));
  cluster_.Add(H100Node("h2"));
  const PodInfo pod = PendingPod("web-1");
  ASSERT_TRUE(state().Reserve(ReservationOf(pod, "h1", {0})).ok());
  cluster_.Add(BoundPod("web-1", "h2", "GPU-h100-3"));
  EXPECT_THAT(UsedGpus(*Node("h1")), IsEmpty());
  EXPECT_THAT(UsedGpus(*Node("h2")), ElementsAre(3));
  EXPECT_FALSE(state().ReservedPods("h2").contains(Node("h2")->gpu(3).occupants[0].pod_uid));
  ClusterCounts counts = state().Counts();
  EXPECT_EQ(counts.reservations, 0u);
  EXPECT_EQ(counts.placed_pods, 1u);
}

TEST_F(ClusterStateTest, RemovePodDropsItsReservation) {
  cluster_.Add(H100Node("h1"));
  ASSERT_TRUE(state().Reserve(ReservationOf(PendingPod("web-1"), "h1", {0})).ok());
  state().RemovePod("uid-web-1");
  EXPECT_THAT(UsedGpus(*Node("h1")), IsEmpty());
  EXPECT_EQ(state().Counts().reservations, 0u);
  EXPECT_EQ(state().Counts().pods, 0u);
}

TEST_F(ClusterStateTest, CountsReportReservations) {
  cluster_.Add(H100Node("h1"));
  cluster_.Add(PendingPod("waiting"));
  cluster_.Add(BoundPod("bound", "h1", "GPU-h100-0"));
  ASSERT_TRUE(state().Reserve(ReservationOf(PendingPod("r1"), "h1", {1})).ok());
  ASSERT_TRUE(state().Reserve(ReservationOf(PendingPod("r2"), "h1", {2})).ok());
  ClusterCounts counts = state().Counts();
  EXPECT_EQ(counts.nodes, 1u);
  EXPECT_EQ(counts.pods, 4u);
  EXPECT_EQ(counts.placed_pods, 3u);
  EXPECT_EQ(counts.reservations, 2u);
}

TEST_F(ClusterStateTest, StalePendingEventForABoundPodIsIgnored) {
  cluster_.Add(H100Node("h1"));
  const PodInfo bound = BoundPod("web-1", "h1", "GPU-h100-5");
  cluster_.Add(bound);

  PodInfo stale = bound;
  stale.node_name.clear();
  stale.phase = PodPhase::kPending;
  cluster_.Add(stale);

  EXPECT_THAT(UsedGpus(*Node("h1")), ElementsAre(5));
  EXPECT_EQ(state().FindPod("uid-web-1")->node_name, "h1");
  EXPECT_EQ(state().Counts().placed_pods, 1u);
}

TEST_F(ClusterStateTest, StalePendingEventAfterConfirmBindingIsIgnored) {
  cluster_.Add(H100Node("h1"));
  const PodInfo pod = PendingPod("web-1");
  ASSERT_TRUE(state().Reserve(ReservationOf(pod, "h1", {5})).ok());
  state().ConfirmBinding("uid-web-1", "h1");
  cluster_.Add(pod);  // the watch delivers the pending pod late
  auto node = Node("h1");
  EXPECT_THAT(UsedGpus(*node), ElementsAre(5));
  EXPECT_FALSE(state().ReservedPods(node->name()).contains(node->gpu(5).occupants[0].pod_uid));
  EXPECT_EQ(state().Counts().reservations, 0u);
}

// ---------------------------------------------------------------------------------------------
// Reset

TEST_F(ClusterStateTest, ResetReplacesEverything) {
  cluster_.Add(H100Node("h1"));
  cluster_.Add(H100Node("h2"));
  cluster_.Add(BoundPod("old", "h1", "GPU-h100-0"));
  cluster_.Add(BoundPod("old2", "h2", "GPU-h100-0"));
  const uint64_t generation = state().Snapshot()->generation();

  state().Reset({H100Node("h2"), Dgx1Node("d3")},
                {BoundPod("new", "h2", "GPU-h100-4"), BoundPod("new-d", "d3", "1,2", 2),
                 PendingPod("waiting")});

  auto snapshot = state().Snapshot();
  EXPECT_GT(snapshot->generation(), generation);
  EXPECT_EQ(snapshot->node_count(), 2u);
  EXPECT_EQ(snapshot->Find("h1"), nullptr);
  ASSERT_NE(snapshot->Find("h2"), nullptr);
  ASSERT_NE(snapshot->Find("d3"), nullptr);
  EXPECT_EQ(snapshot->nodes()[snapshot->FindIndex("d3")]->name(), "d3");
  EXPECT_THAT(UsedGpus(*snapshot->Find("h2")), ElementsAre(4));
  EXPECT_EQ(snapshot->Find("h2")->used_slots(), 1);
  EXPECT_THAT(UsedGpus(*snapshot->Find("d3")), ElementsAre(1, 2));
  EXPECT_FALSE(state().FindPod("uid-old").has_value());
  EXPECT_FALSE(state().FindPod("uid-old2").has_value());
  ClusterCounts counts = state().Counts();
  EXPECT_EQ(counts.nodes, 2u);
  EXPECT_EQ(counts.pods, 3u);
  EXPECT_EQ(counts.placed_pods, 2u);
  EXPECT_EQ(counts.reservations, 0u);

  // The new state keeps working: a node added after Reset is found, and reservations use it.
  cluster_.Add(H100Node("h9"));
  ASSERT_NE(Node("h9"), nullptr);
  EXPECT_TRUE(state().Reserve(ReservationOf(PendingPod("waiting"), "h9", {0})).ok());
  EXPECT_THAT(UsedGpus(*Node("h9")), ElementsAre(0));
}

// A relist touches each node once: versions are unique and increasing across all NodeStates, so
// a node rebuilt once per pod would have moved by more than one.
TEST_F(ClusterStateTest, ReplacePodsRebuildsEachTouchedNodeOnce) {
  cluster_.Add(H100Node("h1"));
  cluster_.Add(H100Node("h2"));
  cluster_.Add(BoundPod("old", "h1", "GPU-h100-0"));
  const uint64_t h2_version = Node("h2")->version();
  const uint64_t newest = std::max(Node("h1")->version(), h2_version);

  state().ReplacePods({BoundPod("a", "h1", "GPU-h100-1"), BoundPod("b", "h1", "GPU-h100-2"),
                       MakePod().Name("cpu").Requests(4000, 0).OnNode("h1").Obj()});

  EXPECT_EQ(Node("h1")->version(), newest + 1);
  EXPECT_THAT(UsedGpus(*Node("h1")), ElementsAre(1, 2));
  EXPECT_EQ(Node("h1")->host().cpu_requested_milli, 4000);
  EXPECT_EQ(Node("h2")->version(), h2_version);  // untouched
  EXPECT_EQ(state().Counts().pods, 2u);
}

TEST_F(ClusterStateTest, ResetKeepsReservationsOfPodsStillPending) {
  cluster_.Add(H100Node("h1"));
  const PodInfo kept = PendingPod("kept");
  const PodInfo gone = PendingPod("gone");
  const PodInfo landed = PendingPod("landed");
  const PodInfo done = PendingPod("done");
  ASSERT_TRUE(state().Reserve(ReservationOf(kept, "h1", {0})).ok());
  ASSERT_TRUE(state().Reserve(ReservationOf(gone, "h1", {1})).ok());
  ASSERT_TRUE(state().Reserve(ReservationOf(landed, "h1", {2})).ok());
  ASSERT_TRUE(state().Reserve(ReservationOf(done, "h1", {3})).ok());

  PodInfo done_now = done;
  done_now.phase = PodPhase::kFailed;
  state().Reset({H100Node("h1")},
                {kept,                                    // still pending: keeps GPU 0
                                                          // "gone" is absent: dropped
                 BoundPod("landed", "h1", "GPU-h100-2"),  // bound: a placement, once
                 done_now});                              // finished: dropped

  auto node = Node("h1");
  EXPECT_THAT(UsedGpus(*node), ElementsAre(0, 2));
  ASSERT_EQ(node->gpu(0).occupants.size(), 1u);
  EXPECT_TRUE(state().ReservedPods(node->name()).contains(node->gpu(0).occupants[0].pod_uid));
  EXPECT_EQ(node->gpu(0).occupants[0].pod_uid, "uid-kept");
  ASSERT_EQ(node->gpu(2).occupants.size(), 1u);
  EXPECT_FALSE(state().ReservedPods(node->name()).contains(node->gpu(2).occupants[0].pod_uid));
  EXPECT_EQ(node->used_slots(), 2);
  ClusterCounts counts = state().Counts();
  EXPECT_EQ(counts.pods, 2u);
  EXPECT_EQ(counts.placed_pods, 2u);
  EXPECT_EQ(counts.reservations, 1u);

  // The kept reservation still converts when the pod is seen bound.
  cluster_.Add(BoundPod("kept", "h1", "GPU-h100-0"));
  EXPECT_FALSE(state().ReservedPods("h1").contains(Node("h1")->gpu(0).occupants[0].pod_uid));
  EXPECT_EQ(Node("h1")->used_slots(), 2);
  EXPECT_EQ(state().Counts().reservations, 0u);
}

// Regression: Reset() moved each kept reservation out of its temporary map the first time the
// pod was seen in the new list; a pod listed twice (a snapshot file can repeat an object) then
// replaced the kept entry with the moved-from one (node "", no GPUs, still flagged reserved), so
// the reservation's GPUs showed as free and the pod landed in the node's unplaced list.
TEST_F(ClusterStateTest, ResetWithAPendingPodListedTwiceKeepsItsReservation) {
  cluster_.Add(H100Node("h1"));
  const PodInfo kept = PendingPod("kept");
  ASSERT_TRUE(state().Reserve(ReservationOf(kept, "h1", {0})).ok());

  state().Reset({H100Node("h1")}, {kept, kept});

  auto node = Node("h1");
  EXPECT_THAT(UsedGpus(*node), ElementsAre(0));
  EXPECT_EQ(node->unplaced_slots(), 0);
  EXPECT_EQ(node->used_slots(), 1);
  ClusterCounts counts = state().Counts();
  EXPECT_EQ(counts.pods, 1u);
  EXPECT_EQ(counts.placed_pods, 1u);
  EXPECT_EQ(counts.reservations, 1u);
}

// ---------------------------------------------------------------------------------------------
// Snapshots and versions

TEST_F(ClusterStateTest, SnapshotsAreImmutable) {
  auto empty = state().Snapshot();
  cluster_.Add(H100Node("h1"));
  auto idle = state().Snapshot();
  cluster_.Add(BoundPod("web-1", "h1", "GPU-h100-1"));
  auto busy = state().Snapshot();

  EXPECT_EQ(empty->node_count(), 0u);
  EXPECT_EQ(empty->Find("h1"), nullptr);
  ASSERT_NE(idle->Find("h1"), nullptr);
  EXPECT_THAT(UsedGpus(*idle->Find("h1")), IsEmpty());
  EXPECT_EQ(idle->Find("h1")->used_slots(), 0);
  EXPECT_THAT(UsedGpus(*busy->Find("h1")), ElementsAre(1));

  EXPECT_LT(empty->generation(), idle->generation());
  EXPECT_LT(idle->generation(), busy->generation());

  // A NodeState outlives the snapshot that handed it out.
  std::shared_ptr<const NodeState> held = busy->FindShared("h1");
  busy.reset();
  state().RemovePod("uid-web-1");
  EXPECT_THAT(UsedGpus(*held), ElementsAre(1));
  EXPECT_THAT(UsedGpus(*Node("h1")), IsEmpty());
}

TEST_F(ClusterStateTest, GenerationIncreasesWithEveryChange) {
  std::vector<uint64_t> generations = {state().Snapshot()->generation()};
  auto record = [&] { generations.push_back(state().Snapshot()->generation()); };
  cluster_.Add(H100Node("h1"));
  record();
  cluster_.Add(BoundPod("a", "h1", "GPU-h100-0"));
  record();
  const PodInfo b = PendingPod("b");
  ASSERT_TRUE(state().Reserve(ReservationOf(b, "h1", {1})).ok());
  record();
  // (Confirming the bind is no change of a snapshot: ConfirmBindingTurnsTheReservationInto...)
  state().RemovePod("uid-a");
  record();
  state().RemoveNode("h1");
  record();
  state().Reset({H100Node("h1")}, {});
  record();
  for (size_t i = 1; i < generations.size(); ++i) {
    EXPECT_GT(generations[i], generations[i - 1]) << "change " << i;
  }
}

// kubelet updates a pod's status several times after it is bound; none of those updates changes
// what gputopo keeps, and none may cost a rebuild, a new snapshot, or prioritize its reuse of
// the filter's evaluations (which needs the same snapshot generation).
TEST_F(ClusterStateTest, AnUpdateThatChangesNothingKeptPublishesNothing) {
  cluster_.Add(H100Node("h1"));
  PodInfo pod = MakePod()
                    .Name("a")
                    .Gpus(1)
                    .OwnedByDeployment("web")
                    .OnNode("h1")
                    .Assigned("GPU-h100-0")
                    .ResourceVersion("10")
                    .Obj();
  cluster_.Add(pod);
  const uint64_t generation = state().Snapshot()->generation();
  const auto node = Node("h1");
  ASSERT_EQ(node->used_slots(), 1);

  pod.resource_version = "11";
  pod.phase = PodPhase::kRunning;
  pod.labels.emplace_back("app", "web");
  EXPECT_FALSE(state().UpsertPod(pod));
  EXPECT_EQ(state().Snapshot()->generation(), generation);
  EXPECT_EQ(Node("h1"), node);                                  // the very same NodeState
  EXPECT_EQ(state().FindPod("uid-a")->resource_version, "11");  // stored all the same

  // What is kept changes: the node agent reports the GPU it sees.
  pod.resource_version = "12";
  pod.annotations.emplace_back("gputopo.io/observed-gpus", "GPU-h100-0");
  EXPECT_FALSE(state().UpsertPod(pod));
  EXPECT_GT(state().Snapshot()->generation(), generation);
  EXPECT_NE(Node("h1")->version(), node->version());

  // A terminal phase always counts: the pod is dropped and frees its GPU.
  pod.resource_version = "13";
  pod.phase = PodPhase::kSucceeded;
  (void)state().UpsertPod(pod);
  EXPECT_EQ(Node("h1")->used_slots(), 0);
}

TEST_F(ClusterStateTest, NodeVersionChangesOnEveryRebuildOfThatNodeOnly) {
  cluster_.Add(H100Node("h1"));
  cluster_.Add(H100Node("h2"));
  const auto h2 = Node("h2");
  std::set<uint64_t> versions = {Node("h1")->version()};
  auto record = [&](const char* what) {
    EXPECT_TRUE(versions.insert(Node("h1")->version()).second) << what;
  };
  cluster_.Add(BoundPod("a", "h1", "GPU-h100-0"));
  record("pod added");
  cluster_.Add(BoundPod("a", "h1", "GPU-h100-1"));
  record("the pod's GPU changed");
  cluster_.Add(H100Node("h1"));
  record("node upserted");
  const PodInfo b = PendingPod("b");
  ASSERT_TRUE(state().Reserve(ReservationOf(b, "h1", {1})).ok());
  record("reserved");
  state().RemovePod("uid-a");
  record("pod removed");
  // h2 was not touched: the very same NodeState is still published.
  EXPECT_EQ(Node("h2"), h2);
}

// ---------------------------------------------------------------------------------------------
// The node agent's gputopo.io/observed-gpus

PodInfo ObservedPod(const std::string& name, const std::string& node, const std::string& assigned,
                    const std::string& observed) {
  PodInfo pod = BoundPod(name, node, assigned);
  pod.annotations.emplace_back("gputopo.io/observed-gpus", observed);
  return pod;
}

TEST_F(ClusterStateTest, ObservedGpusWinOverAssignedAndAMismatchIsReportedOnce) {
  cluster_.Add(H100Node("h1", /*replicas=*/2));
  EXPECT_FALSE(state().UpsertPod(BoundPod("web-1", "h1", "GPU-h100-0")));
  EXPECT_THAT(UsedGpus(*Node("h1")), ElementsAre(0));

  // The agent saw kubelet give the pod GPU 3: the cache follows the ground truth.
  EXPECT_TRUE(state().UpsertPod(ObservedPod("web-1", "h1", "GPU-h100-0", "GPU-h100-3")));
  auto node = Node("h1");
  EXPECT_THAT(UsedGpus(*node), ElementsAre(3));
  ASSERT_EQ(node->gpu(3).occupants.size(), 1u);
  EXPECT_TRUE(node->gpu(3).occupants[0].observed);
  EXPECT_EQ(node->gpu(3).occupants[0].recorded, "GPU-h100-0");
  // The same mismatch again (a resync, another annotation changing) is not news.
  EXPECT_FALSE(state().UpsertPod(ObservedPod("web-1", "h1", "GPU-h100-0", "GPU-h100-3")));
  EXPECT_THAT(UsedGpus(*Node("h1")), ElementsAre(3));
}

// Later placements count the GPUs really in use: with one slot per GPU and every GPU but 0 and
// 3 taken, a pod gputopo put on 0 that kubelet gave 3 leaves only GPU 0 free.
TEST_F(ClusterStateTest, PlacementsAvoidTheObservedGpusNotTheAssignedOnes) {
  cluster_.Add(H100Node("h1", /*replicas=*/1));
  for (int gpu : {1, 2, 4, 5, 6, 7}) {
    cluster_.Add(MakePod()
                     .Name("batch-" + std::to_string(gpu))
                     .Gpus(1)
                     .Group("batch")
                     .OnNode("h1")
                     .Assigned("GPU-h100-" + std::to_string(gpu))
                     .Obj());
  }
  (void)state().UpsertPod(ObservedPod("web-1", "h1", "GPU-h100-0", "GPU-h100-3"));
  const PodRequirements next = *RequirementsOf(PendingPod("web-2"));
  const NodeEvaluation e = EvaluateNode(next, *Node("h1"), cluster_.preset());
  ASSERT_TRUE(e.fits()) << e.reason << ": " << e.detail;
  EXPECT_EQ(e.gpus, Bit(0));
}

TEST_F(ClusterStateTest, ObservedGpusEqualToAssignedAreNoMismatchInAnyOrder) {
  cluster_.Add(H100Node("h1", /*replicas=*/2));
  PodInfo pod = BoundPod("web-1", "h1", "GPU-h100-1,GPU-h100-2", /*gpus=*/2);
  pod.annotations.emplace_back("gputopo.io/observed-gpus", "GPU-h100-2,GPU-h100-1");
  EXPECT_FALSE(state().UpsertPod(pod));
  auto node = Node("h1");
  EXPECT_THAT(UsedGpus(*node), ElementsAre(1, 2));
  EXPECT_TRUE(node->gpu(1).occupants[0].observed);
  EXPECT_EQ(node->gpu(1).occupants[0].recorded, "");
  EXPECT_FALSE(GpusMismatch({"a"}, {}));
  EXPECT_FALSE(GpusMismatch({}, {"a"}));
  EXPECT_TRUE(GpusMismatch({"a", "b"}, {"a"}));
}

// A pod bound by another scheduler has no assigned-gpus: observed-gpus alone places it.
TEST_F(ClusterStateTest, ObservedGpusAlonePlaceAPodGputopoDidNotBind) {
  cluster_.Add(Dgx1Node("d1", /*replicas=*/2));
  PodInfo pod = MakePod().Name("other").Gpus(1).OnNode("d1").Phase(PodPhase::kRunning).Obj();
  pod.annotations.emplace_back("gputopo.io/observed-gpus", "6");
  EXPECT_FALSE(state().UpsertPod(pod));
  auto node = Node("d1");
  EXPECT_THAT(UsedGpus(*node), ElementsAre(6));
  EXPECT_EQ(node->unplaced_slots(), 0);
}

// An agent annotation naming a GPU the node does not have fails that pod's placement alone,
// with a reason: its slot counts as held somewhere unknown, and nothing else is disturbed.
TEST_F(ClusterStateTest, ObservedGpuTheNodeLacksLeavesThePodUnplacedWithAReason) {
  cluster_.Add(H100Node("h1", /*replicas=*/2));
  cluster_.Add(BoundPod("web-0", "h1", "GPU-h100-4"));
  (void)state().UpsertPod(ObservedPod("web-1", "h1", "GPU-h100-0", "GPU-elsewhere-9"));
  auto node = Node("h1");
  EXPECT_THAT(UsedGpus(*node), ElementsAre(4));
  ASSERT_EQ(node->unplaced().size(), 1u);
  EXPECT_EQ(node->unplaced()[0].pod_key, "default/web-1");
  EXPECT_THAT(node->unplaced()[0].reason, HasSubstr("GPU-elsewhere-9"));
  EXPECT_EQ(node->unplaced_slots(), 1);
}

// ---------------------------------------------------------------------------------------------
// GPU health from the node agent's topology document

TEST_F(ClusterStateTest, NothingIsPlacedOnAnUnhealthyGpuAndItsPodsStillCount) {
  MachineTopology sick = HgxH100();
  sick.gpu(2).healthy = false;
  sick.gpu(2).health_reason = "nvmlDeviceGetMemoryInfo: GPU is lost";
  // Two replicas per GPU: GPU 2 still has a free slot beside the pod already on it.
  cluster_.Add(MakeNode().Name("sick").Topology(sick).Replicas(2).Allocatable(16).Obj());
  cluster_.Add(MakeNode().Name("well").Topology(HgxH100()).Replicas(2).Allocatable(16).Obj());
  cluster_.Add(BoundPod("web-0", "sick", "GPU-h100-2"));  // was running there before it broke
  auto sick_node = Node("sick");
  auto well_node = Node("well");
  EXPECT_EQ(sick_node->unhealthy_gpus(), Bit(2));
  EXPECT_EQ(well_node->unhealthy_gpus(), 0u);
  EXPECT_THAT(UsedGpus(*sick_node), ElementsAre(2));
  // Health is part of what evaluations are shared by.
  cluster_.Add(BoundPod("web-1", "well", "GPU-h100-2"));
  EXPECT_NE(Node("sick")->signature(), Node("well")->signature());

  // An 8-GPU pod fits on the healthy node but no longer on the sick one, and the reason says why.
  const PodRequirements eight = *RequirementsOf(MakePod().Name("big").Gpus(8).Obj());
  EXPECT_TRUE(EvaluateNode(eight, *Node("well"), cluster_.preset()).fits());
  const NodeEvaluation e = EvaluateNode(eight, *Node("sick"), cluster_.preset());
  EXPECT_EQ(e.verdict, Verdict::kUnschedulable);
  EXPECT_THAT(e.detail, HasSubstr("1 unhealthy"));
  // Seven GPUs do, on every GPU but the broken one.
  const PodRequirements seven = *RequirementsOf(MakePod().Name("seven").Gpus(7).Obj());
  const NodeEvaluation f = EvaluateNode(seven, *Node("sick"), cluster_.preset());
  ASSERT_TRUE(f.fits()) << f.reason << ": " << f.detail;
  EXPECT_FALSE(topology::Has(f.gpus, 2));
}

TEST_F(ClusterStateTest, SignatureIsEqualForIdenticalNodesAndChangesWhenAPodLands) {
  cluster_.Add(H100Node("h1", 2));
  cluster_.Add(H100Node("h2", 2));
  cluster_.Add(Dgx1Node("d1", 2));
  EXPECT_EQ(Node("h1")->signature(), Node("h2")->signature());
  EXPECT_NE(Node("h1")->signature(), Node("d1")->signature());

  cluster_.Add(BoundPod("a", "h1", "GPU-h100-3"));
  EXPECT_NE(Node("h1")->signature(), Node("h2")->signature());

  // The same use by a pod of another group: equal again (the group is not part of it).
  PodInfo other = MakePod()
                      .Name("b")
                      .Gpus(1)
                      .OwnedBy("StatefulSet", "db")
                      .OnNode("h2")
                      .Assigned("3")
                      .Phase(PodPhase::kRunning)
                      .Obj();
  cluster_.Add(other);
  EXPECT_EQ(Node("h1")->signature(), Node("h2")->signature());

  // Same slots, different share: differs.
  cluster_.Add(H100Node("h3", 2));
  PodInfo heavy = BoundPod("c", "h3", "GPU-h100-3");
  heavy.annotations.emplace_back("gputopo.io/gpu-milli", "900");
  cluster_.Add(heavy);
  EXPECT_NE(Node("h1")->signature(), Node("h3")->signature());
}

TEST_F(ClusterStateTest, SignatureDiffersWithReplicasAndSlots) {
  cluster_.Add(H100Node("r1", 1));
  cluster_.Add(H100Node("r2", 2));
  // Two replicas per GPU but only 8 advertised: same total slots as r1, other replicas.
  cluster_.Add(MakeNode().Name("r2-capped").Topology(HgxH100()).Replicas(2).Allocatable(8).Obj());
  ASSERT_EQ(Node("r2-capped")->total_slots(), Node("r1")->total_slots());
  EXPECT_NE(Node("r1")->signature(), Node("r2")->signature());
  EXPECT_NE(Node("r1")->signature(), Node("r2-capped")->signature());
  EXPECT_NE(Node("r2")->signature(), Node("r2-capped")->signature());
}

TEST_F(ClusterStateTest, SignatureCountsUnplacedPods) {
  cluster_.Add(H100Node("h1"));
  cluster_.Add(H100Node("h2"));
  cluster_.Add(MakePod().Name("legacy").Gpus(1).OnNode("h2").Phase(PodPhase::kRunning).Obj());
  EXPECT_NE(Node("h1")->signature(), Node("h2")->signature());
}

// ---------------------------------------------------------------------------------------------
// Corrupt topology

TEST_F(ClusterStateTest, NodeWithCorruptTopologyStillCountsItsPods) {
  cluster_.Add(
      MakeNode().Name("bad").CorruptTopology("unexpected token at 3").Allocatable(8).Obj());
  cluster_.Add(BoundPod("a", "bad", "0,1", 2));
  cluster_.Add(MakePod().Name("b").Gpus(1).OnNode("bad").Phase(PodPhase::kRunning).Obj());

  auto node = Node("bad");
  ASSERT_NE(node, nullptr);
  EXPECT_FALSE(node->has_topology());
  EXPECT_THAT(node->topology_error(), HasSubstr("unexpected token at 3"));
  EXPECT_EQ(node->gpu_count(), 0);
  EXPECT_EQ(node->used_slots(), 3);
  EXPECT_EQ(node->unplaced_slots(), 3);
  EXPECT_EQ(node->free_slots(), 0);
  ASSERT_EQ(node->unplaced().size(), 2u);
  for (const UnplacedPod& u : node->unplaced()) {
    EXPECT_FALSE(u.reason.empty()) << u.pod_key;
  }
  EXPECT_EQ(state().Counts().placed_pods, 2u);
}

TEST_F(ClusterStateTest, NodeWithUnknownProfileHasNoTopology) {
  cluster_.Add(MakeNode().Name("n").Profile("no-such-machine").Allocatable(8).Obj());
  auto node = Node("n");
  ASSERT_NE(node, nullptr);
  EXPECT_FALSE(node->has_topology());
  EXPECT_THAT(node->topology_error(), HasSubstr("no-such-machine"));
}

// ---------------------------------------------------------------------------------------------
// CPU and memory besides the GPUs

constexpr int64_t kGiB = int64_t{1} << 30;

NodeInfo HostNode(const std::string& name) {
  return MakeNode()
      .Name(name)
      .Topology(HgxH100())
      .Allocatable(kGpus)
      .Host(/*cpu_milli=*/64000, /*memory_bytes=*/512 * kGiB)
      .Obj();
}

PodInfo CpuPod(const std::string& name, const std::string& node, int64_t cpu_milli,
               int64_t memory_bytes) {
  return MakePod()
      .Name(name)
      .OwnedByDeployment("cpu")
      .OnNode(node)
      .Phase(PodPhase::kRunning)
      .Requests(cpu_milli, memory_bytes)
      .Obj();
}

TEST_F(ClusterStateTest, EveryBoundPodsCpuAndMemoryCountOnItsNode) {
  cluster_.Add(HostNode("h1"));
  cluster_.Add(CpuPod("cpu-1", "h1", 10000, 20 * kGiB));
  PodInfo gpu = BoundPod("web-1", "h1", "GPU-h100-0");
  gpu.cpu_request_milli = 8000;
  gpu.memory_request_bytes = 64 * kGiB;
  cluster_.Add(gpu);
  const HostResources& host = Node("h1")->host();
  EXPECT_EQ(host.cpu_allocatable_milli, 64000);
  EXPECT_EQ(host.cpu_requested_milli, 18000);
  EXPECT_EQ(host.memory_requested_bytes, 84 * kGiB);
  EXPECT_EQ(host.cpu_free_milli(), 46000);
  EXPECT_EQ(host.memory_free_bytes(), 428 * kGiB);
  EXPECT_EQ(state().Counts().host_pods, 1u);
  EXPECT_EQ(state().Counts().pods, 1u);  // the GPU pod alone is kept whole
}

TEST_F(ClusterStateTest, GpuLessPodsFreeTheirCpuWhenTheyGoOrFinish) {
  cluster_.Add(HostNode("h1"));
  cluster_.Add(HostNode("h2"));
  const PodInfo a = CpuPod("cpu-a", "h1", 10000, kGiB);
  const PodInfo b = CpuPod("cpu-b", "h1", 5000, kGiB);
  cluster_.Add(a);
  cluster_.Add(b);
  cluster_.Add(a);  // the same pod again counts once
  EXPECT_EQ(Node("h1")->host().cpu_requested_milli, 15000);
  state().RemovePod(a.uid);
  EXPECT_EQ(Node("h1")->host().cpu_requested_milli, 5000);
  PodInfo done = b;
  done.phase = PodPhase::kSucceeded;
  cluster_.Add(done);
  EXPECT_EQ(Node("h1")->host().cpu_requested_milli, 0);
  EXPECT_EQ(Node("h1")->host().memory_requested_bytes, 0);
  EXPECT_EQ(state().Counts().host_pods, 0u);
  // A fresh list without a pod forgets it too.
  cluster_.Add(CpuPod("cpu-c", "h2", 3000, kGiB));
  EXPECT_EQ(Node("h2")->host().cpu_requested_milli, 3000);
  state().ReplacePods({});
  EXPECT_EQ(Node("h2")->host().cpu_requested_milli, 0);
}

TEST_F(ClusterStateTest, PendingGpuLessPodsTakeNothing) {
  cluster_.Add(HostNode("h1"));
  PodInfo pending = CpuPod("cpu-1", "", 10000, kGiB);
  pending.node_name.clear();
  pending.phase = PodPhase::kPending;
  cluster_.Add(pending);
  EXPECT_EQ(Node("h1")->host().cpu_requested_milli, 0);
  EXPECT_EQ(state().Counts().host_pods, 0u);
}

TEST_F(ClusterStateTest, HostPodsOnANodeSeenLaterCountOnceItArrives) {
  // The pod watch may deliver a pod before the node watch delivers its node.
  cluster_.Add(CpuPod("cpu-1", "late", 7000, kGiB));
  cluster_.Add(HostNode("late"));
  EXPECT_EQ(Node("late")->host().cpu_requested_milli, 7000);
}

TEST_F(ClusterStateTest, FreeCpuIsPartOfTheSignatureWhereTheNodeSaysIt) {
  cluster_.Add(HostNode("h1"));
  cluster_.Add(HostNode("h2"));
  EXPECT_EQ(Node("h1")->signature(), Node("h2")->signature());
  cluster_.Add(CpuPod("cpu-1", "h2", 1000, 0));
  EXPECT_NE(Node("h1")->signature(), Node("h2")->signature());
}

TEST_F(ClusterStateTest, WithoutFreesTheVictimsCpuAndMemoryOnce) {
  cluster_.Add(HostNode("h1"));
  PodInfo gpu = BoundPod("web-1", "h1", "GPU-h100-0,GPU-h100-1", /*gpus=*/2);
  gpu.cpu_request_milli = 8000;
  gpu.memory_request_bytes = 64 * kGiB;
  cluster_.Add(gpu);
  cluster_.Add(CpuPod("cpu-1", "h1", 1000, kGiB));
  const NodeState without = Node("h1")->Without({gpu.uid}, 0);
  EXPECT_EQ(without.host().cpu_requested_milli, 1000);
  EXPECT_EQ(without.host().memory_requested_bytes, kGiB);
}

TEST(ClusterStateLearningTest, TheLearnedMixReachesEveryNodeState) {
  topology::ShapeInterner interner;
  topology::ProfileCatalog profiles(interner);
  topology::TopologyResolver resolver(profiles, interner);
  cluster::WorkloadLearnerOptions options;
  options.min_check_every = 3;
  options.max_check_every = 3;
  ClusterState state(resolver, nullptr, options);
  state.UpsertNode(HostNode("h1"));
  state.UpsertNode(HostNode("h2"));
  EXPECT_EQ(state.Snapshot()->FindShared("h1")->observed_workload(), nullptr);
  for (int i = 0; i < 3; ++i) {
    state.UpsertPod(MakePod()
                        .Name("train-" + std::to_string(i))
                        .Gpus(4)
                        .Requests(16000, 128 * kGiB)
                        .OwnedByDeployment("train")
                        .Obj());
  }
  const auto [mix, seen] = state.Workload();
  EXPECT_EQ(seen, 3u);
  ASSERT_NE(mix, nullptr);
  ASSERT_EQ(mix->classes.size(), 1u);
  EXPECT_EQ(mix->classes[0].gpus, 4);
  EXPECT_EQ(mix->classes[0].cpu_milli, 16000);
  // Both nodes were rebuilt with it, the one no pod touched too.
  for (const char* name : {"h1", "h2"}) {
    SCOPED_TRACE(name);
    EXPECT_EQ(state.Snapshot()->FindShared(name)->observed_workload(), mix);
  }
  // A pod seen again is not counted again.
  state.UpsertPod(MakePod().Name("train-0").Gpus(4).OwnedByDeployment("train").Obj());
  EXPECT_EQ(state.Workload().second, 3u);
}

// ---------------------------------------------------------------------------------------------
// Concurrency

TEST_F(ClusterStateTest, ConcurrentOptimisticReservesNeverShareAGpu) {
  // Eight binders race for the eight GPUs of one node (R = 1). Each decides on a snapshot, names
  // the version it decided on, and decides again on Conflict: at the end each holds its own GPU.
  cluster_.Add(H100Node("h1"));
  constexpr int kBinders = kGpus;
  std::atomic<int> conflicts{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kBinders; ++t) {
    threads.emplace_back([&, t] {
      const PodInfo pod = PendingPod("p" + std::to_string(t));
      for (int attempt = 0; attempt < 10000; ++attempt) {
        auto node = state().Snapshot()->FindShared("h1");
        int free = -1;
        for (int g = 0; g < node->gpu_count() && free < 0; ++g) {
          if (node->gpu_free_slots(g) > 0) free = g;
        }
        if (free < 0) return;
        Reservation r;
        r.pod = pod;
        r.node = "h1";
        r.gpus = {free};
        r.node_version = node->version();
        Status s = state().Reserve(r);
        if (s.ok()) return;
        if (s.code() != StatusCode::kConflict) return;
        conflicts.fetch_add(1);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();

  auto node = Node("h1");
  std::set<std::string> holders;
  for (int g = 0; g < kGpus; ++g) {
    SCOPED_TRACE(g);
    EXPECT_EQ(node->gpu(g).slots_used, 1);
    ASSERT_EQ(node->gpu(g).occupants.size(), 1u);
    holders.insert(node->gpu(g).occupants[0].pod_uid);
  }
  EXPECT_EQ(holders.size(), static_cast<size_t>(kBinders));
  EXPECT_EQ(state().Counts().reservations, static_cast<size_t>(kBinders));
}

// ---------------------------------------------------------------------------------------------
// NodeState::Build on its own

class NodeStateTest : public ::testing::Test {
 protected:
  Result<topology::ResolvedTopology> Resolve(const NodeInfo& node) {
    return resolver_.Resolve(node);
  }
  static PodPlacement Placement(std::string uid, std::vector<std::string> assigned, int slots) {
    PodPlacement p;
    p.pod_uid = uid;
    p.pod_key = "default/" + uid;
    p.group = "g";
    p.slots = slots;
    p.assigned = std::move(assigned);
    return p;
  }

  topology::ShapeInterner interner_;
  topology::ProfileCatalog profiles_{interner_};
  topology::TopologyResolver resolver_{profiles_, interner_};
};

TEST_F(NodeStateTest, PlacementFlagsReachTheOccupants) {
  PodPlacement shared = Placement("a", {"GPU-h100-0"}, 1);
  shared.milli_per_gpu = 300;
  shared.observed = true;
  PodPlacement exclusive = Placement("b", {"1"}, 1);
  exclusive.exclusive = true;
  exclusive.group = "h";
  NodeState node = NodeState::Build("h1", Resolve(H100Node("h1", 4)), {shared, exclusive}, 42);

  EXPECT_EQ(node.name(), "h1");
  EXPECT_EQ(node.version(), 42u);
  ASSERT_TRUE(node.has_topology());
  EXPECT_EQ(node.gpu_count(), kGpus);
  const Occupant& a = node.gpu(0).occupants.at(0);
  EXPECT_EQ(a.pod_uid, "a");
  EXPECT_EQ(a.pod_key, "default/a");
  EXPECT_EQ(a.group, "g");
  EXPECT_EQ(a.milli, 300);
  EXPECT_TRUE(a.observed);
  EXPECT_FALSE(a.exclusive);
  EXPECT_EQ(node.gpu_free_slots(0), 3);
  EXPECT_EQ(node.gpu_free_milli(0), 700);
  const Occupant& b = node.gpu(1).occupants.at(0);
  EXPECT_EQ(b.milli, 1000);
  EXPECT_TRUE(b.exclusive);
  EXPECT_FALSE(b.observed);
  EXPECT_TRUE(node.gpu(1).exclusive);
  EXPECT_EQ(node.gpu_free_slots(1), 0);
  EXPECT_EQ(node.gpu_free_milli(1), 0);
  EXPECT_EQ(node.GroupGpus("g"), Bit(0));
  EXPECT_EQ(node.GroupGpus("h"), Bit(1));
  EXPECT_EQ(node.used_slots(), 2);
  EXPECT_EQ(node.free_slots(), 30);
}

TEST_F(NodeStateTest, NamingOneGpuTwiceHoldsTwoOfItsSlots) {
  NodeState node =
      NodeState::Build("h1", Resolve(H100Node("h1", 4)), {Placement("a", {"2", "2"}, 2)}, 1);
  EXPECT_EQ(node.gpu(2).slots_used, 2);
  EXPECT_EQ(node.gpu(2).milli_used, 500);
  EXPECT_EQ(node.used_slots(), 2);
  EXPECT_EQ(node.unplaced_slots(), 0);
}

TEST_F(NodeStateTest, FreeSlotsAndMilliAreNeverNegative) {
  // Three pods of 700 milli on one GPU of R = 2: over-committed by someone else.
  std::vector<PodPlacement> pods;
  for (const char* uid : {"a", "b", "c"}) {
    pods.push_back(Placement(uid, {"0"}, 1));
    pods.back().milli_per_gpu = 700;
  }
  // And an unplaced pod bigger than the node.
  pods.push_back(Placement("big", {}, 40));
  NodeState node = NodeState::Build("h1", Resolve(H100Node("h1", 2)), pods, 1);
  EXPECT_EQ(node.gpu(0).slots_used, 3);
  EXPECT_EQ(node.gpu(0).milli_used, 2100);
  EXPECT_EQ(node.gpu_free_slots(0), 0);
  EXPECT_EQ(node.gpu_free_milli(0), 0);
  EXPECT_EQ(node.used_slots(), 43);
  EXPECT_EQ(node.free_slots(), 0);
}

TEST_F(NodeStateTest, UnresolvedTopologyAlwaysHasAnError) {
  struct Case {
    std::string message;
    std::string want;
  };
  for (const Case& c : std::vector<Case>{{"boom", "boom"}, {"", "topology unavailable"}}) {
    SCOPED_TRACE(c.message);
    NodeState node =
        NodeState::Build("n", InvalidArgument(c.message), {Placement("a", {"0"}, 2)}, 7);
    EXPECT_FALSE(node.has_topology());
    EXPECT_EQ(node.topology_error(), c.want);
    EXPECT_EQ(node.gpu_count(), 0);
    EXPECT_EQ(node.used_slots(), 2);
    EXPECT_EQ(node.unplaced_slots(), 2);
    EXPECT_EQ(node.free_slots(), 0);
    EXPECT_EQ(node.version(), 7u);
  }
}

TEST_F(NodeStateTest, SignatureIgnoresNameVersionAndGroup) {
  auto resolved = Resolve(H100Node("x", 2));
  PodPlacement p = Placement("a", {"3"}, 1);
  PodPlacement q = Placement("b", {"3"}, 1);
  q.group = "other";
  NodeState one = NodeState::Build("one", resolved, {p}, 1);
  NodeState two = NodeState::Build("two", resolved, {q}, 2);
  NodeState empty = NodeState::Build("three", resolved, {}, 3);
  NodeState elsewhere = NodeState::Build("four", resolved, {Placement("c", {"4"}, 1)}, 4);
  EXPECT_EQ(one.signature(), two.signature());
  EXPECT_NE(one.signature(), empty.signature());
  EXPECT_NE(one.signature(), elsewhere.signature());
  PodPlacement exclusive = p;
  exclusive.exclusive = true;
  EXPECT_NE(one.signature(), NodeState::Build("five", resolved, {exclusive}, 5).signature());
}

// ---------------------------------------------------------------------------------------------
// SplitAssignedGpus

TEST(SplitAssignedGpusTest, TrimsAndDropsEmptyEntries) {
  struct Case {
    std::string value;
    std::vector<std::string> want;
  };
  const std::vector<Case> cases = {
      {"a, b,,c ", {"a", "b", "c"}},
      {"", {}},
      {",", {}},
      {" , ,", {}},
      {"GPU-1", {"GPU-1"}},
      {"0,1,2", {"0", "1", "2"}},
      {"  GPU-a  ,GPU-b", {"GPU-a", "GPU-b"}},
      {",x,", {"x"}},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(SplitAssignedGpus(c.value), c.want) << "'" << c.value << "'";
  }
}

// ---------------------------------------------------------------------------------------------
// Claims of nominated pods

PodInfo Preemptor(const std::string& name, int64_t gpus, int32_t priority) {
  return MakePod().Name(name).Gpus(gpus).OwnedByDeployment("train").Priority(priority).Obj();
}

TEST_F(ClusterStateTest, NominatedPodHoldsTheOfferedGpusUntilItIsBound) {
  cluster_.Add(H100Node("h1"));
  cluster_.Add(H100Node("h2"));
  PodInfo pod = Preemptor("big", 2, 100);
  cluster_.Add(pod);
  const auto before_offer = state().Snapshot();
  state().OfferClaims(pod.uid, {{"h1", {2, 3}}, {"h2", {0, 1}}});
  // Offered, not yet nominated: nothing is held, and nothing new is published.
  EXPECT_EQ(state().Snapshot(), before_offer);
  EXPECT_THAT(UsedGpus(*Node("h1")), IsEmpty());
  EXPECT_THAT(state().Snapshot()->claimed_positions(), IsEmpty());

  pod.nominated_node = "h1";
  cluster_.Add(pod);
  auto snapshot = state().Snapshot();
  const NodeState* h1 = snapshot->Find("h1");
  EXPECT_THAT(UsedGpus(*h1), ElementsAre(2, 3));
  for (int gpu : {2, 3}) {
    ASSERT_EQ(h1->gpu(gpu).occupants.size(), 1u);
    EXPECT_TRUE(h1->gpu(gpu).occupants[0].nominated);
    EXPECT_FALSE(state().ReservedPods(h1->name()).contains(h1->gpu(gpu).occupants[0].pod_uid));
    EXPECT_EQ(h1->gpu(gpu).occupants[0].pod_uid, "uid-big");
  }
  EXPECT_THAT(h1->nominees(), ElementsAre(Nominee{"uid-big", 100}));
  EXPECT_THAT(snapshot->claimed_positions(), ElementsAre(snapshot->FindIndex("h1")));
  EXPECT_THAT(UsedGpus(*snapshot->Find("h2")), IsEmpty());
  ClusterCounts counts = state().Counts();
  EXPECT_EQ(counts.claims, 1u);
  EXPECT_EQ(counts.placed_pods, 0u);

  // Nominated elsewhere: the claim moves to the GPUs offered there.
  pod.nominated_node = "h2";
  cluster_.Add(pod);
  EXPECT_THAT(UsedGpus(*Node("h1")), IsEmpty());
  EXPECT_THAT(UsedGpus(*Node("h2")), ElementsAre(0, 1));

  // Its bind reserves other GPUs there: the reservation replaces the claim.
  Status s = state().Reserve(ReservationOf(pod, "h2", {4, 5}));
  ASSERT_TRUE(s.ok()) << s.ToString();
  const auto h2 = Node("h2");
  EXPECT_THAT(UsedGpus(*h2), ElementsAre(4, 5));
  EXPECT_TRUE(h2->nominees().empty());
  EXPECT_TRUE(state().ReservedPods(h2->name()).contains(h2->gpu(4).occupants[0].pod_uid));
  counts = state().Counts();
  EXPECT_EQ(counts.claims, 0u);
  EXPECT_EQ(counts.reservations, 1u);
  EXPECT_EQ(counts.placed_pods, 1u);

  // The Binding failed: back to the claim.
  state().CancelReservation(pod.uid);
  EXPECT_THAT(UsedGpus(*Node("h2")), ElementsAre(0, 1));
  EXPECT_TRUE(Node("h2")->gpu(0).occupants[0].nominated);

  // Bound through the API (to what the annotation says): no claim is left anywhere.
  PodInfo bound = pod;
  bound.node_name = "h2";
  bound.phase = PodPhase::kRunning;
  bound.annotations.emplace_back("gputopo.io/assigned-gpus", "GPU-h100-6,GPU-h100-7");
  cluster_.Add(bound);
  snapshot = state().Snapshot();
  EXPECT_THAT(UsedGpus(*snapshot->Find("h2")), ElementsAre(6, 7));
  EXPECT_FALSE(snapshot->Find("h2")->gpu(6).occupants[0].nominated);
  EXPECT_THAT(snapshot->claimed_positions(), IsEmpty());
  EXPECT_EQ(state().Counts().claims, 0u);
}

TEST_F(ClusterStateTest, NominationWithoutAnOfferHoldsNothingAndAGonePodDropsItsClaim) {
  cluster_.Add(Dgx1Node("d1"));
  PodInfo pod = Preemptor("big", 1, 100);
  pod.nominated_node = "d1";  // kube-scheduler's own preemption, or before gputopo restarted
  cluster_.Add(pod);
  EXPECT_THAT(UsedGpus(*Node("d1")), IsEmpty());
  // gputopo's preempt for the pod, already nominated: the claim is taken at once.
  state().OfferClaims(pod.uid, {{"d1", {5}}, {"unknown-node", {0}}});
  EXPECT_THAT(UsedGpus(*Node("d1")), ElementsAre(5));
  state().RemovePod(pod.uid);
  EXPECT_THAT(UsedGpus(*Node("d1")), IsEmpty());
  EXPECT_THAT(state().Snapshot()->claimed_positions(), IsEmpty());
  // Its offers went with it: the uid seen again holds nothing.
  cluster_.Add(pod);
  EXPECT_THAT(UsedGpus(*Node("d1")), IsEmpty());
}

TEST_F(ClusterStateTest, OffersAgeFromTheLatestPreemptionOfTheirPod) {
  cluster_.Add(Dgx1Node("d1"));
  PodInfo pod = Preemptor("big", 1, 100);
  cluster_.Add(pod);
  state().OfferClaims(pod.uid, {{"d1", {5}}});
  for (size_t i = 1; i < ClusterState::kMaxClaimOffers; ++i) {
    state().OfferClaims("other-" + std::to_string(i), {{"d1", {0}}});
  }
  // A second preempt for the pod renews its offer: the many offers after it do not evict it,
  // though they outnumber what is kept since its first one.
  state().OfferClaims(pod.uid, {{"d1", {6}}});
  for (size_t i = 0; i < ClusterState::kMaxClaimOffers / 2; ++i) {
    state().OfferClaims("later-" + std::to_string(i), {{"d1", {0}}});
  }
  pod.nominated_node = "d1";
  cluster_.Add(pod);
  EXPECT_THAT(UsedGpus(*Node("d1")), ElementsAre(6));

  // Offers dropped with their pod leave the queue too: a full round of new offers after them
  // evicts the pod's offer, as the oldest one kept.
  state().RemovePod(pod.uid);
  pod.nominated_node.clear();
  cluster_.Add(pod);
  state().OfferClaims(pod.uid, {{"d1", {7}}});
  for (size_t i = 0; i < ClusterState::kMaxClaimOffers; ++i) {
    state().OfferClaims("last-" + std::to_string(i), {{"d1", {0}}});
  }
  pod.nominated_node = "d1";
  cluster_.Add(pod);
  EXPECT_THAT(UsedGpus(*Node("d1")), IsEmpty());
}

}  // namespace
}  // namespace gputopo::policies
