// A gputopo server on a loopback port over a small cluster, for HTTP tests.
#ifndef GPUTOPO_TEST_SRC_HTTP_SERVER_FIXTURE_H_
#define GPUTOPO_TEST_SRC_HTTP_SERVER_FIXTURE_H_

#include <gtest/gtest.h>
#include <httplib.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "src/app/app.h"
#include "test/support/fake_clock.h"

namespace gputopo::testing {

using nlohmann::json;

inline json Node(const std::string& name, int allocatable, json labels,
                 json annotations = json::object()) {
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata",
           {{"name", name},
            {"resourceVersion", "10"},
            {"labels", labels},
            {"annotations", annotations}}},
          {"status", {{"allocatable", {{"nvidia.com/gpu", std::to_string(allocatable)}}}}}};
}

inline json Pod(const std::string& ns, const std::string& name, int gpus,
                json annotations = json::object(), const std::string& node = "") {
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata",
               {{"name", name},
                {"namespace", ns},
                {"uid", "uid-" + name},
                {"resourceVersion", "20"},
                {"annotations", annotations}}},
              {"spec",
               {{"containers",
                 {{{"name", "main"},
                   {"resources",
                    {{"limits", {{"nvidia.com/gpu", std::to_string(gpus)}}},
                     {"requests", {{"nvidia.com/gpu", std::to_string(gpus)}}}}}}}}}},
              {"status", {{"phase", node.empty() ? "Pending" : "Running"}}}};
  if (!node.empty()) pod["spec"]["nodeName"] = node;
  return pod;
}

// An 8-GPU NV18 machine as a topology annotation (what a node agent would publish).
inline std::string H100Document() {
  json doc = {{"version", 1}, {"gpus", json::array()}, {"links", json::array()}};
  for (int i = 0; i < 8; ++i) {
    doc["gpus"].push_back(
        {{"index", i}, {"uuid", "GPU-h100-" + std::to_string(i)}, {"numaNode", i / 4}});
    for (int j = i + 1; j < 8; ++j) doc["links"].push_back({{"gpus", {i, j}}, {"type", "NV18"}});
  }
  return doc.dump();
}

inline json BaseCluster() {
  json items = json::array();
  items.push_back(Node("h100", 32, {{"nvidia.com/gpu.replicas", "4"}},
                       {{"gputopo.io/topology", H100Document()}}));
  items.push_back(Node("plain", 4, json::object()));
  items.push_back(Node("broken", 8, json::object(), {{"gputopo.io/topology", "{not json"}}));
  items.push_back(Pod("ml", "running", 1, {{"gputopo.io/assigned-gpus", "GPU-h100-0"}}, "h100"));
  for (int i = 0; i < 4; ++i)
    items.push_back(Pod("ml", "web-" + std::to_string(i), 1, {{"gputopo.io/group", "web"}}));
  items.push_back(Pod("ml", "train", 4));
  items.push_back(Pod("ml", "typo", 1, {{"gputopo.io/gpu-milli", "5000"}}));
  return {{"apiVersion", "v1"},
          {"kind", "List"},
          {"metadata", {{"resourceVersion", ""}}},
          {"items", items}};
}

class ServerTest : public ::testing::Test {
 protected:
  void StartWith(const json& cluster, size_t max_body = 64u << 20, bool filter_decides = false) {
    app::AppOptions options;
    options.filter_decides = filter_decides;
    options.server.http.port = 0;
    options.server.http.verb_threads = 4;
    options.server.http.max_body_bytes = max_body;
    options.snapshot_json = cluster.dump();
    auto created = app::App::Create(options, clock_);
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    app_ = std::move(created).value();
    ASSERT_TRUE(app_->Start().ok());
    client_ = std::make_unique<httplib::Client>("127.0.0.1", app_->port());
    client_->set_read_timeout(30, 0);
  }
  void TearDown() override {
    if (app_) app_->Stop();
  }

  json Args(const json& pod, const std::vector<std::string>& names) const {
    return {{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", names}};
  }
  // ExtenderBindingArgs for the pod Pod(ns, name, ...) made (its UID is "uid-<name>").
  static json BindingArgs(const std::string& ns, const std::string& name, const std::string& node) {
    return {{"PodName", name}, {"PodNamespace", ns}, {"PodUID", "uid-" + name}, {"Node", node}};
  }
  json PostJson(const std::string& path, const std::string& body, int want_status = 200) {
    auto res = client_->Post(path, body, "application/json");
    EXPECT_TRUE(res) << path;
    if (!res) return json();
    EXPECT_EQ(res->status, want_status) << path << ": " << res->body;
    if (want_status == 200) {
      EXPECT_EQ(res->get_header_value("Content-Type"), "application/json") << path;
    }
    return json::parse(res->body, nullptr, false);
  }
  // POST /bind of BindingArgs(ns, name, node); the ExtenderBindingResult.
  json PostBind(const std::string& ns, const std::string& name, const std::string& node) {
    return PostJson("/bind", BindingArgs(ns, name, node).dump());
  }
  json Get(const std::string& path, int want_status = 200) {
    auto res = client_->Get(path);
    EXPECT_TRUE(res) << path;
    if (!res) return json();
    EXPECT_EQ(res->status, want_status) << path << ": " << res->body;
    return json::parse(res->body, nullptr, false);
  }
  json PodObject(const json& cluster, const std::string& name) const {
    for (const json& item : cluster["items"]) {
      if (item["kind"] == "Pod" && item["metadata"]["name"] == name) return item;
    }
    return json();
  }

  testing::FakeClock clock_;
  std::unique_ptr<app::App> app_;
  std::unique_ptr<httplib::Client> client_;
};

}  // namespace gputopo::testing

#endif  // GPUTOPO_TEST_SRC_HTTP_SERVER_FIXTURE_H_
