// KubeClient against the fake API server: every call, its preconditions, and how failures map.
#include "src/kube/kube_client.h"

#include <curl/curl.h>
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "src/kube/kube_config.h"
#include "src/kube/watch_protocol.h"
#include "test/src/kube/kube_fixtures.h"
#include "test/support/fake_api_server.h"
#include "test/support/fake_clock.h"

namespace gputopo::kube {
namespace {

using nlohmann::json;
using testing::FakeApiServer;

// The deadline of a call whose answer the test expects: long enough that no slow run (TSan, a
// loaded machine) makes it expire before the fake server answers.
constexpr std::chrono::milliseconds kAnswerDeadline = std::chrono::seconds(120);
// The deadline of a call the test wants to time out. The server holds that reply until the test
// releases it, after the call has returned, so the outcome does not depend on this value.
constexpr std::chrono::milliseconds kExpiringDeadline = std::chrono::milliseconds(200);

class KubeClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    curl_global_init(CURL_GLOBAL_DEFAULT);
    ASSERT_TRUE(server_.Start());
    config_.server = server_.base_url();
  }
  KubeClient Client(std::chrono::milliseconds timeout = kAnswerDeadline) {
    ClientOptions options;
    options.request_timeout = timeout;
    return KubeClient(config_, options, clock_);
  }

  FakeApiServer server_;
  KubeConfig config_;
  testing::FakeClock clock_;
};

TEST_F(KubeClientTest, GetPodDecodesItAndMapsNotFound) {
  ASSERT_TRUE(server_.CreatePod(testing::GpuPod("ml", "a", 2)).has_value());
  KubeClient client = Client();
  Result<PodInfo> pod = client.GetPod("ml", "a");
  ASSERT_TRUE(pod.ok()) << pod.status().ToString();
  EXPECT_EQ(pod->name, "a");
  EXPECT_EQ(pod->gpu_request, 2);
  EXPECT_FALSE(pod->uid.empty());
  Result<PodInfo> missing = client.GetPod("ml", "nope");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("not found"), std::string::npos);
  EXPECT_EQ(client.GetPod("ml", "Bad/Name").status().code(), StatusCode::kInvalidArgument);
}

TEST_F(KubeClientTest, AnnotateHonoursUidAndResourceVersionPreconditions) {
  auto created = server_.CreatePod(testing::GpuPod("ml", "a", 1));
  ASSERT_TRUE(created.has_value());
  const std::string uid = (*created)["metadata"]["uid"];
  const std::string rv = (*created)["metadata"]["resourceVersion"];
  KubeClient client = Client();
  const PodRef ref{"ml", "a", uid};
  EXPECT_TRUE(client.AnnotatePod(ref, rv, "gputopo.io/assigned-gpus", "0,1").ok());
  EXPECT_EQ(
      (*server_.GetPodObject("ml", "a"))["metadata"]["annotations"]["gputopo.io/assigned-gpus"],
      "0,1");
  // The resourceVersion moved on: the old one is a conflict.
  EXPECT_EQ(client.AnnotatePod(ref, rv, "gputopo.io/assigned-gpus", "2").code(),
            StatusCode::kConflict);
  // Another incarnation of the pod: uid is immutable, so the real API server answers 422.
  EXPECT_EQ(
      client.AnnotatePod({"ml", "a", "other-uid"}, "", "gputopo.io/assigned-gpus", "2").code(),
      StatusCode::kInvalidArgument);
  EXPECT_EQ(
      (*server_.GetPodObject("ml", "a"))["metadata"]["annotations"]["gputopo.io/assigned-gpus"],
      "0,1");
  EXPECT_EQ(client.AnnotatePod({"ml", "gone", ""}, "", "k", "v").code(), StatusCode::kNotFound);
}

