// kubectl-gputopo against the fake API server (and, for --server, a live gputopo on it): golden
// output for people, structured output, and one clear line with exit code 1 for every failure.
// GPUTOPO_UPDATE_GOLDEN=1 rewrites the golden files instead of comparing.
#include "src/kubectl/plugin.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "test/src/kube/live_app.h"
#include "test/support/fixtures.h"

namespace gputopo::testing {
namespace {

using nlohmann::json;

struct Outcome {
  int code = 0;
  std::string out;
  std::string err;
};

json BoundPod(const std::string& ns, const std::string& name, int gpus, const std::string& node,
              json annotations = json::object()) {
  json pod = GpuPod(ns, name, gpus, std::move(annotations));
  pod["spec"]["nodeName"] = node;
  pod["status"]["phase"] = "Running";
  return pod;
}

class PluginTest : public LiveAppTest {
 protected:
  void SetUp() override {
    LiveAppTest::SetUp();
    dir_ = std::filesystem::temp_directory_path() /
           ("kubectl-gputopo-test-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
    kubeconfig_ = (dir_ / "config").string();
    WriteKubeconfig(server_.base_url());
  }
  void TearDown() override {
    LiveAppTest::TearDown();
    std::filesystem::remove_all(dir_);
  }
  void WriteKubeconfig(const std::string& server) {
    std::ofstream(kubeconfig_) << "apiVersion: v1\nkind: Config\n"
                               << "clusters:\n- name: fake\n  cluster:\n    server: " << server
                               << "\nusers:\n- name: u\n  user:\n    token: secret\n"
                               << "contexts:\n- name: fake\n  context:\n    cluster: fake\n"
                               << "    user: u\n    namespace: ml\ncurrent-context: fake\n";
  }
  void AddCluster() {
    json dgx = GpuNode("dgx-a", 2);
    dgx["metadata"]["labels"]["gputopo.io/topology-profile"] = "dgx1-v100";
    server_.CreateNode(dgx);
    server_.CreateNode(GpuNode("hgx-b"));
    json plain = CpuNode("plain-c");
    plain["status"]["allocatable"]["nvidia.com/gpu"] = "4";
    server_.CreateNode(plain);
    json broken = GpuNode("broken-d");
    broken["metadata"]["labels"].erase("gputopo.io/topology-profile");
    broken["metadata"]["annotations"] = {{"gputopo.io/topology", "{not json"}};
    server_.CreateNode(broken);
    server_.CreateNode(CpuNode("cpu-e"));
    server_.CreatePod(BoundPod("ml", "web-0", 1, "dgx-a",
                               {{"gputopo.io/assigned-gpus", "0"}, {"gputopo.io/group", "web"}}));
    server_.CreatePod(BoundPod("ml", "web-1", 1, "dgx-a",
                               {{"gputopo.io/assigned-gpus", "1"}, {"gputopo.io/group", "web"}}));
    server_.CreatePod(
        BoundPod("ml", "train", 4, "dgx-a", {{"gputopo.io/assigned-gpus", "4,5,6,7"}}));
    server_.CreatePod(BoundPod("batch", "legacy", 1, "dgx-a"));
    server_.CreatePod(GpuPod("ml", "pending-2", 2));
    server_.CreatePod(GpuPod("ml", "typo", 1, {{"gputopo.io/gpu-milli", "5000"}}));
  }

  Outcome Run(std::vector<std::string> args) {
    std::ostringstream out;
    std::ostringstream err;
    kubectl::PluginEnvironment env{out, err, false, {{"HOME", dir_.string()}}};
    args.insert(args.begin(), "--kubeconfig=" + kubeconfig_);
    Outcome o;
    o.code = kubectl::RunPlugin(args, env);
    o.out = out.str();
    o.err = err.str();
    return o;
  }

  // Compares `text` with golden/<name>, or rewrites it under GPUTOPO_UPDATE_GOLDEN.
  void ExpectGolden(const std::string& name, const std::string& text) {
    const auto path = SourceDir() / "test" / "src" / "kubectl" / "golden" / name;
    if (std::getenv("GPUTOPO_UPDATE_GOLDEN") != nullptr) {
      std::ofstream(path) << text;
      return;
    }
    EXPECT_EQ(text, ReadFile(path)) << "golden " << name << " differs (GPUTOPO_UPDATE_GOLDEN=1 "
                                    << "rewrites it); got:\n"
                                    << text;
  }

  std::filesystem::path dir_;
  std::string kubeconfig_;
};

TEST_F(PluginTest, NodesTableShowsEveryGpuNodeAndItsProblems) {
  AddCluster();
  Outcome o = Run({"nodes"});
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.err, "");
  ExpectGolden("nodes.txt", o.out);
  EXPECT_EQ(o.out.find("cpu-e"), std::string::npos) << "a node without GPUs is not listed";
  Outcome wide = Run({"nodes", "-o", "wide"});
  EXPECT_EQ(wide.code, 0);
  ExpectGolden("nodes-wide.txt", wide.out);
}

TEST_F(PluginTest, OneNodeGpuByGpuWithOccupants) {
  AddCluster();
  Outcome o = Run({"nodes", "dgx-a"});
  EXPECT_EQ(o.code, 0) << o.err;
  ExpectGolden("node-dgx-a.txt", o.out);
  // -n hides other namespaces' pods behind a count.
  Outcome ml = Run({"-n", "batch", "nodes", "dgx-a"});
  EXPECT_NE(ml.out.find("1 in other namespaces"), std::string::npos) << ml.out;
  EXPECT_NE(ml.out.find("batch/legacy"), std::string::npos);
  Outcome broken = Run({"nodes", "broken-d"});
  EXPECT_EQ(broken.code, 0);
  EXPECT_NE(broken.out.find("error: "), std::string::npos) << broken.out;
}

TEST_F(PluginTest, TopoPrintsTheLinkMatrixWithIslands) {
  AddCluster();
  Outcome o = Run({"topo", "dgx-a"});
  EXPECT_EQ(o.code, 0) << o.err;
  ExpectGolden("topo-dgx-a.txt", o.out);
  Outcome fallback = Run({"topo", "plain-c"});
  EXPECT_EQ(fallback.code, 0);
  EXPECT_NE(fallback.out.find("Links are not known"), std::string::npos) << fallback.out;
}

TEST_F(PluginTest, ExplainComputesWhyAPodIsPendingOrWhereItIs) {
  AddCluster();
  Outcome pending = Run({"explain", "pending-2"});  // the context's namespace: ml
  EXPECT_EQ(pending.code, 0) << pending.err;
  ExpectGolden("explain-pending-2.txt", pending.out);
  Outcome bound = Run({"explain", "ml/train"});
  EXPECT_EQ(bound.code, 0) << bound.err;
  EXPECT_NE(bound.out.find("Assigned GPUs:   4,5,6,7"), std::string::npos) << bound.out;
  EXPECT_NE(bound.out.find("locality"), std::string::npos) << bound.out;
}

TEST_F(PluginTest, StructuredOutput) {
  AddCluster();
  Outcome j = Run({"nodes", "-o", "json"});
  ASSERT_EQ(j.code, 0) << j.err;
  const json nodes = json::parse(j.out);
  ASSERT_EQ(nodes["nodes"].size(), 4u);  // the four GPU nodes
  Outcome one = Run({"nodes", "dgx-a", "-o", "json"});
  const json dgx = json::parse(one.out);
  EXPECT_EQ(dgx["name"], "dgx-a");
  EXPECT_EQ(dgx["gpuList"].size(), 8u);
  EXPECT_EQ(dgx["slotsUsed"], 7);  // 1 + 1 + 4 + the unplaced one
  Outcome y = Run({"topo", "dgx-a", "-o", "yaml"});
  ASSERT_EQ(y.code, 0) << y.err;
  const YAML::Node doc = YAML::Load(y.out);
  EXPECT_EQ(doc["name"].as<std::string>(), "dgx-a");
  EXPECT_EQ(doc["links"].size(), 8u);
  Outcome e = Run({"explain", "pending-2", "-o", "json"});
  const json explained = json::parse(e.out);
  EXPECT_EQ(explained["nodes"].size(), 4u);
}

TEST_F(PluginTest, ColourOnlyWhenAsked) {
  AddCluster();
  EXPECT_EQ(Run({"nodes"}).out.find('\033'), std::string::npos);
  EXPECT_NE(Run({"--color=always", "nodes"}).out.find("\033[1m"), std::string::npos);
}

TEST_F(PluginTest, WithGputopoExplainShowsItsRecordAndNodesAreCompared) {
  AddCluster();
  app_ = StartApp(LiveOptions(std::chrono::seconds(30)));
  ASSERT_NE(app_, nullptr);
  httplib::Client extender("127.0.0.1", app_->port());
  auto pod = server_.GetPodObject("ml", "pending-2");
  ASSERT_TRUE(pod);
  const json args = {{"Pod", *pod}, {"Nodes", nullptr}, {"NodeNames", {"dgx-a", "hgx-b"}}};
  ASSERT_TRUE(extender.Post("/filter", args.dump(), "application/json"));
  ASSERT_TRUE(extender.Post("/prioritize", args.dump(), "application/json"));
  const json bind = {{"PodName", "pending-2"},
                     {"PodNamespace", "ml"},
                     {"PodUID", (*pod)["metadata"]["uid"]},
                     {"Node", "hgx-b"}};
  auto bound = extender.Post("/bind", bind.dump(), "application/json");
  ASSERT_TRUE(bound);
  ASSERT_EQ(json::parse(bound->body)["Error"], "") << bound->body;

  const std::string url = "http://127.0.0.1:" + std::to_string(app_->port());
  Outcome o = Run({"--server", url, "explain", "pending-2"});
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("Filter at"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("Bind at"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("to hgx-b"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("dgx-a"), std::string::npos) << "the other candidate's verdict";

  // gputopo has bound the pod; once the watch shows it, both views agree.
  ASSERT_TRUE(WaitFor([&] {
    return Run({"--server", url, "nodes"}).out.find("agrees") != std::string::npos;
  })) << Run({"--server", url, "nodes"}).out;
  // A pod gputopo never saw: a warning, then the answer computed here.
  Outcome unknown = Run({"--server", url, "explain", "web-0"});
  EXPECT_EQ(unknown.code, 0);
  EXPECT_NE(unknown.err.find("gputopo has no recent decision"), std::string::npos) << unknown.err;
  EXPECT_NE(unknown.out.find("Assigned GPUs:"), std::string::npos);
}

// Every failure: exit code 1 and exactly one line, starting "error: ".
void ExpectOneErrorLine(const Outcome& o, const std::string& contains) {
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.err.rfind("error: ", 0), 0u) << o.err;
  EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << o.err;
  EXPECT_NE(o.err.find(contains), std::string::npos) << o.err;
}

TEST_F(PluginTest, FailuresAreOneLineAndExitOne) {
  AddCluster();
  ExpectOneErrorLine(Run({"nodes", "nope"}), "node \"nope\" not found");
  ExpectOneErrorLine(Run({"topo", "nope"}), "node \"nope\" not found");
  ExpectOneErrorLine(Run({"explain", "ghost"}), "pods \"ghost\" not found in namespace ml");
  ExpectOneErrorLine(Run({"explain", "typo"}), "gpu-milli");
  server_.FailNext("GET", "/api/v1/pods", 403);
  ExpectOneErrorLine(Run({"nodes"}), "HTTP 403");
  server_.SetBearerToken("another");
  ExpectOneErrorLine(Run({"nodes"}), "HTTP 401");
  WriteKubeconfig("http://127.0.0.1:1");
  ExpectOneErrorLine(Run({"nodes"}), "127.0.0.1:1");
  std::filesystem::remove(kubeconfig_);
  ExpectOneErrorLine(Run({"nodes"}), kubeconfig_);
  Outcome usage = Run({"frobnicate"});
  EXPECT_EQ(usage.code, 1);
  EXPECT_EQ(usage.err.rfind("error: ", 0), 0u) << usage.err;
  EXPECT_EQ(Run({"--help"}).code, 0);
}

}  // namespace
}  // namespace gputopo::testing
