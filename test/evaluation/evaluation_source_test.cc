// The two EvaluationSources give the same answers: CachedEvaluations (tables per pod shape and
// group, base tables, node answers, refreshes, a pod's next call reusing its last) against
// PlainEvaluations (EvaluateNode for every node), through random clusters, pods, binds, deletes
// and node changes; and when a pod's call reuses its previous call's answers.
#include "evaluation/evaluation_source.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "evaluation/cached_evaluations.h"
#include "evaluation/plain_evaluations.h"
#include "test/support/builders.h"
#include "test/support/test_cluster.h"

namespace gputopo::evaluation {
namespace {

using policies::ClusterSnapshot;
using policies::EvaluationRef;
using policies::PodRequirements;
using policies::RequirementsOf;
using testing::MakeNode;
using testing::MakePod;
using testing::PositionsOf;
using testing::TestCluster;

std::vector<std::string_view> Views(const std::vector<std::string>& names) {
  return std::vector<std::string_view>(names.begin(), names.end());
}

// Node for node, the same position and evaluation: verdict, GPUs, scores, reason and detail.
void ExpectSameAnswers(const Evaluations& cached, const Evaluations& plain,
                       const ClusterSnapshot& snapshot, const std::vector<size_t>& positions) {
  ASSERT_EQ(cached.positions, positions);
  ASSERT_EQ(plain.positions, positions);
  ASSERT_EQ(cached.per_node.size(), positions.size());
  ASSERT_EQ(plain.per_node.size(), positions.size());
  for (size_t i = 0; i < positions.size(); ++i) {
    const EvaluationRef& c = cached.per_node[i];
    const EvaluationRef& p = plain.per_node[i];
    if (positions[i] == ClusterSnapshot::kNotFound) {
      EXPECT_EQ(c.evaluation, nullptr);
      EXPECT_EQ(p.evaluation, nullptr);
      continue;
    }
    const std::string& name = snapshot.nodes()[positions[i]]->name();
    ASSERT_NE(c.evaluation, nullptr) << name;
    ASSERT_NE(p.evaluation, nullptr) << name;
    EXPECT_EQ(c.verdict, p.verdict) << name;
    EXPECT_EQ(c.evaluation->verdict, p.evaluation->verdict) << name;
    EXPECT_EQ(c.evaluation->gpus, p.evaluation->gpus) << name;
    EXPECT_DOUBLE_EQ(c.weighted_score, p.weighted_score) << name;
    EXPECT_EQ(c.evaluation->component_scores, p.evaluation->component_scores) << name;
    EXPECT_EQ(c.evaluation->node_gpus, p.evaluation->node_gpus) << name;
    EXPECT_EQ(c.evaluation->node_gpus, c.fits() ? snapshot.nodes()[positions[i]]->gpu_count() : 0)
        << name;
    EXPECT_EQ(c.evaluation->reason, p.evaluation->reason) << name;
    EXPECT_EQ(c.evaluation->detail, p.evaluation->detail) << name;
  }
}

TEST(EvaluationSourcePropertyTest, CachedAnswersEqualPlainOnesThroughRandomChanges) {
  for (uint32_t seed = 1; seed <= 8; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint32_t>(n)); };
    TestCluster cluster;
    CachedEvaluations cached;
    PlainEvaluations plain;
    const std::vector<std::string> profiles = {"dgx1", "hgx-h100", "pcie8"};
    const std::vector<std::string> groups = {"web", "batch", "db"};
    const std::vector<std::string> spreads = {"preferred", "required", "none"};
    std::vector<std::string> names;
    auto add_node = [&](const std::string& name) {
      const int replicas = 1 + pick(4);
      cluster.Add(MakeNode()
                      .Name(name)
                      .Profile(profiles[static_cast<size_t>(pick(3))])
                      .Replicas(replicas)
                      .Allocatable(8 * replicas)
                      .Obj());
    };
    for (int i = 0; i < 16; ++i) {
      names.push_back("n" + std::to_string(i));
      add_node(names.back());
    }
    std::vector<std::string> pods;  // bound pods, by name
    std::vector<PodInfo> nominees;  // pending pods nominated to a node, holding a claim there
    int next_pod = 0;
    std::shared_ptr<const ClusterSnapshot> earlier = cluster.state().Snapshot();
    // One random change to the cluster, or a background refresh (sometimes against an older
    // snapshot: a refresh racing newer publishes).
    auto change = [&](int step) {
      const int action = pick(12);
      if (action < 5 || pods.empty()) {  // a pod lands on a node (a bind seen through the API)
        const std::string name = "p" + std::to_string(next_pod++);
        const int gpus = 1 + pick(2);
        std::string assigned = std::to_string(pick(8));
        if (gpus == 2) assigned += "," + std::to_string(pick(8));
        cluster.Add(MakePod()
                        .Namespace("ml")
                        .Name(name)
                        .Gpus(gpus)
                        .Group(groups[static_cast<size_t>(pick(3))])
                        .OnNode(names[static_cast<size_t>(pick(static_cast<int>(names.size())))])
                        .Assigned(assigned)
                        .Obj());
        pods.push_back(name);
      } else if (action < 7) {  // a pod finishes
        const size_t victim = static_cast<size_t>(pick(static_cast<int>(pods.size())));
        cluster.state().RemovePod("uid-" + pods[victim]);
        pods.erase(pods.begin() + static_cast<long>(victim));
      } else if (action < 8) {  // a node is relabelled (other replicas or machine type)
        add_node(names[static_cast<size_t>(pick(static_cast<int>(names.size())))]);
      } else if (action < 9) {  // a node leaves, another comes
        const size_t gone = static_cast<size_t>(pick(static_cast<int>(names.size())));
        cluster.state().RemoveNode(names[gone]);
        names[gone] = "m" + std::to_string(step);
        add_node(names[gone]);
      } else if (action < 10) {  // the background refresh, on the newest snapshot
        (void)cached.Refresh(cluster.state().Snapshot());
      } else if (action < 11) {  // ... or on an older one, published before the latest changes
        (void)cached.Refresh(earlier);
      } else {  // preemption made room for a pending pod, which the scheduler nominates
        PodInfo pod = MakePod()
                          .Namespace("ml")
                          .Name("nominee-" + std::to_string(next_pod++))
                          .Gpus(1 + pick(2))
                          .Group(groups[static_cast<size_t>(pick(3))])
                          .Priority(100 * pick(3))
                          .Obj();
        const std::string& node = names[static_cast<size_t>(pick(static_cast<int>(names.size())))];
        std::vector<int> gpus = {pick(8)};
        if (pod.gpu_request == 2) gpus.push_back((gpus[0] + 1 + pick(7)) % 8);
        cluster.Add(pod);
        cluster.state().OfferClaims(pod.uid, {{node, gpus}});
        pod.nominated_node = node;
        cluster.Add(pod);
        nominees.push_back(pod);
      }
      if (pick(4) == 0) earlier = cluster.state().Snapshot();
    };
    for (int step = 0; step < 80; ++step) {
      change(step);
      // A pending pod of a random shape and group asks about every node (and one unknown),
      // then (as prioritize) about the nodes that passed, in the same order.
      PodInfo asking = MakePod()
                           .Namespace("ml")
                           .Name("pending-" + std::to_string(step))
                           .Gpus(1 << pick(3))
                           .Group(groups[static_cast<size_t>(pick(3))])
                           .Annotation("gputopo.io/spread", spreads[static_cast<size_t>(pick(3))])
                           .Priority(100 * pick(3))
                           .Obj();
      // Sometimes a nominee itself, which looks through its own claim.
      if (!nominees.empty() && pick(3) == 0) {
        const PodInfo& nominee =
            nominees[static_cast<size_t>(pick(static_cast<int>(nominees.size())))];
        asking.uid = nominee.uid;
        asking.priority = nominee.priority;
      }
      const PodRequirements req = *RequirementsOf(asking);
      const std::string pod_key = "ml/pending-" + std::to_string(step) + "/" + asking.uid;
      const std::string_view uid = asking.uid;
      const int32_t priority = asking.priority;
      auto snapshot = cluster.state().Snapshot();
      std::vector<std::string> asked = names;
      std::shuffle(asked.begin(), asked.end(), rng);
      if (pick(3) == 0) asked.resize(asked.size() / 5);  // a few, answered in request order
      asked.push_back("nowhere");
      const std::vector<size_t> positions = PositionsOf(*snapshot, asked);
      const std::vector<std::string_view> candidates = Views(asked);
      const Evaluations filter = cached.Evaluate(
          {req, cluster.shared_preset(), *snapshot, candidates, pod_key, uid, priority});
      ExpectSameAnswers(filter,
                        plain.Evaluate({req, cluster.shared_preset(), *snapshot, candidates,
                                        pod_key, uid, priority}),
                        *snapshot, positions);
      EXPECT_FALSE(filter.reused);
      std::vector<std::string> passed;
      for (size_t i = 0; i < positions.size(); ++i) {
        if (filter.per_node[i].evaluation != nullptr && filter.per_node[i].fits()) {
          passed.push_back(asked[i]);
        }
      }
      const bool changed_between = pick(3) == 0;
      if (changed_between) change(step);
      auto later = cluster.state().Snapshot();
      const std::vector<size_t> again = PositionsOf(*later, passed);
      const std::vector<std::string_view> passed_views = Views(passed);
      const Evaluations prioritize = cached.Evaluate(
          {req, cluster.shared_preset(), *later, passed_views, pod_key, uid, priority});
      ExpectSameAnswers(prioritize,
                        plain.Evaluate({req, cluster.shared_preset(), *later, passed_views, pod_key,
                                        uid, priority}),
                        *later, again);
      // Reused exactly when nothing was published in between.
      EXPECT_EQ(prioritize.reused, later->generation() == snapshot->generation());
      if (::testing::Test::HasFailure()) return;
    }
  }
}

class ReuseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < 6; ++i) {
      names_.push_back("n" + std::to_string(i));
      cluster_.Add(
          MakeNode().Name(names_.back()).Profile("dgx1").Replicas(2).Allocatable(16).Obj());
    }
  }
  Evaluations Ask(const PodRequirements& req, const std::vector<std::string>& names,
                  std::string_view pod_key) {
    snapshot_ = cluster_.state().Snapshot();
    const std::vector<std::string_view> candidates = Views(names);
    return cached_.Evaluate({req, cluster_.shared_preset(), *snapshot_, candidates, pod_key});
  }

  TestCluster cluster_;
  CachedEvaluations cached_;
  std::vector<std::string> names_;
  std::shared_ptr<const ClusterSnapshot> snapshot_;
};

TEST_F(ReuseTest, APodsNextCallReusesItsAnswersForASubsequenceInOrder) {
  const PodRequirements req = *RequirementsOf(MakePod().Name("p").Gpus(1).Obj());
  const Evaluations first = Ask(req, names_, "ml/p/1");
  EXPECT_FALSE(first.reused);
  const Evaluations subsequence = Ask(req, {"n1", "n3", "n4"}, "ml/p/1");
  EXPECT_TRUE(subsequence.reused);
  EXPECT_EQ(subsequence.per_node[1].evaluation, first.per_node[3].evaluation);
  EXPECT_EQ(subsequence.positions, PositionsOf(*snapshot_, {"n1", "n3", "n4"}));
  EXPECT_EQ(subsequence.evaluated, 0u);
  EXPECT_FALSE(Ask(req, {"n3", "n1"}, "ml/p/1").reused);       // another order
  EXPECT_FALSE(Ask(req, {"n1", "nowhere"}, "ml/p/1").reused);  // a node the first did not ask
}

