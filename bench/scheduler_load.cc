// Scheduler-shaped load: gputopo driven the way kube-scheduler drives an extender, against the
// fake API server of the tests with a fixed latency on every write (an etcd commit), beside the
// same loop without an extender. Throughput (pods bound per second), bind latency, and filter
// latency while binds run, at several cluster sizes.
//
//   scheduler_load --nodes 300,5000 --pods 2000 --write-latency-ms 10 --out bench/results
//
// kube-scheduler's shape (pkg/scheduler/schedule_one.go): one scheduling loop takes the next
// pending pod, calls the extender's filter and then its prioritize (nodeCacheCapable: true, so
// NodeNames) over every node, picks the highest score (ties at random, as selectHost does),
// assumes the pod and hands the bind to a goroutine, and moves on at once. Here up to
// --bind-workers binds are in flight (beyond that the loop waits for one to finish). Requests to
// the extender use keep-alive connections kept as Go's http.Transport keeps them: a request takes
// an idle connection or opens a new one, and at most --idle-connections stay open when idle. They
// read and write as Go's transport does (bench/keep_alive_connection.h), so that the client's own
// system calls are not charged to the server.
//
// Without an extender the same loop picks the node itself, round-robin over the nodes whose GPUs
// have room (tracked locally, as kube-scheduler's cache would), and its workers create the
// Binding on the API server directly (what DefaultBinder posts). The ratio of the two rates is
// what gputopo costs the scheduler. A real kube-scheduler also spends time of its own on every
// pod (its filter and score plugins over the nodes, assume, queueing: 180-300 pods/s at 300
// nodes without an extender, measured behind issue #11); --scheduler-cycle-us spends that, as a
// sleep, in both loops, so each ratio is given with none (the loop only binds) and with it.
//
// Both runs start from identical API servers: 8-GPU nodes (HGX H100 and DGX-1 V100 profiles,
// time-sliced 4 ways), pods already bound with diverse occupancy, and a backlog of pending pods of
// a few Deployments (1-GPU replicas, and 2- and 4-GPU ones), all created on the API server before
// timing. gputopo lists and watches it, and timing starts once it has synced (App::Ready) and has
// filtered one pod of each Deployment (unmeasured: the first pod of a shape evaluates every node,
// which latency_extender reports as the cold case). The watch brings every bind back to gputopo;
// after the run the benchmark waits for it to confirm all of them, and checks on the API server
// that every pod is bound and no GPU holds more replicas than it has. In both runs the load
// generator also watches pods on the API server, as kube-scheduler's informer does.
//
// To tell where the time goes, the report also gives the loop's time per pod split into filter,
// prioritize, the generator's own work and waiting; the same cycles with no bind running (before
// the run); CPU time by thread role during the run (threads are named apiserver, gputopo and
// gen-*, so `perf report --sort comm` tells them apart too) and the machine's; and gputopo's own
// record of the last pods' cycles (/debug/pods: nodes evaluated on the request path, and whether
// prioritize reused its filter's evaluations).
#include <curl/curl.h>
#include <httplib.h>
#include <pthread.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "bench/keep_alive_connection.h"
#include "src/app/allocator_tuning.h"
#include "src/app/app.h"
#include "src/app/system_clock.h"
#include "test/support/fake_api_server.h"

namespace gputopo::bench {
namespace {

using nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

constexpr int kGpusPerNode = 8;
constexpr int kReplicas = 4;  // time-slice replicas per GPU
constexpr char kNamespace[] = "ml";
// A pod whose bind failed this many times is given up (kube-scheduler would back off and retry).
constexpr int kMaxAttempts = 5;
// Cycles measured with no bind running, before the run.
constexpr int kIdleCycles = 200;
// Pods whose last cycles are read back from gputopo's /debug/pods after the run.
constexpr int kDebugSamples = 300;

double Ms(SteadyClock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

// Threads are named by role, so that CPU time can be told apart (here, and in `perf report
// --sort comm`): a thread inherits its creator's name, so the API server's and gputopo's threads
// are created while the main thread carries theirs.
constexpr char kApiServerThreads[] = "apiserver";
constexpr char kGputopoThreads[] = "gputopo";
constexpr char kLoopThread[] = "gen-loop";
constexpr char kBindThreads[] = "gen-bind";
constexpr char kInformerThread[] = "gen-informer";

void NameThisThread(const char* name) { pthread_setname_np(pthread_self(), name); }

// Names the calling thread for its lifetime, then restores the old name.
class ThreadNameScope {
 public:
  explicit ThreadNameScope(const char* name) {
    pthread_getname_np(pthread_self(), old_, sizeof(old_));
    NameThisThread(name);
  }
  ~ThreadNameScope() { NameThisThread(old_); }
  ThreadNameScope(const ThreadNameScope&) = delete;
  ThreadNameScope& operator=(const ThreadNameScope&) = delete;

 private:
  char old_[16] = {};
};

// CPU time, in seconds: the whole machine's busy time, and this process's threads by name
// (threads that exit take theirs along).
struct CpuTimes {
  double machine = 0;
  std::map<std::string, double> by_thread;
};

CpuTimes ReadCpuTimes() {
  CpuTimes t;
  const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
  {
    std::ifstream stat("/proc/stat");
    std::string cpu;
    double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
    stat >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal;
    t.machine = (user + nice + system + irq + softirq + steal) / tick;
  }
  // Per thread: the name, and the time on a CPU in nanoseconds (schedstat: the scheduler's own
  // count, exact, where stat's utime and stime are sampled at the clock tick).
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    std::string name;
    std::getline(std::ifstream(task.path() / "comm"), name);
    double run_ns = 0;
    std::ifstream(task.path() / "schedstat") >> run_ns;
    t.by_thread[name] += run_ns / 1e9;
  }
  return t;
}

// Cores busy on average since `from`, over `seconds` of wall time.
CpuTimes CoresSince(const CpuTimes& from, double seconds) {
  CpuTimes cores;
  if (seconds <= 0) return cores;
  const CpuTimes now = ReadCpuTimes();
  cores.machine = (now.machine - from.machine) / seconds;
  for (const auto& [name, total] : now.by_thread) {
    const auto before = from.by_thread.find(name);
    cores.by_thread[name] =
        (total - (before == from.by_thread.end() ? 0.0 : before->second)) / seconds;
  }
  return cores;
}

// "gputopo 0.80, apiserver 0.31, ...": the roles' cores, largest first, then the machine's.
std::string DescribeCores(const CpuTimes& cores) {
  std::vector<std::pair<double, std::string>> roles;
  double self = 0;
  for (const auto& [name, value] : cores.by_thread) {
    self += value;
    if (value >= 0.005) roles.emplace_back(value, name);
  }
  std::sort(roles.rbegin(), roles.rend());
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.2f in this process (", self);
  std::string out = buffer;
  for (size_t i = 0; i < roles.size(); ++i) {
    std::snprintf(buffer, sizeof(buffer), "%s%s %.2f", i ? ", " : "", roles[i].second.c_str(),
                  roles[i].first);
    out += buffer;
  }
  std::snprintf(buffer, sizeof(buffer), "), %.2f on the machine", cores.machine);
  return out + buffer;
}

// --- The cluster ---

struct Deployment {
  const char* name;
  const char* template_hash;
  int gpus;
  double share;  // of the backlog
};

// The backlog's workloads: mostly 1-GPU replicas, some 2- and 4-GPU pods.
constexpr Deployment kDeployments[] = {
    {"serve-llama", "5c8d7f6b9a", 1, 0.25},  {"serve-bert", "6f9c8d7b5e", 1, 0.20},
    {"train-resnet", "7d4f9b8c6d", 1, 0.15}, {"eval-vit", "8b7c6d5f4a", 1, 0.10},
    {"finetune-7b", "9a8b7c6d5e", 2, 0.20},  {"pretrain-13b", "4e5f6a7b8c", 4, 0.10},
};

json MakeNode(int i) {
  const std::string name = "gpu-node-" + std::to_string(i);
  const bool hgx = i % 2 == 0;
  const std::string gpus = std::to_string(kGpusPerNode * kReplicas);
  const json resources = {{"cpu", "96"},
                          {"memory", "1056000Mi"},
                          {"ephemeral-storage", "3500Gi"},
                          {"pods", "110"},
                          {"nvidia.com/gpu", gpus}};
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata",
           {{"name", name},
            {"uid", "node-uid-" + std::to_string(i)},
            {"labels",
             {{"kubernetes.io/hostname", name},
              {"kubernetes.io/os", "linux"},
              {"node.kubernetes.io/instance-type", hgx ? "p5.48xlarge" : "p3dn.24xlarge"},
              {"topology.kubernetes.io/zone", "zone-" + std::to_string(i % 3)},
              {"gputopo.io/topology-profile", hgx ? "hgx-h100" : "dgx1-v100"},
              {"nvidia.com/gpu.product", hgx ? "NVIDIA-H100-80GB-HBM3" : "Tesla-V100-SXM2-32GB"},
              {"nvidia.com/gpu.count", std::to_string(kGpusPerNode)},
              {"nvidia.com/gpu.replicas", std::to_string(kReplicas)}}}}},
          {"spec", json::object()},
          {"status", {{"capacity", resources}, {"allocatable", resources}}}};
}

// A pod of a Deployment (owned by its ReplicaSet); bound to `node` holding `assigned` when
// `node` is not empty, else pending.
json MakePod(const std::string& name, const std::string& app, const std::string& template_hash,
             int gpus, const std::string& node, const std::string& assigned) {
  const std::string n = std::to_string(gpus);
  const json resources = {{"cpu", std::to_string(4 * gpus)},
                          {"memory", std::to_string(32 * gpus) + "Gi"},
                          {"nvidia.com/gpu", n}};
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata",
               {{"name", name},
                {"namespace", kNamespace},
                {"uid", "uid-" + name},
                {"labels", {{"app", app}, {"pod-template-hash", template_hash}}},
                {"ownerReferences",
                 {{{"apiVersion", "apps/v1"},
                   {"kind", "ReplicaSet"},
                   {"name", app + "-" + template_hash},
                   {"uid", "rs-uid-" + app},
                   {"controller", true},
                   {"blockOwnerDeletion", true}}}}}},
              {"spec",
               {{"schedulerName", "gputopo-scheduler"},
                {"restartPolicy", "Always"},
                {"terminationGracePeriodSeconds", 30},
                {"containers",
                 {{{"name", "main"},
                   {"image", "nvcr.io/nvidia/pytorch:24.10-py3"},
                   {"resources", {{"requests", resources}, {"limits", resources}}}}}}}},
              {"status", {{"phase", node.empty() ? "Pending" : "Running"}}}};
  if (!node.empty()) {
    pod["spec"]["nodeName"] = node;
    pod["metadata"]["annotations"] = {{"gputopo.io/assigned-gpus", assigned}};
  }
  return pod;
}

