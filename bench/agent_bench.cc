// The node agent's numbers, measured side by side in one run:
//   1. topology discovery on 8 and 16 GPUs, through real dlopen of the fake NVML the build
//      produces (test/fakes/fake_nvml, machines dgx1-v100 and dgx2-v100): the whole
//      DiscoverTopology call (dlopen, nvmlInit, the reads, nvmlShutdown, dlclose), and the reads
//      alone on an opened library;
//   2. GetPreferredAllocation + Allocate as kubelet waits on them: the enforce-mode device plugin
//      in this process, served on a unix socket and registered with the fake kubelet of the
//      tests, on a DGX-1 with 4 replicas per GPU; every FakeKubelet::AdmitPod of a pod carrying
//      gputopo.io/assigned-gpus timed, the bound pods from memory or listed from a fake API
//      server on each admission, or from the watched cache --mode enforce uses (WatchedPodSource),
//      with only the pods being admitted bound to the node and
//      with 100 more bound (16 GPU pods holding replicas, 84 without GPUs): identification's cost;
//   3. the real `gputopo agent run`, observe mode (beside the fake kubelet's stock plugin) and
//      enforce mode (kubelet admits the pods through the agent's plugin, each admission timed),
//      against an in-process fake API server, --agent-pods pods bound and admitted: its resident
//      memory once ready, every observed-gpus written and a few passes run;
//   4. in those runs, how often it asks PodResources (List calls per second over --window), and
//      its pod LISTs and PATCHes to the API server in the window.
//
//   agent_bench --runs 50 --admissions 300 --out bench/results
//
// Writes <out>/agent.md (the tables bench/README.md shows), agent_latency.csv and
// agent_process.csv. A benchmark: it prints numbers, and fails only when something could not
// run.
#include <arpa/inet.h>
#include <curl/curl.h>
#include <httplib.h>
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
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/child_process.h"
#include "gputopo/machine_topology.h"
#include "src/agent/command_runner.h"
#include "src/agent/device_plugin.h"
#include "src/agent/kube_pod_source.h"
#include "src/agent/nvml_library.h"
#include "src/agent/pod_identification.h"
#include "src/agent/pod_resources_client.h"
#include "src/agent/replica_choice.h"
#include "src/agent/topology_discovery.h"
#include "src/agent/watched_pod_source.h"
#include "src/app/system_clock.h"
#include "src/kube/kube_client.h"
#include "src/kube/kube_config.h"
#include "test/fakes/fake_nvml/fake_sysfs.h"
#include "test/support/fake_api_server.h"
#include "test/support/fake_kubelet.h"

extern char** environ;

namespace gputopo::bench {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

std::string Fixed(double value, int digits) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.*f", digits, value);
  return text;
}

// A temporary directory, removed with the object.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix) {
    std::string templ = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
    if (mkdtemp(templ.data()) != nullptr) path_ = templ;
  }
  ~TempDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// The 1-minute load average (/proc/loadavg), -1 when unreadable.
double LoadAverage() {
  std::ifstream in("/proc/loadavg");
  double load = -1;
  in >> load;
  return load;
}

// --- 1. Discovery ---

struct DiscoveryResult {
  std::string machine;
  int gpus = 0;
  int nvlink_pairs = 0;          // pairs with an NVLink, as a check of what was read
  std::vector<double> whole_ms;  // DiscoverTopology
  std::vector<double> reads_ms;  // DiscoverWithNvml on an opened, initialised library
  std::string error;             // empty when every run succeeded
};

DiscoveryResult MeasureDiscovery(const std::string& library, const std::filesystem::path& machines,
                                 const std::string& machine, int runs) {
  DiscoveryResult result;
  result.machine = machine;
  const std::filesystem::path file = machines / (machine + ".txt");
  if (!std::filesystem::exists(file)) {
    result.error = "no fixture " + file.string();
    return result;
  }
  setenv("GPUTOPO_FAKE_NVML_MACHINE", file.c_str(), 1);
  TempDir sysfs("gputopo-bench-sysfs");
  testing::WriteFakeSysfs(file, sysfs.path());
  agent::DiscoveryOptions options;
  options.nvml_library = library;
  options.sysfs_root = sysfs.path().string();
  options.nvidia_smi = "/nonexistent/nvidia-smi";  // NVML or nothing
  agent::SubprocessRunner runner;
  for (int i = 0; i <= runs; ++i) {  // run 0 warms the page cache, unmeasured
    const auto t0 = Clock::now();
    Result<agent::Discovery> found = agent::DiscoverTopology(options, runner);
    const auto t1 = Clock::now();
    if (!found.ok() || found->source != "nvml") {
      result.error = found.ok() ? "read from " + found->source : found.status().message();
      return result;
    }
    if (i == 0) {
      result.gpus = found->machine.gpu_count();
      for (int a = 0; a < result.gpus; ++a) {
        for (int b = a + 1; b < result.gpus; ++b) {
          if (found->machine.link(a, b).type == LinkType::kNvLink) ++result.nvlink_pairs;
        }
      }
      continue;
    }
    result.whole_ms.push_back(Ms(t1 - t0));
  }
  Result<std::unique_ptr<agent::NvmlLibrary>> nvml = agent::NvmlLibrary::Open(library);
  if (!nvml.ok() || !(*nvml)->Init().ok()) {
    result.error = "cannot open " + library;
    return result;
  }
  for (int i = 0; i <= runs; ++i) {
    const auto t0 = Clock::now();
    Result<agent::Discovery> found = agent::DiscoverWithNvml(**nvml, options.sysfs_root);
    const auto t1 = Clock::now();
    if (!found.ok()) {
      result.error = found.status().message();
      return result;
    }
    if (i > 0) result.reads_ms.push_back(Ms(t1 - t0));
  }
  return result;
}

