// Latency of filter, prioritize and bind, server-side (the Server-Timing header the handler
// sets) and end-to-end over loopback HTTP (client clock), p50 and p99, at several cluster sizes
// of 8-GPU nodes with 10 pods per node; in NodeNames mode (nodeCacheCapable: true) and full
// Nodes mode (Node objects as large as the captured ones). Also resident memory.
//
//   latency_extender --nodes 100,1000,5000 --requests 300 --out bench/results
//
// Resident memory at the largest size is measured in fresh processes: the real `gputopo serve`
// binary in live mode, listing and watching an in-process fake API server that holds the cluster
// (what a deployment holds), and a `gputopo serve --snapshot` process (which also keeps every
// object's JSON for /debug/snapshot).
#include <arpa/inet.h>
#include <httplib.h>
#include <malloc.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <thread>
#include <utility>

#include "bench/child_process.h"
#include "src/app/allocator_tuning.h"
#include "src/app/app.h"
#include "src/app/system_clock.h"
#include "src/codec/topology_document.h"
#include "test/support/fake_api_server.h"

extern char** environ;

namespace gputopo::bench {
namespace {

using nlohmann::json;

long RssKib() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// A Node like the ones kube-scheduler sends (the captured object, renamed and labelled). Even
// nodes are HGX H100s, odd ones DGX-1s: named by the profile label, or, when `documents` holds
// the two machines' topology documents, described by the annotation the node agent publishes.
json MakeNode(const json& templ, int i, const std::vector<std::string>& documents) {
  json node = templ;
  const std::string name = "gpu-node-" + std::to_string(i);
  node["apiVersion"] = "v1";
  node["kind"] = "Node";
  node["metadata"]["name"] = name;
  node["metadata"]["uid"] = "node-uid-" + std::to_string(i);
  node["metadata"]["labels"]["kubernetes.io/hostname"] = name;
  if (documents.empty()) {
    node["metadata"]["labels"]["gputopo.io/topology-profile"] =
        i % 2 == 0 ? "hgx-h100" : "dgx1-v100";
  } else {
    node["metadata"]["annotations"]["gputopo.io/topology"] = documents[static_cast<size_t>(i % 2)];
  }
  node["metadata"]["labels"]["nvidia.com/gpu.replicas"] = "4";
  node["metadata"]["labels"]["nvidia.com/gpu.count"] = "8";
  node["status"]["allocatable"]["nvidia.com/gpu"] = "32";
  node["status"]["capacity"]["nvidia.com/gpu"] = "32";
  return node;
}

json MakePod(const std::string& ns, const std::string& name, int gpus,
             const std::string& deployment, const std::string& node, const std::string& assigned) {
  json pod = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata",
       {{"name", name},
        {"namespace", ns},
        {"uid", "uid-" + name},
        {"resourceVersion", "1"},
        {"labels", {{"app", deployment}, {"pod-template-hash", "5d8f7c9b6d"}}},
        {"ownerReferences",
         {{{"apiVersion", "apps/v1"},
           {"kind", "ReplicaSet"},
           {"name", deployment + "-5d8f7c9b6d"},
           {"uid", "rs-" + deployment},
           {"controller", true}}}}}},
      {"spec",
       {{"containers",
         {{{"name", "main"},
           {"image", "nvcr.io/nvidia/pytorch:24.10-py3"},
           {"resources",
            {{"limits",
              {{"cpu", "4"}, {"memory", "16Gi"}, {"nvidia.com/gpu", std::to_string(gpus)}}},
             {"requests",
              {{"cpu", "4"}, {"memory", "16Gi"}, {"nvidia.com/gpu", std::to_string(gpus)}}}}}}}},
        {"schedulerName", "gputopo-scheduler"}}},
      {"status", {{"phase", node.empty() ? "Pending" : "Running"}}}};
  if (!node.empty()) {
    pod["spec"]["nodeName"] = node;
    pod["metadata"]["annotations"] = {{"gputopo.io/assigned-gpus", assigned}};
  }
  return pod;
}

