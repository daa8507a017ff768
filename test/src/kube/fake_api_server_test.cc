// FakeApiServer speaks kube-apiserver's wire protocol: lists, pagination, watches (resume, 410,
// bookmarks, broken streams), merge patches, bindings, events, auth and injected faults. These
// tests use a plain HTTP client (httplib), not gputopo's client, so they pin down the server.
#include "test/support/fake_api_server.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "test/src/kube/kube_fixtures.h"

namespace gputopo::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

constexpr auto kWait = std::chrono::milliseconds(5000);

json MakeNode(const std::string& name) {
  return {{"metadata", {{"name", name}, {"labels", {{"gpu", "h100"}}}}},
          {"status", {{"allocatable", {{"nvidia.com/gpu", "8"}}}}}};
}

json MakePod(const std::string& ns, const std::string& name, const std::string& node = "") {
  json pod = {{"metadata", {{"name", name}, {"namespace", ns}, {"labels", {{"app", "train"}}}}},
              {"spec", {{"containers", {{{"name", "main"}, {"image", "cuda"}}}}}}};
  if (!node.empty()) pod["spec"]["nodeName"] = node;
  return pod;
}

uint64_t Rv(const std::string& rv) { return std::stoull(rv); }
uint64_t Rv(const json& object) {
  return Rv(object.at("metadata").at("resourceVersion").get<std::string>());
}

json Parse(const httplib::Result& result) {
  if (!result) return json();
  return json::parse(result->body, nullptr, false);
}

json BindingFor(const std::string& ns, const std::string& name, const std::string& node) {
  return {{"apiVersion", "v1"},
          {"kind", "Binding"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}}}};
}

// A watch request streaming on its own thread; collects complete lines and the trailing partial.
class WatchStream {
 public:
  WatchStream(int port, std::string target, const std::string& token = "")
      : client_("127.0.0.1", port) {
    client_.set_read_timeout(10, 0);
    if (!token.empty()) client_.set_bearer_token_auth(token);
    thread_ = std::thread([this, target = std::move(target)] { Run(target); });
  }
  ~WatchStream() { Close(); }
  WatchStream(const WatchStream&) = delete;
  WatchStream& operator=(const WatchStream&) = delete;

  void Close() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      closing_ = true;
    }
    // stop() only interrupts a connection that is open, so repeat until the request returns.
    for (int i = 0; i < 500 && !WaitForEnd(10ms); ++i) client_.stop();
    if (thread_.joinable()) thread_.join();
  }

  // Waits for `count` complete lines that are not BOOKMARKs (or all lines when `bookmarks`).
  bool WaitForEvents(size_t count, bool bookmarks = false,
                     std::chrono::milliseconds timeout = kWait) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return CountLocked(bookmarks) >= count; });
  }

  bool WaitForEnd(std::chrono::milliseconds timeout = kWait) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return ended_; });
  }

  // Complete lines, parsed; BOOKMARKs left out unless asked for.
  std::vector<json> Events(bool bookmarks = false) const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<json> out;
    for (const std::string& line : lines_) {
      json event = json::parse(line, nullptr, false);
      if (!bookmarks && event.is_object() && event.value("type", "") == "BOOKMARK") continue;
      out.push_back(std::move(event));
    }
    return out;
  }

  std::string partial() const {
    std::lock_guard<std::mutex> lock(mu_);
    return partial_;
  }
  int status() const {
    std::lock_guard<std::mutex> lock(mu_);
    return status_;
  }
  httplib::Error error() const {
    std::lock_guard<std::mutex> lock(mu_);
    return error_;
  }
  std::string content_encoding() const {
    std::lock_guard<std::mutex> lock(mu_);
    return content_encoding_;
  }

 private:
  void Run(const std::string& target) {
    httplib::Result result = client_.Get(
        target, httplib::Headers{{"Accept-Encoding", "gzip"}},
        [this](const httplib::Response& response) {
          std::lock_guard<std::mutex> lock(mu_);
          status_ = response.status;
          content_encoding_ = response.get_header_value("Content-Encoding");
          return true;
        },
        [this](const char* data, size_t length) {
          std::lock_guard<std::mutex> lock(mu_);
          partial_.append(data, length);
          for (size_t newline; (newline = partial_.find('\n')) != std::string::npos;) {
            lines_.push_back(partial_.substr(0, newline));
            partial_.erase(0, newline + 1);
          }
          cv_.notify_all();
          return !closing_;
        });
    std::lock_guard<std::mutex> lock(mu_);
    error_ = result.error();
    ended_ = true;
    cv_.notify_all();
  }

  size_t CountLocked(bool bookmarks) const {
    size_t count = 0;
    for (const std::string& line : lines_) {
      if (bookmarks || line.find("\"type\":\"BOOKMARK\"") == std::string::npos) ++count;
    }
    return count;
  }

  httplib::Client client_;
  std::thread thread_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> lines_;
  std::string partial_;
  std::string content_encoding_;
  int status_ = 0;
  httplib::Error error_ = httplib::Error::Unknown;
  bool ended_ = false;
  bool closing_ = false;
};

class FakeApiServerTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(server_.Start()); }

  httplib::Client Client(const std::string& token = "") {
    httplib::Client client("127.0.0.1", server_.port());
    client.set_read_timeout(10, 0);
    if (!token.empty()) client.set_bearer_token_auth(token);
    return client;
  }

  httplib::Result Patch(const std::string& path, const json& patch,
                        const std::string& type = "application/merge-patch+json") {
    return Client().Patch(path, patch.dump(), type);
  }

  httplib::Result PostJson(const std::string& path, const json& body) {
    return Client().Post(path, body.dump(), "application/json");
  }

  std::unique_ptr<WatchStream> Watch(const std::string& target) {
    return std::make_unique<WatchStream>(server_.port(), target);
  }

  FakeApiServer server_;
};

// --- Lists ---

TEST_F(FakeApiServerTest, ListsNodesAndPodsLikeTheRealServer) {
  ASSERT_TRUE(server_.CreateNode(MakeNode("node-1")));
  ASSERT_TRUE(server_.CreatePod(MakePod("a", "p1")));
  ASSERT_TRUE(server_.CreatePod(MakePod("b", "p2")));

  json nodes = Parse(Client().Get("/api/v1/nodes"));
  EXPECT_EQ(nodes["kind"], "NodeList");
  EXPECT_EQ(nodes["apiVersion"], "v1");
  EXPECT_EQ(nodes["metadata"]["resourceVersion"], server_.resource_version());
  ASSERT_EQ(nodes["items"].size(), 1u);
  EXPECT_FALSE(nodes["items"][0].contains("kind"));  // items carry no TypeMeta
  EXPECT_FALSE(nodes["items"][0].contains("apiVersion"));
  EXPECT_EQ(nodes["items"][0]["metadata"]["name"], "node-1");
  EXPECT_FALSE(nodes["items"][0]["metadata"]["uid"].get<std::string>().empty());
  EXPECT_TRUE(nodes["items"][0]["metadata"].contains("creationTimestamp"));

  json all = Parse(Client().Get("/api/v1/pods"));
  EXPECT_EQ(all["kind"], "PodList");
  EXPECT_EQ(all["items"].size(), 2u);
  json in_a = Parse(Client().Get("/api/v1/namespaces/a/pods"));
  ASSERT_EQ(in_a["items"].size(), 1u);
  EXPECT_EQ(in_a["items"][0]["metadata"]["name"], "p1");
  EXPECT_EQ(in_a["items"][0]["status"]["phase"], "Pending");  // defaulted on create
  EXPECT_EQ(Parse(Client().Get("/api/v1/namespaces/none/pods"))["items"].size(), 0u);
}

