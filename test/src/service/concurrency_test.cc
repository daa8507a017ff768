// The concurrent parts, run again under ThreadSanitizer by ./run test: binds racing over HTTP,
// and the cluster cache read by scheduling cycles while watch-like updates and binds write it.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "evaluation/cached_evaluations.h"
#include "evaluation/plain_evaluations.h"
#include "policies/engine/evaluation.h"
#include "test/src/http/server_fixture.h"
#include "test/support/builders.h"
#include "test/support/test_cluster.h"

namespace gputopo {
namespace {

using nlohmann::json;
using testing::Pod;
using testing::ServerTest;

TEST_F(ServerTest, ConcurrentBindsNeverOversubscribeAGpu) {
  json cluster = testing::BaseCluster();
  // 40 single-GPU pods race for the h100 node: 8 GPUs x 4 slots, one already held by
  // "running", so exactly 31 binds succeed and 9 must fail.
  for (int i = 0; i < 40; ++i) cluster["items"].push_back(Pod("load", "p" + std::to_string(i), 1));
  StartWith(cluster);
  std::atomic<int> ok{0};
  std::atomic<int> failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      httplib::Client client("127.0.0.1", app_->port());
      for (int i = t; i < 40; i += 4) {
        const std::string name = "p" + std::to_string(i);
        json pod = Pod("load", name, 1);
        client.Post("/filter", Args(pod, {"h100"}).dump(), "application/json");
        auto res =
            client.Post("/bind", BindingArgs("load", name, "h100").dump(), "application/json");
        if (res && json::parse(res->body)["Error"] == "")
          ++ok;
        else
          ++failed;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 31);
  EXPECT_EQ(failed.load(), 9);
  const json node = Get("/debug/nodes/h100");
  for (const json& gpu : node["gpuList"]) {
    EXPECT_LE(gpu["slotsUsed"].get<int>(), 4);
    EXPECT_LE(gpu["milliUsed"].get<int>(), 1000);
  }
  EXPECT_EQ(node["slotsUsed"], 32);
}

TEST(ClusterStateConcurrencyTest, CyclesReadSnapshotsWhileUpdatesAndBindsWrite) {
  testing::TestCluster cluster;
  for (int n = 0; n < 4; ++n) {
    cluster.Add(testing::MakeNode()
                    .Name("n" + std::to_string(n))
                    .Profile("hgx-h100")
                    .Replicas(4)
                    .Allocatable(32)
                    .Obj());
  }
  std::atomic<bool> stop{false};
  std::atomic<int> evaluations{0};
  std::atomic<int> wrong_answers{0};
  // Readers: scheduling cycles evaluating a pod on every node of a snapshot, one plainly and
  // two through one shared CachedEvaluations (its shape table), checked against EvaluateNode.
  evaluation::CachedEvaluations cache;
  std::vector<std::thread> readers;
  for (int r = 0; r < 3; ++r) {
    readers.emplace_back([&, r] {
      const auto req = *policies::RequirementsOf(testing::MakePod().Name("probe").Gpus(2).Obj());
      while (!stop.load()) {
        auto snapshot = cluster.state().Snapshot();
        std::vector<std::string_view> candidates;
        for (const auto& node : snapshot->nodes()) candidates.push_back(node->name());
        if (r == 0) {
          evaluation::PlainEvaluations plain;
          (void)plain.Evaluate({req, cluster.shared_preset(), *snapshot, candidates, ""});
        } else {
          const evaluation::Evaluations got =
              cache.Evaluate({req, cluster.shared_preset(), *snapshot, candidates, ""});
          for (size_t i = 0; i < candidates.size(); ++i) {
            const policies::NodeEvaluation want =
                policies::EvaluateNode(req, *snapshot->nodes()[i], cluster.preset());
            if (got.per_node[i].evaluation->gpus != want.gpus ||
                got.per_node[i].verdict != want.verdict) {
              wrong_answers.fetch_add(1);
            }
          }
        }
        evaluations.fetch_add(1);
      }
    });
  }
  // Writers: pods arriving bound on n0/n1 (watch events; 2 nodes x 8 GPUs x 4 slots = 64), and
  // binds reserving on n2/n3; every third pod leaves again.
  std::vector<std::thread> writers;
  std::atomic<int> reserved{0};
  for (int w = 0; w < 2; ++w) {
    writers.emplace_back([&, w] {
      for (int i = 0; i < 64; ++i) {
        const std::string name = "w" + std::to_string(w) + "-" + std::to_string(i);
        if (w == 0) {
          cluster.Add(testing::MakePod()
                          .Name(name)
                          .Gpus(1)
                          .OnNode("n" + std::to_string(i % 2))
                          .Assigned(std::to_string((i / 2) % 8))
                          .Obj());
        } else {
          const std::string node = "n" + std::to_string(2 + i % 2);
          PodInfo pod = testing::MakePod().Name(name).Gpus(1).Obj();
          policies::NodeEvaluation e = cluster.Evaluate(pod, node);
          if (e.fits()) {
            cluster::Reservation r{pod, node, topology::ToIndices(e.gpus),
                                   cluster.Node(node)->version()};
            if (cluster.state().Reserve(r).ok()) reserved.fetch_add(1);
          }
        }
        if (i % 3 == 0) cluster.state().RemovePod("uid-" + name);
      }
    });
  }
  for (auto& t : writers) t.join();
  stop = true;
  for (auto& t : readers) t.join();
  EXPECT_GT(evaluations.load(), 0);
  EXPECT_EQ(wrong_answers.load(), 0);
  EXPECT_GT(reserved.load(), 0);
  // The books balance: what the nodes hold is exactly the pods still in the table.
  int held = 0;
  for (const auto& node : cluster.state().Snapshot()->nodes()) held += node->used_slots();
  EXPECT_EQ(static_cast<size_t>(held), cluster.state().Counts().placed_pods);
  for (const auto& node : cluster.state().Snapshot()->nodes()) {
    for (int g = 0; g < node->gpu_count(); ++g) EXPECT_LE(node->gpu(g).milli_used, 1000);
  }
}

}  // namespace
}  // namespace gputopo