// A pod without GPUs (a web server, a data loader): `cpu` cores and 2 GiB, bound to `node` or
// pending.
json MakeCpuPod(const std::string& name, const std::string& node, const std::string& cpu) {
  json pod = MakePod("prod", name, 0, "cpu-" + name.substr(0, name.find('-')), node, "");
  json& resources = pod["spec"]["containers"][0]["resources"];
  resources = {{"requests", {{"cpu", cpu}, {"memory", "2Gi"}}}};
  pod["metadata"].erase("annotations");
  return pod;
}

struct Cluster {
  std::string list;                  // the snapshot
  std::vector<std::string> names;    // node names
  std::vector<std::string> objects;  // node objects (JSON)
  std::vector<json> pending;         // pods to schedule
  std::vector<json> cpu_pending;     // GPU-less pods to schedule (all-pod mode)
};

// The cluster's bound pods and the pods to schedule, all in one namespace (so that a pending
// pod's spread group is on the nodes that hold its Deployment's replicas).
//   mixed:      pods_per_node pods per node, replicas of ~nodes/2 Deployments on random GPUs with
//               room; the pending pods are of 7 of those Deployments (each on ~20 nodes).
//   deployment: the same, but one of each node's pods is a replica of Deployment "web", which
//               the pending pods scale up: the pod's group is on every node (gputopo's main case,
//               a large Deployment spread over the cluster), on diverse GPUs and free masks.
Cluster MakeCluster(int nodes, int pods_per_node, int pending, const json& templ, uint64_t seed,
                    const std::string& scenario = "mixed", int cpu_pods_per_node = 0,
                    const std::vector<std::string>& documents = {}) {
  const bool deployment = scenario == "deployment";
  std::mt19937_64 rng(seed);
  Cluster c;
  json items = json::array();
  for (int i = 0; i < nodes; ++i) {
    json node = MakeNode(templ, i, documents);
    c.names.push_back(node["metadata"]["name"]);
    c.objects.push_back(node.dump());
    items.push_back(std::move(node));
  }
  for (int i = 0; i < nodes; ++i) {
    std::vector<int> used(8, 0);
    for (int p = 0; p < pods_per_node; ++p) {
      int gpu = static_cast<int>(rng() % 8);
      while (used[static_cast<size_t>(gpu)] >= 4) gpu = (gpu + 1) % 8;
      ++used[static_cast<size_t>(gpu)];
      const std::string owner = deployment && p == 0
                                    ? std::string("web")
                                    : "svc" + std::to_string(rng() % std::max(1, nodes / 2));
      items.push_back(MakePod("prod", "p-" + std::to_string(i) + "-" + std::to_string(p), 1, owner,
                              c.names[static_cast<size_t>(i)], std::to_string(gpu)));
    }
  }
  for (int i = 0; i < nodes; ++i) {
    for (int p = 0; p < cpu_pods_per_node; ++p) {
      items.push_back(MakeCpuPod(
          "cpu" + std::to_string(p % 50) + "-" + std::to_string(i) + "-" + std::to_string(p),
          c.names[static_cast<size_t>(i)], "500m"));
    }
  }
  for (int p = 0; cpu_pods_per_node > 0 && p < pending; ++p) {
    json pod = MakeCpuPod("cpunew-" + std::to_string(p), "", "1");
    c.cpu_pending.push_back(pod);
    items.push_back(pod);
  }
  for (int p = 0; p < pending; ++p) {
    const int gpus = deployment ? 1 : p % 10 == 0 ? 4 : p % 5 == 0 ? 2 : 1;
    const std::string owner = deployment ? std::string("web") : "svc" + std::to_string(p % 7);
    json pod = MakePod("prod", "new-" + std::to_string(p), gpus, owner, "", "");
    c.pending.push_back(pod);
    items.push_back(pod);
  }
  c.list = json({{"apiVersion", "v1"}, {"kind", "List"}, {"items", items}}).dump();
  return c;
}