using FreeSlots = std::array<int, kGpusPerNode>;  // per GPU of a node

// kube-scheduler without an extender, reduced to what this benchmark needs: the next node in
// round-robin order that has `gpus` GPUs with a free slot; takes one slot on each of the freest.
class RoundRobinChooser {
 public:
  explicit RoundRobinChooser(std::vector<FreeSlots> free) : free_(std::move(free)) {}

  // The node's index; -1 when no node has room.
  int Choose(int gpus) {
    const size_t n = free_.size();
    for (size_t k = 0; k < n; ++k) {
      const size_t node = (next_ + k) % n;
      FreeSlots& slots = free_[node];
      if (std::count_if(slots.begin(), slots.end(), [](int s) { return s > 0; }) < gpus) continue;
      std::array<int, kGpusPerNode> order;
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
        return slots[static_cast<size_t>(a)] > slots[static_cast<size_t>(b)];
      });
      for (int g = 0; g < gpus; ++g) --slots[static_cast<size_t>(order[static_cast<size_t>(g)])];
      next_ = node + 1;
      return static_cast<int>(node);
    }
    return -1;
  }

 private:
  std::vector<FreeSlots> free_;
  size_t next_ = 0;
};

struct Cluster {
  std::vector<json> nodes;
  std::vector<json> bound;                  // pods already running
  std::vector<json> backlog;                // pending pods, in queue order
  std::vector<int> backlog_gpus;            // GPUs each requests
  std::vector<size_t> first_of_deployment;  // backlog index of each Deployment's first pod
  std::vector<std::string> names;           // node names
  std::vector<FreeSlots> free;              // once the bound pods are counted
  long free_slots = 0;
  long backlog_slots = 0;
};

// Occupancy per node is drawn from 0, 25, 50 and 75% of its slots (and a few nearly full
// nodes), filled with 1-, 2- and 4-GPU pods of many services and some replicas of the
// backlog's own Deployments. Error text when the backlog would not fit.
std::optional<Cluster> MakeCluster(int node_count, int pods, uint64_t seed, std::string& error) {
  std::mt19937_64 rng(seed);
  Cluster c;
  const int services = std::max(8, node_count / 4);
  constexpr double kFill[] = {0.0, 0.25, 0.5, 0.75, 0.25, 0.5, 0.95};
  for (int i = 0; i < node_count; ++i) {
    c.nodes.push_back(MakeNode(i));
    const std::string name = c.nodes.back()["metadata"]["name"];
    c.names.push_back(name);
    FreeSlots free;
    free.fill(kReplicas);
    const int target = static_cast<int>(kFill[rng() % std::size(kFill)] * kGpusPerNode * kReplicas);
    int used = 0;
    for (int p = 0; used < target; ++p) {
      const uint64_t roll = rng() % 20;
      int gpus = roll < 15 ? 1 : roll < 18 ? 2 : 4;
      std::vector<int> open;
      for (int g = 0; g < kGpusPerNode; ++g) {
        if (free[static_cast<size_t>(g)] > 0) open.push_back(g);
      }
      if (static_cast<int>(open.size()) < gpus) gpus = 1;
      std::shuffle(open.begin(), open.end(), rng);
      std::sort(open.begin(), open.begin() + gpus);
      std::string assigned;
      for (int g = 0; g < gpus; ++g) {
        --free[static_cast<size_t>(open[static_cast<size_t>(g)])];
        assigned += (g ? "," : "") + std::to_string(open[static_cast<size_t>(g)]);
      }
      used += gpus;
      std::string app = "svc-" + std::to_string(rng() % static_cast<uint64_t>(services));
      std::string hash = "6d5f4c3b2a";
      if (rng() % 10 == 0) {  // an earlier replica of a backlog Deployment
        const Deployment& d = kDeployments[rng() % std::size(kDeployments)];
        if (d.gpus == gpus) {
          app = d.name;
          hash = d.template_hash;
        }
      }
      c.bound.push_back(
          MakePod(app + "-" + hash + "-n" + std::to_string(i) + "p" + std::to_string(p), app, hash,
                  gpus, name, assigned));
    }
    for (int s : free) c.free_slots += s;
    c.free.push_back(free);
  }
  std::vector<double> shares;
  for (const Deployment& d : kDeployments) shares.push_back(d.share);
  std::discrete_distribution<size_t> pick(shares.begin(), shares.end());
  std::vector<int> replicas(std::size(kDeployments), 0);
  c.first_of_deployment.assign(std::size(kDeployments), SIZE_MAX);
  for (int p = 0; p < pods; ++p) {
    const size_t k = pick(rng);
    const Deployment& d = kDeployments[k];
    if (c.first_of_deployment[k] == SIZE_MAX) c.first_of_deployment[k] = c.backlog.size();
    char suffix[8];
    std::snprintf(suffix, sizeof(suffix), "%05d", replicas[k]++);
    c.backlog.push_back(MakePod(std::string(d.name) + "-" + d.template_hash + "-" + suffix, d.name,
                                d.template_hash, d.gpus, "", ""));
    c.backlog_gpus.push_back(d.gpus);
    c.backlog_slots += d.gpus;
  }
  // The backlog must fit, with room to spare: the round-robin placement must place every pod,
  // and leave a quarter of the free slots.
  RoundRobinChooser check(c.free);
  for (int gpus : c.backlog_gpus) {
    if (check.Choose(gpus) < 0) {
      error = "the backlog does not fit in the cluster";
      return std::nullopt;
    }
  }
  if (c.backlog_slots * 4 > c.free_slots * 3) {
    error = "the backlog needs " + std::to_string(c.backlog_slots) + " of " +
            std::to_string(c.free_slots) + " free slots; use fewer --pods";
    return std::nullopt;
  }
  return c;
}

