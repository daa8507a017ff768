// manifests/monitoring against a live gputopo: every metric the Grafana dashboard and the
// PrometheusRule query is in gputopo's /metrics, with every label they match on or group by.
// A renamed metric or label fails here before a dashboard goes blank in production.
#include <gtest/gtest.h>
#include <httplib.h>
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "test/src/kube/live_app.h"
#include "test/support/fixtures.h"

namespace gputopo {
namespace {

using nlohmann::json;

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Every "expr" anywhere in the dashboard.
void CollectExprs(const json& j, std::vector<std::string>& out) {
  if (j.is_object()) {
    for (const auto& [key, value] : j.items()) {
      if (key == "expr" && value.is_string()) out.push_back(value.get<std::string>());
      CollectExprs(value, out);
    }
  } else if (j.is_array()) {
    for (const json& item : j) CollectExprs(item, out);
  }
}

// Metric name -> the label names its samples carry (histograms under their _bucket, _sum and
// _count names).
std::map<std::string, std::set<std::string>> Exposed(const std::string& text) {
  std::map<std::string, std::set<std::string>> out;
  std::istringstream lines(text);
  const std::regex label(R"(([a-zA-Z_][a-zA-Z0-9_]*)=")");
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    const size_t end = line.find_first_of("{ ");
    std::set<std::string>& labels = out[line.substr(0, end)];
    if (end == std::string::npos || line[end] != '{') continue;
    const std::string inner = line.substr(end, line.find('}') - end);
    for (std::sregex_iterator it(inner.begin(), inner.end(), label), last; it != last; ++it) {
      labels.insert((*it)[1]);
    }
  }
  return out;
}

using MonitoringTest = testing::LiveAppTest;

TEST_F(MonitoringTest, EveryMetricAndLabelTheDashboardAndAlertsQueryIsExposed) {
  ASSERT_TRUE(server_.CreateNode(testing::GpuNode("h100")));
  ASSERT_TRUE(server_.CreatePod(testing::GpuPod("ml", "train", 2)));
  app_ = StartApp(LiveOptions(std::chrono::seconds(120)));
  ASSERT_TRUE(app_);

  // Traffic that creates the labelled series: a filter with a failing node, a bind.
  httplib::Client client("127.0.0.1", app_->port());
  client.set_read_timeout(60, 0);
  const auto pod = server_.GetPodObject("ml", "train");
  ASSERT_TRUE(pod);
  const json args = {{"Pod", *pod}, {"Nodes", nullptr}, {"NodeNames", {"h100", "ghost"}}};
  auto filtered = client.Post("/filter", args.dump(), "application/json");
  ASSERT_TRUE(filtered && filtered->status == 200);
  const json bind = {{"PodName", "train"},
                     {"PodNamespace", "ml"},
                     {"PodUID", (*pod)["metadata"]["uid"]},
                     {"Node", "h100"}};
  auto bound = client.Post("/bind", bind.dump(), "application/json");
  ASSERT_TRUE(bound && bound->status == 200);
  ASSERT_EQ(json::parse(bound->body)["Error"], "");
  auto scraped = client.Get("/metrics");
  ASSERT_TRUE(scraped && scraped->status == 200);
  const std::map<std::string, std::set<std::string>> exposed = Exposed(scraped->body);

  const std::filesystem::path dir = testing::SourceDir() / "manifests/monitoring";
  std::vector<std::string> exprs;
  CollectExprs(json::parse(ReadFile(dir / "grafana-dashboard.json")), exprs);
  const size_t dashboard_exprs = exprs.size();
  const YAML::Node rule = YAML::LoadFile((dir / "prometheusrule.yaml").string());
  ASSERT_EQ(rule["kind"].as<std::string>(), "PrometheusRule");
  size_t alerts = 0;
  for (const YAML::Node& group : rule["spec"]["groups"]) {
    for (const YAML::Node& r : group["rules"]) {
      exprs.push_back(r["expr"].as<std::string>());
      ++alerts;
    }
  }
  EXPECT_GE(dashboard_exprs, 15u);
  EXPECT_GE(alerts, 6u);

  const std::regex metric(R"(\b(gputopo_[a-z0-9_]+)(\{[^}]*\})?)");
  const std::regex matcher(R"(([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=))");
  const std::regex grouping(R"(\b(?:by|without)\s*\(([^)]*)\))");
  std::set<std::string> queried;
  for (const std::string& expr : exprs) {
    std::set<std::string> labels_here;  // labels of the expression's metrics
    for (std::sregex_iterator it(expr.begin(), expr.end(), metric), last; it != last; ++it) {
      const std::string name = (*it)[1];
      queried.insert(name);
      auto found = exposed.find(name);
      if (found == exposed.end()) {
        ADD_FAILURE() << "not in /metrics: " << name << " (queried by: " << expr << ")";
        continue;
      }
      labels_here.insert(found->second.begin(), found->second.end());
      const std::string selector = (*it)[2];
      for (std::sregex_iterator m(selector.begin(), selector.end(), matcher); m != last; ++m) {
        EXPECT_TRUE(found->second.count((*m)[1])) << name << " has no label " << (*m)[1];
      }
    }
    for (std::sregex_iterator g(expr.begin(), expr.end(), grouping), last; g != last; ++g) {
      std::stringstream list((*g)[1]);
      for (std::string label; std::getline(list, label, ',');) {
        label.erase(0, label.find_first_not_of(' '));
        label.erase(label.find_last_not_of(' ') + 1);
        EXPECT_TRUE(labels_here.count(label))
            << "grouped by " << label << ", which no metric of " << expr << " has";
      }
    }
  }
  // The issue's list: per-verb latency, filter verdicts by reason, binds by outcome, watch
  // health, GPU slots, mismatches.
  for (const char* must :
       {"gputopo_extender_request_duration_seconds_bucket", "gputopo_filter_failures_total",
        "gputopo_binds_total", "gputopo_watch_reconnects_total", "gputopo_cache_synced",
        "gputopo_node_gpu_slots", "gputopo_gpu_mismatches_total"}) {
    EXPECT_TRUE(queried.count(must)) << "the dashboard and alerts never query " << must;
  }
}

}  // namespace
}  // namespace gputopo