TEST_F(KubeClientTest, AnnotateNodeSetsAndRemovesUnderPreconditions) {
  auto created = server_.CreateNode({{"apiVersion", "v1"},
                                     {"kind", "Node"},
                                     {"metadata", {{"name", "n1"}, {"uid", "node-uid"}}}});
  ASSERT_TRUE(created.has_value());
  const std::string rv = (*created)["metadata"]["resourceVersion"];
  KubeClient client = Client();
  EXPECT_TRUE(
      client.AnnotateNode("n1", "node-uid", rv, "gputopo.io/topology", "{\"gpus\":[]}").ok());
  EXPECT_EQ((*server_.GetNodeObject("n1"))["metadata"]["annotations"]["gputopo.io/topology"],
            "{\"gpus\":[]}");
  EXPECT_EQ(client.AnnotateNode("n1", "", rv, "gputopo.io/topology", "x").code(),
            StatusCode::kConflict);
  EXPECT_EQ(client.AnnotateNode("n1", "other-uid", "", "gputopo.io/topology", "x").code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(client.AnnotateNode("gone", "", "", "k", "v").code(), StatusCode::kNotFound);
  EXPECT_EQ(client.AnnotateNode("Bad/Name", "", "", "k", "v").code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(client.AnnotateNode("n1", "", "", "gputopo.io/topology", std::nullopt).ok());
  EXPECT_FALSE((*server_.GetNodeObject("n1"))["metadata"].contains("annotations"));
}

TEST_F(KubeClientTest, BindCreatesTheBindingOnceAndRecordsEvents) {
  auto created = server_.CreatePod(testing::GpuPod("ml", "a", 1));
  const PodRef ref{"ml", "a", (*created)["metadata"]["uid"]};
  const std::string rv = (*created)["metadata"]["resourceVersion"];
  KubeClient client = Client();
  const AnnotationList assigned = {{"gputopo.io/assigned-gpus", "GPU-a,GPU-b"}};
  // A resourceVersion that is not current fails the precondition, and nothing is written.
  EXPECT_EQ(client.BindPod(ref, "1", "node-1", assigned).code(), StatusCode::kConflict);
  EXPECT_FALSE((*server_.GetPodObject("ml", "a"))["spec"].contains("nodeName"));
  EXPECT_EQ(client.BindPod({"ml", "a", "other-uid"}, "", "node-1", assigned).code(),
            StatusCode::kConflict);
  // One request sets spec.nodeName and the annotation together.
  EXPECT_TRUE(client.BindPod(ref, rv, "node-1", assigned).ok());
  const json bound = *server_.GetPodObject("ml", "a");
  EXPECT_EQ(bound["spec"]["nodeName"], "node-1");
  EXPECT_EQ(bound["metadata"]["annotations"]["gputopo.io/assigned-gpus"], "GPU-a,GPU-b");
  EXPECT_EQ(server_.RequestCount("PATCH", "/api/v1/namespaces/ml/pods/a"), 0u);
  Status again = client.BindPod(ref, "", "node-2", assigned);
  EXPECT_EQ(again.code(), StatusCode::kConflict);
  EXPECT_NE(again.message().find("already assigned"), std::string::npos);
  EXPECT_EQ(client.BindPod({"ml", "gone", ""}, "", "node-1", {}).code(), StatusCode::kNotFound);
  EXPECT_TRUE(client.RecordEvent(ref, "GPUsAssigned", "GPUs 0,1").ok());
  ASSERT_EQ(server_.Events().size(), 1u);
  const json event = server_.Events().front();
  EXPECT_EQ(event["reason"], "GPUsAssigned");
  EXPECT_EQ(event["involvedObject"]["name"], "a");
  EXPECT_EQ(event["involvedObject"]["uid"], ref.uid);
  EXPECT_EQ(event["source"]["component"], "gputopo");
}

TEST_F(KubeClientTest, FailuresMapToStatusCodes) {
  ASSERT_TRUE(server_.CreatePod(testing::GpuPod("ml", "a", 1)).has_value());
  KubeClient client = Client();
  server_.FailNext("GET", "/api/v1/namespaces/ml/pods/a", 500);
  EXPECT_EQ(client.GetPod("ml", "a").status().code(), StatusCode::kUnavailable);
  server_.FailNext("GET", "/api/v1/namespaces/ml/pods/a", 429);
  EXPECT_EQ(client.GetPod("ml", "a").status().code(), StatusCode::kUnavailable);
  server_.FailNext("GET", "/api/v1/namespaces/ml/pods/a", 403);
  EXPECT_EQ(client.GetPod("ml", "a").status().code(), StatusCode::kFailedPrecondition);
  // No answer before the deadline: the server holds this one until the call has given up.
  KubeClient impatient = Client(kExpiringDeadline);
  server_.HoldNext("GET", "/api/v1/namespaces/ml/pods/a");
  EXPECT_EQ(impatient.GetPod("ml", "a").status().code(), StatusCode::kDeadlineExceeded);
  server_.ReleaseHeld();
  EXPECT_TRUE(client.GetPod("ml", "a").ok());  // and the server answers again
  // Nothing listens on a closed port.
  config_.server = "http://127.0.0.1:1";
  EXPECT_EQ(Client().GetPod("ml", "a").status().code(), StatusCode::kUnavailable);
}

TEST_F(KubeClientTest, RotatedTokenFileIsReadAgain) {
  const std::filesystem::path token =
      std::filesystem::temp_directory_path() / ("gputopo-token-" + std::to_string(::getpid()));
  std::ofstream(token) << "first\n";
  config_.token_file = token.string();
  ASSERT_TRUE(server_.CreatePod(testing::GpuPod("ml", "a", 1)).has_value());
  KubeClient client = Client();
  server_.SetBearerToken("first");
  EXPECT_TRUE(client.GetPod("ml", "a").ok());
  server_.SetBearerToken("second");
  EXPECT_EQ(client.GetPod("ml", "a").status().code(), StatusCode::kFailedPrecondition);  // 401
  std::ofstream(token) << "second\n";  // the kubelet rotates the projected token
  EXPECT_TRUE(client.GetPod("ml", "a").ok());
  std::filesystem::remove(token);
}

TEST_F(KubeClientTest, ListPagesAndWatchLines) {
  for (int i = 0; i < 7; ++i) {
    ASSERT_TRUE(server_.CreatePod(testing::GpuPod("ml", "p" + std::to_string(i), 1)).has_value());
  }
  KubeClient client = Client();
  WatchProtocolParser parser;
  std::string token;
  std::vector<std::string> names;
  std::string list_rv;
  do {
    Result<std::string> body = client.ListPage("/api/v1/pods", 3, token);
    ASSERT_TRUE(body.ok()) << body.status().ToString();
    Result<ListPage> page = parser.ParseList(*body);
    ASSERT_TRUE(page.ok());
    if (list_rv.empty()) list_rv = page->resource_version;
    token = page->continue_token;
    for (const std::string& item : page->items)
      names.push_back(json::parse(item)["metadata"]["name"]);
  } while (!token.empty());
  EXPECT_EQ(names.size(), 7u);
  EXPECT_EQ(list_rv, server_.resource_version());

  std::atomic<bool> stop{false};
  std::vector<std::string> events;
  std::thread watcher([&] {
    (void)client.Watch(
        "/api/v1/pods", list_rv, 30, [] {},
        [&](std::string_view line) {
          events.emplace_back(line);
          if (events.size() == 2) stop = true;
        },
        stop);
  });
  ASSERT_TRUE(server_.WaitForOpenWatches(1, kAnswerDeadline));
  ASSERT_TRUE(server_.CreatePod(testing::GpuPod("ml", "late", 1)).has_value());
  ASSERT_TRUE(server_.DeletePod("ml", "p0"));
  watcher.join();
  ASSERT_EQ(events.size(), 2u);
  Result<WatchEvent> added = parser.ParseEvent(events[0]);
  ASSERT_TRUE(added.ok());
  EXPECT_EQ(added->type, WatchEventType::kAdded);
  EXPECT_EQ(json::parse(added->object)["metadata"]["name"], "late");
  Result<WatchEvent> deleted = parser.ParseEvent(events[1]);
  ASSERT_TRUE(deleted.ok());
  EXPECT_EQ(deleted->type, WatchEventType::kDeleted);
  EXPECT_FALSE(deleted->resource_version.empty());
}

TEST(KubeconfigTest, ReadsTheCurrentContextWithDataFieldsAndResolvesRelativePaths) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("gputopo-kubeconfig-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config") << R"(apiVersion: v1
kind: Config
current-context: prod
clusters:
- name: c1
  cluster:
    server: https://10.0.0.1:6443
    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t
- name: c2
  cluster:
    server: https://other:6443
    insecure-skip-tls-verify: true
contexts:
- name: prod
  context: {cluster: c1, user: u1}
- name: dev
  context: {cluster: c2, user: u2}
users:
- name: u1
  user:
    tokenFile: token
- name: u2
  user:
    token: abc
)";
  Result<KubeConfig> prod = LoadKubeconfig((dir / "config").string());
  ASSERT_TRUE(prod.ok()) << prod.status().ToString();
  EXPECT_EQ(prod->server, "https://10.0.0.1:6443");
  EXPECT_EQ(prod->ca_pem, "-----BEGIN CERTIFICATE-----");
  EXPECT_EQ(prod->token_file, (dir / "token").string());
  EXPECT_FALSE(prod->insecure_skip_tls_verify);
  Result<KubeConfig> dev = LoadKubeconfig((dir / "config").string(), "dev");
  ASSERT_TRUE(dev.ok());
  EXPECT_EQ(dev->token, "abc");
  EXPECT_TRUE(dev->insecure_skip_tls_verify);
  EXPECT_EQ(LoadKubeconfig((dir / "config").string(), "nope").status().code(),
            StatusCode::kNotFound);
  std::ofstream(dir / "exec") << "current-context: x\ncontexts: [{name: x, context: {cluster: c, "
                                 "user: u}}]\nclusters: [{name: c, cluster: {server: https://s}}]\n"
                                 "users: [{name: u, user: {exec: {command: aws}}}]\n";
  Result<KubeConfig> exec = LoadKubeconfig((dir / "exec").string());
  ASSERT_FALSE(exec.ok()) << "gputopo serve cannot run it again as the credential expires";
  EXPECT_NE(exec.status().message().find("exec"), std::string::npos);
  // Read (not run) when the caller asks: kubectl-gputopo runs it once.
  std::ofstream(dir / "exec2")
      << "current-context: x\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
         "clusters: [{name: c, cluster: {server: https://s}}]\n"
         "users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, "
         "command: bin/get-token, args: [--cluster, c], env: [{name: PROFILE, value: p}], "
         "installHint: install it}}}]\n";
  Result<KubeConfig> allowed = LoadKubeconfig((dir / "exec2").string(), "", true);
  ASSERT_TRUE(allowed.ok()) << allowed.status().ToString();
  ASSERT_TRUE(allowed->exec.has_value());
  EXPECT_EQ(allowed->exec->api_version, "client.authentication.k8s.io/v1");
  EXPECT_EQ(allowed->exec->command, (dir / "bin/get-token").string()) << "relative to the file";
  EXPECT_EQ(allowed->exec->args, (std::vector<std::string>{"--cluster", "c"}));
  ASSERT_EQ(allowed->exec->env.size(), 1u);
  EXPECT_EQ(allowed->exec->env[0], (std::pair<std::string, std::string>{"PROFILE", "p"}));
  EXPECT_EQ(allowed->exec->install_hint, "install it");
  Result<KubeConfig> on_path = LoadKubeconfig((dir / "exec").string(), "", true);
  ASSERT_TRUE(on_path.ok());
  EXPECT_EQ(on_path->exec->command, "aws") << "a bare name is looked up on PATH";
  std::ofstream(dir / "junk") << ": : [";
  EXPECT_FALSE(LoadKubeconfig((dir / "junk").string()).ok());
  std::filesystem::remove_all(dir);
}

TEST(KubeconfigTest, InClusterNeedsTheEnvironmentAndTheToken) {
  EXPECT_EQ(InClusterConfig("", "443").status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(InClusterConfig("10.0.0.1", "443", "/nonexistent").status().code(),
            StatusCode::kNotFound);
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("gputopo-sa-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "token") << "t";
  Result<KubeConfig> config = InClusterConfig("fd00::1", "443", dir.string());
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->server, "https://[fd00::1]:443");
  EXPECT_EQ(*CurrentToken(*config), "t");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gputopo::kube