// An API server holding the cluster, started.
std::unique_ptr<testing::FakeApiServer> StartApiServer(const Cluster& c,
                                                       std::chrono::milliseconds write_latency) {
  testing::FakeApiServer::Options options;
  // Every write holds a worker for write_latency: room for the generator's binds, gputopo's
  // bind lane and event poster, and the watches.
  options.worker_threads = 192;
  // Keep-alive connections stay open, as kube-apiserver keeps them. httplib closes one after 5
  // requests by default, and 64 workers reconnecting at once then saw 1-2 s stalls (its listen
  // backlog is 5).
  options.keep_alive_max_count = size_t{1} << 30;
  options.keep_alive_timeout_s = 300;
  options.write_latency = write_latency;
  auto server = std::make_unique<testing::FakeApiServer>(options);
  for (const json& node : c.nodes) (void)server->CreateNode(node);
  for (const json& pod : c.bound) (void)server->CreatePod(pod);
  for (const json& pod : c.backlog) (void)server->CreatePod(pod);
  const ThreadNameScope name(kApiServerThreads);
  if (!server->Start()) return nullptr;
  return server;
}

// --- HTTP plumbing ---

// Keep-alive connections to one server, kept as Go's http.Transport keeps them: a request takes
// an idle connection or opens a new one; at most `max_idle` stay open when returned.
// Thread-safe; each connection is used by one thread at a time.
class ConnectionPool {
 public:
  ConnectionPool(int port, size_t max_idle) : port_(port), max_idle_(max_idle) {}

  std::unique_ptr<KeepAliveConnection> Take() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!idle_.empty()) {
        std::unique_ptr<KeepAliveConnection> connection = std::move(idle_.back());
        idle_.pop_back();
        return connection;
      }
      ++opened_;
    }
    return std::make_unique<KeepAliveConnection>(port_);
  }

  void Give(std::unique_ptr<KeepAliveConnection> connection) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (idle_.size() < max_idle_) {
        idle_.push_back(std::move(connection));
        return;
      }
    }
    connection.reset();  // closes the connection, outside the lock
  }

  // Opens `count` connections (one GET `path` each) and keeps them idle, as a long-running
  // client has them.
  void Warm(size_t count, const std::string& path) {
    std::vector<std::unique_ptr<KeepAliveConnection>> connections;
    for (size_t i = 0; i < count; ++i) {
      connections.push_back(Take());
      (void)connections.back()->Get(path);
    }
    for (auto& connection : connections) Give(std::move(connection));
  }

  // Connections opened so far.
  size_t opened() const {
    std::lock_guard<std::mutex> lock(mu_);
    return opened_;
  }

 private:
  const int port_;
  const size_t max_idle_;
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<KeepAliveConnection>> idle_;  // GUARDED_BY(mu_)
  size_t opened_ = 0;                                       // GUARDED_BY(mu_)
};

std::optional<HttpReply> Post(ConnectionPool& pool, const std::string& path,
                              const std::string& body) {
  std::unique_ptr<KeepAliveConnection> connection = pool.Take();
  std::optional<HttpReply> reply = connection->Post(path, body);
  pool.Give(std::move(connection));
  return reply;
}

std::optional<HttpReply> Get(ConnectionPool& pool, const std::string& path) {
  std::unique_ptr<KeepAliveConnection> connection = pool.Take();
  std::optional<HttpReply> reply = connection->Get(path);
  pool.Give(std::move(connection));
  return reply;
}

double ServerTimingMs(const HttpReply& reply) {
  const size_t pos = reply.server_timing.find("dur=");
  return pos == std::string::npos ? 0.0 : std::stod(reply.server_timing.substr(pos + 4));
}

// The pods' watch kube-scheduler's informer holds, read and counted. Stop the API server (which
// closes its watches) before destroying it.
class Informer {
 public:
  // Adds the watch's lines to `lines` (read it once this is destroyed).
  Informer(int port, const std::string& resource_version, size_t& lines)
      : lines_(lines), thread_([this, port, resource_version] {
          NameThisThread(kInformerThread);
          httplib::Client client("127.0.0.1", port);
          client.set_read_timeout(3600, 0);
          (void)client.Get("/api/v1/pods?watch=true&allowWatchBookmarks=true&resourceVersion=" +
                               resource_version,
                           [this](const char* data, size_t length) {
                             lines_ += static_cast<size_t>(std::count(data, data + length, '\n'));
                             return true;
                           });
        }) {}
  ~Informer() { thread_.join(); }

 private:
  size_t& lines_;  // written by thread_ only
  std::thread thread_;
};

// --- The scheduling queue and the bind workers ---

// Pods still to schedule. A failed bind or a pod no node passed goes back to the end of the queue
// (kube-scheduler would back off first), at most kMaxAttempts times. Thread-safe.
class SchedulingQueue {
 public:
  explicit SchedulingQueue(int pods) : attempts_(static_cast<size_t>(pods), 0), remaining_(pods) {
    for (int p = 0; p < pods; ++p) pending_.push_back(p);
  }

  // The next pod; nullopt once every pod is bound or given up. Waits while nothing is pending
  // but binds are in flight (one may fail and come back).
  std::optional<int> Next() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !pending_.empty() || remaining_ == 0; });
    if (pending_.empty()) return std::nullopt;
    const int pod = pending_.front();
    pending_.pop_front();
    return pod;
  }
  void Bound() {
    std::lock_guard<std::mutex> lock(mu_);
    ++bound_;
    if (--remaining_ == 0) cv_.notify_one();
  }
  void Failed(int pod) {
    std::lock_guard<std::mutex> lock(mu_);
    if (++attempts_[static_cast<size_t>(pod)] < kMaxAttempts) {
      pending_.push_back(pod);
      ++retries_;
    } else {
      ++given_up_;
      --remaining_;
    }
    cv_.notify_one();  // only the loop waits
  }
  int bound() const {
    std::lock_guard<std::mutex> lock(mu_);
    return bound_;
  }
  int retries() const {
    std::lock_guard<std::mutex> lock(mu_);
    return retries_;
  }
  int given_up() const {
    std::lock_guard<std::mutex> lock(mu_);
    return given_up_;
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<int> pending_;    // GUARDED_BY(mu_)
  std::vector<int> attempts_;  // GUARDED_BY(mu_)
  int remaining_;              // GUARDED_BY(mu_): neither bound nor given up
  int bound_ = 0;              // GUARDED_BY(mu_)
  int retries_ = 0;            // GUARDED_BY(mu_)
  int given_up_ = 0;           // GUARDED_BY(mu_)
};