TEST_F(FakeApiServerTest, PaginatesOverTheSnapshotOfTheFirstPage) {
  for (int i = 0; i < 5; ++i)
    ASSERT_TRUE(server_.CreatePod(MakePod("ns", "p" + std::to_string(i))));
  const std::string first_rv = server_.resource_version();

  json page = Parse(Client().Get("/api/v1/pods?limit=2"));
  ASSERT_EQ(page["items"].size(), 2u);
  EXPECT_EQ(page["metadata"]["resourceVersion"], first_rv);
  EXPECT_EQ(page["metadata"]["remainingItemCount"], 3);
  std::vector<std::string> names;
  for (const json& item : page["items"]) names.push_back(item["metadata"]["name"]);

  // Writes between pages are not seen: later pages are served from the first page's snapshot.
  ASSERT_TRUE(server_.CreatePod(MakePod("ns", "p9")));
  ASSERT_TRUE(server_.DeletePod("ns", "p4"));
  while (page["metadata"].contains("continue")) {
    const std::string token = page["metadata"]["continue"];
    page = Parse(Client().Get("/api/v1/pods?limit=2&continue=" + token));
    ASSERT_TRUE(page.is_object());
    EXPECT_EQ(page["metadata"]["resourceVersion"], first_rv);
    for (const json& item : page["items"]) names.push_back(item["metadata"]["name"]);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"p0", "p1", "p2", "p3", "p4"}));

  // The token is opaque but in the real format.
  json first = Parse(Client().Get("/api/v1/pods?limit=1"));
  EXPECT_FALSE(first["metadata"]["continue"].get<std::string>().empty());
}

TEST_F(FakeApiServerTest, ContinueAfterCompactionIsExpired) {
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(server_.CreatePod(MakePod("ns", "p" + std::to_string(i))));
  json page = Parse(Client().Get("/api/v1/pods?limit=1"));
  const std::string token = page["metadata"]["continue"];
  server_.CompactHistory();
  httplib::Result result = Client().Get("/api/v1/pods?limit=1&continue=" + token);
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 410);
  json status = Parse(result);
  EXPECT_EQ(status["kind"], "Status");
  EXPECT_EQ(status["reason"], "Expired");
  EXPECT_EQ(status["code"], 410);
  EXPECT_TRUE(status["metadata"].contains("continue"));  // an inconsistent continuation

  EXPECT_EQ(Client().Get("/api/v1/pods?continue=garbage!")->status, 400);
  EXPECT_EQ(Client().Get("/api/v1/pods?resourceVersion=5&continue=" + token)->status, 400);
}

TEST_F(FakeApiServerTest, ResourceVersionZeroIsServedFromCacheIgnoringLimit) {
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(server_.CreatePod(MakePod("ns", "p" + std::to_string(i))));
  json list = Parse(Client().Get("/api/v1/pods?limit=1&resourceVersion=0"));
  EXPECT_EQ(list["items"].size(), 3u);
  EXPECT_FALSE(list["metadata"].contains("continue"));
}

TEST(FakeApiServer, ListWithAFutureResourceVersionWaitsForItThenTimesOut504) {
  FakeApiServer::Options options;
  options.too_large_resource_version_wait = 300ms;
  FakeApiServer server(options);
  ASSERT_TRUE(server.Start());
  httplib::Client client("127.0.0.1", server.port());
  const uint64_t next = Rv(server.resource_version()) + 1;

  httplib::Result too_large =
      client.Get("/api/v1/pods?resourceVersion=" + std::to_string(next + 100));
  ASSERT_TRUE(too_large);
  EXPECT_EQ(too_large->status, 504);
  json status = Parse(too_large);
  EXPECT_EQ(status["reason"], "Timeout");
  EXPECT_EQ(status["details"]["causes"][0]["reason"], "ResourceVersionTooLarge");

  // Reached while waiting: answered at that RV.
  std::thread writer([&] {
    while (server.RequestCount("GET", "/api/v1/pods") < 2) std::this_thread::yield();
    server.CreatePod(MakePod("ns", "p"));
  });
  httplib::Result reached = client.Get("/api/v1/pods?resourceVersion=" + std::to_string(next));
  writer.join();
  ASSERT_TRUE(reached);
  EXPECT_EQ(reached->status, 200);
  EXPECT_EQ(Parse(reached)["items"].size(), 1u);
}

TEST_F(FakeApiServerTest, FiltersByFieldSelector) {
  ASSERT_TRUE(server_.CreatePod(MakePod("ns", "bound", "node-1")));
  ASSERT_TRUE(server_.CreatePod(MakePod("other", "web")));
  ASSERT_TRUE(server_.CreateNode(MakeNode("node-1")));
  ASSERT_TRUE(server_.CreateNode(MakeNode("node-2")));

  auto names = [&](const std::string& path_and_query) {
    std::vector<std::string> out;
    json list = Parse(Client().Get(path_and_query));
    for (const json& item : list["items"]) out.push_back(item["metadata"]["name"]);
    return out;
  };
  using Names = std::vector<std::string>;
  EXPECT_EQ(names("/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-1"), Names{"bound"});
  EXPECT_EQ(names("/api/v1/pods?fieldSelector=spec.nodeName%3D"), Names{"web"});
  EXPECT_EQ(names("/api/v1/pods?fieldSelector=spec.nodeName!%3D"), Names{"bound"});
  EXPECT_EQ(names("/api/v1/pods?fieldSelector=spec.nodeName%3D%3Dnode-1"), Names{"bound"});
  EXPECT_EQ(names("/api/v1/pods?fieldSelector=metadata.namespace%3Dother"), Names{"web"});
  EXPECT_EQ(names("/api/v1/pods?fieldSelector=metadata.name%3Dweb,spec.nodeName%3D"), Names{"web"});
  EXPECT_EQ(names("/api/v1/nodes?fieldSelector=metadata.name%3Dnode-2"), Names{"node-2"});

  // Fields the real server rejects too get its answer.
  httplib::Result bad = Client().Get("/api/v1/pods?fieldSelector=spec.bogus%3Dx");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  EXPECT_EQ(Parse(bad)["message"], "field label not supported: spec.bogus");
  httplib::Result node_field = Client().Get("/api/v1/nodes?fieldSelector=spec.nodeName%3Dx");
  ASSERT_TRUE(node_field);
  EXPECT_EQ(node_field->status, 400);
  EXPECT_EQ(Parse(node_field)["message"], "field label not supported: spec.nodeName");
  EXPECT_EQ(Client().Get("/api/v1/pods?fieldSelector=spec.nodeName")->status, 400);
}