struct Stats {
  std::vector<double> e2e_ms, server_ms;
  static double Percentile(std::vector<double> v, double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
  }
};

double ServerTiming(const httplib::Result& res) {
  const std::string header = res->get_header_value("Server-Timing");
  const size_t pos = header.find("dur=");
  return pos == std::string::npos ? 0.0 : std::stod(header.substr(pos + 4));
}

template <typename Body>
Stats Measure(httplib::Client& client, const std::string& path, int requests, Body body_of) {
  Stats stats;
  for (int i = 0; i < requests; ++i) {
    const std::string body = body_of(i);
    const auto t0 = std::chrono::steady_clock::now();
    httplib::Result res = client.Post(path, body, "application/json");
    const auto t1 = std::chrono::steady_clock::now();
    if (!res || res->status != 200) {
      std::cerr << path << " failed\n";
      continue;
    }
    stats.e2e_ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    stats.server_ms.push_back(ServerTiming(res));
  }
  return stats;
}

std::string ArgsBody(const json& pod, const Cluster& c, bool nodes_mode, std::mt19937_64& rng) {
  std::vector<size_t> order(c.names.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::shuffle(order.begin(), order.end(), rng);  // kube-scheduler sends them in no fixed order
  std::string body = "{\"Pod\":" + pod.dump();
  if (nodes_mode) {
    body += ",\"Nodes\":{\"metadata\":{},\"items\":[";
    for (size_t i = 0; i < order.size(); ++i) body += (i ? "," : "") + c.objects[order[i]];
    body += "]},\"NodeNames\":null}";
  } else {
    body += ",\"Nodes\":null,\"NodeNames\":[";
    for (size_t i = 0; i < order.size(); ++i) body += (i ? ",\"" : "\"") + c.names[order[i]] + "\"";
    body += "]}";
  }
  return body;
}

// Runs in a fresh process (see SpawnRss): loads the snapshot in `path` as `gputopo serve
// --snapshot` does and prints its resident memory in KiB.
int RssMode(const std::string& path) {
  app::SystemClock clock;
  app::AppOptions options;
  options.snapshot_json = ReadText(path);
  auto app = app::App::Create(options, clock);
  if (!app.ok()) return 2;
  options.snapshot_json.clear();
  options.snapshot_json.shrink_to_fit();
  malloc_trim(0);
  std::printf("%ld\n", RssKib());
  return 0;
}

struct LiveMemory {
  long rss_kib = -1;   // VmRSS once synced
  long peak_kib = -1;  // VmHWM: the peak, during the initial lists
  double sync_seconds = 0;
  int cycles = 0;              // filter+prioritize cycles served after the sync
  long serving_rss_kib = -1;   // VmRSS after them (decision log full, shape tables built)
  long serving_peak_kib = -1;  // VmHWM then
};

// The real binary in live mode: a fake API server in this process holds `items` (the same Node
// and Pod objects the latency runs use); `gputopo serve --kubeconfig` lists and watches it. Its
// memory is read once both watches are open (both lists applied) and the cache has settled.
LiveMemory MeasureLive(const std::string& gputopo, const Cluster& c, int cycles) {
  const json items = json::parse(c.list)["items"];
  LiveMemory result;
  const int port = FreePort();
  testing::FakeApiServer server;
  for (const json& item : items) {
    if (item["kind"] == "Node") {
      (void)server.CreateNode(item);
    } else {
      (void)server.CreatePod(item);
    }
  }
  if (!server.Start()) return result;
  const std::string kubeconfig = "/tmp/gputopo-bench-kubeconfig-" + std::to_string(getpid());
  std::ofstream(kubeconfig) << "apiVersion: v1\nkind: Config\ncurrent-context: bench\n"
                            << "clusters:\n- name: bench\n  cluster:\n    server: "
                            << server.base_url() << "\n"
                            << "contexts:\n- name: bench\n  context:\n    cluster: bench\n"
                            << "    user: bench\nusers:\n- name: bench\n  user:\n    token: x\n";
  std::vector<std::string> args = {gputopo,       "serve",    "--kubeconfig",
                                   kubeconfig,    "--listen", "127.0.0.1:" + std::to_string(port),
                                   "--log-level", "warn"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const auto start = std::chrono::steady_clock::now();
  if (posix_spawn(&pid, gputopo.c_str(), nullptr, nullptr, argv.data(), environ) != 0) {
    std::filesystem::remove(kubeconfig);
    return result;
  }
  if (server.WaitForOpenWatches(2, std::chrono::minutes(5))) {
    result.sync_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::this_thread::sleep_for(std::chrono::seconds(2));
    result.rss_kib = ProcStatusKib(pid, "VmRSS");
    result.peak_kib = ProcStatusKib(pid, "VmHWM");
    // Then serve: filter and prioritize pods of several shapes and workloads over every node.
    httplib::Client client("127.0.0.1", port);
    client.set_read_timeout(60, 0);
    std::mt19937_64 rng(5);
    for (int i = 0; i < cycles; ++i) {
      const int gpus = i % 10 == 0 ? 4 : i % 5 == 0 ? 2 : 1;
      const json pod =
          MakePod("prod", "load-" + std::to_string(i), gpus, "svc" + std::to_string(i % 7), "", "");
      const std::string body = ArgsBody(pod, c, false, rng);
      auto filtered = client.Post("/filter", body, "application/json");
      auto scored = client.Post("/prioritize", body, "application/json");
      if (filtered && filtered->status == 200 && scored && scored->status == 200) ++result.cycles;
    }
    result.serving_rss_kib = ProcStatusKib(pid, "VmRSS");
    result.serving_peak_kib = ProcStatusKib(pid, "VmHWM");
  }
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  server.Stop();
  std::filesystem::remove(kubeconfig);
  return result;
}

long SpawnRss(const std::string& self, const std::string& cluster_file,
              const std::string& templ_path) {
  const std::string out = "/tmp/gputopo-rss-" + std::to_string(getpid()) + ".txt";
  const std::string cmd =
      self + " --rss-cluster " + cluster_file + " --node-template " + templ_path + " > " + out;
  if (std::system(cmd.c_str()) != 0) return -1;
  const long kib = std::stol(ReadText(out));
  std::filesystem::remove(out);
  return kib;
}

int Main(int argc, char** argv) {
  CLI::App cli{"gputopo extender latency and memory"};
  std::string node_list = "100,1000,5000";
  int pods_per_node = 10;
  int requests = 300;
  std::string templ_path = "../shared/k8s/cache_false/013-filter.trainer-b.request.json";
  std::string out = "bench/results";
  cli.add_option("--nodes", node_list, "cluster sizes (8-GPU nodes)")->capture_default_str();
  cli.add_option("--pods-per-node", pods_per_node)->capture_default_str();
  cli.add_option("--requests", requests, "filter and prioritize requests per case")
      ->capture_default_str();
  cli.add_option("--node-template", templ_path,
                 "a captured request whose Nodes.items[0] is the template")
      ->capture_default_str();
  cli.add_option("--out", out)->capture_default_str();
  int repeat = 1;
  cli.add_option("--repeat", repeat,
                 "NodeNames steady state: rounds of --requests cycles, each round's p99 reported")
      ->capture_default_str()
      ->check(CLI::Range(1, 20));
  std::string modes = "NodeNames,Nodes";
  cli.add_option("--modes", modes, "request forms to measure")->capture_default_str();
  std::string scenario = "mixed";
  cli.add_option("--scenario", scenario, "the cluster: mixed or deployment (see MakeCluster)")
      ->capture_default_str()
      ->check(CLI::IsMember({"mixed", "deployment"}));
  bool skip_memory = false;
  cli.add_flag("--skip-memory", skip_memory, "do not measure resident memory");
  int cpu_pods_per_node = 0;
  cli.add_option("--cpu-pods-per-node", cpu_pods_per_node,
                 "bound GPU-less pods per node; > 0 also measures GPU-less pods' cycles, as in "
                 "all-pod mode")
      ->capture_default_str();
  bool annotated = false;
  cli.add_flag("--annotated-nodes", annotated,
               "nodes carry the gputopo.io/topology annotation (as the node agent publishes it, "
               "from topology/profiles) instead of the profile label");
  std::string rss_cluster;
  cli.add_option("--rss-cluster", rss_cluster, "internal: print the RSS of serving this snapshot");
  std::string gputopo = GPUTOPO_BINARY;
  cli.add_option("--gputopo", gputopo, "the gputopo binary for the live-mode memory measurement")
      ->capture_default_str();
  CLI11_PARSE(cli, argc, argv);
  spdlog::set_level(spdlog::level::warn);
  // As gputopo's main does, so that the server in this process allocates alike.
  app::TuneAllocator();

  const json templ = json::parse(ReadText(templ_path))["Nodes"]["items"][0];
  if (!rss_cluster.empty()) return RssMode(rss_cluster);

  std::vector<std::string> documents;
  for (const char* profile : {"hgx-h100", "dgx1-v100"}) {
    if (!annotated) break;
    Result<codec::ProfileDocument> doc = codec::ParseProfileDocument(
        ReadText(std::string("topology/profiles/") + profile + ".json"));
    if (!doc.ok()) {
      std::cerr << "topology/profiles/" << profile << ".json: " << doc.status().ToString() << "\n";
      return 2;
    }
    documents.push_back(
        codec::FormatTopologyDocument(doc->machine, {.pretty = false, .comments = {}}));
  }

  std::filesystem::create_directories(out);
  std::ofstream csv(out + "/latency.csv");
  csv << "nodes,mode,verb,e2e_p50_ms,e2e_p99_ms,server_p50_ms,server_p99_ms,body_bytes\n";
  std::ofstream rounds_csv(out + "/latency_rounds.csv");
  rounds_csv << "nodes,verb,round,server_p50_ms,server_p99_ms\n";
  // Each cold filter in the order sent: which new pod shapes are slow (the process's first?).
  std::ofstream cold_csv(out + "/latency_cold.csv");
  cold_csv << "nodes,mode,sample,server_ms,e2e_ms\n";
  // Each steady cycle's filter and prioritize, in order: where the slow cycles of a run are.
  std::ofstream steady_csv(out + "/latency_steady.csv");
  steady_csv << "nodes,mode,cycle,filter_server_ms,prioritize_server_ms\n";
  std::ostringstream md;
  md << "| nodes | mode | verb | end-to-end p50 | p99 | server p50 | p99 | request body |\n"
     << "|---|---|---|---|---|---|---|---|\n";
  int largest = 0;
  for (std::stringstream ss(node_list); ss.good();) {
    std::string item;
    std::getline(ss, item, ',');
    const int nodes = std::stoi(item);
    largest = std::max(largest, nodes);
    // Enough pending pods for every steady-state cycle of both modes.
    Cluster c = MakeCluster(nodes, pods_per_node, requests * repeat + std::max(20, requests / 10),
                            templ, 7, scenario, cpu_pods_per_node, documents);
    app::SystemClock clock;
    app::AppOptions options;
    options.server.http.port = 0;
    options.server.http.verb_threads = 1;
    options.snapshot_json = c.list;
    auto app = app::App::Create(options, clock);
    if (!app.ok() || !(*app)->Start().ok()) {
      std::cerr << "cannot start: " << app.status().ToString() << "\n";
      return 2;
    }
    httplib::Client client("127.0.0.1", (*app)->port());
    client.set_read_timeout(60, 0);
    client.set_keep_alive(true);
    client.set_tcp_nodelay(true);
    std::mt19937_64 rng(3);
    Stats binds_stats;
    auto row = [&](const std::string& mode, const std::string& verb, const Stats& s, size_t bytes) {
      char line[256];
      std::snprintf(line, sizeof(line),
                    "| %d | %s | %s | %.3f ms | %.3f ms | %.3f ms | %.3f ms | %.1f KiB |\n", nodes,
                    mode.c_str(), verb.c_str(), Stats::Percentile(s.e2e_ms, 0.5),
                    Stats::Percentile(s.e2e_ms, 0.99), Stats::Percentile(s.server_ms, 0.5),
                    Stats::Percentile(s.server_ms, 0.99), static_cast<double>(bytes) / 1024.0);
      md << line;
      csv << nodes << "," << mode << ",\"" << verb << "\"," << Stats::Percentile(s.e2e_ms, 0.5)
          << "," << Stats::Percentile(s.e2e_ms, 0.99) << "," << Stats::Percentile(s.server_ms, 0.5)
          << "," << Stats::Percentile(s.server_ms, 0.99) << "," << bytes << "\n";
      std::fprintf(stderr, "%s", line);
    };
    for (bool nodes_mode : {false, true}) {
      const std::string mode = nodes_mode ? "Nodes" : "NodeNames";
      if (("," + modes + ",").find("," + mode + ",") == std::string::npos) continue;
      const int n = nodes_mode ? std::max(20, requests / 10) : requests;
      // Cold: every request a pod shape gputopo has not seen (a new gpu-milli), so every node
      // is evaluated from scratch - the worst case, e.g. the first pod after a restart.
      std::vector<std::string> cold;
      for (int b = 0; b < std::min(n, 40); ++b) {
        json pod = c.pending[static_cast<size_t>(b) % c.pending.size()];
        pod["metadata"]["annotations"] = {
            {"gputopo.io/gpu-milli", std::to_string(1 + b + (nodes_mode ? 500 : 0))}};
        cold.push_back(ArgsBody(pod, c, nodes_mode, rng));
      }
      Stats cold_filter =
          Measure(client, "/filter", static_cast<int>(cold.size()),
                  [&](int i) -> const std::string& { return cold[static_cast<size_t>(i)]; });
      row(mode, "filter, cold", cold_filter, cold[0].size());
      for (size_t k = 0; k < cold_filter.server_ms.size(); ++k) {
        cold_csv << nodes << "," << mode << "," << k + 1 << "," << cold_filter.server_ms[k] << ","
                 << cold_filter.e2e_ms[k] << "\n";
      }
      // Steady: what kube-scheduler does all day - filter, prioritize and bind one pending pod
      // after another (one node changes per cycle; replicas of one workload share a shape).
      // The first pod of each shape (GPU count here) is the cold case above, so one pod of each
      // is filtered first, unmeasured.
      std::set<int> warmed;
      for (const json& pod : c.pending) {
        const std::string gpus =
            pod["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"];
        if (!warmed.insert(std::stoi(gpus)).second) continue;
        json probe = pod;
        probe["metadata"]["name"] = "warm-up-" + gpus;
        probe["metadata"]["uid"] = "warm-up-" + gpus;
        (void)client.Post("/filter", ArgsBody(probe, c, nodes_mode, rng), "application/json");
      }
      Stats filter, prioritize;
      size_t body_bytes = 0;
      // NodeNames: `repeat` rounds of n cycles, each round's percentiles kept apart as well.
      const int rounds = nodes_mode ? 1 : repeat;
      for (int i = 0; i < n * rounds && !c.pending.empty(); ++i) {
        const json pod = c.pending.back();
        c.pending.pop_back();
        const std::string body = ArgsBody(pod, c, nodes_mode, rng);
        body_bytes = body.size();
        Stats f = Measure(client, "/filter", 1, [&](int) -> const std::string& { return body; });
        const auto t0 = std::chrono::steady_clock::now();
        httplib::Result scores = client.Post("/prioritize", body, "application/json");
        const auto t1 = std::chrono::steady_clock::now();
        // Both or neither: entry k of filter and prioritize is one cycle.
        if (f.server_ms.empty() || !scores || scores->status != 200) continue;
        filter.e2e_ms.insert(filter.e2e_ms.end(), f.e2e_ms.begin(), f.e2e_ms.end());
        filter.server_ms.insert(filter.server_ms.end(), f.server_ms.begin(), f.server_ms.end());
        prioritize.e2e_ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
        prioritize.server_ms.push_back(ServerTiming(scores));
        std::string best;
        int best_score = -1;
        for (const json& hp : json::parse(scores->body)) {
          if (hp["Score"].get<int>() > best_score) {
            best_score = hp["Score"];
            best = hp["Host"];
          }
        }
        const std::string bind = json({{"PodName", pod["metadata"]["name"]},
                                       {"PodNamespace", pod["metadata"]["namespace"]},
                                       {"PodUID", pod["metadata"]["uid"]},
                                       {"Node", best}})
                                     .dump();
        const auto b0 = std::chrono::steady_clock::now();
        httplib::Result bound = client.Post("/bind", bind, "application/json");
        const auto b1 = std::chrono::steady_clock::now();
        if (bound && json::parse(bound->body)["Error"] == "") {
          binds_stats.e2e_ms.push_back(std::chrono::duration<double, std::milli>(b1 - b0).count());
          binds_stats.server_ms.push_back(ServerTiming(bound));
        }
      }
      row(mode, "filter, steady", filter, body_bytes);
      row(mode, "prioritize, steady", prioritize, body_bytes);
      // What kube-scheduler waits for per pod: the cycle's filter and prioritize together.
      Stats cycle;
      for (size_t k = 0; k < filter.server_ms.size(); ++k) {
        cycle.e2e_ms.push_back(filter.e2e_ms[k] + prioritize.e2e_ms[k]);
        cycle.server_ms.push_back(filter.server_ms[k] + prioritize.server_ms[k]);
      }
      row(mode, "filter+prioritize per cycle, steady", cycle, body_bytes);
      for (size_t k = 0; k < filter.server_ms.size(); ++k) {
        steady_csv << nodes << "," << mode << "," << k + 1 << "," << filter.server_ms[k] << ","
                   << prioritize.server_ms[k] << "\n";
      }
      for (int r = 0; rounds > 1 && r < rounds; ++r) {
        for (const auto& [verb, stats] :
             {std::pair{"filter", &filter}, std::pair{"prioritize", &prioritize}}) {
          const auto begin = static_cast<size_t>(r * n);
          const size_t end = std::min(stats->server_ms.size(), begin + static_cast<size_t>(n));
          if (begin >= end) continue;
          const std::vector<double> round(stats->server_ms.begin() + static_cast<long>(begin),
                                          stats->server_ms.begin() + static_cast<long>(end));
          rounds_csv << nodes << "," << verb << "," << r + 1 << "," << Stats::Percentile(round, 0.5)
                     << "," << Stats::Percentile(round, 0.99) << "\n";
        }
      }
    }
    if (!c.cpu_pending.empty()) {
      // All-pod mode: GPU-less pods, one after another, each filtered, prioritized and bound
      // (to the best node), as NodeNames requests. One unmeasured first, both verbs: a GPU-less
      // pod's filter evaluates nothing, so its shape's first prioritize is the cold cycle.
      const std::string warm = ArgsBody(c.cpu_pending.back(), c, false, rng);
      (void)client.Post("/filter", warm, "application/json");
      (void)client.Post("/prioritize", warm, "application/json");
      c.cpu_pending.pop_back();
      Stats cycle, cpu_filter, cpu_prioritize;
      size_t body_bytes = 0;
      for (int i = 0; i < requests && !c.cpu_pending.empty(); ++i) {
        const json pod = c.cpu_pending.back();
        c.cpu_pending.pop_back();
        const std::string body = ArgsBody(pod, c, false, rng);
        body_bytes = body.size();
        Stats f = Measure(client, "/filter", 1, [&](int) -> const std::string& { return body; });
        Stats p =
            Measure(client, "/prioritize", 1, [&](int) -> const std::string& { return body; });
        if (f.server_ms.empty() || p.server_ms.empty()) continue;
        cycle.e2e_ms.push_back(f.e2e_ms[0] + p.e2e_ms[0]);
        cycle.server_ms.push_back(f.server_ms[0] + p.server_ms[0]);
        for (auto [from, to] : {std::pair{&f, &cpu_filter}, std::pair{&p, &cpu_prioritize}}) {
          to->e2e_ms.push_back(from->e2e_ms[0]);
          to->server_ms.push_back(from->server_ms[0]);
        }
        const std::string bind = json({{"PodName", pod["metadata"]["name"]},
                                       {"PodNamespace", pod["metadata"]["namespace"]},
                                       {"PodUID", pod["metadata"]["uid"]},
                                       {"Node", c.names[static_cast<size_t>(i) % c.names.size()]}})
                                     .dump();
        (void)client.Post("/bind", bind, "application/json");
      }
      row("NodeNames", "GPU-less pod filter, steady", cpu_filter, body_bytes);
      row("NodeNames", "GPU-less pod prioritize, steady", cpu_prioritize, body_bytes);
      row("NodeNames", "GPU-less pod filter+prioritize per cycle, steady", cycle, body_bytes);
    }
    row("-", "bind (" + std::to_string(binds_stats.e2e_ms.size()) + " pods)", binds_stats, 0);
    (*app)->Stop();
  }
  if (skip_memory) {
    std::ofstream(out + "/latency.md") << md.str();
    return 0;
  }
  const std::string cluster_file = "/tmp/gputopo-rss-cluster-" + std::to_string(getpid()) + ".json";
  long server = -1;
  LiveMemory live;
  {
    const Cluster c = MakeCluster(largest, pods_per_node, 0, templ, 1, "mixed", cpu_pods_per_node);
    std::ofstream(cluster_file) << c.list;
    server = SpawnRss(argv[0], cluster_file, templ_path);
    live = MeasureLive(gputopo, c, 600);
  }
  std::filesystem::remove(cluster_file);
  char rss[1024];
  std::snprintf(
      rss, sizeof(rss),
      "\nResident memory at %d nodes and %d pods (%d of them without GPUs): `gputopo "
      "serve` in live mode "
      "(listing and watching a fake API server holding the cluster) %.1f MiB once "
      "synced (peak %.1f MiB during the initial lists, synced in %.1f s), and "
      "%.1f MiB after serving %d filter+prioritize cycles over every node (peak "
      "%.1f MiB); `gputopo serve --snapshot`, which also keeps every object's JSON for "
      "/debug/snapshot, %.1f MiB.\n",
      largest, largest * (pods_per_node + cpu_pods_per_node), largest * cpu_pods_per_node,
      static_cast<double>(live.rss_kib) / 1024.0, static_cast<double>(live.peak_kib) / 1024.0,
      live.sync_seconds, static_cast<double>(live.serving_rss_kib) / 1024.0, live.cycles,
      static_cast<double>(live.serving_peak_kib) / 1024.0, static_cast<double>(server) / 1024.0);
  md << rss;
  std::ofstream(out + "/latency.md") << md.str();
  std::cout << md.str();
  return 0;
}

}  // namespace
}  // namespace gputopo::bench

int main(int argc, char** argv) { return gputopo::bench::Main(argc, argv); }