struct BindJob {
  int pod = 0;
  std::string node;
};

// Binds run on `count` threads; at most `count` are in flight (queued or running), and Submit
// waits for one to finish beyond that. Thread-safe.
class BindWorkers {
 public:
  BindWorkers(int count, std::function<void(const BindJob&)> run)
      : max_in_flight_(count), run_(std::move(run)) {
    for (int i = 0; i < count; ++i) threads_.emplace_back([this] { Work(); });
  }
  ~BindWorkers() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    work_.notify_all();
    for (std::thread& t : threads_) t.join();
  }

  // Hands `job` over once fewer than `count` binds are in flight.
  void Submit(BindJob job) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      slot_.wait(lock, [&] { return in_flight_ < max_in_flight_; });
      ++in_flight_;
      jobs_.push_back(std::move(job));
    }
    work_.notify_one();  // one worker, not all of them: the loop keeps its CPU
  }

 private:
  void Work() {
    NameThisThread(kBindThreads);
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      work_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
      if (jobs_.empty()) return;
      BindJob job = std::move(jobs_.front());
      jobs_.pop_front();
      lock.unlock();
      run_(job);
      lock.lock();
      if (in_flight_-- == max_in_flight_) slot_.notify_one();
    }
  }

  const int max_in_flight_;
  const std::function<void(const BindJob&)> run_;
  std::mutex mu_;
  std::condition_variable work_;  // a job was queued, or stopping
  std::condition_variable slot_;  // in_flight_ dropped below the maximum
  std::deque<BindJob> jobs_;      // GUARDED_BY(mu_)
  int in_flight_ = 0;             // GUARDED_BY(mu_)
  bool stopping_ = false;         // GUARDED_BY(mu_)
  std::vector<std::thread> threads_;
};

// --- One run ---

struct Flags {
  int pods = 2000;
  int write_latency_ms = 10;
  int bind_workers = 64;
  int idle_connections = 25;
  uint64_t seed = 11;
  // kube-scheduler's own work per pod (its filter and score plugins, assume, queueing), spent
  // in both loops as a sleep: kube-scheduler runs on its own CPU, not this process's.
  int scheduler_cycle_us = 0;
  // kube-scheduler's percentageOfNodesToScore: 100 sends every node to the extender; 0 is its
  // adaptive default (what the shipped configuration leaves), NumFeasibleNodesToFind.
  int percentage_of_nodes_to_score = 100;
  // gputopo started with --filter-decides: a GPU pod's filter passes only its best node.
  bool filter_decides = false;
};

// kube-scheduler's numFeasibleNodesToFind (pkg/scheduler/schedule_one.go): how many feasible
// nodes a cycle looks for before it stops filtering, and so how many names the extender gets
// when every node passes kube-scheduler's own filters.
size_t NodesToFind(size_t all_nodes, int percentage) {
  constexpr size_t kMinFeasibleNodesToFind = 100;
  constexpr int kMinFeasibleNodesPercentageToFind = 5;
  if (all_nodes < kMinFeasibleNodesToFind) return all_nodes;
  if (percentage <= 0) {  // adaptive: 50% less 1% per 125 nodes, at least 5%
    percentage = 50 - static_cast<int>(all_nodes / 125);
    if (percentage < kMinFeasibleNodesPercentageToFind)
      percentage = kMinFeasibleNodesPercentageToFind;
  }
  if (percentage >= 100) return all_nodes;
  const size_t found = all_nodes * static_cast<size_t>(percentage) / 100;
  return found < kMinFeasibleNodesToFind ? kMinFeasibleNodesToFind : found;
}

// The loop's stand-in for kube-scheduler's own part of a scheduling cycle.
void SchedulerOwnWork(const Flags& flags) {
  if (flags.scheduler_cycle_us > 0) {
    std::this_thread::sleep_for(std::chrono::microseconds(flags.scheduler_cycle_us));
  }
}

struct RunResult {
  bool ok = false;
  double seconds = 0;  // first pod taken to last bind answered
  int bound = 0;
  int retries = 0;   // binds or filters that failed and were retried
  int given_up = 0;  // pods left unbound
  std::vector<double> bind_ms;
  std::vector<double> filter_ms, filter_server_ms, prioritize_ms, prioritize_server_ms;
  // The loop's time, summed over its cycles: filter and prioritize requests, its own work
  // (request bodies, reading replies, choosing), waiting for a bind worker or a pod.
  double loop_filter_ms = 0, loop_prioritize_ms = 0, loop_own_ms = 0, loop_wait_ms = 0;
  int cycles = 0;
  size_t connections_opened = 0;  // during the run, beyond those open before it
  size_t informer_events = 0;     // lines the generator's pod watch received
  CpuTimes cores;                 // busy during the run
  // gputopo only.
  // Filter and prioritize with no bind running (kIdleCycles cycles before the run).
  std::vector<double> idle_filter_ms, idle_filter_server_ms, idle_prioritize_server_ms;
  // gputopo's record of the last cycles (/debug/pods): nodes evaluated on the request path per
  // filter and per prioritize, and how many prioritize reused their filter's evaluations.
  double debug_filter_evaluated = 0, debug_prioritize_evaluated = 0;
  int debug_prioritize_reused = 0, debug_sampled = 0, debug_prioritized = 0;
  double watch_catch_up_ms = -1;  // after the last bind, until every reservation was confirmed
  int unbound_on_server = 0;      // backlog pods without spec.nodeName afterwards
  int overfull_gpus = 0;          // GPUs holding more pods than replicas, on the API server
  std::string events;             // gputopo_events_total by outcome
};

double PodsPerSecond(const RunResult& r) { return r.seconds > 0 ? r.bound / r.seconds : 0; }

// `"NodeNames":[...]` of a filter reply, as the JSON text of the array; nullopt when the reply
// has an Error, names no node or has no such field.
std::optional<std::string_view> PassedNames(std::string_view reply) {
  const size_t error = reply.rfind("\"Error\":\"");
  if (error == std::string_view::npos || reply.substr(error + 9, 1) != "\"") return std::nullopt;
  constexpr std::string_view kKey = "\"NodeNames\":[";
  const size_t start = reply.find(kKey);
  if (start == std::string_view::npos) return std::nullopt;
  const size_t end = reply.find(']', start);  // node names never hold a bracket
  if (end == std::string_view::npos || end == start + kKey.size()) return std::nullopt;
  return reply.substr(start + kKey.size() - 1, end - start - kKey.size() + 2);
}

// The host of a prioritize reply ([{"Host":"...","Score":n},...]) with the highest score; ties
// broken at random, as kube-scheduler's selectHost does.
std::string BestHost(std::string_view reply, std::mt19937_64& rng) {
  constexpr std::string_view kHost = "\"Host\":\"";
  constexpr std::string_view kScore = "\"Score\":";
  std::string_view best;
  long best_score = -1;
  uint64_t ties = 0;
  for (size_t pos = reply.find(kHost); pos != std::string_view::npos;
       pos = reply.find(kHost, pos)) {
    const size_t name_start = pos + kHost.size();
    const size_t name_end = reply.find('"', name_start);
    const size_t score = reply.find(kScore, name_end);
    if (name_end == std::string_view::npos || score == std::string_view::npos) break;
    const long value = std::strtol(reply.data() + score + kScore.size(), nullptr, 10);
    if (value > best_score) {
      best_score = value;
      best = reply.substr(name_start, name_end - name_start);
      ties = 1;
    } else if (value == best_score && rng() % ++ties == 0) {
      best = reply.substr(name_start, name_end - name_start);
    }
    pos = score;
  }
  return std::string(best);
}

