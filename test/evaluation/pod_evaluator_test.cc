// The machinery of CachedEvaluations: PodEvaluator's memo of equal node states, the
// EvaluationCache's node answers and per-(pod shape, group) tables, and refreshes. (The whole
// source against PlainEvaluations through random changes: evaluation_source_test.cc.)
#include "evaluation/pod_evaluator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "evaluation/evaluation_cache.h"
#include "test/support/builders.h"
#include "test/support/machines.h"
#include "test/support/test_cluster.h"

namespace gputopo::evaluation {
namespace {

using policies::ClusterSnapshot;
using policies::EvaluateNode;
using policies::EvaluationRef;
using policies::GpuMask;
using policies::NodeEvaluation;
using policies::NodeState;
using policies::PodRequirements;
using policies::RequirementsOf;
using policies::Verdict;
using testing::DeploymentReplica;
using testing::ExpectSameAsEvaluateNode;
using testing::MakeNode;
using testing::MakePod;
using testing::PositionsOf;
using testing::TestCluster;

TEST(PodEvaluatorTest, IdenticalNodesAreSearchedOnce) {
  TestCluster cluster;
  for (int i = 0; i < 50; ++i) {
    cluster.Add(
        MakeNode().Name("n" + std::to_string(i)).Profile("dgx1").Replicas(2).Allocatable(16).Obj());
  }
  cluster.Add(testing::DeploymentReplica("web", 0, 1));  // pending: holds nothing
  cluster.Add(MakePod()
                  .Namespace("ml")
                  .Name("web-5d8f7c9b6d-x")
                  .Gpus(1)
                  .OwnedByDeployment("web")
                  .OnNode("n7")
                  .Assigned("0")
                  .Obj());
  const PodRequirements req = *RequirementsOf(testing::DeploymentReplica("web", 1, 2));
  PodEvaluator evaluator(req, cluster.preset());
  auto snapshot = cluster.state().Snapshot();
  std::vector<uint32_t> results;
  for (const auto& node : snapshot->nodes()) results.push_back(evaluator.Evaluate(*node));
  // 49 empty nodes share one search; n7 (a replica of the group on GPU 0) gets its own.
  EXPECT_EQ(evaluator.memo_hits(), 48u);
  EXPECT_EQ(evaluator.evaluation_count(), 50u);
  EXPECT_EQ(&evaluator.evaluation(results[3]), &evaluator.evaluation(results[0]));  // shared
  const size_t n7 = snapshot->FindIndex("n7");
  EXPECT_NE(results[n7], results[0]);
  EXPECT_FALSE(topology::Has(evaluator.evaluation(results[n7]).gpus, 0));
  // Same answer as evaluating the node on its own.
  EXPECT_EQ(evaluator.evaluation(results[3]).gpus,
            EvaluateNode(req, *snapshot->nodes()[3], cluster.preset()).gpus);
}

}  // namespace
}  // namespace gputopo::evaluation

