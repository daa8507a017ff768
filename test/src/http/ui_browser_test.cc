// GET /ui in a real browser: headless Chromium (Debian's chromium) loads the demo cluster's pages
// from a running gputopo, and the tests read the DOM it rendered: every GPU of a DGX-1 drawn, the
// NVLink edges as the topology has them, a bound pod's GPUs highlighted, a hostile pod name shown
// as text. Screenshots are saved beside the test binary (ui-*.png).
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "src/app/app.h"
#include "src/app/demo.h"
#include "test/support/fake_clock.h"

namespace gputopo::testing {
namespace {

using nlohmann::json;

constexpr const char* kHostileName = "<img src=x onerror=alert(1)>";

std::string Chromium() {
  for (const char* path : {"/usr/bin/chromium", "/usr/bin/chromium-browser"}) {
    if (std::filesystem::exists(path)) return path;
  }
  return "";
}

// Runs `command` and returns its standard output.
std::string Capture(const std::string& command) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return out;
  std::array<char, 65536> buffer;
  size_t n = 0;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) out.append(buffer.data(), n);
  pclose(pipe);
  return out;
}

size_t Count(const std::string& text, const std::regex& pattern) {
  return static_cast<size_t>(std::distance(std::sregex_iterator(text.begin(), text.end(), pattern),
                                           std::sregex_iterator()));
}

class UiBrowserTest : public ::testing::Test {
 protected:
  void SetUp() override {
    chromium_ = Chromium();
    if (chromium_.empty()) {
      if (std::getenv("CI") != nullptr) FAIL() << "chromium is missing (scripts/install-deps)";
      GTEST_SKIP() << "chromium is not installed (scripts/install-deps installs it)";
    }
    json cluster = json::parse(app::DemoClusterJson());
    // A pod whose name is markup, bound on dgx1-a's GPU 7: the page must show it as text.
    json hostile = {{"apiVersion", "v1"},
                    {"kind", "Pod"},
                    {"metadata",
                     {{"name", kHostileName},
                      {"namespace", "demo"},
                      {"uid", "uid-hostile"},
                      {"annotations", {{"gputopo.io/assigned-gpus", "7"}}}}},
                    {"spec",
                     {{"nodeName", "dgx1-a"},
                      {"containers",
                       {{{"name", "main"},
                         {"resources",
                          {{"requests", {{"nvidia.com/gpu", "1"}}},
                           {"limits", {{"nvidia.com/gpu", "1"}}}}}}}}}},
                    {"status", {{"phase", "Running"}}}};
    cluster["items"].push_back(hostile);
    app::AppOptions options;
    options.server.http.port = 0;
    options.snapshot_json = cluster.dump();
    auto created = app::App::Create(options, clock_);
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    app_ = std::move(created).value();
    ASSERT_TRUE(app_->Start().ok());
    std::vector<std::string> names;
    for (const NodeInfo& node : app_->cluster().Nodes()) names.push_back(node.name);
    std::ostringstream report;
    auto replay = app::ReplayPods("127.0.0.1", app_->port(), app_->cluster().PendingPodObjects(),
                                  names, report);
    ASSERT_TRUE(replay.ok()) << replay.status().ToString();
    profile_ =
        std::filesystem::temp_directory_path() / ("gputopo-chromium-" + std::to_string(::getpid()));
  }
  void TearDown() override {
    if (app_) app_->Stop();
    std::filesystem::remove_all(profile_);
  }

  std::string Url(const std::string& fragment) const {
    return "http://127.0.0.1:" + std::to_string(app_->port()) + "/ui" + fragment;
  }
  // The DOM once the page's scripts have run: Chromium's virtual time runs the page's timers
  // and fetches to completion before it dumps, so no wall-clock wait is involved. `timeout`
  // only stops a browser that hangs altogether.
  std::string Dom(const std::string& fragment, const std::string& screenshot) {
    const std::string flags =
        " --headless --no-sandbox --disable-gpu --disable-dev-shm-usage "
        "--no-first-run --user-data-dir=" +
        profile_.string() + " --virtual-time-budget=15000 --window-size=1400,1000 ";
    const std::string dom = Capture("timeout 300 " + chromium_ + flags + "--dump-dom '" +
                                    Url(fragment) + "' 2>/dev/null");
    if (!screenshot.empty()) {
      Capture("timeout 300 " + chromium_ + flags + "--screenshot=" + screenshot + " '" +
              Url(fragment) + "' >/dev/null 2>&1");
    }
    return dom;
  }
  json Get(const std::string& path) {
    httplib::Client client("127.0.0.1", app_->port());
    auto res = client.Get(path);
    EXPECT_TRUE(res && res->status == 200) << path;
    return res ? json::parse(res->body, nullptr, false) : json();
  }

  std::string chromium_;
  std::filesystem::path profile_;
  FakeClock clock_;
  std::unique_ptr<app::App> app_;
};