// NodeNames arrays over every node, each in its own order (kube-scheduler's node list has no
// fixed order); requests take them in turn, so building a body is one copy.
std::vector<std::string> NameLists(const Cluster& c, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::string> lists;
  std::vector<size_t> order(c.names.size());
  std::iota(order.begin(), order.end(), size_t{0});
  for (int k = 0; k < 8; ++k) {
    std::shuffle(order.begin(), order.end(), rng);
    std::string list = "[";
    for (size_t i = 0; i < order.size(); ++i) list += (i ? ",\"" : "\"") + c.names[order[i]] + "\"";
    lists.push_back(list + "]");
  }
  return lists;
}

std::string ArgsBody(const std::string& pod, std::string_view names) {
  std::string body;
  body.reserve(pod.size() + names.size() + 40);
  body.append("{\"Pod\":").append(pod).append(",\"Nodes\":null,\"NodeNames\":").append(names);
  body.push_back('}');
  return body;
}

// The loop without an extender: round-robin choice, Bindings posted to the API server.
RunResult RunWithoutExtender(const Cluster& c, const Flags& flags) {
  RunResult r;
  auto server = StartApiServer(c, std::chrono::milliseconds(flags.write_latency_ms));
  if (!server) return r;
  ConnectionPool api(server->port(), static_cast<size_t>(flags.bind_workers));
  api.Warm(static_cast<size_t>(flags.bind_workers), "/version");
  std::vector<std::string> uids;
  for (const json& pod : c.backlog) uids.push_back(pod["metadata"]["uid"]);
  RoundRobinChooser chooser(c.free);
  size_t informer_lines = 0;
  SchedulingQueue queue(static_cast<int>(c.backlog.size()));
  std::mutex stats_mu;
  auto informer =
      std::make_unique<Informer>(server->port(), server->resource_version(), informer_lines);
  (void)server->WaitForOpenWatches(1, std::chrono::seconds(10));
  {
    BindWorkers workers(flags.bind_workers, [&](const BindJob& job) {
      const json& pod = c.backlog[static_cast<size_t>(job.pod)];
      const std::string name = pod["metadata"]["name"];
      const json binding = {
          {"apiVersion", "v1"},
          {"kind", "Binding"},
          {"metadata",
           {{"name", name},
            {"namespace", kNamespace},
            {"uid", uids[static_cast<size_t>(job.pod)]}}},
          {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", job.node}}}};
      const auto t0 = SteadyClock::now();
      std::optional<HttpReply> res =
          Post(api, std::string("/api/v1/namespaces/") + kNamespace + "/pods/" + name + "/binding",
               binding.dump());
      const auto t1 = SteadyClock::now();
      if (res && res->status == 201) {
        {
          std::lock_guard<std::mutex> lock(stats_mu);
          r.bind_ms.push_back(Ms(t1 - t0));
        }
        queue.Bound();
      } else {
        queue.Failed(job.pod);
      }
    });
    const ThreadNameScope name(kLoopThread);
    const CpuTimes cpu_start = ReadCpuTimes();
    const auto start = SteadyClock::now();
    while (true) {
      const auto t0 = SteadyClock::now();
      std::optional<int> pod = queue.Next();
      const auto t1 = SteadyClock::now();
      r.loop_wait_ms += Ms(t1 - t0);
      if (!pod) break;
      SchedulerOwnWork(flags);
      const int node = chooser.Choose(c.backlog_gpus[static_cast<size_t>(*pod)]);
      const auto t2 = SteadyClock::now();
      r.loop_own_ms += Ms(t2 - t1);
      ++r.cycles;
      if (node < 0) {
        queue.Failed(*pod);
        continue;
      }
      workers.Submit({*pod, c.names[static_cast<size_t>(node)]});
      r.loop_wait_ms += Ms(SteadyClock::now() - t2);
    }
    r.seconds = std::chrono::duration<double>(SteadyClock::now() - start).count();
    r.cores = CoresSince(cpu_start, r.seconds);
    r.connections_opened = api.opened() - static_cast<size_t>(flags.bind_workers);
  }  // the workers are idle now; ~BindWorkers joins them
  server->Stop();
  informer.reset();
  r.informer_events = informer_lines;
  r.bound = queue.bound();
  r.retries = queue.retries();
  r.given_up = queue.given_up();
  r.ok = true;
  return r;
}

// Slots per GPU that bound pods hold according to the API server, and how many exceed replicas.
int OverfullGpus(const testing::FakeApiServer& server) {
  std::map<std::string, std::array<int, kGpusPerNode>> slots;
  for (const json& pod : server.Pods()) {
    const std::string node = pod["spec"].value("nodeName", "");
    if (node.empty()) continue;
    const json annotations = pod["metadata"].value("annotations", json::object());
    const std::string assigned = annotations.value("gputopo.io/assigned-gpus", "");
    auto& per_gpu = slots.try_emplace(node, std::array<int, kGpusPerNode>{}).first->second;
    std::stringstream in(assigned);
    for (std::string gpu; std::getline(in, gpu, ',');) {
      const int g = std::stoi(gpu);
      if (g >= 0 && g < kGpusPerNode) ++per_gpu[static_cast<size_t>(g)];
    }
  }
  int overfull = 0;
  for (const auto& [node, per_gpu] : slots) {
    overfull += static_cast<int>(
        std::count_if(per_gpu.begin(), per_gpu.end(), [](int s) { return s > kReplicas; }));
  }
  return overfull;
}

// gputopo_events_total by outcome, from gputopo's /metrics ("posted 123, dropped 4").
std::string EventCounts(ConnectionPool& pool) {
  std::optional<HttpReply> res = Get(pool, "/metrics");
  if (!res) return "?";
  std::string out;
  std::istringstream in(res->body);
  constexpr std::string_view kPrefix = "gputopo_events_total{outcome=\"";
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(kPrefix, 0) != 0) continue;
    const size_t quote = line.find('"', kPrefix.size());
    const size_t space = line.rfind(' ');
    if (quote == std::string::npos || space == std::string::npos) continue;
    out += (out.empty() ? "" : ", ") + line.substr(kPrefix.size(), quote - kPrefix.size()) + " " +
           line.substr(space + 1);
  }
  return out;
}

