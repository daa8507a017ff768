// GET /metrics over loopback: what the request path and the cluster cache report to Prometheus
// after real filter, prioritize and bind requests.
#include <gtest/gtest.h>
#include <httplib.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "test/src/http/server_fixture.h"

namespace gputopo {
namespace {

using nlohmann::json;
using testing::BaseCluster;
using testing::ServerTest;

class MetricsTest : public ServerTest {
 protected:
  std::string Scrape() {
    auto res = client_->Get("/metrics");
    EXPECT_TRUE(res);
    if (!res) return "";
    EXPECT_EQ(res->status, 200);
    EXPECT_EQ(res->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
    return res->body;
  }
  // `series` with its labels in name order (the exposition's order is free; values here hold
  // no `",`).
  static std::string Canonical(const std::string& series) {
    const size_t brace = series.find('{');
    if (brace == std::string::npos) return series;
    std::vector<std::string> labels;
    const std::string inner = series.substr(brace + 1, series.size() - brace - 2);
    for (size_t at = 0; at < inner.size();) {
      size_t end = inner.find("\",", at);
      end = end == std::string::npos ? inner.size() : end + 1;
      labels.push_back(inner.substr(at, end - at));
      at = end + 1;
    }
    std::sort(labels.begin(), labels.end());
    std::string out = series.substr(0, brace) + "{";
    for (size_t i = 0; i < labels.size(); ++i) out += (i ? "," : "") + labels[i];
    return out + "}";
  }
  // The value of the sample whose name and labels are exactly `series` (in any order), e.g.
  // gputopo_binds_total{result="ok"}; nullopt when absent.
  static std::optional<double> Sample(const std::string& text, const std::string& series) {
    const std::string want = Canonical(series);
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
      if (line.empty() || line[0] == '#') continue;
      const size_t space = line.rfind(' ');
      if (space != std::string::npos && Canonical(line.substr(0, space)) == want) {
        return std::stod(line.substr(space + 1));
      }
    }
    return std::nullopt;
  }
  static json BindBody(const std::string& pod, const std::string& node) {
    return {{"PodName", pod}, {"PodNamespace", "ml"}, {"PodUID", "uid-" + pod}, {"Node", node}};
  }
};

TEST_F(MetricsTest, RequestsOutcomesAndTheCacheAreCounted) {
  const json cluster = BaseCluster();
  StartWith(cluster);
  const std::string before = Scrape();
  EXPECT_EQ(Sample(before, R"(gputopo_extender_requests_total{verb="filter",result="ok"})"), 0);
  EXPECT_EQ(Sample(before, R"(gputopo_nodes{topology="resolved"})"), 2);    // h100, plain
  EXPECT_EQ(Sample(before, R"(gputopo_nodes{topology="unresolved"})"), 1);  // broken
  // 8 GPUs x 4 replicas on h100, 4 on plain; one running pod holds one; broken has no topology.
  EXPECT_EQ(Sample(before, R"(gputopo_node_gpu_slots{node="h100",state="used"})"), 1);
  EXPECT_EQ(Sample(before, R"(gputopo_node_gpu_slots{node="h100",state="free"})"), 31);
  EXPECT_EQ(Sample(before, R"(gputopo_node_gpu_slots{node="plain",state="free"})"), 4);
  EXPECT_EQ(Sample(before, R"(gputopo_node_gpu_slots{node="broken",state="free"})"), std::nullopt);
  EXPECT_EQ(Sample(before, R"(gputopo_pods{state="placed"})"), 1);
  const std::optional<double> pending = Sample(before, R"(gputopo_pods{state="pending"})");
  ASSERT_TRUE(pending.has_value());
  EXPECT_EQ(Sample(before, "gputopo_watch_events_total"), std::nullopt);  // snapshot mode

  const json filtered = PostJson(
      "/filter", Args(PodObject(cluster, "train"), {"plain", "h100", "ghost", "broken"}).dump());
  ASSERT_EQ(filtered["NodeNames"].size(), 2u);
  PostJson("/filter", "{not json");
  PostJson("/prioritize", "[]", 400);
  EXPECT_EQ(PostJson("/bind", BindBody("train", "h100").dump())["Error"], "");
  EXPECT_NE(PostJson("/bind", BindBody("nobody", "h100").dump())["Error"], "");

  const std::string after = Scrape();
  EXPECT_EQ(Sample(after, R"(gputopo_extender_requests_total{verb="filter",result="ok"})"), 1);
  EXPECT_EQ(Sample(after, R"(gputopo_extender_requests_total{verb="filter",result="bad_request"})"),
            1);
  EXPECT_EQ(
      Sample(after, R"(gputopo_extender_requests_total{verb="prioritize",result="bad_request"})"),
      1);
  EXPECT_EQ(Sample(after, R"(gputopo_extender_requests_total{verb="bind",result="ok"})"), 1);
  EXPECT_EQ(Sample(after, R"(gputopo_extender_requests_total{verb="bind",result="error"})"), 1);
  EXPECT_EQ(Sample(after, R"(gputopo_extender_request_duration_seconds_count{verb="filter"})"), 2);
  EXPECT_EQ(Sample(after, R"(gputopo_extender_request_duration_seconds_count{verb="bind"})"), 2);
  EXPECT_EQ(Sample(after, R"(gputopo_filter_nodes_total{result="passed"})"), 2);
  EXPECT_EQ(*Sample(after, R"(gputopo_filter_nodes_total{result="failed"})") +
                *Sample(after, R"(gputopo_filter_nodes_total{result="unresolvable"})"),
            2);  // ghost, broken
  EXPECT_EQ(Sample(after, R"(gputopo_filter_failures_total{reason="node topology invalid"})"), 1);
  EXPECT_EQ(Sample(after, R"(gputopo_binds_total{result="ok"})"), 1);
  EXPECT_EQ(Sample(after, R"(gputopo_binds_total{result="NOT_FOUND"})"), 1);
  // The bound pod's four GPUs are taken, and it counts as placed.
  EXPECT_EQ(Sample(after, R"(gputopo_node_gpu_slots{node="h100",state="used"})"), 5);
  EXPECT_EQ(Sample(after, R"(gputopo_node_gpu_slots{node="h100",state="free"})"), 27);
  EXPECT_EQ(Sample(after, R"(gputopo_pods{state="placed"})"), 2);
  EXPECT_EQ(Sample(after, R"(gputopo_pods{state="pending"})"), *pending - 1);
  EXPECT_EQ(Sample(after, "gputopo_reservations"), 0);
}

}  // namespace
}  // namespace gputopo
