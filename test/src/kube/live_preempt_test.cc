// The preempt verb in live mode, with the PodDisruptionBudget a real kube-scheduler preempted
// against (shared/k8s/preempt): gputopo watches the budget and counts its violations itself.
#include <gtest/gtest.h>
#include <httplib.h>

#include <filesystem>
#include <map>
#include <string>

#include "test/src/kube/live_app.h"
#include "test/support/fixtures.h"

namespace gputopo {
namespace {

using nlohmann::json;
using testing::GpuNode;
using testing::WaitFor;

constexpr std::chrono::milliseconds kAnswerDeadline = std::chrono::seconds(120);

std::string PreemptRequest() {
  return testing::ReadFile(testing::SharedDir() / "k8s" / "preempt" / "cache_false" /
                           "035-preempt.high-8.request.json");
}

// The captured PDB: minAvailable 1, selector app=guarded; with no disruption controller its
// status stayed at disruptionsAllowed 0.
json GuardedBudget() {
  return {{"apiVersion", "policy/v1"},
          {"kind", "PodDisruptionBudget"},
          {"metadata", {{"name", "guarded"}, {"namespace", "research"}}},
          {"spec", {{"minAvailable", 1}, {"selector", {{"matchLabels", {{"app", "guarded"}}}}}}},
          {"status",
           {{"disruptionsAllowed", 0},
            {"currentHealthy", 1},
            {"desiredHealthy", 1},
            {"expectedPods", 1}}}};
}

class LivePreemptTest : public testing::LiveAppTest {
 protected:
  // The captured cluster before high-8 (its victims, every pod given GPUs in order), and the
  // budget; then gputopo, synced with both.
  void StartCapturedCluster() {
    const json request = json::parse(PreemptRequest());
    for (const auto& [node, entry] : request["NodeNameToVictims"].items()) {
      ASSERT_TRUE(server_.CreateNode(GpuNode(node)).has_value());
      int next_gpu = 0;
      for (json pod : entry["Pods"]) {
        const int gpus =
            std::stoi(pod["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"]
                          .get<std::string>());
        std::string assigned;
        for (int g = 0; g < gpus; ++g) assigned += (g > 0 ? "," : "") + std::to_string(next_gpu++);
        pod["metadata"]["annotations"]["gputopo.io/assigned-gpus"] = assigned;
        pod["metadata"].erase("resourceVersion");
        pod["status"]["phase"] = "Running";
        uids_[pod["metadata"]["name"].get<std::string>()] =
            pod["metadata"]["uid"].get<std::string>();
        ASSERT_TRUE(server_.CreatePod(pod).has_value()) << pod["metadata"]["name"];
      }
    }
    ASSERT_TRUE(uids_.contains("guarded-0"));
    ASSERT_TRUE(server_.CreateDisruptionBudget(GuardedBudget()).has_value());
    app::AppOptions options = LiveOptions(kAnswerDeadline);
    options.watcher.backoff_initial = std::chrono::milliseconds(20);
    options.watcher.backoff_max = std::chrono::milliseconds(200);
    app_ = StartApp(options);
    ASSERT_NE(app_, nullptr);
    ASSERT_TRUE(WaitFor([&] { return GuardedAllowed() == 0; })) << "the budget never arrived";
  }
  // disruptionsAllowed of the budget that counts guarded-0, as gputopo sees it (-1: none).
  int GuardedAllowed() const {
    const std::string& uid = uids_.at("guarded-0");
    auto coverage = app_->disruption_budgets()->CoverageOf({uid});
    if (!coverage || !coverage->budgets_of.contains(uid)) return -1;
    return coverage->allowed[coverage->budgets_of.at(uid).front()];
  }
  json Post(const std::string& path, const std::string& body) const {
    httplib::Client client("127.0.0.1", app_->port());
    client.set_read_timeout(std::chrono::seconds(120));
    auto res = client.Post(path, body, "application/json");
    EXPECT_TRUE(res && res->status == 200);
    return res ? json::parse(res->body, nullptr, false) : json();
  }
  json Get(const std::string& path) const {
    httplib::Client client("127.0.0.1", app_->port());
    client.set_read_timeout(std::chrono::seconds(120));
    auto res = client.Get(path);
    EXPECT_TRUE(res && res->status == 200);
    return res ? json::parse(res->body, nullptr, false) : json();
  }
  // NumPDBViolations per node of an ExtenderPreemptionResult.
  static std::map<std::string, int64_t> Violations(const json& reply) {
    std::map<std::string, int64_t> out;
    for (const auto& [node, entry] : reply["NodeNameToMetaVictims"].items()) {
      out[node] = entry["NumPDBViolations"].get<int64_t>();
    }
    return out;
  }

  std::map<std::string, std::string> uids_;  // pod name -> uid
};

TEST_F(LivePreemptTest, CountsTheWatchedBudgetsViolationsItself) {
  StartCapturedCluster();
  // high-8 needs all 8 GPUs: on gpu-node-2 that evicts guarded-0, which breaks its budget.
  // This is the count the scheduler reported too, now gputopo's own.
  json reply = Post("/preempt", PreemptRequest());
  EXPECT_EQ(Violations(reply), (std::map<std::string, int64_t>{
                                   {"gpu-node-1", 0}, {"gpu-node-2", 1}, {"gpu-node-3", 0}}))
      << reply.dump();
  const json debug = Get("/debug/pods/research/high-8");
  ASSERT_TRUE(debug.contains("preempt")) << debug.dump();
  for (const json& node : debug["preempt"]["nodes"]) {
    ASSERT_TRUE(node.contains("pdbViolations")) << "counted, not bounded: " << node.dump();
    EXPECT_FALSE(node.contains("pdbViolationsAtMost"));
    const bool guarded = node["node"] == "gpu-node-2";
    EXPECT_EQ(node["disruptionBudgets"],
              guarded ? json::array({"research/guarded"}) : json::array())
        << node.dump();
  }

  // The disruption controller allows one disruption now. The request still carries the
  // scheduler's NumPDBViolations 1 for gpu-node-2, but evicting guarded-0 breaks nothing.
  ASSERT_TRUE(server_
                  .UpdateDisruptionBudget("research", "guarded",
                                          [](json& b) { b["status"]["disruptionsAllowed"] = 1; })
                  .has_value());
  ASSERT_TRUE(WaitFor([&] { return GuardedAllowed() == 1; }));
  reply = Post("/preempt", PreemptRequest());
  EXPECT_EQ(Violations(reply)["gpu-node-2"], 0) << reply.dump();

  // Operators see the watch in /metrics: one budget, synced, every captured pod labelled.
  httplib::Client client("127.0.0.1", app_->port());
  auto metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics && metrics->status == 200);
  EXPECT_NE(metrics->body.find("\ngputopo_disruption_budgets 1\n"), std::string::npos);
  EXPECT_NE(metrics->body.find("\ngputopo_disruption_budgets_synced 1\n"), std::string::npos);
  EXPECT_NE(
      metrics->body.find("\ngputopo_disruption_budget_pods " + std::to_string(uids_.size()) + "\n"),
      std::string::npos)
      << metrics->body.substr(0, 4000);
}

}  // namespace
}  // namespace gputopo