// The loop with gputopo: filter, prioritize, highest score, bind through the extender.
RunResult RunWithGputopo(const Cluster& c, const Flags& flags) {
  RunResult r;
  auto server = StartApiServer(c, std::chrono::milliseconds(flags.write_latency_ms));
  if (!server) return r;
  app::SystemClock clock;
  app::AppOptions options;
  options.server.http.port = 0;
  options.server.http.grace_period = std::chrono::seconds(2);
  options.kube = kube::KubeConfig{};
  options.kube->server = server->base_url();
  options.client.request_timeout = std::chrono::seconds(60);
  options.filter_decides = flags.filter_decides;
  std::unique_ptr<app::App> app;
  {
    const ThreadNameScope name(kGputopoThreads);
    auto created = app::App::Create(options, clock);
    if (!created.ok()) {
      std::cerr << "cannot create gputopo: " << created.status().ToString() << "\n";
      return r;
    }
    app = std::move(created).value();
    if (!app->Start().ok()) return r;
  }
  const auto sync_start = SteadyClock::now();
  while (!app->Ready()) {
    if (SteadyClock::now() - sync_start > std::chrono::minutes(3)) {
      std::cerr << "gputopo did not sync\n";
      return r;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  // Every pending pod must be in gputopo's cache before its bind (it is, once synced: they were
  // all created before gputopo started).
  ConnectionPool extender(app->port(), static_cast<size_t>(flags.idle_connections));
  extender.Warm(static_cast<size_t>(flags.idle_connections), "/healthz");
  std::vector<std::string> pod_json, uids;
  for (const json& pod : c.backlog) {
    const std::string name = pod["metadata"]["name"];
    pod_json.push_back(server->GetPodObject(kNamespace, name)->dump());
    uids.push_back(pod["metadata"]["uid"]);
  }
  const std::vector<std::string> lists = NameLists(c, flags.seed + 1);
  // Sampling as kube-scheduler does it: from its node list (one fixed order), the next
  // NodesToFind nodes after where the last cycle stopped (nextStartNodeIndex).
  const size_t to_find = NodesToFind(c.names.size(), flags.percentage_of_nodes_to_score);
  std::vector<size_t> node_order(c.names.size());
  std::iota(node_order.begin(), node_order.end(), size_t{0});
  std::shuffle(node_order.begin(), node_order.end(), std::mt19937_64(flags.seed + 3));
  size_t next_start = 0;
  std::string sample;
  // One unmeasured filter and prioritize per Deployment: the shapes' first evaluation of every
  // node (the cold case) happens here, and the background refresher learns the shapes.
  for (size_t first : c.first_of_deployment) {
    if (first == SIZE_MAX) continue;
    const std::string body = ArgsBody(pod_json[first], lists[0]);
    (void)Post(extender, "/filter", body);
    (void)Post(extender, "/prioritize", body);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));

  // One scheduling cycle: filter over every node, prioritize the nodes that passed, the best
  // host ("" when none). Its times go to `into`.
  std::mt19937_64 rng(flags.seed + 2);
  size_t turn = 0;
  auto cycle = [&](int pod, RunResult& into) -> std::string {
    const auto t1 = SteadyClock::now();
    ++into.cycles;
    const std::string& pod_text = pod_json[static_cast<size_t>(pod)];
    std::string_view names = lists[turn++ % lists.size()];
    if (to_find < c.names.size()) {
      sample = "[";
      for (size_t k = 0; k < to_find; ++k) {
        sample +=
            (k ? ",\"" : "\"") + c.names[node_order[(next_start + k) % c.names.size()]] + "\"";
      }
      sample += "]";
      next_start = (next_start + to_find) % c.names.size();
      names = sample;
    }
    const std::string filter_body = ArgsBody(pod_text, names);
    const auto t2 = SteadyClock::now();
    std::optional<HttpReply> filtered = Post(extender, "/filter", filter_body);
    const auto t3 = SteadyClock::now();
    into.loop_own_ms += Ms(t2 - t1);
    into.loop_filter_ms += Ms(t3 - t2);
    std::optional<std::string_view> passed;
    if (filtered && filtered->status == 200) {
      into.filter_ms.push_back(Ms(t3 - t2));
      into.filter_server_ms.push_back(ServerTimingMs(*filtered));
      passed = PassedNames(filtered->body);
    }
    if (!passed) return "";
    if (passed->find(',') == std::string_view::npos) {
      // One feasible node: kube-scheduler takes it without scoring (schedulePod, "When only
      // one node after predicate, just use it"), so no prioritize. Node names hold no comma.
      std::string only(passed->substr(2, passed->size() - 4));  // ["name"]
      into.loop_own_ms += Ms(SteadyClock::now() - t3);
      return only;
    }
    const std::string prioritize_body = ArgsBody(pod_text, *passed);
    const auto t4 = SteadyClock::now();
    std::optional<HttpReply> scored = Post(extender, "/prioritize", prioritize_body);
    const auto t5 = SteadyClock::now();
    into.loop_own_ms += Ms(t4 - t3);
    into.loop_prioritize_ms += Ms(t5 - t4);
    if (!scored || scored->status != 200) return "";
    into.prioritize_ms.push_back(Ms(t5 - t4));
    into.prioritize_server_ms.push_back(ServerTimingMs(*scored));
    std::string best = BestHost(scored->body, rng);
    into.loop_own_ms += Ms(SteadyClock::now() - t5);
    return best;
  };
  // The same cycles with no bind running, for comparison (nothing is bound: the pods are
  // scheduled again in the run).
  {
    RunResult idle;
    for (int p = 0; p < std::min(kIdleCycles, static_cast<int>(c.backlog.size())); ++p) {
      (void)cycle(p, idle);
    }
    r.idle_filter_ms = std::move(idle.filter_ms);
    r.idle_filter_server_ms = std::move(idle.filter_server_ms);
    r.idle_prioritize_server_ms = std::move(idle.prioritize_server_ms);
  }

  SchedulingQueue queue(static_cast<int>(c.backlog.size()));
  std::mutex stats_mu;
  auto last_bind = SteadyClock::now();
  size_t informer_lines = 0;
  auto informer =
      std::make_unique<Informer>(server->port(), server->resource_version(), informer_lines);
  (void)server->WaitForOpenWatches(3, std::chrono::seconds(10));  // gputopo's two and ours
  {
    BindWorkers workers(flags.bind_workers, [&](const BindJob& job) {
      const json bind = {{"PodName", c.backlog[static_cast<size_t>(job.pod)]["metadata"]["name"]},
                         {"PodNamespace", kNamespace},
                         {"PodUID", uids[static_cast<size_t>(job.pod)]},
                         {"Node", job.node}};
      const auto t0 = SteadyClock::now();
      std::optional<HttpReply> res = Post(extender, "/bind", bind.dump());
      const auto t1 = SteadyClock::now();
      const bool ok = res && res->status == 200 &&
                      json::parse(res->body, nullptr, false).value("Error", "x").empty();
      if (ok) {
        {
          std::lock_guard<std::mutex> lock(stats_mu);
          r.bind_ms.push_back(Ms(t1 - t0));
          last_bind = std::max(last_bind, t1);
        }
        queue.Bound();
      } else {
        queue.Failed(job.pod);
      }
    });
    std::fprintf(stderr, "%zu nodes, gputopo: timed run starts\n", c.names.size());
    const ThreadNameScope name(kLoopThread);
    const CpuTimes cpu_start = ReadCpuTimes();
    const auto start = SteadyClock::now();
    while (true) {
      const auto t0 = SteadyClock::now();
      std::optional<int> pod = queue.Next();
      r.loop_wait_ms += Ms(SteadyClock::now() - t0);
      if (!pod) break;
      const auto own = SteadyClock::now();
      SchedulerOwnWork(flags);
      r.loop_own_ms += Ms(SteadyClock::now() - own);
      std::string best = cycle(*pod, r);
      const auto t6 = SteadyClock::now();
      if (best.empty()) {
        queue.Failed(*pod);
        continue;
      }
      workers.Submit({*pod, std::move(best)});
      r.loop_wait_ms += Ms(SteadyClock::now() - t6);
    }
    r.seconds = std::chrono::duration<double>(SteadyClock::now() - start).count();
    r.cores = CoresSince(cpu_start, r.seconds);
    r.connections_opened = extender.opened() - static_cast<size_t>(flags.idle_connections);
  }
  r.bound = queue.bound();
  r.retries = queue.retries();
  r.given_up = queue.given_up();
  // The watch brings every bind back: no reservation left once it has caught up.
  const auto wait_start = SteadyClock::now();
  while (app->state().Counts().reservations != 0 &&
         SteadyClock::now() - wait_start < std::chrono::seconds(60)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (app->state().Counts().reservations == 0) {
    r.watch_catch_up_ms = std::max(0.0, Ms(SteadyClock::now() - last_bind));
  }
  r.events = EventCounts(extender);
  for (size_t i = c.backlog.size() - std::min(c.backlog.size(), size_t{kDebugSamples});
       i < c.backlog.size(); ++i) {
    std::optional<HttpReply> res =
        Get(extender, std::string("/debug/pods/") + kNamespace + "/" +
                          c.backlog[i]["metadata"]["name"].get<std::string>());
    if (!res || res->status != 200) continue;
    const json pod = json::parse(res->body, nullptr, false);
    if (!pod.contains("filter")) continue;
    ++r.debug_sampled;
    r.debug_filter_evaluated += pod["filter"].value("evaluated", 0.0);
    if (!pod.contains("prioritize")) continue;  // one feasible node: no prioritize
    ++r.debug_prioritized;
    r.debug_prioritize_evaluated += pod["prioritize"].value("evaluated", 0.0);
    if (pod["prioritize"].value("evaluationsFrom", "") == "filter") ++r.debug_prioritize_reused;
  }
  for (const json& pod : c.backlog) {
    const auto stored = server->GetPodObject(kNamespace, pod["metadata"]["name"]);
    if (!stored || !(*stored)["spec"].contains("nodeName")) ++r.unbound_on_server;
  }
  r.overfull_gpus = OverfullGpus(*server);
  app->Stop();
  server->Stop();
  informer.reset();
  r.informer_events = informer_lines;
  r.ok = true;
  return r;
}

// --- Report ---

// `value` with `decimals` decimals, then `unit`.
std::string Fmt(double value, int decimals, const char* unit = "") {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.*f%s", decimals, value, unit);
  return buffer;
}

int Main(int argc, char** argv) {
  CLI::App cli{"gputopo under a kube-scheduler-shaped load, against the fake API server"};
  std::vector<int> node_counts = {300, 5000};
  Flags flags;
  std::string out = "bench/results";
  cli.add_option("--nodes", node_counts, "cluster sizes (8-GPU nodes)")
      ->delimiter(',')
      ->capture_default_str();
  cli.add_option("--pods", flags.pods, "pending pods to schedule per run")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000000));
  cli.add_option("--write-latency-ms", flags.write_latency_ms,
                 "latency of every write request on the API server (POST, PATCH, PUT, DELETE)")
      ->capture_default_str()
      ->check(CLI::Range(0, 10000));
  cli.add_option("--bind-workers", flags.bind_workers, "binds in flight at most")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  cli.add_option("--idle-connections", flags.idle_connections,
                 "keep-alive connections to the extender kept idle (Go's MaxIdleConnsPerHost)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  std::vector<int> cycles_us = {0, 3300};
  cli.add_option("--scheduler-cycle-us", cycles_us,
                 "kube-scheduler's own work per pod, in both loops (a list: each is a run). 0: "
                 "none, the loop only binds; 3300: a real kube-scheduler's 300 pods/s at 300 "
                 "nodes without an extender (the upper end measured behind the issue)")
      ->delimiter(',')
      ->capture_default_str();
  std::vector<int> decides = {0};
  cli.add_option("--filter-decides", decides,
                 "0: gputopo as shipped (filter passes every node that fits, prioritize scores "
                 "them); 1: gputopo started with --filter-decides (filter passes its best node "
                 "alone, and kube-scheduler skips scoring). A list: each is a run beside the "
                 "same loop without an extender")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::Range(0, 1));
  std::vector<int> percentages = {100};
  cli.add_option("--percentage-of-nodes-to-score", percentages,
                 "kube-scheduler's percentageOfNodesToScore (a list: each is a run). 100: every "
                 "node goes to the extender; 0: kube-scheduler's adaptive default, which the "
                 "shipped configuration keeps (at 5000 nodes it looks for 500 feasible nodes)")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::Range(0, 100));
  cli.add_option("--seed", flags.seed)->capture_default_str();
  cli.add_option("--out", out, "directory for scheduler_load.md and .csv")->capture_default_str();
  CLI11_PARSE(cli, argc, argv);
  spdlog::set_level(spdlog::level::warn);
  // As gputopo's main does, so that the server in this process allocates alike.
  app::TuneAllocator();
  curl_global_init(CURL_GLOBAL_DEFAULT);

  std::filesystem::create_directories(out);
  std::ofstream csv(out + "/scheduler_load.csv");
  csv << "nodes,scheduler_cycle_us,pods,loop,seconds,pods_per_s,ratio,bind_p50_ms,bind_p99_ms,"
         "filter_p50_ms,"
         "filter_p99_ms,filter_server_p50_ms,filter_server_p99_ms,prioritize_p50_ms,"
         "prioritize_p99_ms,loop_filter_ms_per_pod,loop_prioritize_ms_per_pod,"
         "loop_own_ms_per_pod,loop_wait_ms_per_pod,retries,given_up,names_per_request,"
         "filter_decides\n";
  std::ostringstream md, notes;
  md << "| nodes | names per request | scheduler's own cycle | loop | pods/s | ratio | bind p50 | "
        "bind p99 | filter p50 | filter p99 | filter server p99 |\n"
     << "|---|---|---|---|---|---|---|---|---|---|---|\n";
  bool all_ok = true;
  for (int percentage : percentages) {
    flags.percentage_of_nodes_to_score = percentage;
    for (int cycle_us : cycles_us) {
      flags.scheduler_cycle_us = cycle_us;
      for (int nodes : node_counts) {
        const size_t names_sent = NodesToFind(static_cast<size_t>(nodes), percentage);
        const std::string sent =
            std::to_string(names_sent) + (percentage == 100 ? " (all)" : " (adaptive)");
        std::string error;
        const std::optional<Cluster> cluster = MakeCluster(nodes, flags.pods, flags.seed, error);
        if (!cluster) {
          std::cerr << nodes << " nodes: " << error << "\n";
          return 2;
        }
        std::fprintf(
            stderr, "%d nodes: %zu pods bound already, %d pending (%ld of %ld free slots)\n", nodes,
            cluster->bound.size(), flags.pods, cluster->backlog_slots, cluster->free_slots);
        const RunResult base = RunWithoutExtender(*cluster, flags);
        if (!base.ok) {
          std::cerr << nodes << " nodes: a run could not start\n";
          return 2;
        }
        bool base_row = false;
        for (int decide : decides) {
          flags.filter_decides = decide != 0;
          const std::string mode = flags.filter_decides ? ", --filter-decides" : "";
          const RunResult with = RunWithGputopo(*cluster, flags);
          if (!with.ok) {
            std::cerr << nodes << " nodes: a run could not start\n";
            return 2;
          }
          const double ratio =
              PodsPerSecond(base) > 0 ? PodsPerSecond(with) / PodsPerSecond(base) : 0;
          auto per_pod = [](double total, const RunResult& r) {
            return r.cycles > 0 ? total / r.cycles : 0.0;
          };
          auto row = [&](const std::string& loop, const RunResult& r, bool extender) {
            const std::string dash = "-";
            md << "| " << nodes << " | " << sent << " | " << Fmt(cycle_us / 1000.0, 1, " ms")
               << " | " << loop << " | " << Fmt(PodsPerSecond(r), 0) << " | "
               << (extender ? Fmt(ratio, 2) : dash) << " | "
               << Fmt(Percentile(r.bind_ms, 0.5), 2, " ms") << " | "
               << Fmt(Percentile(r.bind_ms, 0.99), 2, " ms") << " | "
               << (extender ? Fmt(Percentile(r.filter_ms, 0.5), 3, " ms") : dash) << " | "
               << (extender ? Fmt(Percentile(r.filter_ms, 0.99), 3, " ms") : dash) << " | "
               << (extender ? Fmt(Percentile(r.filter_server_ms, 0.99), 3, " ms") : dash) << " |\n";
            csv << nodes << "," << cycle_us << "," << flags.pods << ","
                << (extender ? "gputopo" : "no-extender") << "," << r.seconds << ","
                << PodsPerSecond(r) << "," << (extender ? ratio : 1.0) << ","
                << Percentile(r.bind_ms, 0.5) << "," << Percentile(r.bind_ms, 0.99) << ","
                << Percentile(r.filter_ms, 0.5) << "," << Percentile(r.filter_ms, 0.99) << ","
                << Percentile(r.filter_server_ms, 0.5) << ","
                << Percentile(r.filter_server_ms, 0.99) << "," << Percentile(r.prioritize_ms, 0.5)
                << "," << Percentile(r.prioritize_ms, 0.99) << "," << per_pod(r.loop_filter_ms, r)
                << "," << per_pod(r.loop_prioritize_ms, r) << "," << per_pod(r.loop_own_ms, r)
                << "," << per_pod(r.loop_wait_ms, r) << "," << r.retries << "," << r.given_up << ","
                << names_sent << "," << (extender && flags.filter_decides ? 1 : 0) << "\n";
          };
          row(flags.filter_decides ? "gputopo, filter decides" : "gputopo", with, true);
          if (!base_row) row("no extender", base, false);
          base_row = true;
          auto mean = [](const std::vector<double>& v) {
            return v.empty()
                       ? 0.0
                       : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
          };
          char line[4096];
          std::snprintf(
              line, sizeof(line),
              "- %d nodes, %s names per request%s, scheduler's own cycle %d us (%zu pods already "
              "bound, %d pending), the loop's time per pod, mean: with "
              "gputopo %.3f ms = filter %.3f (of which gputopo's handler %.3f) + prioritize %.3f "
              "(handler %.3f) + the generator's own work %.3f (the scheduler's own cycle, request "
              "bodies, reading replies, choosing) + waiting for a bind worker or the last binds "
              "%.3f; "
              "without an extender "
              "%.3f ms, %.3f of it waiting for a bind worker. Cores busy during the run, with "
              "gputopo: "
              "%s; without an extender: %s.\n",
              nodes, sent.c_str(), mode.c_str(), cycle_us, cluster->bound.size(), flags.pods,
              per_pod(with.loop_filter_ms + with.loop_prioritize_ms + with.loop_own_ms +
                          with.loop_wait_ms,
                      with),
              per_pod(with.loop_filter_ms, with), mean(with.filter_server_ms),
              per_pod(with.loop_prioritize_ms, with), mean(with.prioritize_server_ms),
              per_pod(with.loop_own_ms, with), per_pod(with.loop_wait_ms, with),
              per_pod(base.loop_own_ms + base.loop_wait_ms, base), per_pod(base.loop_wait_ms, base),
              DescribeCores(with.cores).c_str(), DescribeCores(base.cores).c_str());
          notes << line;
          std::fprintf(stderr, "%s", line);
          {
            // What the round trips alone cost: the same loop if gputopo's handlers took no time.
            const double with_pod = per_pod(with.loop_filter_ms + with.loop_prioritize_ms +
                                                with.loop_own_ms + with.loop_wait_ms,
                                            with);
            const double prioritized = static_cast<double>(with.prioritize_server_ms.size()) /
                                       std::max<size_t>(1, with.filter_server_ms.size());
            const double handlers =
                mean(with.filter_server_ms) + prioritized * mean(with.prioritize_server_ms);
            const double base_pod = per_pod(base.loop_own_ms + base.loop_wait_ms, base);
            const double transport =
                per_pod(with.loop_filter_ms + with.loop_prioritize_ms, with) - handlers;
            std::snprintf(line, sizeof(line),
                          "- %d nodes, %s names%s, where the time goes: of the %.3f ms that "
                          "filter and prioritize add per pod, gputopo's handlers take %.3f and the "
                          "%.2f HTTP round trips per pod (client, loopback, server I/O; a "
                          "prioritize in %.0f%% of cycles) %.3f; with handlers that took no time "
                          "the ratio would be %.2f on this machine.\n",
                          nodes, sent.c_str(), mode.c_str(), with_pod - base_pod, handlers,
                          1 + prioritized, 100 * prioritized, transport,
                          base_pod / std::max(1e-9, with_pod - handlers));
            notes << line;
            std::fprintf(stderr, "%s", line);
          }
          std::snprintf(
              line, sizeof(line),
              "- %d nodes%s, checks: %d and %d of %d pods bound (with gputopo and without; %d "
              "binds "
              "retried, %d pods given up); afterwards the API server holds %d of them unbound and "
              "%d GPUs with more than %d pods, and gputopo's watch had confirmed every bind %.0f "
              "ms "
              "after the last one answered; the generator's own pod watch received %zu and %zu "
              "lines (events and bookmarks); %zu connections to gputopo opened during the run; "
              "gputopo's Events: %s.\n",
              nodes, mode.c_str(), with.bound, base.bound, flags.pods, with.retries,
              with.given_up + base.given_up, with.unbound_on_server, with.overfull_gpus, kReplicas,
              with.watch_catch_up_ms, with.informer_events, base.informer_events,
              with.connections_opened, with.events.c_str());
          notes << line;
          std::fprintf(stderr, "%s", line);
          const double sampled = std::max(1, with.debug_sampled);
          std::snprintf(
              line, sizeof(line),
              "- %d nodes%s, the same cycles with no bind running (%zu before the run): filter p50 "
              "%.3f, p99 %.3f ms end-to-end; handler mean filter %.3f, prioritize %.3f ms. "
              "gputopo's "
              "record of the last %d pods' cycles (`/debug/pods`): nodes evaluated on the request "
              "path "
              "per filter %.1f, per prioritize %.1f (mean); prioritize reused its filter's "
              "evaluations "
              "in %d of the %d cycles that had one (it does when the snapshot has not changed "
              "in between).\n",
              nodes, mode.c_str(), with.idle_filter_ms.size(), Percentile(with.idle_filter_ms, 0.5),
              Percentile(with.idle_filter_ms, 0.99), mean(with.idle_filter_server_ms),
              mean(with.idle_prioritize_server_ms), with.debug_sampled,
              with.debug_filter_evaluated / sampled,
              with.debug_prioritize_evaluated / std::max(1, with.debug_prioritized),
              with.debug_prioritize_reused, with.debug_prioritized);
          notes << line;
          std::fprintf(stderr, "%s", line);
          all_ok = all_ok && with.given_up == 0 && base.given_up == 0 &&
                   with.unbound_on_server == 0 && with.overfull_gpus == 0 &&
                   with.watch_catch_up_ms >= 0;
        }
      }
    }
  }
  md << "\n" << notes.str();
  std::ofstream(out + "/scheduler_load.md") << md.str();
  std::cout << md.str();
  if (!all_ok) std::cerr << "some pods were not bound, or the books do not balance\n";
  return all_ok ? 0 : 1;
}

}  // namespace
}  // namespace gputopo::bench

int main(int argc, char** argv) { return gputopo::bench::Main(argc, argv); }