// What gputopo never sends is not implemented, and says so with a 400 rather than being ignored.
TEST_F(FakeApiServerTest, WhatGputopoNeverSendsIsAnswered400NotImplemented) {
  for (int i = 0; i < 2; ++i)
    ASSERT_TRUE(server_.CreatePod(MakePod("ns", "p" + std::to_string(i))));
  ASSERT_TRUE(server_.CreateNode(MakeNode("n1")));
  auto expect_not_implemented = [&](const httplib::Result& result, const std::string& what) {
    ASSERT_TRUE(result) << what;
    EXPECT_EQ(result->status, 400) << what;
    json status = Parse(result);
    EXPECT_EQ(status["kind"], "Status") << what;
    EXPECT_EQ(status["reason"], "BadRequest") << what;
    EXPECT_EQ(status["code"], 400) << what;
    const std::string message = status.value("message", "");
    EXPECT_EQ(message.rfind("fake API server: " + what + " is not implemented (", 0), 0u)
        << message;
  };

  httplib::Result labels = Client().Get("/api/v1/pods?labelSelector=app%3Dtrain");
  ASSERT_TRUE(labels);
  EXPECT_EQ(Parse(labels)["message"],
            "fake API server: labelSelector is not implemented (gputopo never sends one)");
  expect_not_implemented(labels, "labelSelector");
  expect_not_implemented(Client().Get("/api/v1/pods?watch=true&labelSelector=app"),
                         "labelSelector");
  expect_not_implemented(Client().Get("/api/v1/nodes?labelSelector=gpu%3Dh100"), "labelSelector");
  expect_not_implemented(
      Client().Get("/api/v1/pods?resourceVersion=1&resourceVersionMatch=NotOlderThan"),
      "resourceVersionMatch");
  expect_not_implemented(Client().Get("/api/v1/pods?watch=true&resourceVersionMatch=Exact"),
                         "resourceVersionMatch");
  expect_not_implemented(
      Client().Get("/api/v1/pods?watch=true&sendInitialEvents=true&allowWatchBookmarks=true"),
      "sendInitialEvents");
  expect_not_implemented(Client().Get("/api/v1/pods?sendInitialEvents=false"), "sendInitialEvents");
  for (const char* field :
       {"spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName", "spec.hostNetwork",
        "status.phase", "status.podIP", "status.nominatedNodeName"}) {
    expect_not_implemented(
        Client().Get(std::string("/api/v1/pods?fieldSelector=") + field + "%3Dx"),
        std::string("fieldSelector on ") + field);
  }
  expect_not_implemented(
      Client().Get("/api/v1/pods?watch=true&fieldSelector=status.phase%3DRunning"),
      "fieldSelector on status.phase");
  expect_not_implemented(Client().Get("/api/v1/nodes?fieldSelector=spec.unschedulable%3Dtrue"),
                         "fieldSelector on spec.unschedulable");

  // The 410 for a compacted continue token carries an inconsistent continuation; gputopo starts
  // a new list instead.
  const std::string token = Parse(Client().Get("/api/v1/pods?limit=1"))["metadata"]["continue"];
  server_.CompactHistory();
  json expired = Parse(Client().Get("/api/v1/pods?limit=1&continue=" + token));
  ASSERT_EQ(expired["code"], 410);
  const std::string inconsistent = expired["metadata"]["continue"];
  expect_not_implemented(Client().Get("/api/v1/pods?limit=1&continue=" + inconsistent),
                         "continuing with the token of a 410 (an inconsistent list)");

  expect_not_implemented(Client().Get("/api/v1/nodes/n1"), "GET of one node");
  expect_not_implemented(PostJson("/api/v1/namespaces/ns/bindings", BindingFor("ns", "p0", "n1")),
                         "namespaces/{namespace}/bindings");
  EXPECT_FALSE(server_.GetPodObject("ns", "p0")->at("spec").contains("nodeName"));
  for (const char* probe : {"/healthz", "/readyz", "/livez"}) {
    expect_not_implemented(Client().Get(probe), probe);
  }
  EXPECT_EQ(Client().Get("/version")->status, 200);
}

TEST_F(FakeApiServerTest, GetsOnePodOrAnswersNotFound) {
  ASSERT_TRUE(server_.CreatePod(MakePod("ns", "p")));
  json pod = Parse(Client().Get("/api/v1/namespaces/ns/pods/p"));
  EXPECT_EQ(pod["kind"], "Pod");
  EXPECT_EQ(pod["apiVersion"], "v1");
  EXPECT_EQ(pod["metadata"]["name"], "p");

  httplib::Result missing = Client().Get("/api/v1/namespaces/ns/pods/x");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_EQ(missing->get_header_value("Content-Type"), "application/json");
  EXPECT_EQ(Parse(missing), json::parse(R"({"kind":"Status","apiVersion":"v1","metadata":{},
      "status":"Failure","message":"pods \"x\" not found","reason":"NotFound",
      "details":{"name":"x","kind":"pods"},"code":404})"));
}

// pods/proxy, as kube-apiserver's: to the pod's IP and port, Authorization consumed, other
// headers and the query forwarded, the backend's answer as it is.
TEST_F(FakeApiServerTest, ProxiesToAPodLikeTheRealServer) {
  httplib::Server backend;
  std::mutex mu;
  httplib::Headers seen;
  std::string seen_path;
  std::string seen_limit;
  backend.Get(R"(/debug/.*)", [&](const httplib::Request& req, httplib::Response& res) {
    {
      std::lock_guard<std::mutex> lock(mu);
      seen = req.headers;
      seen_path = req.path;
      seen_limit = req.get_param_value("limit");
    }
    res.status = 404;
    res.set_content("gputopo: no record\n", "text/plain");
  });
  const int backend_port = backend.bind_to_any_port("127.0.0.1");
  ASSERT_GT(backend_port, 0);
  std::thread serving([&] { backend.listen_after_bind(); });

  json pod = MakePod("gputopo-system", "gputopo-0");
  pod["spec"]["containers"][0]["ports"] = {{{"name", "admin"}, {"containerPort", backend_port}}};
  pod["status"] = {{"phase", "Running"}, {"podIP", "127.0.0.1"}};
  ASSERT_TRUE(server_.CreatePod(pod));
  json no_ip = MakePod("gputopo-system", "pending");
  ASSERT_TRUE(server_.CreatePod(no_ip));
  server_.SetBearerToken("s3cret");

  const std::string base = "/api/v1/namespaces/gputopo-system/pods/";
  httplib::Headers headers = {{"X-Gputopo-Authorization", "Bearer user-token"}};
  httplib::Result answer = Client("s3cret").Get(
      base + "gputopo-0:" + std::to_string(backend_port) + "/proxy/debug/pods/ml/p?limit=3",
      headers);
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->status, 404);
  EXPECT_EQ(answer->body, "gputopo: no record\n");
  EXPECT_EQ(answer->get_header_value("Content-Type"), "text/plain");
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_EQ(seen_path, "/debug/pods/ml/p");
    EXPECT_EQ(seen_limit, "3");
    EXPECT_EQ(seen.count("Authorization"), 0u) << "the API server consumes the caller's token";
    auto forwarded = seen.find("X-Gputopo-Authorization");
    ASSERT_NE(forwarded, seen.end());
    EXPECT_EQ(forwarded->second, "Bearer user-token");
    EXPECT_EQ(seen.count("X-Forwarded-For"), 1u);
  }
  // No port: the pod's first container port, as on the real server.
  answer = Client("s3cret").Get(base + "gputopo-0/proxy/debug/x");
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->status, 404);
  EXPECT_EQ(answer->body, "gputopo: no record\n");
  // The caller is authenticated first.
  answer = Client().Get(base + "gputopo-0/proxy/debug/x");
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->status, 401);
  // A pod that is not there, one without an IP, and a backend that does not answer.
  answer = Client("s3cret").Get(base + "ghost:80/proxy/");
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->status, 404);
  EXPECT_EQ(Parse(answer)["message"], "pods \"ghost\" not found");
  answer = Client("s3cret").Get(base + "pending:80/proxy/");
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->status, 400);
  backend.stop();
  serving.join();
  answer = Client("s3cret").Get(base + "gputopo-0:" + std::to_string(backend_port) + "/proxy/");
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->status, 503);
  EXPECT_EQ(Parse(answer)["reason"], "ServiceUnavailable");
  EXPECT_EQ(Parse(answer)["message"].get<std::string>().rfind("error trying to reach service", 0),
            0u);
}