// --- 2. GetPreferredAllocation + Allocate through the device plugin ---

struct AdmissionResult {
  std::vector<double> admit_ms;
  int steered = 0;              // admissions that got exactly the assigned GPUs
  int failed = 0;               // AdmitPod errors
  size_t lists = 0;             // pod LISTs the source made during the timed admissions (kWatched)
  int pod_resources_calls = 0;  // kubelet's PodResources List during the timed admissions
  std::string error;
};

// Where the plugin's pods come from: memory (the identification's own cost), a list of the API
// server on every admission (KubePodSource), or the watched cache enforce mode uses
// (WatchedPodSource: lists live only when the cache misses the pod, bound a moment ago).
enum class PodsFrom { kMemory, kListed, kWatched };

// A pod bound to n1, as the API server stores it: one container per entry of `requests` (of
// nvidia.com/gpu; 0: none), assigned-gpus when not empty.
json BoundPodObject(const std::string& ns, const std::string& name, const std::string& scheduler,
                    const std::string& assigned, const std::vector<int>& requests) {
  json containers = json::array();
  for (size_t c = 0; c < requests.size(); ++c) {
    json container = {{"name", c == 0 ? std::string("main") : "c" + std::to_string(c)},
                      {"image", "pause"}};
    if (requests[c] > 0) {
      const std::string n = std::to_string(requests[c]);
      container["resources"] = {{"requests", {{"nvidia.com/gpu", n}}},
                                {"limits", {{"nvidia.com/gpu", n}}}};
    }
    containers.push_back(std::move(container));
  }
  json pod = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", {{"name", name}, {"namespace", ns}, {"uid", "uid-" + ns + "-" + name}}},
      {"spec", {{"nodeName", "n1"}, {"schedulerName", scheduler}, {"containers", containers}}},
      {"status", {{"phase", "Running"}}}};
  if (!assigned.empty()) {
    pod["metadata"]["annotations"] = {{"gputopo.io/assigned-gpus", assigned}};
  }
  return pod;
}

// The pods bound to the node, from memory (what a watched cache would answer).
class CachedPods : public agent::PodSource {
 public:
  Result<std::vector<agent::BoundPod>> CurrentPods() override {
    std::lock_guard lock(mu_);
    return pods_;
  }
  void Add(agent::BoundPod pod) {
    std::lock_guard lock(mu_);
    pods_.push_back(std::move(pod));
  }
  void Remove(const std::string& key) {
    std::lock_guard lock(mu_);
    std::erase_if(pods_, [&](const agent::BoundPod& p) { return p.Key() == key; });
  }

 private:
  std::mutex mu_;
  std::vector<agent::BoundPod> pods_;
};

// The GPU part of "GPU-<uuid>::<n>".
std::string GpuOf(const std::string& device_id) {
  return device_id.substr(0, device_id.rfind("::"));
}