TEST_F(ReuseTest, NothingIsReusedAcrossPodsShapesGroupsOrSnapshots) {
  const PodRequirements req = *RequirementsOf(MakePod().Name("p").Gpus(1).Obj());
  (void)Ask(req, names_, "ml/p/1");
  EXPECT_FALSE(Ask(req, {"n1"}, "ml/q/2").reused);  // another pod
  EXPECT_FALSE(Ask(req, {"n1"}, "").reused);        // no key: never
  (void)Ask(req, names_, "ml/p/1");
  const PodRequirements two = *RequirementsOf(MakePod().Name("p").Gpus(2).Obj());
  EXPECT_FALSE(Ask(two, {"n1"}, "ml/p/1").reused);  // another shape
  (void)Ask(req, names_, "ml/p/1");
  PodRequirements other_group = req;
  other_group.group = "elsewhere";
  EXPECT_FALSE(Ask(other_group, {"n1"}, "ml/p/1").reused);
  (void)Ask(req, names_, "ml/p/1");
  cluster_.Add(MakePod().Name("busy").Gpus(1).OnNode("n1").Assigned("0").Obj());  // publishes
  const Evaluations after = Ask(req, {"n1"}, "ml/p/1");
  EXPECT_FALSE(after.reused);
  // Evaluated on the new state of n1.
  testing::ExpectSameAsEvaluateNode(after.per_node, *snapshot_, PositionsOf(*snapshot_, {"n1"}),
                                    req, cluster_.preset());
  EXPECT_EQ(after.evaluated, 1u);
}