TEST_F(FakeApiServerTest, UnknownPathsAre404AndUnservedMethods405) {
  httplib::Result unknown = Client().Get("/api/v1/secrets");
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 404);
  EXPECT_EQ(Parse(unknown)["message"], "the server could not find the requested resource");
  httplib::Result method = Client().Delete("/api/v1/nodes");
  ASSERT_TRUE(method);
  EXPECT_EQ(method->status, 405);
  EXPECT_EQ(Parse(method)["reason"], "MethodNotAllowed");
}

// --- Watches ---

TEST_F(FakeApiServerTest, WatchFromAResourceVersionDeliversLaterEventsInOrder) {
  const std::string rv = Parse(Client().Get("/api/v1/pods"))["metadata"]["resourceVersion"];
  auto watch = Watch("/api/v1/pods?watch=true&resourceVersion=" + rv);
  ASSERT_TRUE(server_.WaitForOpenWatches(1, kWait));

  ASSERT_TRUE(server_.CreatePod(MakePod("ns", "p")));
  ASSERT_TRUE(
      server_.UpdatePod("ns", "p", [](json& pod) { pod["metadata"]["labels"]["x"] = "1"; }));
  ASSERT_TRUE(server_.DeletePod("ns", "p"));
  ASSERT_TRUE(watch->WaitForEvents(3));

  EXPECT_EQ(watch->status(), 200);
  EXPECT_EQ(watch->content_encoding(), "");  // never compressed
  std::vector<json> events = watch->Events();
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0]["type"], "ADDED");
  EXPECT_EQ(events[1]["type"], "MODIFIED");
  EXPECT_EQ(events[2]["type"], "DELETED");
  for (const json& event : events) {
    EXPECT_EQ(event["object"]["kind"], "Pod");
    EXPECT_EQ(event["object"]["apiVersion"], "v1");
  }
  EXPECT_EQ(events[1]["object"]["metadata"]["labels"]["x"], "1");
  EXPECT_LT(Rv(events[0]["object"]), Rv(events[1]["object"]));
  EXPECT_LT(Rv(events[1]["object"]), Rv(events[2]["object"]));
  EXPECT_EQ(Rv(events[2]["object"]), Rv(server_.resource_version()));  // the delete's RV
}

TEST_F(FakeApiServerTest, WatchWithoutResourceVersionStartsWithSyntheticAdds) {
  ASSERT_TRUE(server_.CreateNode(MakeNode("n1")));
  ASSERT_TRUE(server_.CreateNode(MakeNode("n2")));
  auto watch = Watch("/api/v1/nodes?watch=1");
  ASSERT_TRUE(watch->WaitForEvents(2));
  ASSERT_TRUE(server_.UpdateNode("n1", [](json& node) { node["spec"]["unschedulable"] = true; }));
  ASSERT_TRUE(watch->WaitForEvents(3));
  std::vector<json> events = watch->Events();
  EXPECT_EQ(events[0]["type"], "ADDED");
  EXPECT_EQ(events[0]["object"]["kind"], "Node");
  EXPECT_EQ(events[1]["type"], "ADDED");
  EXPECT_EQ(events[2]["type"], "MODIFIED");
}

TEST_F(FakeApiServerTest, WatchReplaysHistoryNewerThanTheResourceVersion) {
  ASSERT_TRUE(server_.CreatePod(MakePod("ns", "a")));
  const std::string after_a = server_.resource_version();
  ASSERT_TRUE(server_.CreatePod(MakePod("ns", "b")));
  ASSERT_TRUE(server_.DeletePod("ns", "a"));
  auto watch = Watch("/api/v1/namespaces/ns/pods?watch=true&resourceVersion=" + after_a);
  ASSERT_TRUE(watch->WaitForEvents(2));
  std::vector<json> events = watch->Events();
  EXPECT_EQ(events[0]["type"], "ADDED");
  EXPECT_EQ(events[0]["object"]["metadata"]["name"], "b");
  EXPECT_EQ(events[1]["type"], "DELETED");
  EXPECT_EQ(events[1]["object"]["metadata"]["name"], "a");
}

TEST_F(FakeApiServerTest, WatchFromACompactedResourceVersionGetsAn410ErrorEvent) {
  ASSERT_TRUE(server_.CreatePod(MakePod("ns", "a")));
  const std::string old_rv = server_.resource_version();
  ASSERT_TRUE(server_.CreatePod(MakePod("ns", "b")));
  server_.CompactHistory();

  auto watch = Watch("/api/v1/pods?watch=true&resourceVersion=" + old_rv);
  ASSERT_TRUE(watch->WaitForEnd());
  EXPECT_EQ(watch->status(), 200);  // the real server answers 200 and an ERROR event
  EXPECT_EQ(watch->error(), httplib::Error::Success);  // and ends the stream cleanly
  std::vector<json> events = watch->Events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["type"], "ERROR");
  const json& status = events[0]["object"];
  EXPECT_EQ(status["kind"], "Status");
  EXPECT_EQ(status["apiVersion"], "v1");
  EXPECT_EQ(status["status"], "Failure");
  EXPECT_EQ(status["reason"], "Expired");
  EXPECT_EQ(status["code"], 410);
  EXPECT_EQ(status["message"],
            "too old resource version: " + old_rv + " (" + server_.resource_version() + ")");

  // From the current RV it works.
  auto current = Watch("/api/v1/pods?watch=true&resourceVersion=" + server_.resource_version());
  ASSERT_TRUE(server_.WaitForOpenWatches(1, kWait));
  ASSERT_TRUE(server_.CreatePod(MakePod("ns", "c")));
  ASSERT_TRUE(current->WaitForEvents(1));
  EXPECT_EQ(current->Events()[0]["type"], "ADDED");
}

TEST_F(FakeApiServerTest, HistoryWindowEvictsOldEvents) {
  server_.SetHistoryWindow(2);
  const std::string start = server_.resource_version();
  for (int i = 0; i < 4; ++i)
    ASSERT_TRUE(server_.CreatePod(MakePod("ns", "p" + std::to_string(i))));
  const uint64_t now = Rv(server_.resource_version());

  auto too_old = Watch("/api/v1/pods?watch=true&resourceVersion=" + start);
  ASSERT_TRUE(too_old->WaitForEnd());
  ASSERT_EQ(too_old->Events().size(), 1u);
  EXPECT_EQ(too_old->Events()[0]["object"]["code"], 410);

  // oldest retained is now-1, so now-2 is the oldest resumable RV.
  auto resumable = Watch("/api/v1/pods?watch=true&resourceVersion=" + std::to_string(now - 2));
  ASSERT_TRUE(resumable->WaitForEvents(2));
  EXPECT_EQ(resumable->Events()[1]["object"]["metadata"]["name"], "p3");
}

