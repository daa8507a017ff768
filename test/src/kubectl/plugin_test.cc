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
#include <thread>
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
  // `token` empty: a user without one (as with client certificates).
  void WriteKubeconfig(const std::string& server, const std::string& token = "secret") {
    std::ofstream(kubeconfig_) << "apiVersion: v1\nkind: Config\n"
                               << "clusters:\n- name: fake\n  cluster:\n    server: " << server
                               << "\nusers:\n- name: u\n  user:\n"
                               << (token.empty() ? "    username: u\n"
                                                 : "    token: " + token + "\n")
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
  // No gputopo runs here: the table is computed, and a warning says what was looked for.
  EXPECT_EQ(o.err,
            "warning: cannot compare with gputopo's view: no running pod in namespace "
            "gputopo-system matches "
            "app.kubernetes.io/name=gputopo,app.kubernetes.io/component=scheduler\n");
  EXPECT_EQ(Run({"--no-gputopo", "nodes"}).err, "") << "not looked for";
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

// gputopo's filter, prioritize and bind of ml/pending-2 onto hgx-b, as kube-scheduler calls them.
void SchedulePending2(int extender_port, FakeApiServer& server) {
  httplib::Client extender("127.0.0.1", extender_port);
  auto pod = server.GetPodObject("ml", "pending-2");
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
}

TEST_F(PluginTest, WithGputopoExplainShowsItsRecordAndNodesAreCompared) {
  AddCluster();
  app_ = StartApp(LiveOptions(std::chrono::seconds(30)));
  ASSERT_NE(app_, nullptr);
  SchedulePending2(app_->port(), server_);
  if (HasFatalFailure()) return;

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

// A gputopo scheduler pod of the shipped Deployment, as the API server lists it: its
// kube-scheduler container first (whose port the proxy would pick by default), the admin port
// on the gputopo container.
json SchedulerPod(const std::string& name, int admin_port, bool running = true) {
  json pod = {
      {"metadata",
       {{"name", name},
        {"namespace", "gputopo-system"},
        {"labels",
         {{"app.kubernetes.io/name", "gputopo"}, {"app.kubernetes.io/component", "scheduler"}}}}},
      {"spec",
       {{"containers",
         {{{"name", "kube-scheduler"}, {"ports", {{{"name", "https"}, {"containerPort", 10259}}}}},
          {{"name", "gputopo"},
           {"ports", {{{"name", "admin"}, {"containerPort", admin_port}}}}}}}}}};
  if (running) pod["status"] = {{"phase", "Running"}, {"podIP", "127.0.0.1"}};
  return pod;
}

// Without --server, the plugin asks every gputopo replica through the API server's pods/proxy,
// with the caller's token in X-Gputopo-Authorization, and shows the record of the one that has
// it: the leader's, not the standby's.
TEST_F(PluginTest, ExplainReachesGputopoThroughTheApiServersPodsProxy) {
  AddCluster();
  server_.AddTokenUser("secret", "alice");
  server_.AllowNonResource("alice", "get", "/debug/*");
  app::AppOptions options = LiveOptions(std::chrono::seconds(30));
  options.server.admin_host = "127.0.0.1";
  options.server.admin_port = 0;  // /debug behind TokenReview and SubjectAccessReview
  app_ = StartApp(options);
  ASSERT_NE(app_, nullptr);
  SchedulePending2(app_->port(), server_);
  if (HasFatalFailure()) return;

  // The standby replica: its gputopo has no record of the pod (an admin listener that has seen
  // no decision answers 404), and a view of the nodes that is not JSON.
  httplib::Server standby;
  standby.Get(R"(/debug/.*)", [](const httplib::Request&, httplib::Response& res) {
    res.status = 404;
    res.set_content("gputopo: no recent decision\n", "text/plain");
  });
  const int standby_port = standby.bind_to_any_port("127.0.0.1");
  ASSERT_GT(standby_port, 0);
  std::thread serving([&] { standby.listen_after_bind(); });
  ASSERT_TRUE(server_.CreatePod(SchedulerPod("gputopo-scheduler-a", standby_port)));
  ASSERT_TRUE(server_.CreatePod(SchedulerPod("gputopo-scheduler-b", app_->admin_port())));
  // Neither of these is asked: one is not Running, the other is not gputopo's.
  ASSERT_TRUE(server_.CreatePod(SchedulerPod("gputopo-scheduler-c", 1, false)));
  json other = SchedulerPod("prometheus-0", 1);
  other["metadata"]["labels"]["app.kubernetes.io/name"] = "prometheus";
  ASSERT_TRUE(server_.CreatePod(other));

  Outcome o = Run({"explain", "pending-2"});
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.err, "");
  EXPECT_NE(o.out.find("Filter at"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("to hgx-b"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("Recorded by gputopo: pod gputopo-system/gputopo-scheduler-b"),
            std::string::npos)
      << o.out;
  const std::string proxy_b = "/api/v1/namespaces/gputopo-system/pods/gputopo-scheduler-b:" +
                              std::to_string(app_->admin_port()) + "/proxy/debug/pods/ml/pending-2";
  EXPECT_EQ(server_.RequestCount("GET", proxy_b), 1u);
  for (const auto& r : server_.Requests()) {
    EXPECT_EQ(r.path.find("gputopo-scheduler-c"), std::string::npos) << r.path;
    EXPECT_EQ(r.path.find("prometheus-0"), std::string::npos) << r.path;
  }
  // `nodes` compares with the replica whose view is JSON.
  ASSERT_TRUE(WaitFor([&] {
    return Run({"nodes"}).out.find(
               "gputopo's view (pod gputopo-system/gputopo-scheduler-b) "
               "agrees") != std::string::npos;
  })) << Run({"nodes"}).out;

  // A kubeconfig without a token (client certificates): the proxy forwards nothing gputopo can
  // review, so the record is refused (401); the answer is computed here, and the warning says
  // what to do. --token fixes it.
  WriteKubeconfig(server_.base_url(), "");
  Outcome anonymous = Run({"explain", "pending-2"});
  EXPECT_EQ(anonymous.code, 0) << anonymous.err;
  EXPECT_NE(anonymous.err.find("HTTP 401"), std::string::npos) << anonymous.err;
  EXPECT_NE(anonymous.err.find("pass --token"), std::string::npos) << anonymous.err;
  EXPECT_EQ(std::count(anonymous.err.begin(), anonymous.err.end(), '\n'), 1) << anonymous.err;
  EXPECT_NE(anonymous.out.find("Assigned GPUs:"), std::string::npos) << anonymous.out;
  EXPECT_EQ(anonymous.out.find("Recorded by"), std::string::npos);
  Outcome with_token = Run({"--token", "secret", "explain", "pending-2"});
  EXPECT_EQ(with_token.code, 0) << with_token.err;
  EXPECT_NE(with_token.out.find("Recorded by gputopo"), std::string::npos) << with_token.out;
  // A token RBAC does not allow /debug for: gputopo's 403 in the warning, then the computed
  // answer.
  server_.AddTokenUser("bob-token", "bob");
  Outcome bob = Run({"--token", "bob-token", "explain", "pending-2"});
  EXPECT_EQ(bob.code, 0) << bob.err;
  EXPECT_NE(bob.err.find("HTTP 403"), std::string::npos) << bob.err;
  // A pod that does not exist: one error line, no warning before it.
  WriteKubeconfig(server_.base_url());
  Outcome ghost = Run({"explain", "ghost"});
  EXPECT_EQ(ghost.code, 1);
  EXPECT_EQ(ghost.err, "error: pods \"ghost\" not found in namespace ml\n");

  standby.stop();
  serving.join();
}

// A user whose kubeconfig names an exec credential plugin (EKS, GKE): the plugin runs it once,
// with KUBERNETES_EXEC_INFO and the kubeconfig's env, and uses the token it prints.
TEST_F(PluginTest, AnExecCredentialPluginIsRunOnceForAToken) {
  AddCluster();
  server_.SetBearerToken("token-from-exec");
  const auto script = dir_ / "bin" / "get-token";
  std::filesystem::create_directories(script.parent_path());
  std::ofstream(script)
      << "#!/bin/sh\n"
         "case \"$KUBERNETES_EXEC_INFO\" in *'\"interactive\":false'*) ;; *) exit 3 ;; esac\n"
         "[ \"$CLUSTER_PROFILE\" = gpu ] || exit 4\n"
         "[ \"$1\" = --cluster ] || exit 5\n"
         "echo '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\","
         "\"status\":{\"token\":\"token-from-exec\"}}'\n";
  std::filesystem::permissions(script, std::filesystem::perms::owner_all);
  auto write = [&](const std::string& command, const std::string& api_version) {
    std::ofstream(kubeconfig_) << "apiVersion: v1\nkind: Config\n"
                               << "clusters:\n- name: fake\n  cluster:\n    server: "
                               << server_.base_url() << "\nusers:\n- name: u\n  user:\n"
                               << "    exec:\n      apiVersion: " << api_version
                               << "\n      command: " << command
                               << "\n      args: [--cluster, fake]\n"
                               << "      env: [{name: CLUSTER_PROFILE, value: gpu}]\n"
                               << "      installHint: see the cloud's docs\n"
                               << "contexts:\n- name: fake\n  context:\n    cluster: fake\n"
                               << "    user: u\n    namespace: ml\ncurrent-context: fake\n";
  };
  write("./bin/get-token", "client.authentication.k8s.io/v1");
  Outcome o = Run({"--no-gputopo", "nodes"});
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("dgx-a"), std::string::npos) << o.out;

  write("./bin/get-token", "client.authentication.k8s.io/v1beta1");
  Outcome wrong = Run({"--no-gputopo", "nodes"});
  EXPECT_EQ(wrong.code, 1);
  EXPECT_EQ(wrong.err.rfind("error: exec plugin ", 0), 0u) << wrong.err;
  EXPECT_NE(wrong.err.find("apiVersion"), std::string::npos) << wrong.err;
  EXPECT_EQ(std::count(wrong.err.begin(), wrong.err.end(), '\n'), 1) << wrong.err;

  write("no-such-credential-helper", "client.authentication.k8s.io/v1");
  Outcome missing = Run({"--no-gputopo", "nodes"});
  EXPECT_EQ(missing.code, 1);
  EXPECT_NE(missing.err.find("no-such-credential-helper"), std::string::npos) << missing.err;
  EXPECT_NE(missing.err.find("see the cloud's docs"), std::string::npos) << missing.err;
  EXPECT_EQ(std::count(missing.err.begin(), missing.err.end(), '\n'), 1) << missing.err;
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