namespace gputopo::evaluation {
namespace {

// Nodes of one machine type whose GPU states are relabelings of one another (by a symmetry of
// the machine) are searched once; every answer is still exactly EvaluateNode's, bit for bit.
TEST(PodEvaluatorTest, RelabeledNodeStatesShareOneSearchAndAnswerExactlyAsEvaluateNode) {
  TestCluster cluster;
  std::mt19937 rng(5);
  const std::vector<std::string> profiles = {"hgx-h100", "dgx1", "pcie8", "pairs"};
  for (int i = 0; i < 160; ++i) {
    const std::string name = "n" + std::to_string(i);
    cluster.Add(MakeNode()
                    .Name(name)
                    .Profile(profiles[static_cast<size_t>(i) % profiles.size()])
                    .Replicas(4)
                    .Allocatable(32)
                    .Obj());
    for (int p = 0; p < static_cast<int>(rng() % 8); ++p) {
      cluster.Add(MakePod()
                      .Namespace("ml")
                      .Name(name + "-" + std::to_string(p))
                      .Gpus(1)
                      .Group(rng() % 3 == 0 ? "web" : "batch")
                      .OnNode(name)
                      .Assigned(std::to_string(rng() % 8))
                      .Obj());
    }
  }
  auto snapshot = cluster.state().Snapshot();
  uint64_t relabeled = 0;
  for (int gpus : {1, 2, 3, 4, 6}) {
    for (const char* spread : {"preferred", "none"}) {
      const PodRequirements req = *RequirementsOf(MakePod()
                                                      .Namespace("ml")
                                                      .Name("web-new")
                                                      .Gpus(gpus)
                                                      .Group("web")
                                                      .Annotation("gputopo.io/spread", spread)
                                                      .Obj());
      PodEvaluator evaluator(req, cluster.preset());
      for (const auto& node : snapshot->nodes()) {
        const NodeEvaluation& got = evaluator.evaluation(evaluator.Evaluate(*node));
        const NodeEvaluation want = EvaluateNode(req, *node, cluster.preset());
        EXPECT_EQ(got.verdict, want.verdict) << node->name();
        EXPECT_EQ(got.gpus, want.gpus) << node->name() << " " << gpus << " " << spread;
        EXPECT_EQ(got.weighted_score, want.weighted_score) << node->name();
        EXPECT_EQ(got.component_scores, want.component_scores) << node->name();
        EXPECT_EQ(got.candidates, want.candidates) << node->name();
        EXPECT_EQ(got.heuristic, want.heuristic) << node->name();
        EXPECT_EQ(got.locality_missed, want.locality_missed) << node->name();
        EXPECT_EQ(got.node_gpus, got.fits() ? node->gpu_count() : 0) << node->name();
        EXPECT_EQ(got.reason, want.reason) << node->name();
        EXPECT_EQ(got.detail, want.detail) << node->name();
      }
      relabeled += evaluator.relabeled();
    }
  }
  EXPECT_GT(relabeled, 100u);  // the searches were shared
}

TEST(EvaluationCacheTest, ReusesEvaluationsAcrossCyclesUntilTheNodeChanges) {
  TestCluster cluster;
  for (int i = 0; i < 20; ++i) {
    cluster.Add(
        MakeNode().Name("n" + std::to_string(i)).Profile("dgx1").Replicas(2).Allocatable(16).Obj());
  }
  EvaluationCache cache;
  const PodRequirements req = *RequirementsOf(MakePod().Name("p").Gpus(2).Obj());
  auto run = [&](EvaluationCache* c) {
    PodEvaluator evaluator = c != nullptr ? PodEvaluator(req, cluster.shared_preset(), *c)
                                          : PodEvaluator(req, cluster.preset());
    std::vector<GpuMask> gpus;
    for (const auto& node : cluster.state().Snapshot()->nodes()) {
      gpus.push_back(evaluator.evaluation(evaluator.Evaluate(*node)).gpus);
    }
    return std::make_pair(gpus, evaluator.cache_hits());
  };
  auto [first, first_hits] = run(&cache);
  EXPECT_EQ(first_hits, 0u);
  auto [second, second_hits] = run(&cache);
  EXPECT_EQ(second_hits, 20u);  // nothing changed: every node answered from the cache
  EXPECT_EQ(first, second);
  // A pod lands on n3: its new version misses, the other 19 still hit, and the answer for n3
  // is the fresh one (the same as without a cache).
  cluster.Add(MakePod().Name("busy").Gpus(2).OnNode("n3").Assigned("0,1").Obj());
  auto [third, third_hits] = run(&cache);
  EXPECT_EQ(third_hits, 19u);
  EXPECT_EQ(third, run(nullptr).first);
  // Another shape (4 GPUs) is a different key.
  const PodRequirements four = *RequirementsOf(MakePod().Name("q").Gpus(4).Obj());
  PodEvaluator other(four, cluster.shared_preset(), cache);
  other.Evaluate(*cluster.Node("n0"));
  EXPECT_EQ(other.cache_hits(), 0u);
}

TEST(EvaluationCacheTest, NodeAnswersAreKeyedByNodeVersionShapeAndGroupGpusAndBounded) {
  TestCluster cluster;
  cluster.Add(MakeNode().Name("n").Profile("dgx1").Replicas(2).Allocatable(16).Obj());
  EvaluationCache cache;
  const PodRequirements one = *RequirementsOf(MakePod().Name("p").Gpus(1).Obj());
  const PodRequirements two = *RequirementsOf(MakePod().Name("q").Gpus(2).Obj());
  const uint64_t shape = cache.ShapeId(one, cluster.shared_preset());
  EXPECT_EQ(cache.ShapeId(one, cluster.shared_preset()), shape);
  EXPECT_NE(cache.ShapeId(two, cluster.shared_preset()), shape);
  auto node = cluster.Node("n");
  auto e = std::make_shared<const NodeEvaluation>();
  EXPECT_FALSE(cache.MayHoldAnswers(shape));  // nothing kept yet: a cycle need not look
  cache.Insert(*node, 0, shape, e);
  EXPECT_TRUE(cache.MayHoldAnswers(shape));
  EXPECT_FALSE(cache.MayHoldAnswers(shape + 1));
  EXPECT_EQ(cache.Find(*node, 0, shape), e);
  EXPECT_EQ(cache.Find(*node, 1, shape), nullptr);  // group GPUs are part of the key
  EXPECT_EQ(cache.Find(*node, 0, shape + 1), nullptr);
  // A new state of the node is another key: never answered with the old state's evaluation.
  cluster.Add(MakePod().Name("p").Gpus(1).OnNode("n").Assigned("0").Obj());
  auto changed = cluster.Node("n");
  ASSERT_NE(changed->version(), node->version());
  EXPECT_EQ(cache.Find(*changed, 0, shape), nullptr);
  // Bounded: after kNodeAnswers more answers, the first is gone, the newest are kept.
  for (uint64_t s = 0; s < EvaluationCache::kNodeAnswers; ++s) cache.Insert(*changed, 0, s, e);
  EXPECT_LE(cache.node_answers(), EvaluationCache::kNodeAnswers);
  EXPECT_EQ(cache.Find(*node, 0, shape), nullptr);
  EXPECT_EQ(cache.Find(*changed, 0, EvaluationCache::kNodeAnswers - 1), e);
  // Once both generations that could hold a shape's answers are gone, it says so; a shape with
  // answers in the older generation still may.
  EXPECT_FALSE(cache.MayHoldAnswers(0));
  EXPECT_TRUE(cache.MayHoldAnswers(EvaluationCache::kNodeAnswers / 2));
  EXPECT_EQ(cache.Find(*changed, 0, EvaluationCache::kNodeAnswers / 2), e);
  EXPECT_TRUE(cache.MayHoldAnswers(EvaluationCache::kNodeAnswers - 1));
}

// A server reserves the three arrays the generations take in turn before it serves; the first
// Insert and the generation drops then allocate none, and the answers are those of a cache that
// allocates as it goes.
TEST(EvaluationCacheTest, ReservedAnswerArraysAreTheOnlyOnesAndAnswerAlike) {
  TestCluster cluster;
  cluster.Add(MakeNode().Name("n").Profile("dgx1").Replicas(2).Allocatable(16).Obj());
  auto node = cluster.Node("n");
  auto e = std::make_shared<const NodeEvaluation>();
  EvaluationCache lazy;
  EvaluationCache reserved;
  EXPECT_EQ(lazy.answer_arrays(), 0u);
  reserved.ReserveAnswerArrays();
  EXPECT_EQ(reserved.answer_arrays(), 3u);
  reserved.ReserveAnswerArrays();  // keeps what is there
  EXPECT_EQ(reserved.answer_arrays(), 3u);
  lazy.Insert(*node, 0, 0, e);
  EXPECT_EQ(lazy.answer_arrays(), 1u);  // the first Insert allocated one
  reserved.Insert(*node, 0, 0, e);
  // Three generations' worth: two drops, each of which allocates in the lazy cache.
  const uint64_t answers = 3 * EvaluationCache::kNodeAnswers / 2;
  for (uint64_t s = 1; s < answers; ++s) {
    lazy.Insert(*node, 0, s, e);
    reserved.Insert(*node, 0, s, e);
  }
  EXPECT_EQ(lazy.answer_arrays(), 3u);
  EXPECT_EQ(reserved.answer_arrays(), 3u);
  EXPECT_EQ(reserved.node_answers(), lazy.node_answers());
  for (uint64_t s : {uint64_t{0}, EvaluationCache::kNodeAnswers / 2, EvaluationCache::kNodeAnswers,
                     answers - 1}) {
    EXPECT_EQ(reserved.Find(*node, 0, s), lazy.Find(*node, 0, s)) << "shape " << s;
    EXPECT_EQ(reserved.MayHoldAnswers(s), lazy.MayHoldAnswers(s)) << "shape " << s;
  }
  EXPECT_EQ(reserved.Find(*node, 0, answers - 1), e);
}

// The memo of equal node states stays while it finds equal nodes, and is dropped for the rest of
// the evaluator's life once kMemoTrial lookups found fewer than one in kMemoMinShare: every
// node is then evaluated on its own, with the same answers.
TEST(PodEvaluatorTest, TheMemoStopsWhenNodeStatesAreDiverse) {
  const size_t trial = PodEvaluator::kMemoTrial;
  TestCluster equal;
  TestCluster diverse;
  for (size_t i = 0; i < trial + 100; ++i) {
    const std::string name = "n" + std::to_string(i);
    equal.Add(MakeNode().Name(name).Profile("dgx1").Replicas(2).Allocatable(16).Obj());
    // Distinct free CPU: distinct states, until the last 100, which are all alike.
    const int64_t cpu = i < trial ? 16000 + static_cast<int64_t>(i) : 8000;
    diverse.Add(MakeNode()
                    .Name(name)
                    .Profile("dgx1")
                    .Replicas(2)
                    .Allocatable(16)
                    .Host(cpu, int64_t{64} << 30)
                    .Obj());
  }
  const PodRequirements req = *RequirementsOf(MakePod().Name("p").Gpus(2).Obj());
  {
    PodEvaluator evaluator(req, equal.preset());
    for (const auto& node : equal.state().Snapshot()->nodes()) evaluator.Evaluate(*node);
    EXPECT_EQ(evaluator.evaluated(), 1u);  // pays: kept to the end
    EXPECT_EQ(evaluator.memo_hits(), trial + 99);
  }
  PodEvaluator evaluator(req, diverse.preset());
  auto snapshot = diverse.state().Snapshot();
  std::vector<uint32_t> results;
  for (const auto& node : snapshot->nodes()) results.push_back(evaluator.Evaluate(*node));
  EXPECT_EQ(evaluator.memo_hits(), 0u);
  EXPECT_EQ(evaluator.evaluated(), trial + 100);  // the 100 alike ones each evaluated too
  for (size_t i = 0; i < results.size(); ++i) {
    EXPECT_EQ(evaluator.evaluation(results[i]).gpus,
              EvaluateNode(req, *snapshot->nodes()[i], diverse.preset()).gpus);
  }
}

// Once the memo has stopped paying, a new pod shape's sweep leaves reading each node to the
// node's search (PodEvaluator::Defer): the answers are still EvaluateNode's (with the GPUs of the
// pod's group on the nodes holding it, and as a node without topology on such nodes), and each
// answer of a node with topology reaches the cache, as a search Resolve queues does.
TEST(PodEvaluatorTest, DeferredSearchesAnswerAsEvaluateNodeAndReachTheCache) {
  const size_t count = PodEvaluator::kMemoTrial + 200;
  TestCluster cluster;
  size_t without_topology = 0;
  for (size_t i = 0; i < count; ++i) {
    const std::string name = "n" + std::to_string(i);
    const bool unknown = i % 97 == 5;
    without_topology += unknown ? 1 : 0;
    // Distinct free CPU: every state distinct, so the memo stops after its trial.
    cluster.Add(MakeNode()
                    .Name(name)
                    .Profile(unknown ? "no-such-machine" : "dgx1")
                    .Replicas(2)
                    .Allocatable(16)
                    .Host(16000 + static_cast<int64_t>(i), int64_t{64} << 30)
                    .Obj());
    if (i % 3 != 0 || unknown) continue;
    cluster.Add(MakePod()
                    .Namespace("ml")
                    .Name("web-" + std::to_string(i))
                    .Gpus(1)
                    .OwnedByDeployment("web")
                    .OnNode(name)
                    .Assigned(std::to_string(i % 8))
                    .Obj());
  }
  const PodRequirements pod = *RequirementsOf(DeploymentReplica("web", 999));
  auto snapshot = cluster.state().Snapshot();
  std::vector<size_t> positions(count);
  for (size_t i = 0; i < count; ++i) positions[i] = i;
  EvaluationCache cache;
  PodEvaluator evaluator(pod, cluster.shared_preset(), cache);
  const Evaluations got = evaluator.EvaluateAt(*snapshot, positions);
  EXPECT_EQ(evaluator.memo_hits(), 0u);
  EXPECT_EQ(evaluator.evaluated(), count);
  EXPECT_EQ(cache.node_answers(), count - without_topology);
  size_t group_changed_answer = 0;
  size_t unschedulable = 0;
  for (size_t i = 0; i < count; ++i) {
    const NodeState& node = *snapshot->nodes()[i];
    const NodeEvaluation want = EvaluateNode(pod, node, cluster.preset());
    const NodeEvaluation& have = *got.per_node[i].evaluation;
    ASSERT_EQ(have.verdict, want.verdict) << node.name();
    ASSERT_EQ(have.gpus, want.gpus) << node.name();
    ASSERT_EQ(have.weighted_score, want.weighted_score) << node.name();
    ASSERT_EQ(have.reason, want.reason) << node.name();
    unschedulable += have.fits() ? 0 : 1;
    const NodeEvaluation blind = EvaluateNode(pod, node, cluster.preset(), 0);
    group_changed_answer += blind.gpus != want.gpus || blind.weighted_score != want.weighted_score;
  }
  // The case can tell: the group's GPUs change answers, and the unknown machines do not fit.
  EXPECT_GT(group_changed_answer, 0u);
  EXPECT_EQ(unschedulable, without_topology);
}

// A dropped generation is freed by the inserts that follow, a few per insert, without waiting
// for ReleaseRetired: before the next generation is dropped, and never all in one insert.
TEST(EvaluationCacheTest, InsertsFreeADroppedGenerationBitByBit) {
  TestCluster cluster;
  cluster.Add(MakeNode().Name("n").Profile("dgx1").Replicas(2).Allocatable(16).Obj());
  EvaluationCache cache;
  auto node = cluster.Node("n");
  constexpr uint64_t kHalf = EvaluationCache::kNodeAnswers / 2;
  std::vector<std::weak_ptr<const NodeEvaluation>> first;
  uint64_t shape = 0;
  for (; shape < kHalf; ++shape) {  // fills the newer generation with answers only it holds
    auto e = std::make_shared<const NodeEvaluation>();
    first.push_back(e);
    cache.Insert(*node, 0, shape, std::move(e));
  }
  auto alive = [&] {
    size_t n = 0;
    for (const auto& w : first) n += w.expired() ? 0 : 1;
    return n;
  };
  const auto e = std::make_shared<const NodeEvaluation>();
  for (; shape < 2 * kHalf; ++shape) cache.Insert(*node, 0, shape, e);  // `first` is older now
  EXPECT_EQ(alive(), kHalf);
  cache.Insert(*node, 0, shape++, e);  // drops `first`'s generation, and frees a few of it
  EXPECT_EQ(alive(), kHalf - EvaluationCache::kReleasedPerInsert);
  cache.Insert(*node, 0, shape++, e);
  EXPECT_EQ(alive(), kHalf - 2 * EvaluationCache::kReleasedPerInsert);
  const uint64_t needed = kHalf / EvaluationCache::kReleasedPerInsert;
  for (uint64_t i = 2; i < needed; ++i) cache.Insert(*node, 0, shape++, e);
  EXPECT_EQ(alive(), 0u);  // all gone, well before the newer generation fills up
  EXPECT_EQ(cache.Find(*node, 0, shape - 1), e);
  // The next drops start each new generation in the emptied one's array: answers land and are
  // found as ever.
  const uint64_t from = shape;
  for (; shape < from + 2 * kHalf; ++shape) cache.Insert(*node, 0, shape, e);
  EXPECT_EQ(cache.Find(*node, 0, from - 1), nullptr);
  for (uint64_t s = shape - kHalf; s < shape; ++s) ASSERT_EQ(cache.Find(*node, 0, s), e);
}

// A pod shape's first cycle finds no answers kept and does not look for any; its next cycle
// does, and finds them.
TEST(EvaluationCacheTest, AShapesFirstCycleDoesNotLookForNodeAnswers) {
  TestCluster cluster;
  for (int i = 0; i < 4; ++i) {
    cluster.Add(
        MakeNode().Name("n" + std::to_string(i)).Profile("dgx1").Replicas(2).Allocatable(16).Obj());
  }
  EvaluationCache cache;
  const PodRequirements req = *RequirementsOf(MakePod().Name("p").Gpus(2).Obj());
  const uint64_t misses_before = cache.misses();
  PodEvaluator first(req, cluster.shared_preset(), cache);
  for (const auto& node : cluster.state().Snapshot()->nodes()) first.Evaluate(*node);
  EXPECT_EQ(cache.misses(), misses_before);  // never looked
  EXPECT_EQ(first.evaluated(), 1u);          // four equal nodes, one search
  PodEvaluator second(req, cluster.shared_preset(), cache);
  for (const auto& node : cluster.state().Snapshot()->nodes()) second.Evaluate(*node);
  EXPECT_EQ(second.cache_hits(), 4u);
  EXPECT_EQ(second.evaluated(), 0u);
}

}  // namespace
}  // namespace gputopo::evaluation