// The device plugin on a DGX-1 with 4 replicas per GPU, registered with a fake kubelet; its pods
// from memory, listed from a fake API server on each admission (KubePodSource), or from the
// watched cache `gputopo agent run --mode enforce` uses (WatchedPodSource). Rounds of 5 pods (1, 2,
// 1, 4 and 8 GPUs: 16 replicas, two per GPU), each pod's GPUs the next ones from a cursor that
// starts one GPU further every round; the pods of a round stay bound and allocated until it ends,
// then they are removed (kubelet frees their replicas). `background` more pods are bound
// throughout: up to 16 gputopo pods holding two replicas of every GPU (PodResources lists them),
// the rest without GPUs (two containers each, from the default scheduler). `ask_kubelet`: the
// plugin asks PodResources at every admission, as it did before it kept the answer
// (pod_resources_view.h): the view is invalidated before each one.
AdmissionResult MeasureAdmissions(const MachineTopology& topology, int admissions, int background,
                                  PodsFrom from, bool ask_kubelet = false) {
  const bool from_api = from != PodsFrom::kMemory;
  AdmissionResult result;
  constexpr int kReplicas = 4;
  const std::string resource = "nvidia.com/gpu";
  testing::FakeApiServer api;
  testing::FakeKubelet kubelet;
  if (!api.Start() || !kubelet.Start()) {
    result.error = "the fake API server or kubelet cannot start";
    return result;
  }
  app::SystemClock clock;
  kube::KubeConfig config;
  config.server = api.base_url();
  kube::KubeClient kube(config, kube::ClientOptions(), clock);
  agent::KubePodSource api_pods(kube, "n1", resource);
  agent::WatchedPodSource watched_pods(kube, "n1", resource);
  CachedPods cached_pods;
  agent::PodSource* source = &cached_pods;
  if (from == PodsFrom::kListed) source = &api_pods;
  if (from == PodsFrom::kWatched) source = &watched_pods;
  agent::PodSource& pods = *source;
  // Binds the pod: in the API server, or in the cache.
  auto bind = [&](const agent::BoundPod& pod, const std::vector<int>& requests) {
    if (from_api) {
      (void)api.CreatePod(BoundPodObject(pod.namespace_name, pod.name, pod.scheduler_name,
                                         pod.assigned_gpus.value_or(""), requests));
    } else {
      cached_pods.Add(pod);
    }
  };
  agent::PodResourcesClient pod_resources(kubelet.pod_resources_socket());
  agent::DevicePluginOptions options;
  options.kubelet_dir = kubelet.kubelet_dir();
  options.resource_name = resource;
  options.replicas = kReplicas;
  MachineTopology machine = topology;
  machine.set_replicas_per_gpu(kReplicas);
  agent::DevicePlugin plugin(options, machine, pods, &pod_resources);
  if (Status s = plugin.Start(); !s.ok()) {
    result.error = "device plugin: " + s.ToString();
    return result;
  }
  if (!kubelet.WaitForPlugin(resource, 1, std::chrono::seconds(60))) {
    result.error = "the device plugin did not register";
    return result;
  }
  const int gpus = topology.gpu_count();
  const auto created = std::chrono::system_clock::now() - std::chrono::hours(1);
  const int gpu_pods = std::min(background, 2 * gpus);
  for (int i = 0; i < background; ++i) {
    agent::BoundPod pod;
    pod.namespace_name = "running";
    pod.name = "bg-" + std::to_string(i);
    pod.uid = "uid-running-" + pod.name;
    pod.created = created + std::chrono::seconds(i);
    std::vector<int> requests;
    if (i < gpu_pods) {
      const GpuInfo& gpu = topology.gpu(i % gpus);
      pod.scheduler_name = "gputopo-scheduler";
      pod.assigned_gpus = gpu.uuid;
      pod.containers = {{"main", 1, false}};
      requests = {1};
      testing::FakeKubelet::Pod admitted{
          pod.namespace_name, pod.name, pod.uid, {{"main", 1, false}}};
      if (Status s = kubelet.AllocateDirectly(admitted, resource,
                                              {{"main", {agent::ReplicaId(gpu, i / gpus)}}});
          !s.ok()) {
        result.error = "background pod: " + s.ToString();
        return result;
      }
    } else {
      pod.scheduler_name = "default-scheduler";
      pod.containers = {{"main", 0, false}, {"c1", 0, false}};
      requests = {0, 0};
    }
    bind(pod, requests);
  }
  size_t lists_before = 0;
  int pod_resources_before = 0;
  // kubelet learns of a pod bound to its node from its own watch (fieldSelector spec.nodeName,
  // as this one), and admits it after that: with the API server, each admission starts once
  // this stand-in for kubelet's watch has the pod. It races the plugin's cache fairly.
  agent::WatchedPodSource kubelet_watch(kube, "n1", resource);
  if (from_api) {
    kubelet_watch.Start();
    if (!kubelet_watch.WaitForChanges(1)) {
      result.error = "the stand-in for kubelet's watch did not list";
      return result;
    }
  }
  if (from == PodsFrom::kWatched) {
    watched_pods.Start();
    if (!watched_pods.WaitForChanges(1)) {
      result.error = "the watched pod cache did not list";
      return result;
    }
  }
  const std::vector<int> shapes = {1, 2, 1, 4, 8};
  const int rounds =
      (admissions + static_cast<int>(shapes.size()) - 1) / static_cast<int>(shapes.size());
  int serial = 0;
  for (int round = 0; round <= rounds; ++round) {  // round 0 warms up, unmeasured
    if (round == 1) {
      lists_before = api.RequestCount("GET", "/api/v1/pods");
      pod_resources_before = kubelet.pod_resources_list_calls();
    }
    int cursor = round % gpus;
    std::vector<std::string> names;
    for (const int size : shapes) {
      agent::BoundPod pod;
      pod.namespace_name = "bench";
      pod.name = "r" + std::to_string(round) + "-" + std::to_string(names.size());
      pod.uid = "uid-bench-" + pod.name;
      pod.created = created + std::chrono::minutes(10) + std::chrono::seconds(serial++);
      pod.scheduler_name = "gputopo-scheduler";
      pod.containers = {{"main", size, false}};
      std::set<std::string> assigned;
      std::string value;
      for (int g = 0; g < size; ++g) {
        const std::string& uuid = topology.gpu((cursor + g) % gpus).uuid;
        assigned.insert(uuid);
        value += (g ? "," : "") + uuid;
      }
      cursor = (cursor + size) % gpus;
      pod.assigned_gpus = value;
      testing::FakeKubelet::Pod admitted{
          pod.namespace_name, pod.name, pod.uid, {{"main", size, false}}};
      names.push_back(pod.name);
      const uint64_t seen = from_api ? kubelet_watch.changes() : 0;
      bind(pod, {size});
      if (from_api) (void)kubelet_watch.WaitForChanges(seen + 1);
      if (ask_kubelet) plugin.pod_resources_view().Invalidate();
      const auto t0 = Clock::now();
      Result<testing::FakeKubelet::PodAllocation> got = kubelet.AdmitPod(admitted, resource);
      const auto t1 = Clock::now();
      if (round == 0) continue;
      if (!got.ok() || got->containers.empty()) {
        ++result.failed;
        continue;
      }
      result.admit_ms.push_back(Ms(t1 - t0));
      std::set<std::string> given;
      for (const std::string& id : got->containers[0].device_ids) given.insert(GpuOf(id));
      if (given == assigned && got->containers[0].device_ids.size() == assigned.size()) {
        ++result.steered;
      }
    }
    for (const std::string& name : names) {
      kubelet.RemovePod("bench", name);
      if (from_api) {
        api.DeletePod("bench", name);
      } else {
        cached_pods.Remove("bench/" + name);
      }
    }
  }
  if (from == PodsFrom::kWatched) {
    result.lists = api.RequestCount("GET", "/api/v1/pods") - lists_before;
  }
  result.pod_resources_calls = kubelet.pod_resources_list_calls() - pod_resources_before;
  plugin.Stop();
  watched_pods.Stop();
  kubelet_watch.Stop();
  api.Stop();
  return result;
}