TEST_F(FakeApiServerTest, BookmarksArrivePeriodicallyAndOnDemand) {
  server_.SetBookmarkInterval(std::chrono::hours(1));
  auto watch = Watch("/api/v1/pods?watch=true&allowWatchBookmarks=true&resourceVersion=" +
                     server_.resource_version());
  auto plain = Watch("/api/v1/pods?watch=true&resourceVersion=" + server_.resource_version());
  ASSERT_TRUE(server_.WaitForOpenWatches(2, kWait));
  ASSERT_TRUE(server_.CreateNode(MakeNode("n")));  // advances the RV without a pod event
  server_.SendBookmarks();
  ASSERT_TRUE(watch->WaitForEvents(1, /*bookmarks=*/true));
  json bookmark = watch->Events(true)[0];
  EXPECT_EQ(bookmark["type"], "BOOKMARK");
  EXPECT_EQ(bookmark["object"]["kind"], "Pod");
  EXPECT_EQ(bookmark["object"]["apiVersion"], "v1");
  EXPECT_EQ(bookmark["object"]["metadata"]["resourceVersion"], server_.resource_version());

  server_.SetBookmarkInterval(20ms);
  ASSERT_TRUE(watch->WaitForEvents(3, /*bookmarks=*/true));
  EXPECT_FALSE(plain->WaitForEvents(1, /*bookmarks=*/true, 100ms));  // not asked for: none
}

TEST_F(FakeApiServerTest, WatchEndsCleanlyAfterTimeoutSeconds) {
  const auto start = std::chrono::steady_clock::now();
  auto watch = Watch("/api/v1/pods?watch=true&timeoutSeconds=1");
  ASSERT_TRUE(watch->WaitForEnd());
  EXPECT_GE(std::chrono::steady_clock::now() - start, 900ms);
  EXPECT_EQ(watch->error(), httplib::Error::Success);
}

TEST_F(FakeApiServerTest, BreakWatchesClosesStreamsAbruptly) {
  auto watch = Watch("/api/v1/pods?watch=true");
  ASSERT_TRUE(server_.WaitForOpenWatches(1, kWait));
  server_.BreakWatches();
  EXPECT_EQ(server_.open_watches(), 0u);
  ASSERT_TRUE(watch->WaitForEnd());
  EXPECT_NE(watch->error(), httplib::Error::Success);  // no terminating chunk
}

TEST_F(FakeApiServerTest, BreakWatchesMidEventLeavesATruncatedLine) {
  ASSERT_TRUE(server_.CreatePod(MakePod("ns", "p")));
  auto watch = Watch("/api/v1/pods?watch=true&resourceVersion=" + server_.resource_version());
  ASSERT_TRUE(server_.WaitForOpenWatches(1, kWait));
  server_.BreakWatchesMidEvent();
  ASSERT_TRUE(watch->WaitForEnd());
  EXPECT_NE(watch->error(), httplib::Error::Success);
  EXPECT_TRUE(watch->Events(true).empty());
  const std::string partial = watch->partial();
  EXPECT_FALSE(partial.empty());
  EXPECT_EQ(partial.rfind("{\"object\":", 0), 0u) << partial;
  EXPECT_TRUE(json::parse(partial, nullptr, false).is_discarded());
}

TEST_F(FakeApiServerTest, WatchWithSelectorSeesObjectsEnterAndLeave) {
  ASSERT_TRUE(server_.CreatePod(MakePod("ns", "p")));
  auto watch =
      Watch("/api/v1/pods?watch=true&fieldSelector=spec.nodeName%3Dnode-1&resourceVersion=" +
            server_.resource_version());
  ASSERT_TRUE(server_.WaitForOpenWatches(1, kWait));
  ASSERT_TRUE(server_.CreatePod(MakePod("ns", "elsewhere", "node-2")));  // never matches
  ASSERT_EQ(
      PostJson("/api/v1/namespaces/ns/pods/p/binding", BindingFor("ns", "p", "node-1"))->status,
      201);
  ASSERT_TRUE(server_.UpdatePod("ns", "p", [](json& pod) { pod["status"]["phase"] = "Running"; }));
  ASSERT_TRUE(server_.UpdatePod("ns", "p", [](json& pod) { pod["spec"].erase("nodeName"); }));
  ASSERT_TRUE(watch->WaitForEvents(3));
  std::vector<json> events = watch->Events();
  EXPECT_EQ(events[0]["type"], "ADDED");  // started to match
  EXPECT_EQ(events[1]["type"], "MODIFIED");
  EXPECT_EQ(events[2]["type"], "DELETED");  // stopped matching: old content, new RV
  EXPECT_EQ(events[2]["object"]["spec"]["nodeName"], "node-1");
  EXPECT_EQ(Rv(events[2]["object"]), Rv(server_.resource_version()));
  EXPECT_FALSE(watch->WaitForEvents(4, false, 50ms));
}

// --- PATCH ---

TEST_F(FakeApiServerTest, MergePatchFollowsRfc7386) {
  json pod = MakePod("ns", "p");
  pod["metadata"]["annotations"] = {{"keep", "1"}, {"drop", "2"}};
  const std::string rv = (*server_.CreatePod(pod))["metadata"]["resourceVersion"];

  httplib::Result result =
      Patch("/api/v1/namespaces/ns/pods/p",
            {{"metadata", {{"annotations", {{"drop", nullptr}, {"gputopo.io/gpus", "0,1"}}}}},
             {"status", {{"phase", "Running"}}}});
  ASSERT_TRUE(result);
  ASSERT_EQ(result->status, 200) << result->body;
  json patched = Parse(result);
  EXPECT_EQ(patched["kind"], "Pod");
  EXPECT_EQ(patched["metadata"]["annotations"], (json{{"keep", "1"}, {"gputopo.io/gpus", "0,1"}}));
  EXPECT_EQ(patched["status"]["phase"], "Pending");  // status is ignored on the main resource
  EXPECT_GT(Rv(patched), Rv(rv));
  EXPECT_EQ(*server_.GetPodObject("ns", "p"), patched);

  // A patch that changes nothing writes nothing.
  const std::string before = server_.resource_version();
  json same = Parse(
      Patch("/api/v1/namespaces/ns/pods/p", {{"metadata", {{"annotations", {{"keep", "1"}}}}}}));
  EXPECT_EQ(same["metadata"]["resourceVersion"], before);
  EXPECT_EQ(server_.resource_version(), before);

  // With the current resourceVersion as a precondition, it applies.
  json guarded =
      Parse(Patch("/api/v1/namespaces/ns/pods/p",
                  {{"metadata", {{"resourceVersion", before}, {"labels", {{"l", "v"}}}}}}));
  EXPECT_EQ(guarded["metadata"]["labels"]["l"], "v");
}