namespace gputopo::evaluation {
namespace {

TEST(ShapeTableTest, AnswersLikeEvaluatingEachNodeAndOnlyReevaluatesChangedNodes) {
  TestCluster cluster;
  std::vector<std::string> names;
  for (int i = 0; i < 30; ++i) {
    names.push_back("n" + std::to_string(i));
    cluster.Add(MakeNode()
                    .Name(names.back())
                    .Profile(i % 2 ? "dgx1" : "hgx-h100")
                    .Replicas(2)
                    .Allocatable(16)
                    .Obj());
  }
  names.push_back("not-a-node");
  // Replicas of "web" on n4 and n9: those nodes are evaluated with the group's GPUs.
  cluster.Add(testing::DeploymentReplica("web", 100));
  cluster.Add(MakePod()
                  .Namespace("ml")
                  .Name("web-5d8f7c9b6d-a")
                  .Gpus(1)
                  .OwnedByDeployment("web")
                  .OnNode("n4")
                  .Assigned("0")
                  .Obj());
  cluster.Add(MakePod()
                  .Namespace("ml")
                  .Name("web-5d8f7c9b6d-b")
                  .Gpus(1)
                  .OwnedByDeployment("web")
                  .OnNode("n9")
                  .Assigned("3")
                  .Obj());
  // Other workloads elsewhere: nodes in many states.
  for (int i = 0; i < 30; i += 3) {
    cluster.Add(MakePod()
                    .Name("other-" + std::to_string(i))
                    .Gpus(1)
                    .Group("batch")
                    .OnNode(names[static_cast<size_t>(i)])
                    .Assigned(std::to_string(i % 8))
                    .Obj());
  }
  EvaluationCache cache;
  const PodRequirements req = *RequirementsOf(testing::DeploymentReplica("web", 1));
  auto snapshot = cluster.state().Snapshot();
  std::vector<size_t> positions = PositionsOf(*snapshot, names);
  ASSERT_EQ(positions.back(), ClusterSnapshot::kNotFound);

  PodEvaluator first(req, cluster.shared_preset(), cache);
  const Evaluations a = first.EvaluateAt(*snapshot, positions);
  ExpectSameAsEvaluateNode(a.per_node, *snapshot, positions, req, cluster.preset());
  EXPECT_EQ(first.table_hits(), 0u);
  // The group's nodes got the group-aware answer: GPU 0 of n4 holds a replica already.
  const size_t n4 = 4;
  EXPECT_FALSE(topology::Has(a.per_node[n4].evaluation->gpus, 0));

  // Next cycle, nothing changed: all 30 nodes come from the group's table, n4 and n9 (which
  // hold the group) included.
  PodEvaluator second(req, cluster.shared_preset(), cache);
  const Evaluations b = second.EvaluateAt(*snapshot, positions);
  ExpectSameAsEvaluateNode(b.per_node, *snapshot, positions, req, cluster.preset());
  EXPECT_EQ(second.table_hits(), 30u);
  EXPECT_EQ(second.evaluated(), 0u);

  // A pod lands on n7 (another group): only n7 is evaluated again, and answered freshly.
  cluster.Add(MakePod().Name("late").Gpus(2).Group("batch").OnNode("n7").Assigned("0,1").Obj());
  snapshot = cluster.state().Snapshot();
  PodEvaluator third(req, cluster.shared_preset(), cache);
  const Evaluations c = third.EvaluateAt(*snapshot, positions);
  ExpectSameAsEvaluateNode(c.per_node, *snapshot, positions, req, cluster.preset());
  EXPECT_EQ(third.table_hits(), 29u);
  EXPECT_EQ(third.evaluated(), 1u);

  // A replica of the group lands on n12: from now on n12 is answered with the group's GPUs.
  cluster.Add(MakePod()
                  .Namespace("ml")
                  .Name("web-5d8f7c9b6d-c")
                  .Gpus(1)
                  .OwnedByDeployment("web")
                  .OnNode("n12")
                  .Assigned("5")
                  .Obj());
  snapshot = cluster.state().Snapshot();
  PodEvaluator fourth(req, cluster.shared_preset(), cache);
  const Evaluations d = fourth.EvaluateAt(*snapshot, positions);
  ExpectSameAsEvaluateNode(d.per_node, *snapshot, positions, req, cluster.preset());
  EXPECT_FALSE(topology::Has(d.per_node[12].evaluation->gpus, 5));

  // A new node makes a new name index: the other nodes keep their slots, only the new node is
  // evaluated, and the answers are still right.
  cluster.Add(MakeNode().Name("a-new-node").Profile("dgx1").Replicas(2).Allocatable(16).Obj());
  names.push_back("a-new-node");
  snapshot = cluster.state().Snapshot();
  positions = PositionsOf(*snapshot, names);
  PodEvaluator fifth(req, cluster.shared_preset(), cache);
  const Evaluations e = fifth.EvaluateAt(*snapshot, positions);
  ExpectSameAsEvaluateNode(e.per_node, *snapshot, positions, req, cluster.preset());
  EXPECT_EQ(fifth.table_hits(), 30u);  // every node but the new one

  // A node leaves and the nodes after it move to new positions: their slots move with them.
  cluster.state().RemoveNode("n20");
  snapshot = cluster.state().Snapshot();
  const std::vector<size_t> old_positions = positions;
  positions = PositionsOf(*snapshot, names);
  ASSERT_NE(positions[25], old_positions[25]) << "the test needs positions to move";
  PodEvaluator sixth(req, cluster.shared_preset(), cache);
  const Evaluations f = sixth.EvaluateAt(*snapshot, positions);
  ExpectSameAsEvaluateNode(f.per_node, *snapshot, positions, req, cluster.preset());
  EXPECT_EQ(sixth.table_hits(), 30u);  // the new node's slot is used now, n20's is gone
}

// Requests naming many of the nodes are answered in position order, others in request order:
// both give every entry its own node's answer, whatever the order, with repeated and unknown
// names among them.
TEST(ShapeTableTest, AnswersInRequestOrderWhetherSweptByPositionOrNot) {
  TestCluster cluster;
  std::vector<std::string> names;
  for (int i = 0; i < 40; ++i) {
    names.push_back("n" + std::to_string(i));
    cluster.Add(MakeNode()
                    .Name(names.back())
                    .Profile(i % 3 ? "dgx1" : "hgx-h100")
                    .Replicas(2)
                    .Allocatable(16)
                    .Obj());
    for (int p = 0; p < i % 5; ++p) {  // nodes in different states: different answers
      cluster.Add(
          MakePod()
              .Name("busy-" + std::to_string(i) + "-" + std::to_string(p))
              .Gpus(1 + p % 2)
              .Group(p % 2 ? "web" : "batch")
              .OnNode(names.back())
              .Assigned(p % 2 ? std::to_string(p) + "," + std::to_string(p + 4) : std::to_string(p))
              .Obj());
    }
  }
  const PodRequirements req =
      *RequirementsOf(MakePod().Namespace("ml").Name("web-1").Gpus(2).Group("web").Obj());
  auto snapshot = cluster.state().Snapshot();
  // Shuffled, with repeats (kube-scheduler sends none, a broken client might) and unknowns.
  std::vector<std::string> asked = names;
  std::mt19937 rng(7);
  std::shuffle(asked.begin(), asked.end(), rng);
  asked.insert(asked.begin() + 3, "n17");
  asked.push_back("nowhere");
  asked.push_back(asked[0]);
  const std::vector<size_t> positions = PositionsOf(*snapshot, asked);
  ASSERT_GE(positions.size(), snapshot->node_count() / PodEvaluator::kSweepShare);

  EvaluationCache cache;
  PodEvaluator swept(req, cluster.shared_preset(), cache);
  const Evaluations all = swept.EvaluateAt(*snapshot, positions);
  ExpectSameAsEvaluateNode(all.per_node, *snapshot, positions, req, cluster.preset());
  EXPECT_EQ(all.per_node.back().evaluation, all.per_node.front().evaluation);

  // One name at a time (under 1/kSweepShare of the nodes): the same answers, from the table.
  for (size_t i = 0; i < positions.size(); ++i) {
    PodEvaluator one(req, cluster.shared_preset(), cache);
    const Evaluations single = one.EvaluateAt(*snapshot, {positions[i]});
    ExpectSameAsEvaluateNode(single.per_node, *snapshot, {positions[i]}, req, cluster.preset());
    if (positions[i] == ClusterSnapshot::kNotFound) continue;
    EXPECT_EQ(single.per_node[0].verdict, all.per_node[i].verdict) << asked[i];
    EXPECT_EQ(single.per_node[0].evaluation->gpus, all.per_node[i].evaluation->gpus) << asked[i];
  }
}

TEST(ShapeTableTest, RefreshEvaluatesChangedNodesSoTheNextCycleOnlyReads) {
  TestCluster cluster;
  std::vector<std::string> names;
  for (int i = 0; i < 12; ++i) {
    names.push_back("n" + std::to_string(i));
    cluster.Add(
        MakeNode().Name(names.back()).Profile("hgx-h100").Replicas(2).Allocatable(16).Obj());
  }
  EvaluationCache cache;
  const PodRequirements req = *RequirementsOf(MakePod().Name("p").Gpus(4).Obj());
  auto snapshot = cluster.state().Snapshot();
  std::vector<size_t> positions = PositionsOf(*snapshot, names);
  {
    PodEvaluator first(req, cluster.shared_preset(), cache);
    (void)first.EvaluateAt(*snapshot, positions);
  }
  std::vector<EvaluationCache::TableShape> shapes = cache.RefreshableShapes();
  ASSERT_EQ(shapes.size(), 2u) << "the pod's group's table and the shape's base table";
  std::erase_if(shapes, [&](const auto& shape) { return shape.pod->group != req.group; });
  ASSERT_EQ(shapes.size(), 1u);
  EXPECT_EQ(shapes[0].pod->gpus, 4);
  EXPECT_EQ(shapes[0].preset, cluster.shared_preset());
  EXPECT_EQ(shapes[0].shape_id, cache.ShapeId(req, cluster.shared_preset()));

  // Two nodes change, then the table is refreshed: exactly those two are evaluated.
  cluster.Add(MakePod().Name("a").Gpus(2).OnNode("n3").Assigned("0,1").Obj());
  cluster.Add(MakePod().Name("b").Gpus(1).OnNode("n8").Assigned("5").Obj());
  snapshot = cluster.state().Snapshot();
  PodEvaluator refresher(*shapes[0].pod, shapes[0].preset, cache);
  EXPECT_EQ(refresher.RefreshTable(*shapes[0].table, *snapshot), 2u);
  EXPECT_EQ(refresher.RefreshTable(*shapes[0].table, *snapshot), 0u) << "nothing changed since";

  // The next cycle of the shape reads every node from the table, and the answers are fresh.
  PodEvaluator next(req, cluster.shared_preset(), cache);
  const Evaluations got = next.EvaluateAt(*snapshot, positions);
  EXPECT_EQ(next.table_hits(), 12u);
  ExpectSameAsEvaluateNode(got.per_node, *snapshot, positions, req, cluster.preset());
}

// Node versions only grow: an answer for an older version (a cycle on an older snapshot that
// raced a refresh) never replaces a newer one, but is still returned for that cycle to use.
TEST(ShapeTableTest, AnOlderVersionNeverReplacesANewerAnswer) {
  ShapeTable shape_table;
  ShapeTable::Locked table = shape_table.Lock();
  const std::vector<std::string_view> names = {"a", "b"};
  table.Attach(std::make_shared<const policies::FlatNameIndex>(names));
  auto evaluation = [](double score) {
    NodeEvaluation e;
    e.verdict = Verdict::kFits;
    e.weighted_score = score;
    return std::make_shared<const NodeEvaluation>(e);
  };
  (void)table.Store(1, 7, evaluation(7.0));
  const EvaluationRef older = table.Store(1, 5, evaluation(5.0));
  EXPECT_DOUBLE_EQ(older.weighted_score, 5.0);
  ASSERT_NE(table.Find(1, 7), nullptr);
  EXPECT_DOUBLE_EQ(table.Find(1, 7)->weighted_score, 7.0);
  EXPECT_EQ(table.Find(1, 5), nullptr);
  (void)table.Store(1, 9, evaluation(9.0));
  EXPECT_DOUBLE_EQ(table.Find(1, 9)->weighted_score, 9.0);
}

// A spreading pod's table is its group's: nodes holding the group are answered with the
// group's GPUs from it, and a refresh evaluates the changed ones with those GPUs; the shape's
// base table (a group on no node) is refreshed alongside.
TEST(ShapeTableTest, RefreshEvaluatesChangedNodesOfTheTablesGroupWithItsGpus) {
  TestCluster cluster;
  std::vector<std::string> names;
  for (int i = 0; i < 6; ++i) {
    names.push_back("n" + std::to_string(i));
    cluster.Add(
        MakeNode().Name(names.back()).Profile("hgx-h100").Replicas(4).Allocatable(32).Obj());
  }
  auto replica = [](const std::string& name, int gpus) {
    return MakePod().Namespace("ml").Name(name).Gpus(gpus).OwnedByDeployment("web");
  };
  cluster.Add(replica("web-1", 1).OnNode("n1").Assigned("0").Obj());
  EvaluationCache cache;
  const PodRequirements req = *RequirementsOf(replica("web-new", 2).Obj());
  auto snapshot = cluster.state().Snapshot();
  const std::vector<size_t> positions = PositionsOf(*snapshot, names);
  {
    PodEvaluator first(req, cluster.shared_preset(), cache);
    (void)first.EvaluateAt(*snapshot, positions);
  }
  const std::vector<EvaluationCache::TableShape> shapes = cache.RefreshableShapes();
  ASSERT_EQ(shapes.size(), 2u) << "the group's table and the shape's base table";
  const auto group_table = std::find_if(shapes.begin(), shapes.end(), [&](const auto& shape) {
    return shape.pod->group == req.group;
  });
  const auto base_table = std::find_if(shapes.begin(), shapes.end(),
                                       [&](const auto& shape) { return shape.pod->group.empty(); });
  ASSERT_NE(group_table, shapes.end());
  ASSERT_NE(base_table, shapes.end());

  // Another replica lands on n3, and a pod of another group on n1: both hold the group now.
  cluster.Add(replica("web-2", 1).OnNode("n3").Assigned("2").Obj());
  cluster.Add(MakePod().Name("other").Gpus(1).Group("batch").OnNode("n1").Assigned("5").Obj());
  snapshot = cluster.state().Snapshot();
  // Both tables are of the pod's shape; the refresh names it by id, as CachedEvaluations does.
  const uint64_t shape_id = cache.ShapeId(req, cluster.shared_preset());
  EXPECT_EQ(group_table->shape_id, shape_id);
  EXPECT_EQ(base_table->shape_id, shape_id);
  PodEvaluator group_refresher(*group_table->pod, group_table->preset, cache, shape_id);
  EXPECT_EQ(group_refresher.RefreshTable(*group_table->table, *snapshot), 2u) << "n1 and n3";
  PodEvaluator base_refresher(*base_table->pod, base_table->preset, cache, shape_id);
  EXPECT_EQ(base_refresher.RefreshTable(*base_table->table, *snapshot), 2u) << "n1 and n3";

  PodEvaluator next(req, cluster.shared_preset(), cache);
  const Evaluations got = next.EvaluateAt(*snapshot, positions);
  EXPECT_EQ(next.evaluated(), 0u) << "every answer was ready";
  EXPECT_EQ(next.table_hits(), names.size()) << "group nodes included";
  ExpectSameAsEvaluateNode(got.per_node, *snapshot, positions, req, cluster.preset());
  EXPECT_FALSE(topology::Has(got.per_node[3].evaluation->gpus, 2));  // the group's GPU avoided
}

// A Deployment with a replica on every node, and the first pod of another group: once the
// refresher has filled the base table, the new group's table takes the base table's answers
// for every node its filter rules out, so only the nodes holding the new group are evaluated;
// both groups' next cycles only read.
TEST(ShapeTableTest, ANewGroupIsSeededFromTheBaseTable) {
  TestCluster cluster;
  std::vector<std::string> names;
  for (int i = 0; i < 8; ++i) {
    names.push_back("n" + std::to_string(i));
    cluster.Add(MakeNode().Name(names.back()).Profile("dgx1").Replicas(4).Allocatable(32).Obj());
    cluster.Add(MakePod()
                    .Namespace("ml")
                    .Name("web-" + std::to_string(i))
                    .Gpus(1)
                    .OwnedByDeployment("web")
                    .OnNode(names.back())
                    .Assigned(std::to_string(i % 8))
                    .Obj());
  }
  cluster.Add(MakePod()
                  .Namespace("ml")
                  .Name("batch-0")
                  .Gpus(1)
                  .OwnedByDeployment("batch")
                  .OnNode("n5")
                  .Assigned("3")
                  .Obj());
  EvaluationCache cache;
  auto snapshot = cluster.state().Snapshot();
  const std::vector<size_t> positions = PositionsOf(*snapshot, names);
  const PodRequirements web = *RequirementsOf(
      MakePod().Namespace("ml").Name("web-new").Gpus(1).OwnedByDeployment("web").Obj());
  const PodRequirements batch = *RequirementsOf(
      MakePod().Namespace("ml").Name("batch-new").Gpus(1).OwnedByDeployment("batch").Obj());
  ASSERT_EQ(EvaluationShape(web, cluster.preset()), EvaluationShape(batch, cluster.preset()));
  {
    PodEvaluator first(web, cluster.shared_preset(), cache);
    ExpectSameAsEvaluateNode(first.EvaluateAt(*snapshot, positions).per_node, *snapshot, positions,
                             web, cluster.preset());
  }
  // What the TableRefresher does next: the base table is filled in the background.
  for (const EvaluationCache::TableShape& shape : cache.RefreshableShapes()) {
    PodEvaluator refresher(*shape.pod, shape.preset, cache);
    (void)refresher.RefreshTable(*shape.table, *snapshot);
  }
  PodEvaluator first_batch(batch, cluster.shared_preset(), cache);
  ExpectSameAsEvaluateNode(first_batch.EvaluateAt(*snapshot, positions).per_node, *snapshot,
                           positions, batch, cluster.preset());
  EXPECT_EQ(first_batch.evaluated(), 1u) << "only n5 holds batch";
  EXPECT_EQ(first_batch.table_hits(), names.size() - 1) << "the rest from the base table";
  for (const PodRequirements* pod : {&web, &batch}) {
    PodEvaluator next(*pod, cluster.shared_preset(), cache);
    ExpectSameAsEvaluateNode(next.EvaluateAt(*snapshot, positions).per_node, *snapshot, positions,
                             *pod, cluster.preset());
    EXPECT_EQ(next.table_hits(), names.size());
    EXPECT_EQ(next.evaluated(), 0u);
  }
}

TEST(ShapeTableTest, OnlyRecentTablesAreRefreshable) {
  TestCluster cluster;
  cluster.Add(MakeNode().Name("n0").Profile("dgx1").Replicas(2).Allocatable(16).Obj());
  EvaluationCache cache;
  auto snapshot = cluster.state().Snapshot();
  const std::vector<size_t> positions = PositionsOf(*snapshot, {"n0"});
  const PodRequirements two = *RequirementsOf(MakePod().Name("p").Gpus(2).Obj());
  PodEvaluator shared(two, cluster.shared_preset(), cache);
  (void)shared.EvaluateAt(*snapshot, positions);
  ASSERT_EQ(cache.RefreshableShapes().size(), 2u);  // the group's table and the base table
  for (const auto& shape : cache.RefreshableShapes()) EXPECT_EQ(shape.pod->gpus, 2);
  // Other shapes' lookups push it out of the recent ones (its table is kept).
  const PodRequirements one = *RequirementsOf(MakePod().Name("p").Gpus(1).Obj());
  for (uint64_t i = 0; i < EvaluationCache::kRecentUses; ++i) {
    PodEvaluator again(one, cluster.shared_preset(), cache);
    (void)again.EvaluateAt(*snapshot, positions);
  }
  for (const auto& shape : cache.RefreshableShapes()) EXPECT_EQ(shape.pod->gpus, 1);
}

TEST(ShapeTableTest, ACycleKeepsItsEvaluationsAliveAfterTheCacheForgetsThem) {
  TestCluster cluster;
  std::vector<std::string> names;
  for (int i = 0; i < 4; ++i) {
    names.push_back("n" + std::to_string(i));
    cluster.Add(MakeNode().Name(names.back()).Profile("dgx1").Replicas(4).Allocatable(32).Obj());
  }
  cluster.Add(MakePod().Name("first").Gpus(1).OnNode("n0").Assigned("0").Obj());
  auto cache = std::make_unique<EvaluationCache>();
  const PodRequirements req = *RequirementsOf(MakePod().Name("p").Gpus(2).Obj());
  auto snapshot = cluster.state().Snapshot();
  const std::vector<size_t> positions = PositionsOf(*snapshot, names);
  Evaluations kept;
  {
    PodEvaluator evaluator(req, cluster.shared_preset(), *cache);
    kept = evaluator.EvaluateAt(*snapshot, positions);
  }
  // Many changes to n0 make the table drop what it held (compaction), then the cache goes.
  for (int i = 0; i < 200; ++i) {
    cluster.Add(MakePod()
                    .Name("x" + std::to_string(i))
                    .Gpus(1)
                    .OnNode("n0")
                    .Assigned(std::to_string(i % 8))
                    .Obj());
    cluster.Add(MakePod().Name("x" + std::to_string(i)).Gpus(1).Phase(PodPhase::kSucceeded).Obj());
    PodEvaluator again(req, cluster.shared_preset(), *cache);
    (void)again.EvaluateAt(*cluster.state().Snapshot(), positions);
  }
  cache.reset();
  // Still readable (ASan would flag a use after free) and still the answer for that snapshot.
  ExpectSameAsEvaluateNode(kept.per_node, *snapshot, positions, req, cluster.preset());
}

TEST(ShapeTableTest, KeepsTablesForTheMostRecentlyUsedShapesOnly) {
  EvaluationCache cache;
  std::vector<std::shared_ptr<ShapeTable>> tables;
  for (uint64_t s = 0; s < EvaluationCache::kShapeTables; ++s)
    tables.push_back(cache.Table(s, PodRequirements{}, nullptr));
  EXPECT_EQ(cache.Table(0, PodRequirements{}, nullptr),
            tables[0]);                                // shape 0 is now the most recent
  (void)cache.Table(100, PodRequirements{}, nullptr);  // evicts shape 1, the least recently used
  EXPECT_EQ(cache.Table(0, PodRequirements{}, nullptr), tables[0]);
  EXPECT_NE(cache.Table(1, PodRequirements{}, nullptr), tables[1]);
}

}  // namespace
}  // namespace gputopo::evaluation