// --- 3 and 4. The real `gputopo agent run` ---

struct AgentProcess {
  std::string error;
  double ready_seconds = 0;  // spawn to /readyz 200
  int observed = 0;          // pods whose observed-gpus was written before the window
  long rss_kib = -1;
  long peak_kib = -1;
  double window_seconds = 0;
  int pod_resources_lists = 0;  // in the window
  size_t pod_lists = 0;         // GET /api/v1/pods in the window
  size_t patches = 0;           // PATCH requests in the window
  // Enforce mode: each pod's admission through the agent's device plugin, as kubelet waits on
  // it (the first admissions the process serves).
  std::vector<double> admit_ms;
  int steered = 0;
  // The agent's own answer times, from its gputopo_agent_admission_duration_seconds histogram
  // (scraped after the admissions): per call, the upper bound of the bucket holding the p99, and
  // the share answered within 2 ms. Empty when the scrape failed.
  std::string own_times;
};

// "p99 <= X ms, N% within 2 ms" per call of the histogram in `metrics` (Prometheus text).
std::string AdmissionTimes(const std::string& metrics) {
  const std::string family = "gputopo_agent_admission_duration_seconds";
  std::string out;
  for (const std::string call : {"GetPreferredAllocation", "Allocate"}) {
    std::vector<std::pair<double, double>> buckets;  // (le, cumulative count)
    double count = 0;
    std::istringstream lines(metrics);
    for (std::string line; std::getline(lines, line);) {
      if (line.find("call=\"" + call + "\"") == std::string::npos) continue;
      const double value = std::atof(line.substr(line.rfind(' ') + 1).c_str());
      if (line.rfind(family + "_count", 0) == 0) count = value;
      const size_t le = line.find("le=\"");
      if (line.rfind(family + "_bucket", 0) == 0 && le != std::string::npos) {
        const std::string bound = line.substr(le + 4, line.find('"', le + 4) - le - 4);
        buckets.emplace_back(bound == "+Inf" ? 1e9 : std::atof(bound.c_str()), value);
      }
    }
    if (count <= 0) continue;
    double p99 = 1e9;
    double within_2ms = 0;
    for (const auto& [le, cumulative] : buckets) {
      if (cumulative >= 0.99 * count) p99 = std::min(p99, le);
      if (le <= 0.002 + 1e-12) within_2ms = std::max(within_2ms, cumulative);
    }
    char text[160];
    std::snprintf(text, sizeof(text), "%s%s p99 <= %.2f ms, %.1f%% within 2 ms",
                  out.empty() ? "" : "; ", call.c_str(), p99 * 1000, 100 * within_2ms / count);
    out += text;
  }
  return out;
}

size_t CountRequests(const testing::FakeApiServer& api, const std::string& method) {
  size_t n = 0;
  for (const auto& r : api.Requests()) n += r.method == method ? 1 : 0;
  return n;
}

