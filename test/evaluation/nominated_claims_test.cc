// Claims of nominated pods in both EvaluationSources: a pod nominated to a node after
// preemption holds the GPUs gputopo chose for it there against pods of its priority or lower;
// it and pods of higher priority look through the claim.
#include "evaluation/nominated_claims.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "evaluation/cached_evaluations.h"
#include "evaluation/plain_evaluations.h"
#include "test/support/builders.h"
#include "test/support/test_cluster.h"

namespace gputopo::evaluation {
namespace {

using policies::PodRequirements;
using policies::RequirementsOf;
using testing::MakeNode;
using testing::MakePod;
using testing::TestCluster;
using topology::Bit;

class NominatedClaimsTest : public ::testing::Test {
 protected:
  // A DGX-1 with six of its eight GPUs held by low-priority pods; "big" (2 GPUs, priority 100)
  // nominated to it, with a claim on GPUs 6 and 7.
  void SetUp() override {
    cluster_.Add(MakeNode().Name("d1").Profile("dgx1").Replicas(1).Allocatable(8).Obj());
    cluster_.Add(MakeNode().Name("d2").Profile("dgx1").Replicas(1).Allocatable(8).Obj());
    for (int g = 0; g < 6; ++g) {
      cluster_.Add(MakePod()
                       .Name("low-" + std::to_string(g))
                       .Gpus(1)
                       .OnNode("d1")
                       .Assigned(std::to_string(g))
                       .Phase(PodPhase::kRunning)
                       .Obj());
    }
    big_ = MakePod().Name("big").Gpus(2).Priority(100).Obj();
    cluster_.Add(big_);
    cluster_.state().OfferClaims(big_.uid, {{"d1", {6, 7}}});
    big_.nominated_node = "d1";
    cluster_.Add(big_);
  }

  // d1's answer for `pod` from both sources, which must agree.
  policies::NodeEvaluation OnD1(const PodInfo& pod) {
    const PodRequirements req = *RequirementsOf(pod);
    auto snapshot = cluster_.state().Snapshot();
    const std::vector<std::string_view> candidates = {"d2", "d1"};
    const std::string pod_key = pod.Key() + "/" + pod.uid;
    const EvaluationQuery query{
        req, cluster_.shared_preset(), *snapshot, candidates, pod_key, pod.uid, pod.priority};
    const Evaluations plain = plain_.Evaluate(query);
    const Evaluations cached = cached_.Evaluate(query);
    const Evaluations reused = cached_.Evaluate(query);  // prioritize after filter
    EXPECT_TRUE(reused.reused);
    for (const Evaluations* e : {&cached, &reused}) {
      EXPECT_EQ(e->per_node[1].evaluation->verdict, plain.per_node[1].evaluation->verdict);
      EXPECT_EQ(e->per_node[1].evaluation->gpus, plain.per_node[1].evaluation->gpus);
      EXPECT_DOUBLE_EQ(e->per_node[1].weighted_score, plain.per_node[1].weighted_score);
      // d2 holds no claim: every pod sees it as it is.
      EXPECT_TRUE(e->per_node[0].fits());
    }
    return *plain.per_node[1].evaluation;
  }

  TestCluster cluster_;
  PlainEvaluations plain_;
  CachedEvaluations cached_;
  PodInfo big_;
};

TEST_F(NominatedClaimsTest, ThePodsOfItsPriorityOrLowerFindTheClaimedGpusTaken) {
  EXPECT_FALSE(OnD1(MakePod().Name("small").Gpus(1).Obj()).fits());
  EXPECT_FALSE(OnD1(MakePod().Name("peer").Gpus(1).Priority(100).Obj()).fits());
}

TEST_F(NominatedClaimsTest, TheNomineeAndPodsOfHigherPriorityLookThroughIt) {
  const policies::NodeEvaluation own = OnD1(big_);
  ASSERT_TRUE(own.fits()) << own.detail;
  EXPECT_EQ(own.gpus, Bit(6) | Bit(7));
  const policies::NodeEvaluation urgent =
      OnD1(MakePod().Name("urgent").Gpus(1).Priority(200).Obj());
  ASSERT_TRUE(urgent.fits()) << urgent.detail;
  EXPECT_NE(urgent.gpus & (Bit(6) | Bit(7)), 0u);
}

TEST_F(NominatedClaimsTest, ViewWithoutClaimsIsTheNodeLessTheClaimsLookedThrough) {
  const auto d1 = cluster_.Node("d1");
  EXPECT_FALSE(ViewWithoutClaims(*d1, "uid-small", 0).has_value());
  EXPECT_FALSE(ViewWithoutClaims(*cluster_.Node("d2"), big_.uid, 100).has_value());
  const std::optional<policies::NodeState> view = ViewWithoutClaims(*d1, big_.uid, 100);
  ASSERT_TRUE(view.has_value());
  EXPECT_TRUE(view->nominees().empty());
  EXPECT_EQ(view->empty_gpus(), Bit(6) | Bit(7));
  EXPECT_EQ(d1->empty_gpus(), 0u);
}

}  // namespace
}  // namespace gputopo::evaluation