TEST_F(FakeApiServerTest, MergePatchWithAStaleResourceVersionConflicts) {
  const std::string rv = (*server_.CreatePod(MakePod("ns", "p")))["metadata"]["resourceVersion"];
  ASSERT_TRUE(
      server_.UpdatePod("ns", "p", [](json& pod) { pod["metadata"]["labels"]["x"] = "y"; }));
  httplib::Result result =
      Patch("/api/v1/namespaces/ns/pods/p",
            {{"metadata", {{"resourceVersion", rv}, {"annotations", {{"a", "b"}}}}}});
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 409);
  EXPECT_EQ(Parse(result), json::parse(R"({"kind":"Status","apiVersion":"v1","metadata":{},
      "status":"Failure","message":"Operation cannot be fulfilled on pods \"p\": the object has been modified; please apply your changes to the latest version and try again",
      "reason":"Conflict","details":{"name":"p","kind":"pods"},"code":409})"));
  EXPECT_FALSE(server_.GetPodObject("ns", "p")->at("metadata").contains("annotations"));
}

TEST_F(FakeApiServerTest, MergePatchWithAnotherUidIsRejectedAsImmutable) {
  json pod = MakePod("ns", "p");
  pod["metadata"]["uid"] = "uid-b";
  ASSERT_TRUE(server_.CreatePod(pod));
  httplib::Result result = Patch("/api/v1/namespaces/ns/pods/p",
                                 {{"metadata", {{"uid", "uid-a"}, {"annotations", {{"a", "b"}}}}}});
  ASSERT_TRUE(result);
  // The real server has no UID precondition on PATCH: the update fails validation.
  EXPECT_EQ(result->status, 422);
  json status = Parse(result);
  EXPECT_EQ(status["reason"], "Invalid");
  EXPECT_EQ(status["message"],
            "Pod \"p\" is invalid: metadata.uid: Invalid value: \"uid-a\": field is immutable");
  EXPECT_EQ(status["details"]["causes"][0]["field"], "metadata.uid");

  // The matching uid is fine.
  EXPECT_EQ(Patch("/api/v1/namespaces/ns/pods/p",
                  {{"metadata", {{"uid", "uid-b"}, {"annotations", {{"a", "b"}}}}}})
                ->status,
            200);
}

TEST_F(FakeApiServerTest, MergePatchErrors) {
  ASSERT_TRUE(server_.CreatePod(MakePod("ns", "p")));
  httplib::Result wrong_type =
      Patch("/api/v1/namespaces/ns/pods/p", {{"metadata", json::object()}}, "application/json");
  ASSERT_TRUE(wrong_type);
  EXPECT_EQ(wrong_type->status, 415);
  EXPECT_EQ(Parse(wrong_type)["reason"], "UnsupportedMediaType");

  httplib::Result malformed =
      Client().Patch("/api/v1/namespaces/ns/pods/p", "{not json", "application/merge-patch+json");
  ASSERT_TRUE(malformed);
  EXPECT_EQ(malformed->status, 400);
  EXPECT_EQ(Parse(malformed)["reason"], "BadRequest");

  EXPECT_EQ(Patch("/api/v1/namespaces/ns/pods/missing", {{"metadata", json::object()}})->status,
            404);
  EXPECT_EQ(Patch("/api/v1/namespaces/ns/pods/p", {{"spec", {{"nodeName", "n"}}}})->status, 422);
  EXPECT_EQ(Patch("/api/v1/namespaces/ns/pods/p", {{"metadata", {{"name", "q"}}}})->status, 400);
}

TEST_F(FakeApiServerTest, MergePatchOfANode) {
  json node = MakeNode("n1");
  node["metadata"]["uid"] = "node-uid";
  node["status"]["allocatable"] = {{"nvidia.com/gpu", "8"}};
  const std::string rv = (*server_.CreateNode(node))["metadata"]["resourceVersion"];

  httplib::Result result =
      Patch("/api/v1/nodes/n1", {{"metadata", {{"annotations", {{"gputopo.io/topology", "{}"}}}}},
                                 {"spec", {{"unschedulable", true}}},
                                 {"status", {{"allocatable", {{"nvidia.com/gpu", "1"}}}}}});
  ASSERT_TRUE(result);
  ASSERT_EQ(result->status, 200) << result->body;
  json patched = Parse(result);
  EXPECT_EQ(patched["kind"], "Node");
  EXPECT_EQ(patched["metadata"]["annotations"]["gputopo.io/topology"], "{}");
  EXPECT_EQ(patched["spec"]["unschedulable"], true);                   // a node's spec may change
  EXPECT_EQ(patched["status"]["allocatable"]["nvidia.com/gpu"], "8");  // status is kept
  EXPECT_GT(Rv(patched), Rv(rv));
  EXPECT_EQ(*server_.GetNodeObject("n1"), patched);

  // Preconditions and errors, as for pods.
  httplib::Result stale = Patch(
      "/api/v1/nodes/n1", {{"metadata", {{"resourceVersion", rv}, {"labels", {{"a", "b"}}}}}});
  ASSERT_TRUE(stale);
  EXPECT_EQ(stale->status, 409);
  EXPECT_EQ(Parse(stale)["details"]["kind"], "nodes");
  httplib::Result other_uid =
      Patch("/api/v1/nodes/n1", {{"metadata", {{"uid", "x"}, {"labels", {{"a", "b"}}}}}});
  ASSERT_TRUE(other_uid);
  EXPECT_EQ(other_uid->status, 422);
  EXPECT_EQ(Parse(other_uid)["message"],
            "Node \"n1\" is invalid: metadata.uid: Invalid value: \"x\": field is immutable");
  EXPECT_EQ(Patch("/api/v1/nodes/missing", {{"metadata", json::object()}})->status, 404);
  EXPECT_EQ(Patch("/api/v1/nodes/n1", {{"metadata", {{"name", "n2"}}}})->status, 400);
  EXPECT_EQ(Patch("/api/v1/nodes/n1", {{"metadata", json::object()}}, "application/json")->status,
            415);
  // A namespace on a cluster-scoped object is cleared, not an error.
  json cleared = Parse(Patch("/api/v1/nodes/n1", {{"metadata", {{"namespace", "ns"}}}}));
  EXPECT_FALSE(cleared["metadata"].contains("namespace"));
}

// --- Binding ---