// `gputopo agent run` on the machine, `pod_count` 1-GPU pods bound to it (their assigned-gpus
// round-robin over the GPUs) and admitted by kubelet: in observe mode through NVIDIA's stock
// plugin before the agent starts (its own replica choice: observed-gpus differs from
// assigned-gpus for some, the agent writes them all); in enforce mode through the agent's own
// device plugin once it has registered.
AgentProcess MeasureAgent(const std::string& gputopo, const std::string& library,
                          const std::filesystem::path& machine_file, bool enforce, int pod_count,
                          int replicas, int window_s) {
  AgentProcess result;
  if (!std::filesystem::exists(machine_file)) {
    result.error = "no fixture " + machine_file.string();
    return result;
  }
  // The machine's GPUs, as discovery (and so the agent) sees them.
  setenv("GPUTOPO_FAKE_NVML_MACHINE", machine_file.c_str(), 1);
  TempDir sysfs("gputopo-bench-sysfs");
  testing::WriteFakeSysfs(machine_file, sysfs.path());
  agent::DiscoveryOptions discovery;
  discovery.nvml_library = library;
  discovery.sysfs_root = sysfs.path().string();
  discovery.nvidia_smi = "/nonexistent/nvidia-smi";
  agent::SubprocessRunner runner;
  Result<agent::Discovery> found = agent::DiscoverTopology(discovery, runner);
  if (!found.ok()) {
    result.error = "discovery: " + found.status().message();
    return result;
  }
  const MachineTopology& machine = found->machine;

  testing::FakeApiServer api;
  (void)api.CreateNode(
      {{"apiVersion", "v1"},
       {"kind", "Node"},
       {"metadata", {{"name", "n1"}, {"labels", {{"kubernetes.io/hostname", "n1"}}}}},
       {"status", {{"allocatable", {{"nvidia.com/gpu", "32"}}}}}});
  testing::FakeKubelet kubelet;
  if (!api.Start() || !kubelet.Start()) {
    result.error = "the fake API server or kubelet cannot start";
    return result;
  }
  auto create_all = [&] {
    for (int i = 0; i < pod_count; ++i) {
      (void)api.CreatePod(BoundPodObject("bench", "p" + std::to_string(i), "gputopo-scheduler",
                                         machine.gpu(i % machine.gpu_count()).uuid, {1}));
    }
  };
  // Observe: the pods are there before the agent starts. Enforce: a burst once it is ready (as
  // a Deployment scaled up), every pod of one creation second, which kubelet admits in the order
  // its watch delivers them; a watch of the node's pods stands in for kubelet's to give it.
  if (!enforce) create_all();
  app::SystemClock clock;
  kube::KubeConfig kube_config;
  kube_config.server = api.base_url();
  kube::KubeClient kube(kube_config, kube::ClientOptions(), clock);
  agent::WatchedPodSource kubelet_watch(kube, "n1", "nvidia.com/gpu");
  std::vector<int> order;  // pod numbers in admission order
  for (int i = 0; i < pod_count; ++i) order.push_back(i);
  // kubelet admits every pod; false (with result.error) when one is refused.
  auto admit_all = [&] {
    for (const int i : order) {
      const std::string name = "p" + std::to_string(i);
      testing::FakeKubelet::Pod pod{"bench", name, "uid-bench-" + name, {{"main", 1, false}}};
      const auto t0 = Clock::now();
      Result<testing::FakeKubelet::PodAllocation> got = kubelet.AdmitPod(pod, "nvidia.com/gpu");
      const auto t1 = Clock::now();
      if (!got.ok() || got->containers.empty()) {
        result.error = "kubelet cannot admit pod " + name + " (too few replicas?)";
        return false;
      }
      if (!enforce) continue;
      result.admit_ms.push_back(Ms(t1 - t0));
      const std::vector<std::string>& ids = got->containers[0].device_ids;
      if (ids.size() == 1 && GpuOf(ids[0]) == machine.gpu(i % machine.gpu_count()).uuid) {
        ++result.steered;
      }
    }
    return true;
  };
  if (!enforce) {
    std::vector<testing::FakeKubelet::Device> devices;
    for (int g = 0; g < machine.gpu_count(); ++g) {
      for (int r = 0; r < replicas; ++r) {
        devices.push_back({agent::ReplicaId(machine.gpu(g), r), true, machine.gpu(g).numa_node});
      }
    }
    kubelet.AddStockPlugin("nvidia.com/gpu", devices);
    if (!admit_all()) return result;
  }
  const std::string kubeconfig = "/tmp/gputopo-agent-bench-kubeconfig-" + std::to_string(getpid());
  std::ofstream(kubeconfig) << "apiVersion: v1\nkind: Config\ncurrent-context: bench\n"
                            << "clusters:\n- name: bench\n  cluster:\n    server: "
                            << api.base_url() << "\n"
                            << "contexts:\n- name: bench\n  context:\n    cluster: bench\n"
                            << "    user: bench\nusers:\n- name: bench\n  user:\n    token: x\n";
  const int port = FreePort();
  std::vector<std::string> args = {gputopo,
                                   "--log-level",
                                   "warn",
                                   "agent",
                                   "run",
                                   "--node-name",
                                   "n1",
                                   "--kubeconfig",
                                   kubeconfig,
                                   "--kubelet-dir",
                                   kubelet.kubelet_dir(),
                                   "--nvml-library",
                                   library,
                                   "--sysfs-root",
                                   sysfs.path().string(),
                                   "--listen",
                                   "127.0.0.1:" + std::to_string(port)};
  if (enforce) {
    for (const char* arg : {"--mode", "enforce", "--replicas"}) args.emplace_back(arg);
    args.push_back(std::to_string(replicas));
  }
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const auto start = Clock::now();
  if (posix_spawn(&pid, gputopo.c_str(), nullptr, nullptr, argv.data(), environ) != 0) {
    std::filesystem::remove(kubeconfig);
    result.error = "cannot run " + gputopo;
    return result;
  }
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(1, 0);
  client.set_read_timeout(10, 0);
  bool ready = false;
  while (!ready && Clock::now() - start < std::chrono::seconds(120)) {
    httplib::Result r = client.Get("/readyz");
    ready = r && r->status == 200;
    if (!ready) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  result.ready_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  // Enforce: kubelet admits the pods through the agent's plugin once it has registered.
  if (ready && enforce) {
    kubelet_watch.Start();
    if (!kubelet.WaitForPlugin("nvidia.com/gpu", 1, std::chrono::seconds(120)) ||
        !kubelet_watch.WaitForChanges(1)) {
      result.error = "the agent's device plugin did not register";
    } else {
      create_all();
      (void)kubelet_watch.WaitForChanges(1 + static_cast<uint64_t>(pod_count));
      Result<std::vector<agent::BoundPod>> seen = kubelet_watch.CurrentPods();
      if (seen.ok()) {
        std::vector<agent::BoundPod> pods = *std::move(seen);
        std::sort(pods.begin(), pods.end(),
                  [](const auto& a, const auto& b) { return a.arrival < b.arrival; });
        order.clear();
        for (const agent::BoundPod& pod : pods) order.push_back(std::stoi(pod.name.substr(1)));
      }
      if (!admit_all() && result.error.empty()) result.error = "an admission failed";
      if (httplib::Result m = client.Get("/metrics"); m && m->status == 200) {
        result.own_times = AdmissionTimes(m->body);
      }
    }
    kubelet_watch.Stop();
  }
  auto observed = [&] {
    int n = 0;
    for (const json& pod : api.Pods()) {
      n += pod["metadata"].contains("annotations") &&
                   pod["metadata"]["annotations"].contains("gputopo.io/observed-gpus")
               ? 1
               : 0;
    }
    return n;
  };
  if (!result.error.empty()) {
    // said above
  } else if (!ready) {
    result.error = "the agent did not get ready in 120 s";
  } else {
    // Its first passes write every pod's observed-gpus; then a few quiet passes.
    const auto deadline = Clock::now() + std::chrono::seconds(60);
    while (observed() < pod_count && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    result.observed = observed();
    std::this_thread::sleep_for(std::chrono::seconds(3));
    const int lists0 = kubelet.pod_resources_list_calls();
    const size_t pod_lists0 = api.RequestCount("GET", "/api/v1/pods");
    const size_t patches0 = CountRequests(api, "PATCH");
    const auto w0 = Clock::now();
    std::this_thread::sleep_for(std::chrono::seconds(window_s));
    result.pod_resources_lists = kubelet.pod_resources_list_calls() - lists0;
    result.pod_lists = api.RequestCount("GET", "/api/v1/pods") - pod_lists0;
    result.patches = CountRequests(api, "PATCH") - patches0;
    result.window_seconds = std::chrono::duration<double>(Clock::now() - w0).count();
    result.rss_kib = ProcStatusKib(pid, "VmRSS");
    result.peak_kib = ProcStatusKib(pid, "VmHWM");
  }
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  if (result.error.empty() && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
    result.error =
        "the agent did not exit cleanly on SIGTERM (status " + std::to_string(status) + ")";
  }
  api.Stop();
  std::filesystem::remove(kubeconfig);
  return result;
}

int Main(int argc, char** argv) {
  CLI::App cli{"gputopo node agent: discovery, admission latency, memory, polling"};
  int runs = 50;
  int admissions = 300;
  int agent_pods = 100;
  int agent_replicas = 16;
  int window_s = 10;
  std::string out = "bench/results";
  std::string library = GPUTOPO_FAKE_NVML;
  std::string machines = GPUTOPO_FAKE_NVML_MACHINES;
  std::string gputopo = GPUTOPO_BINARY;
  cli.add_option("--runs", runs, "discovery runs per machine")->capture_default_str();
  cli.add_option("--admissions", admissions, "admissions timed per case (rounds of 5 pods)")
      ->capture_default_str();
  cli.add_option("--agent-pods", agent_pods, "pods admitted for the agent's memory run")
      ->capture_default_str();
  cli.add_option("--agent-replicas", agent_replicas,
                 "replicas per GPU the stock plugin advertises in that run (>= pods / 8)")
      ->capture_default_str();
  cli.add_option("--window", window_s, "seconds PodResources and API requests are counted over")
      ->capture_default_str()
      ->check(CLI::Range(1, 600));
  cli.add_option("--out", out)->capture_default_str();
  cli.add_option("--nvml-library", library, "the fake NVML")->capture_default_str();
  cli.add_option("--machines", machines, "the fake NVML's machine files")->capture_default_str();
  cli.add_option("--gputopo", gputopo, "the gputopo binary")->capture_default_str();
  CLI11_PARSE(cli, argc, argv);
  spdlog::set_level(spdlog::level::warn);
  curl_global_init(CURL_GLOBAL_DEFAULT);  // the KubeClient of the API-server pod source
  std::filesystem::create_directories(out);
  bool all_ran = true;
  const double load_before = LoadAverage();

  std::ostringstream md;
  std::ofstream latency_csv(out + "/agent_latency.csv");
  latency_csv << "measurement,gpus,p50_ms,p99_ms,max_ms,runs,note\n";
  md << "| measurement | GPUs | p50 | p99 | max | runs | check |\n|---|---|---|---|---|---|---|\n";
  auto row = [&](const std::string& what, int gpus, const std::vector<double>& ms,
                 const std::string& note) {
    const double max = ms.empty() ? 0 : *std::max_element(ms.begin(), ms.end());
    md << "| " << what << " | " << gpus << " | " << Fixed(Percentile(ms, 0.5), 3) << " ms | "
       << Fixed(Percentile(ms, 0.99), 3) << " ms | " << Fixed(max, 3) << " ms | " << ms.size()
       << " | " << note << " |\n";
    latency_csv << "\"" << what << "\"," << gpus << "," << Percentile(ms, 0.5) << ","
                << Percentile(ms, 0.99) << "," << max << "," << ms.size() << ",\"" << note
                << "\"\n";
  };

  // 1. Discovery.
  std::optional<MachineTopology> dgx1;
  for (const std::string machine : {"dgx1-v100", "dgx2-v100"}) {
    const DiscoveryResult d = MeasureDiscovery(library, machines, machine, runs);
    if (!d.error.empty()) {
      std::cerr << "discovery on " << machine << ": " << d.error << "\n";
      all_ran = false;
      continue;
    }
    const std::string note = std::to_string(d.nvlink_pairs) + " NVLink pairs read";
    row("discovery, " + machine + ": DiscoverTopology (dlopen, init, reads, dlclose)", d.gpus,
        d.whole_ms, note);
    row("discovery, " + machine + ": the reads alone (library open)", d.gpus, d.reads_ms, note);
  }
  {
    setenv("GPUTOPO_FAKE_NVML_MACHINE", (machines + "/dgx1-v100.txt").c_str(), 1);
    TempDir sysfs("gputopo-bench-sysfs");
    testing::WriteFakeSysfs(machines + "/dgx1-v100.txt", sysfs.path());
    agent::DiscoveryOptions options;
    options.nvml_library = library;
    options.sysfs_root = sysfs.path().string();
    agent::SubprocessRunner runner;
    if (Result<agent::Discovery> found = agent::DiscoverTopology(options, runner); found.ok()) {
      dgx1 = found->machine;
    }
  }

  // 2. Admissions through the device plugin, in process. The watched cache (enforce mode) also
  // with PodResources asked at every admission, as before the plugin kept kubelet's answer, side
  // by side (alternating, so that the machine's drift hits both alike).
  struct AdmissionCase {
    PodsFrom from;
    int background;
    bool ask_kubelet;
  };
  std::vector<AdmissionCase> cases;
  for (const PodsFrom from : {PodsFrom::kMemory, PodsFrom::kListed, PodsFrom::kWatched}) {
    for (const int background : {0, 100}) {
      if (from == PodsFrom::kWatched) cases.push_back({from, background, true});
      cases.push_back({from, background, false});
    }
  }
  for (const AdmissionCase& c : cases) {
    const PodsFrom from = c.from;
    const int background = c.background;
    if (!dgx1) break;
    const AdmissionResult a = MeasureAdmissions(*dgx1, admissions, background, from, c.ask_kubelet);
    if (!a.error.empty()) {
      std::cerr << "admissions: " << a.error << "\n";
      all_ran = false;
      continue;
    }
    const std::string what =
        std::string("admission (GetPreferredAllocation + Allocate), DGX-1 x4, pods ") +
        (from == PodsFrom::kListed    ? "listed from the API server"
         : from == PodsFrom::kWatched ? "from the watched cache (enforce mode)"
                                      : "from memory") +
        ", " +
        (background == 0 ? std::string("only those being admitted bound")
                         : std::to_string(background) + " more bound") +
        (c.ask_kubelet ? ", PodResources asked at each admission (before)" : "");
    row(what, 8, a.admit_ms,
        std::to_string(a.steered) + "/" + std::to_string(a.admit_ms.size()) + " steered" +
            (a.failed ? ", " + std::to_string(a.failed) + " failed" : "") +
            (from == PodsFrom::kWatched
                 ? ", " + std::to_string(a.lists) + " live lists (cache not there yet)"
                 : "") +
            ", " + std::to_string(a.pod_resources_calls) + " PodResources calls");
    if (a.failed > 0) all_ran = false;
  }

  // 3 and 4. The real agent, observe mode then enforce mode.
  std::ofstream process_csv(out + "/agent_process.csv");
  process_csv << "mode,metric,value,unit,target\n";
  std::vector<std::pair<std::string, AgentProcess>> processes;
  for (const bool enforce : {false, true}) {
    const std::string mode = enforce ? "enforce" : "observe";
    AgentProcess p = MeasureAgent(gputopo, library, machines + "/dgx1-v100.txt", enforce,
                                  agent_pods, agent_replicas, window_s);
    if (!p.error.empty()) {
      std::cerr << "agent run --mode " << mode << ": " << p.error << "\n";
      md << "\n`gputopo agent run --mode " << mode << "` could not be measured: " << p.error
         << "\n";
      all_ran = false;
      continue;
    }
    if (enforce) {
      // The process's first admission opens kubelet's gRPC channel to the plugin and the
      // plugin's to PodResources: shown apart from the steady ones.
      const std::vector<double> later(p.admit_ms.begin() + (p.admit_ms.empty() ? 0 : 1),
                                      p.admit_ms.end());
      char first[64];
      std::snprintf(first, sizeof(first), "; the first one %.3f ms",
                    p.admit_ms.empty() ? 0.0 : p.admit_ms[0]);
      row("admission through `gputopo agent run --mode enforce` (its pods 2-" +
              std::to_string(p.admit_ms.size()) + ", x" + std::to_string(agent_replicas) + ")",
          8, later,
          std::to_string(p.steered) + "/" + std::to_string(p.admit_ms.size()) + " steered" + first +
              (p.own_times.empty() ? ""
                                   : "; the agent's own answer times (its histogram, "
                                     "every call): " +
                                         p.own_times));
    }
    const double list_rate = p.pod_resources_lists / p.window_seconds;
    process_csv << mode << ",ready_s," << p.ready_seconds << ",s,\n"
                << mode << ",rss," << p.rss_kib << ",KiB,<40 MiB\n"
                << mode << ",peak_rss," << p.peak_kib << ",KiB,\n"
                << mode << ",pod_resources_list_per_s," << list_rate << ",1/s,<=1\n"
                << mode << ",pod_lists_in_window," << p.pod_lists << ",,\n"
                << mode << ",patches_in_window," << p.patches << ",,\n"
                << mode << ",window_s," << p.window_seconds << ",s,\n";
    processes.emplace_back(mode, std::move(p));
  }
  if (!processes.empty()) {
    md << "\n`gputopo agent run` on a fake DGX-1 (" << agent_replicas << " replicas per GPU) with "
       << agent_pods
       << " 1-GPU pods bound and admitted (observe: by kubelet's stock plugin; enforce: by the "
          "agent's own), read once it is ready and has written every pod's observed-gpus, then "
          "counted over the next "
       << window_s << " s:\n\n| measurement |";
    for (const auto& [mode, p] : processes) md << " " << mode << " |";
    md << " target |\n|---|";
    for (size_t k = 0; k < processes.size(); ++k) md << "---|";
    md << "---|\n";
    auto line = [&](const std::string& what, auto value, const std::string& target) {
      md << "| " << what << " |";
      for (const auto& entry : processes) md << " " << value(entry.second) << " |";
      md << " " << target << " |\n";
    };
    auto mib = [](long kib) { return Fixed(static_cast<double>(kib) / 1024.0, 1) + " MiB"; };
    line(
        "resident memory (VmRSS)", [&](const AgentProcess& p) { return mib(p.rss_kib); },
        "< 40 MiB");
    line(
        "peak resident memory (VmHWM)", [&](const AgentProcess& p) { return mib(p.peak_kib); }, "");
    line(
        "PodResources List calls per second",
        [](const AgentProcess& p) {
          return Fixed(p.pod_resources_lists / p.window_seconds, 2) + " (" +
                 std::to_string(p.pod_resources_lists) + " in " + Fixed(p.window_seconds, 1) +
                 " s)";
        },
        "at most 1");
    line(
        "pod LISTs to the API server in the window",
        [](const AgentProcess& p) { return std::to_string(p.pod_lists); }, "");
    line(
        "PATCHes to the API server in the window",
        [](const AgentProcess& p) { return std::to_string(p.patches); }, "");
    line(
        "observed-gpus written before the window",
        [](const AgentProcess& p) { return std::to_string(p.observed); }, "");
    line(
        "start to /readyz 200",
        [](const AgentProcess& p) { return Fixed(p.ready_seconds, 1) + " s"; }, "");
  }
  md << "\nLoad average (1 min, /proc/loadavg) " << Fixed(load_before, 2) << " at the start, "
     << Fixed(LoadAverage(), 2) << " at the end, on " << std::thread::hardware_concurrency()
     << " CPUs.\n";
  std::ofstream(out + "/agent.md") << md.str();
  std::cout << md.str();
  return all_ran ? 0 : 1;
}

}  // namespace
}  // namespace gputopo::bench

int main(int argc, char** argv) { return gputopo::bench::Main(argc, argv); }