// Remember refills the buffers of the oldest pod's dropped call: a refilled call holds its new
// pod's names, positions and answers alone, whatever the dropped call held.
TEST_F(ReuseTest, ARefilledCallAnswersForItsNewPodOnly) {
  const PodRequirements req = *RequirementsOf(MakePod().Name("p").Gpus(1).Obj());
  const size_t pods = CachedEvaluations::kRecentCalls * 3;
  for (size_t i = 0; i < pods; ++i) {
    // Longer and shorter lists in turn, in another order each time.
    std::vector<std::string> names(names_.begin(), names_.begin() + 1 + (i * 5) % names_.size());
    std::rotate(names.begin(), names.begin() + i % names.size(), names.end());
    const std::string key = "ml/p" + std::to_string(i) + "/" + std::to_string(i);
    const Evaluations filter = Ask(req, names, key);
    ASSERT_FALSE(filter.reused);
    const Evaluations prioritize = Ask(req, names, key);
    ASSERT_TRUE(prioritize.reused) << i;
    EXPECT_EQ(prioritize.positions, PositionsOf(*snapshot_, names)) << i;
    testing::ExpectSameAsEvaluateNode(prioritize.per_node, *snapshot_, prioritize.positions, req,
                                      cluster_.preset());
    if (i >= CachedEvaluations::kRecentCalls) {  // that pod's call was dropped
      const size_t old = i - CachedEvaluations::kRecentCalls;
      EXPECT_FALSE(
          Ask(req, {names_[0]}, "ml/p" + std::to_string(old) + "/" + std::to_string(old)).reused);
    }
  }
}

// The buffers of a dropped call are kept for the next one only when they are not too large, for
// the call and in all: one huge request's names do not stay allocated.
TEST_F(ReuseTest, OnlyModestBuffersAreKeptForTheNextCall) {
  const PodRequirements req = *RequirementsOf(MakePod().Name("p").Gpus(1).Obj());
  int pods = 0;
  auto small_calls = [&](size_t n) {
    for (size_t i = 0; i < n; ++i) (void)Ask(req, {"n0"}, "ml/s" + std::to_string(++pods) + "/1");
  };
  // Candidates' names are kept as asked, known or not.
  (void)Ask(req, {"n0", std::string(CachedEvaluations::kMaxSpareBytes + 1, 'x')}, "ml/huge/1");
  small_calls(CachedEvaluations::kRecentCalls);  // the huge call is dropped: too large to keep
  EXPECT_LT(cached_.SpareBytes(), 1024u);
  (void)Ask(req, {"n0", std::string(1 << 20, 'y')}, "ml/large/1");
  small_calls(CachedEvaluations::kRecentCalls);  // dropped, and kept: its buffers are in use
  EXPECT_GE(cached_.SpareBytes(), 1u << 20);
  // The next call refills it with one name; once that call is dropped in turn, its buffers are
  // mostly unused and are not kept.
  small_calls(CachedEvaluations::kRecentCalls + 1);
  EXPECT_LT(cached_.SpareBytes(), 1024u);
}

TEST(PlainEvaluationsTest, EvaluatesEveryKnownNodeEveryTime) {
  TestCluster cluster;
  cluster.Add(MakeNode().Name("a").Profile("dgx1").Replicas(2).Allocatable(16).Obj());
  cluster.Add(MakeNode().Name("b").Profile("dgx1").Replicas(2).Allocatable(16).Obj());
  const PodRequirements req = *RequirementsOf(MakePod().Name("p").Gpus(2).Obj());
  auto snapshot = cluster.state().Snapshot();
  const std::vector<size_t> positions = PositionsOf(*snapshot, {"a", "nowhere", "b"});
  const std::vector<std::string_view> candidates = {"a", "nowhere", "b"};
  PlainEvaluations plain;
  for (int round = 0; round < 2; ++round) {
    const Evaluations got =
        plain.Evaluate({req, cluster.shared_preset(), *snapshot, candidates, "ml/p/1"});
    EXPECT_EQ(got.positions, positions);
    EXPECT_EQ(got.evaluated, 2u);
    EXPECT_FALSE(got.reused);
    EXPECT_EQ(got.per_node[1].evaluation, nullptr);
    testing::ExpectSameAsEvaluateNode(got.per_node, *snapshot, positions, req, cluster.preset());
  }
  EXPECT_EQ(plain.Refresh(snapshot), 0u);
}

}  // namespace
}  // namespace gputopo::evaluation