TEST_F(FakeApiServerTest, BindingSucceedsOnceThenConflicts) {
  json pod = MakePod("ns", "p");
  pod["status"]["conditions"] = {
      {{"type", "PodScheduled"}, {"status", "False"}, {"reason", "Unschedulable"}}};
  ASSERT_TRUE(server_.CreatePod(pod));
  auto watch = Watch("/api/v1/pods?watch=true&resourceVersion=" + server_.resource_version());
  ASSERT_TRUE(server_.WaitForOpenWatches(1, kWait));

  json binding = BindingFor("ns", "p", "node-1");
  binding["metadata"]["annotations"] = {{"gputopo.io/gpus", "2,3"}};
  httplib::Result result = PostJson("/api/v1/namespaces/ns/pods/p/binding", binding);
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 201);
  EXPECT_EQ(Parse(result), json::parse(R"({"kind":"Status","apiVersion":"v1","metadata":{},
      "status":"Success","code":201})"));

  json bound = *server_.GetPodObject("ns", "p");
  EXPECT_EQ(bound["spec"]["nodeName"], "node-1");
  EXPECT_EQ(bound["metadata"]["annotations"]["gputopo.io/gpus"], "2,3");
  ASSERT_EQ(bound["status"]["conditions"].size(), 1u);
  const json& condition = bound["status"]["conditions"][0];
  EXPECT_EQ(condition["type"], "PodScheduled");
  EXPECT_EQ(condition["status"], "True");
  EXPECT_TRUE(condition["lastProbeTime"].is_null());
  EXPECT_FALSE(condition.contains("reason"));
  ASSERT_TRUE(watch->WaitForEvents(1));
  EXPECT_EQ(watch->Events()[0]["type"], "MODIFIED");

  httplib::Result again =
      PostJson("/api/v1/namespaces/ns/pods/p/binding", BindingFor("ns", "p", "node-2"));
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 409);
  json status = Parse(again);
  EXPECT_EQ(status["reason"], "Conflict");
  EXPECT_EQ(status["message"],
            "Operation cannot be fulfilled on pods/binding \"p\": pod p is "
            "already assigned to node \"node-1\"");
  EXPECT_EQ(status["details"]["kind"], "pods/binding");
}

TEST_F(FakeApiServerTest, BindingErrors) {
  json pod = MakePod("ns", "p");
  pod["metadata"]["uid"] = "uid-b";
  ASSERT_TRUE(server_.CreatePod(pod));

  httplib::Result missing =
      PostJson("/api/v1/namespaces/ns/pods/q/binding", BindingFor("ns", "q", "n"));
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_EQ(Parse(missing)["message"], "pods \"q\" not found");

  json stale = BindingFor("ns", "p", "n");
  stale["metadata"]["uid"] = "uid-a";
  httplib::Result uid = PostJson("/api/v1/namespaces/ns/pods/p/binding", stale);
  ASSERT_TRUE(uid);
  EXPECT_EQ(uid->status, 409);
  json status = Parse(uid);
  EXPECT_EQ(status["reason"], "Conflict");
  EXPECT_NE(status["message"].get<std::string>().find(
                "Precondition failed: UID in precondition: uid-a, UID in object meta: uid-b"),
            std::string::npos);
  EXPECT_FALSE(server_.GetPodObject("ns", "p")->at("spec").contains("nodeName"));

  EXPECT_EQ(
      PostJson("/api/v1/namespaces/ns/pods/p/binding", BindingFor("ns", "other", "n"))->status,
      400);
  EXPECT_EQ(
      Client().Post("/api/v1/namespaces/ns/pods/p/binding", "{oops", "application/json")->status,
      400);
}

// --- Events ---

TEST_F(FakeApiServerTest, CreatesEvents) {
  json event = {{"apiVersion", "v1"},
                {"kind", "Event"},
                {"metadata", {{"generateName", "p."}, {"namespace", "ns"}}},
                {"involvedObject", {{"kind", "Pod"}, {"namespace", "ns"}, {"name", "p"}}},
                {"reason", "GpusAssigned"},
                {"message", "GPUs 0,1"},
                {"type", "Normal"}};
  httplib::Result result = PostJson("/api/v1/namespaces/ns/events", event);
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 201);
  json created = Parse(result);
  const std::string name = created["metadata"]["name"];
  EXPECT_EQ(name.rfind("p.", 0), 0u);
  EXPECT_EQ(name.size(), 7u);
  EXPECT_EQ(created["kind"], "Event");
  EXPECT_EQ(created["reason"], "GpusAssigned");
  ASSERT_EQ(server_.Events().size(), 1u);
  EXPECT_EQ(server_.Events()[0]["message"], "GPUs 0,1");

  event["metadata"] = {{"name", name}};
  httplib::Result duplicate = PostJson("/api/v1/namespaces/ns/events", event);
  ASSERT_TRUE(duplicate);
  EXPECT_EQ(duplicate->status, 409);
  EXPECT_EQ(Parse(duplicate)["reason"], "AlreadyExists");
  event["metadata"] = {{"name", "x"}, {"namespace", "elsewhere"}};
  EXPECT_EQ(PostJson("/api/v1/namespaces/ns/events", event)->status, 400);
}

// --- Auth, faults, observation ---

TEST_F(FakeApiServerTest, RequiresTheBearerTokenWhenSet) {
  server_.SetBearerToken("s3cret");
  httplib::Result none = Client().Get("/api/v1/nodes");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 401);
  EXPECT_EQ(Parse(none), json::parse(R"({"kind":"Status","apiVersion":"v1","metadata":{},
      "status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401})"));
  EXPECT_EQ(Client("wrong").Get("/api/v1/nodes")->status, 401);
  EXPECT_EQ(Client("s3cret").Get("/api/v1/nodes")->status, 200);

  WatchStream watch(server_.port(), "/api/v1/pods?watch=true&allowWatchBookmarks=true", "s3cret");
  ASSERT_TRUE(server_.WaitForOpenWatches(1, kWait));
  server_.SendBookmarks();
  ASSERT_TRUE(watch.WaitForEvents(1, /*bookmarks=*/true));
  EXPECT_EQ(watch.status(), 200);
}

TEST_F(FakeApiServerTest, FailNextAnswersInjectedStatuses) {
  server_.FailNext("GET", "/api/v1/pods", 500, 2);
  for (int i = 0; i < 2; ++i) {
    httplib::Result failed = Client().Get("/api/v1/pods");
    ASSERT_TRUE(failed);
    EXPECT_EQ(failed->status, 500);
    json status = Parse(failed);
    EXPECT_EQ(status["kind"], "Status");
    EXPECT_EQ(status["reason"], "InternalError");
    EXPECT_EQ(status["code"], 500);
  }
  EXPECT_EQ(Client().Get("/api/v1/pods")->status, 200);

  server_.FailNext("*", "/api/v1/namespaces/ns/pods/p/binding", 429);
  httplib::Result throttled =
      PostJson("/api/v1/namespaces/ns/pods/p/binding", BindingFor("ns", "p", "n"));
  ASSERT_TRUE(throttled);
  EXPECT_EQ(throttled->status, 429);
  EXPECT_EQ(throttled->get_header_value("Retry-After"), "1");

  // A WATCH rule leaves lists alone and fails the next watch.
  server_.FailNext("WATCH", "/api/v1/nodes", 503);
  EXPECT_EQ(Client().Get("/api/v1/nodes")->status, 200);
  httplib::Result watch = Client().Get("/api/v1/nodes?watch=true");
  ASSERT_TRUE(watch);
  EXPECT_EQ(watch->status, 503);
}

TEST_F(FakeApiServerTest, DelayNextDelaysMatchingRequests) {
  server_.DelayNext("GET", "/api/v1/nodes", 300ms);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(Client().Get("/api/v1/nodes")->status, 200);
  // Only a lower bound, which no slow run can break. That the rule is then used up is checked
  // by HoldNext's test: both kinds of rule are taken the same way, and a hold needs no clock.
  EXPECT_GE(std::chrono::steady_clock::now() - start, 300ms);
  EXPECT_EQ(Client().Get("/api/v1/nodes")->status, 200);
}

