// GET /ui in a real browser: headless Chromium (Debian's chromium) loads the demo cluster's pages
// from a running gputopo, and the tests read the DOM it rendered: every GPU of a DGX-1 drawn, the
// NVLink edges as the topology has them, a bound pod's GPUs highlighted, a hostile pod name shown
// as text, a bind made after the first render shown without a reload. Screenshots are saved
// beside the test binary (ui-*.png).
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "src/app/app.h"
#include "src/app/demo.h"
#include "test/support/fake_clock.h"

namespace gputopo::testing {
namespace {

using nlohmann::json;

constexpr const char* kHostileName = "<img src=x onerror=alert(1)>";
// A pending pod that SetUp leaves unscheduled, for the live refresh test to bind.
constexpr const char* kLatePod = "late-arrival";

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
    json late = {{"apiVersion", "v1"},
                 {"kind", "Pod"},
                 {"metadata", {{"name", kLatePod}, {"namespace", "demo"}, {"uid", "uid-late"}}},
                 {"spec",
                  {{"containers",
                    {{{"name", "main"},
                      {"resources",
                       {{"requests", {{"nvidia.com/gpu", "2"}}},
                        {"limits", {{"nvidia.com/gpu", "2"}}}}}}}}}},
                 {"status", {{"phase", "Pending"}}}};
    cluster["items"].push_back(late);
    app::AppOptions options;
    options.server.http.port = 0;
    options.snapshot_json = cluster.dump();
    auto created = app::App::Create(options, clock_);
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    app_ = std::move(created).value();
    ASSERT_TRUE(app_->Start().ok());
    std::vector<std::string> names;
    for (const NodeInfo& node : app_->cluster().Nodes()) node_names_.push_back(node.name);
    std::vector<std::string> pending;
    for (std::string& pod : app_->cluster().PendingPodObjects()) {
      if (json::parse(pod)["metadata"]["name"] == kLatePod) {
        late_pod_ = std::move(pod);
      } else {
        pending.push_back(std::move(pod));
      }
    }
    ASSERT_FALSE(late_pod_.empty());
    std::ostringstream report;
    auto replay = app::ReplayPods("127.0.0.1", app_->port(), pending, node_names_, report);
    ASSERT_TRUE(replay.ok()) << replay.status().ToString();
    profile_ =
        std::filesystem::temp_directory_path() / ("gputopo-chromium-" + std::to_string(::getpid()));
  }
  void TearDown() override {
    if (app_) app_->Stop();
    std::filesystem::remove_all(profile_);
  }

  // The page at `fragment`, from gputopo or from another server on `port`.
  std::string Url(const std::string& fragment, int port = 0) const {
    return "http://127.0.0.1:" + std::to_string(port != 0 ? port : app_->port()) + "/ui" + fragment;
  }
  // The DOM once the page's scripts have run: Chromium's virtual time runs the page's timers
  // and fetches to completion before it dumps, so no wall-clock wait is involved. `timeout`
  // only stops a browser that hangs altogether.
  std::string Dom(const std::string& fragment, const std::string& screenshot, int port = 0) {
    const std::string flags =
        " --headless --no-sandbox --disable-gpu --disable-dev-shm-usage "
        "--no-first-run --user-data-dir=" +
        profile_.string() + " --virtual-time-budget=15000 --window-size=1400,1000 ";
    const std::string dom = Capture("timeout 300 " + chromium_ + flags + "--dump-dom '" +
                                    Url(fragment, port) + "' 2>/dev/null");
    if (!screenshot.empty()) {
      Capture("timeout 300 " + chromium_ + flags + "--screenshot=" + screenshot + " '" +
              Url(fragment, port) + "' >/dev/null 2>&1");
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
  std::vector<std::string> node_names_;
  std::string late_pod_;  // the Pod object of kLatePod, still pending
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

// "<used>/<total> slots" of the overview row of `node` in `dom`, or "" when there is none.
std::string OverviewSlots(const std::string& dom, const std::string& node) {
  const size_t row = dom.find("data-node=\"" + node + "\"");
  if (row == std::string::npos) return "";
  const std::string open = "<span class=\"muted\">";
  const size_t start = dom.find(open, row);
  if (start == std::string::npos) return "";
  const size_t end = dom.find(" slots</span>", start);
  return end == std::string::npos ? "" : dom.substr(start + open.size(), end - start - open.size());
}

// The overview refreshes itself: the page is served through a proxy that binds kLatePod just
// before it forwards the page's second fetch of the node list, so the bind exists only after
// the first render. The one page load must end up showing it. The browser waits for each fetch
// (virtual time stops while one is in flight), so the order is fixed, not a race.
TEST_F(UiBrowserTest, OverviewRefreshesLiveWithoutAReload) {
  const json before = Get("/debug/nodes");
  std::atomic<int> node_list_fetches{0};
  std::string bound_node;  // written by the proxy's handler before its reply; read after
  std::string bind_error;
  httplib::Server proxy;
  proxy.Get(".*", [&](const httplib::Request& req, httplib::Response& res) {
    if (req.path == "/debug/nodes" && ++node_list_fetches == 2) {
      std::ostringstream report;
      auto placed = app::ReplayPods("127.0.0.1", app_->port(), {late_pod_}, node_names_, report);
      if (!placed.ok()) {
        bind_error = placed.status().ToString();
      } else if (placed->empty() || placed->front().node.empty()) {
        bind_error = "not placed: " + report.str();
      } else {
        bound_node = placed->front().node;
      }
    }
    httplib::Client upstream("127.0.0.1", app_->port());
    auto answer = upstream.Get(req.target);
    if (!answer) {
      res.status = 502;
      return;
    }
    res.status = answer->status;
    for (const auto& [key, value] : answer->headers) {
      if (key == "Content-Type" || key == "Content-Security-Policy") res.set_header(key, value);
    }
    res.body = answer->body;
  });
  const int port = proxy.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  std::thread serving([&] { proxy.listen_after_bind(); });
  const std::string dom =
      Dom("#/", (std::filesystem::current_path() / "ui-live.png").string(), port);
  proxy.stop();
  serving.join();

  ASSERT_TRUE(bind_error.empty()) << bind_error;
  ASSERT_FALSE(bound_node.empty())
      << "the page fetched the node list only " << node_list_fetches.load() << " time(s)";
  std::string slots_before;
  for (const json& n : before["nodes"]) {
    if (n["name"] == bound_node) {
      slots_before = std::to_string(n["slotsUsed"].get<int>()) + "/" +
                     std::to_string(n["slotsTotal"].get<int>());
    }
  }
  const json after = Get("/debug/nodes/" + bound_node);
  ASSERT_TRUE(after.contains("slotsUsed")) << after.dump();
  const std::string slots_after = std::to_string(after["slotsUsed"].get<int>()) + "/" +
                                  std::to_string(after["slotsTotal"].get<int>());
  ASSERT_NE(slots_before, slots_after) << "the bind did not change " << bound_node;
  EXPECT_EQ(OverviewSlots(dom, bound_node), slots_after) << dom.substr(0, 3000);
}

}  // namespace
}  // namespace gputopo::testing