TEST_F(UiBrowserTest, NodePageDrawsEveryGpuAndTheNvLinkEdgesOfItsTopology) {
  const std::string shot = (std::filesystem::current_path() / "ui-node.png").string();
  const std::string dom = Dom("#/node/dgx1-a", shot);
  ASSERT_NE(dom.find("data-ready=\"1\""), std::string::npos) << dom.substr(0, 2000);
  ASSERT_EQ(dom.find("id=\"error\""), std::string::npos) << dom;
  EXPECT_EQ(Count(dom, std::regex("<g class=\"gpu[^\"]*\" data-gpu=")), 8u);
  // The edges drawn are exactly the node's NVLink pairs, with their link counts.
  const json node = Get("/debug/nodes/dgx1-a");
  std::set<std::string> want;
  for (size_t a = 0; a < node["links"].size(); ++a) {
    for (size_t b = a + 1; b < node["links"].size(); ++b) {
      const std::string link = node["links"][a][b];
      if (link.rfind("NV", 0) == 0) {
        want.insert(std::to_string(a) + "-" + std::to_string(b) + ":" + link.substr(2));
      }
    }
  }
  ASSERT_FALSE(want.empty());
  std::set<std::string> drawn;
  const std::regex edge(
      "<line class=\"nvlink\" data-a=\"(\\d+)\" data-b=\"(\\d+)\" data-links=\"(\\d+)\"");
  for (auto it = std::sregex_iterator(dom.begin(), dom.end(), edge); it != std::sregex_iterator();
       ++it) {
    drawn.insert((*it)[1].str() + "-" + (*it)[2].str() + ":" + (*it)[3].str());
  }
  EXPECT_EQ(drawn, want);
  EXPECT_GE(Count(dom, std::regex("<rect class=\"island\"")), 1u);
  // The hostile name is text, escaped in the dump; no element came of it.
  EXPECT_NE(dom.find("demo/&lt;img src=x onerror=alert(1)&gt;"), std::string::npos);
  EXPECT_EQ(dom.find("<img"), std::string::npos);
  EXPECT_GT(std::filesystem::file_size(shot), 1000u);
}

TEST_F(UiBrowserTest, PodPageHighlightsTheBoundGpus) {
  const std::string key = "research/train-4gpu-0-c8w2x";
  const json pod = Get("/debug/pods/" + key);
  ASSERT_TRUE(pod.contains("bind")) << pod.dump();
  const json node = Get("/debug/nodes/" + pod["bind"]["node"].get<std::string>());
  std::set<std::string> want;
  for (const json& label : pod["bind"]["gpus"]) {
    for (const json& g : node["gpuList"]) {
      if (g.value("uuid", "") == label || std::to_string(g["index"].get<int>()) == label)
        want.insert(std::to_string(g["index"].get<int>()));
    }
  }
  ASSERT_EQ(want.size(), 4u);
  const std::string dom = Dom("#/pod/research/train-4gpu-0-c8w2x",
                              (std::filesystem::current_path() / "ui-pod.png").string());
  std::set<std::string> chosen;
  const std::regex gpu("<g class=\"gpu chosen\" data-gpu=\"(\\d+)\"");
  for (auto it = std::sregex_iterator(dom.begin(), dom.end(), gpu); it != std::sregex_iterator();
       ++it) {
    chosen.insert((*it)[1].str());
  }
  EXPECT_EQ(chosen, want) << dom.substr(0, 3000);
  // The other candidates are listed with their verdicts.
  EXPECT_NE(dom.find("id=\"verdicts\""), std::string::npos);
}

TEST_F(UiBrowserTest, OverviewShowsEveryNodeGroupedByMachineAndStaysSmall) {
  const std::string dom = Dom("#/", (std::filesystem::current_path() / "ui-overview.png").string());
  const json nodes = Get("/debug/nodes");
  size_t gpus = 0;
  for (const json& n : nodes["nodes"]) {
    EXPECT_NE(dom.find("data-node=\"" + n["name"].get<std::string>() + "\""), std::string::npos)
        << n["name"];
    gpus += n.value("gpus", 0);
  }
  EXPECT_EQ(Count(dom, std::regex("<div class=\"cell (free|partial|full|unhealthy)\"")), gpus);
  EXPECT_GE(Count(dom, std::regex("<h2>")), 2u) << "the demo has several machine shapes";
  // The page and one page of nodes stay small (at 5000 nodes the overview fetches 100 a page).
  httplib::Client client("127.0.0.1", app_->port());
  auto page = client.Get("/ui");
  auto data = client.Get("/debug/nodes?offset=0&limit=100");
  ASSERT_TRUE(page && data);
  EXPECT_LT(page->body.size() + data->body.size(), 1u << 20);
  const json first = json::parse(data->body);
  EXPECT_EQ(first["total"], nodes["nodes"].size());
  const json second = Get("/debug/nodes?offset=1&limit=1");
  ASSERT_EQ(second["nodes"].size(), 1u);
  EXPECT_EQ(second["offset"], 1);
  EXPECT_EQ(second["nodes"][0]["name"], nodes["nodes"][1]["name"]);
  EXPECT_NE(page->get_header_value("Content-Security-Policy").find("default-src 'none'"),
            std::string::npos);
}

}  // namespace
}  // namespace gputopo::testing