TEST_F(FakeApiServerTest, HoldNextWaitsForReleaseHeldAndIsUsedUp) {
  server_.HoldNext("GET", "/api/v1/nodes", 2);
  int statuses[2] = {0, 0};
  std::vector<std::thread> held;
  for (int& status : statuses) {
    held.emplace_back([&] {
      httplib::Client client("127.0.0.1", server_.port());
      client.set_read_timeout(300, 0);  // the test releases it; no deadline to race
      httplib::Result got = client.Get("/api/v1/nodes");
      status = got ? got->status : -1;
    });
  }
  ASSERT_TRUE(WaitFor([&] { return server_.held_requests() == 2; }));
  // Both uses of the rule are taken: other requests are answered while those two wait.
  EXPECT_EQ(Client().Get("/api/v1/nodes")->status, 200);
  EXPECT_EQ(Client().Get("/api/v1/pods")->status, 200);
  EXPECT_EQ(server_.held_requests(), 2u);
  EXPECT_EQ(statuses[0], 0);
  EXPECT_EQ(statuses[1], 0);
  server_.ReleaseHeld();
  for (std::thread& t : held) t.join();
  EXPECT_EQ(statuses[0], 200);
  EXPECT_EQ(statuses[1], 200);
  EXPECT_EQ(server_.held_requests(), 0u);
}

TEST_F(FakeApiServerTest, StopLetsHeldRequestsGo) {
  server_.HoldNext("*", "/api/v1/pods");
  std::thread held([&] {
    httplib::Client client("127.0.0.1", server_.port());
    client.set_read_timeout(300, 0);
    (void)client.Get("/api/v1/pods");
  });
  ASSERT_TRUE(WaitFor([&] { return server_.held_requests() == 1; }));
  server_.Stop();  // returns only once the held request has been let go and its thread joined
  EXPECT_EQ(server_.held_requests(), 0u);
  held.join();
}

TEST_F(FakeApiServerTest, CountsRequests) {
  Client().Get("/api/v1/pods");
  Client().Get("/api/v1/pods?limit=1");
  {
    auto watch = Watch("/api/v1/pods?watch=true&timeoutSeconds=1");
    ASSERT_TRUE(server_.WaitForOpenWatches(1, kWait));
  }
  EXPECT_EQ(server_.RequestCount("GET", "/api/v1/pods"), 3u);
  EXPECT_EQ(server_.RequestCount("WATCH", "/api/v1/pods"), 1u);
  EXPECT_EQ(server_.RequestCount("GET", "/api/v1/nodes"), 0u);
  std::vector<FakeApiServer::RecordedRequest> requests = server_.Requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[1].target, "/api/v1/pods?limit=1");
  EXPECT_EQ(requests[1].status, 200);
}

TEST_F(FakeApiServerTest, CompressesOnlyLargeNonWatchResponses) {
  httplib::Client client("127.0.0.1", server_.port());
  client.set_decompress(false);
  const httplib::Headers gzip = {{"Accept-Encoding", "gzip, deflate, br"}};
  httplib::Result small = client.Get("/api/v1/pods", gzip);
  ASSERT_TRUE(small);
  EXPECT_EQ(small->get_header_value("Content-Encoding"), "");
  for (int i = 0; i < 80; ++i) {
    json pod = MakePod("ns", "p" + std::to_string(i));
    pod["metadata"]["annotations"] = {{"blob", std::string(2048, 'x')}};
    ASSERT_TRUE(server_.CreatePod(pod));
  }
  httplib::Result large = client.Get("/api/v1/pods", gzip);
  ASSERT_TRUE(large);
  EXPECT_EQ(large->get_header_value("Content-Encoding"), "gzip");
  httplib::Result plain = client.Get("/api/v1/pods");
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->get_header_value("Content-Encoding"), "");
}

// --- Lifecycle and concurrency ---

TEST_F(FakeApiServerTest, StopEndsOpenWatchesAndStartResumesOnTheSamePort) {
  ASSERT_TRUE(server_.CreatePod(MakePod("ns", "p")));
  auto watch = Watch("/api/v1/pods?watch=true");
  ASSERT_TRUE(watch->WaitForEvents(1));
  httplib::Client idle("127.0.0.1", server_.port());  // an idle keep-alive connection
  idle.set_keep_alive(true);
  ASSERT_EQ(idle.Get("/api/v1/nodes")->status, 200);

  const int port = server_.port();
  const auto start = std::chrono::steady_clock::now();
  server_.Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  ASSERT_TRUE(watch->WaitForEnd());
  EXPECT_EQ(server_.open_watches(), 0u);

  ASSERT_TRUE(server_.Start());
  EXPECT_EQ(server_.port(), port);
  EXPECT_EQ(Parse(Client().Get("/api/v1/pods"))["items"].size(), 1u);
}

TEST_F(FakeApiServerTest, ConcurrentWritersAndWatchersSeeEveryEventOnceInOrder) {
  const uint64_t start = Rv(server_.resource_version());
  auto first = Watch("/api/v1/pods?watch=true&resourceVersion=" + std::to_string(start));
  auto second = Watch(
      "/api/v1/namespaces/c/pods?watch=true&allowWatchBookmarks=true"
      "&resourceVersion=" +
      std::to_string(start));
  server_.SetBookmarkInterval(5ms);
  ASSERT_TRUE(server_.WaitForOpenWatches(2, kWait));

  constexpr int kWriters = 4;
  constexpr int kRounds = 15;
  std::vector<std::thread> writers;
  for (int t = 0; t < kWriters; ++t) {
    writers.emplace_back([&, t] {
      httplib::Client client("127.0.0.1", server_.port());
      client.set_keep_alive(true);
      for (int i = 0; i < kRounds; ++i) {
        const std::string name = "p-" + std::to_string(t) + "-" + std::to_string(i);
        server_.CreatePod(MakePod("c", name));
        server_.UpdatePod("c", name, [&](json& pod) { pod["metadata"]["labels"]["i"] = "x"; });
        json patch = {{"metadata", {{"annotations", {{"round", std::to_string(i)}}}}}};
        client.Patch("/api/v1/namespaces/c/pods/" + name, patch.dump(),
                     "application/merge-patch+json");
        if (i % 2 == 1) server_.DeletePod("c", name);
      }
    });
  }
  for (std::thread& writer : writers) writer.join();
  const uint64_t end = Rv(server_.resource_version());
  const size_t expected = static_cast<size_t>(end - start);
  EXPECT_EQ(expected, static_cast<size_t>(kWriters * (kRounds * 3 + kRounds / 2)));

  for (WatchStream* watch : {first.get(), second.get()}) {
    ASSERT_TRUE(watch->WaitForEvents(expected, false, 8000ms));
    std::vector<json> events = watch->Events();
    ASSERT_EQ(events.size(), expected);
    uint64_t previous = start;
    for (const json& event : events) {
      const uint64_t rv = Rv(event["object"]);
      EXPECT_EQ(rv, previous + 1) << event.dump();
      previous = rv;
    }
    // A bookmark promises that every event up to its RV was sent.
    uint64_t last_bookmark = 0;
    for (const json& event : watch->Events(true)) {
      const uint64_t rv = Rv(event["object"]);
      if (event["type"] == "BOOKMARK") {
        EXPECT_GE(rv, last_bookmark);
        last_bookmark = rv;
      } else {
        EXPECT_GT(rv, last_bookmark);
      }
    }
  }
}

}  // namespace
}  // namespace gputopo::testing
