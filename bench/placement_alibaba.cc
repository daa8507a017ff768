// Placement quality on Alibaba's GPU-sharing trace, with the FGD paper's methodology: pods arrive
// in a random order (one order per seed), the trace inflated by resampling its pods (or cut short)
// until their GPU requests reach 130% of the cluster's GPU capacity; nothing is deleted. Reported,
// as the FGD authors' analysis does: the GPU allocation ratio at 100% and 130% of capacity
// arrived (the mean over the arrivals whose arrived share rounds to that percent), and FGD's
// fragmentation measure at 100% (share of GPU capacity that FGD's target workload could not use),
// next to the published FGD results.
//
//   placement_alibaba --data ../shared/data/alibaba-gpu-v2023 --workloads default,multigpu50
//       --seeds 10 --policies random,bestfit,stock,gputopo:default --out results/
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>
#include <tuple>

#include "bench/sim/placers.h"
#include "bench/sim/trace.h"
#include "gputopo/well_known.h"
#include "topology/shape_interner.h"

namespace gputopo::bench {
namespace {

struct RunResult {
  std::string workload;
  std::string policy;
  uint64_t seed = 0;
  double alloc100 = 0;    // % of GPU capacity allocated when arrivals reach 100%
  double alloc130 = 0;    // ... at 130%
  double frag100 = 0;     // % of GPU capacity fragmented at 100%
  int pending = 0;        // GPU pods that found no node
  int overcommitted = 0;  // stock only: pods handed a GPU that could not hold them
  double seconds = 0;
  std::vector<double> curve;  // allocation % at each arrived % (0..130)
};

std::vector<SimNode> BuildNodes(const std::vector<TraceNode>& trace, int replicas,
                                topology::ShapeInterner& interner) {
  std::vector<SimNode> nodes;
  for (const TraceNode& t : trace) {
    if (t.gpus <= 0) continue;
    SimNode node;
    node.name = t.name;
    node.model = t.model;
    node.cpu_milli = t.cpu_milli;
    node.memory_mib = t.memory_mib;
    node.replicas = replicas;
    node.shape = *interner.Intern(MachineTopology(t.gpus));  // the trace has no topology
    node.info.name = t.name;
    node.info.allocatable_gpus = static_cast<int64_t>(t.gpus) * replicas;
    node.info.allocatable_cpu_milli = t.cpu_milli;
    node.info.allocatable_memory_bytes = t.memory_mib * 1024 * 1024;
    node.info.label_gpu_count = std::to_string(t.gpus);
    node.info.label_gpu_replicas = std::to_string(replicas);
    node.info.label_gpu_product = t.model;
    nodes.push_back(std::move(node));
  }
  return nodes;
}

// FGD's target workload: the trace's pod classes (CPU, share of each GPU, GPU count, GPU models;
// CPU-only pods included, memory not part of a class), the most frequent first, as many as cover
// 95% of the pods, weighted by frequency among them.
WorkloadMix FgdMix(const std::vector<TracePod>& pods) {
  using Key = std::tuple<int64_t, int, int, std::vector<std::string>>;  // cpu, milli, gpus, spec
  std::map<Key, int> counts;
  for (const TracePod& p : pods) {
    ++counts[{p.cpu_milli, p.gpus > 0 ? p.gpu_milli : 0, p.gpus, p.gpu_spec}];
  }
  std::vector<std::pair<Key, int>> sorted(counts.begin(), counts.end());
  // Most frequent first; among equals, the larger class first (the FGD simulator's order).
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first > b.first;
  });
  const double wanted = 0.95 * static_cast<double>(pods.size());
  double covered = 0;
  WorkloadMix mix;
  for (const auto& [key, count] : sorted) {
    if (covered >= wanted) break;
    covered += count;
    WorkloadMix::Class c;
    c.cpu_milli = std::get<0>(key);
    c.milli = std::get<1>(key);
    c.gpus = std::get<2>(key);
    c.gpu_spec = std::get<3>(key);
    c.weight = count;
    mix.classes.push_back(std::move(c));
  }
  for (WorkloadMix::Class& c : mix.classes) c.weight /= covered;
  return mix;
}

// The shipped pack preset's components with packing at `pack` of fragmentation's weight, and
// fragmentation's workload either learned (`learned`) or pinned to the trace's GPU pod classes as
// FGD's target workload has them (CPU included; an operator could pin them so). CPU-only classes
// are left out: they would add the same to every GPU placement's fragmentation change.
std::shared_ptr<const policies::Preset> AllPodsPreset(const WorkloadMix& mix, double pack,
                                                      bool learned = false) {
  std::vector<policies::WorkloadClass> workload;
  for (const WorkloadMix::Class& c : mix.classes) {
    if (learned) break;
    if (c.gpus == 0) continue;
    policies::WorkloadClass cls{c.gpus, c.milli, c.weight};
    cls.cpu_milli = c.cpu_milli;
    workload.push_back(cls);
  }
  policies::PresetSpec spec;
  spec.name = "trace-allpods";
  spec.normalization = "rank";
  spec.sharing_pod_steps = 100;  // as pack: share pods in FGD's order
  spec.components = {{"replica-spread", 3, {{{"islandPenalty", 0.1}}, {}}},
                     {"locality", 3, {}},
                     {"fragmentation",
                      10,
                      {learned ? std::map<std::string, double>{{"learnedWorkload", 1}}
                               : std::map<std::string, double>{},
                       workload}}};
  if (pack > 0) spec.components.push_back({"packing", 10 * pack, {}});
  auto preset = policies::BuildPreset(spec, policies::BuiltinComponents());
  if (!preset.ok()) std::cerr << preset.status().ToString() << "\n";
  return preset.ok() ? *preset : nullptr;
}

RunResult Run(const std::string& workload, const std::vector<TraceNode>& trace_nodes,
              const std::vector<TracePod>& trace_pods, const WorkloadMix& mix,
              const std::string& policy, uint64_t seed, int replicas,
              const policies::PresetCatalog& presets) {
  topology::ShapeInterner interner;
  SimCluster cluster(BuildNodes(trace_nodes, replicas, interner));
  std::unique_ptr<Placer> placer;
  if (policy == "random")
    placer = MakeRandomPlacer(seed);
  else if (policy == "bestfit")
    placer = MakeFgdBestFitPlacer(seed);
  else if (policy == "stock")
    placer = MakeStockKubernetesPlacer(seed);
  else if (policy == "fgd")
    placer = MakeFgdPlacer(mix, seed);
  else if (policy == "fgd-exact")
    placer = MakeFgdPlacer(mix, seed, {.exact = true});
  else if (policy == "fgd-random-ties")
    placer = MakeFgdPlacer(mix, seed, {.random_ties = true});
  else if (policy == "fgd-exact-random-ties")
    placer = MakeFgdPlacer(mix, seed, {.exact = true, .random_ties = true});
  else if (policy.rfind("fgd-pack:", 0) == 0)
    placer = MakeFgdPlacer(
        mix, seed,
        {.exact = true, .random_ties = true, .pack_weight = std::stod(policy.substr(9))});
  else if (policy == "fgd-as-extender")
    placer = MakeFgdPlacer(mix, seed, {.as_extender = true});
  else {
    // gputopo:<preset> behind kube-scheduler; gputopo-alone:<preset> deciding alone;
    // gputopo-all:<preset> in all-pod mode.
    const GputopoMode mode = policy.rfind("gputopo-alone:", 0) == 0 ? GputopoMode::kAlone
                             : policy.rfind("gputopo-all:", 0) == 0 ? GputopoMode::kAllPods
                             : policy.rfind("gputopo-decides:", 0) == 0
                                 ? GputopoMode::kAllPodsFilterDecides
                                 : GputopoMode::kBehindScheduler;
    std::string preset = policy.substr(policy.find(':') + 1);
    // <preset>@half=<pods>;mem=<0|1>;cover=<share>;classes=<n>: the learner's options.
    cluster::WorkloadLearnerOptions learner;
    if (const size_t at = preset.find('@'); at != std::string::npos) {
      std::stringstream options(preset.substr(at + 1));
      std::string option;
      while (std::getline(options, option, ';')) {
        const std::string key = option.substr(0, option.find('='));
        const double value = std::stod(option.substr(option.find('=') + 1));
        if (key == "half") learner.half_life_pods = value;
        if (key == "mem") learner.memory = value != 0;
        if (key == "cover") learner.coverage = value;
        if (key == "classes") learner.max_classes = static_cast<size_t>(value);
        if (key == "check") learner.min_check_every = static_cast<uint64_t>(value);
        if (key == "distance") learner.republish_distance = value;
      }
      preset = preset.substr(0, at);
    }
    if (preset.rfind("trace-allpods", 0) == 0 || preset.rfind("learned-pack", 0) == 0) {
      // trace-allpods[=<packing share>]; learned-pack=<packing share>: pack's components with
      // another packing weight
      const size_t eq = preset.find('=');
      const double pack = eq == std::string::npos ? 0.03 : std::stod(preset.substr(eq + 1));
      placer = MakeGputopoPlacer(cluster, preset,
                                 AllPodsPreset(mix, pack, preset.rfind("learned", 0) == 0), seed,
                                 mode, learner);
    } else {
      placer = MakeGputopoPlacer(cluster, policy.substr(policy.find(':') + 1), presets.Find(preset),
                                 seed, mode, learner);
    }
  }
  std::vector<size_t> order(trace_pods.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::mt19937_64 rng(seed);
  std::shuffle(order.begin(), order.end(), rng);

  RunResult r;
  r.workload = workload;
  r.policy = placer->Name();
  r.seed = seed;
  const auto start = std::chrono::steady_clock::now();
  const double capacity = static_cast<double>(cluster.capacity_milli());
  // Per arrived percent (rounded, 0..130): the sum and count of the allocation after each
  // arrival; the fragmentation likewise, from 99% to 101%.
  constexpr int kTop = 130;
  std::vector<double> alloc_sum(kTop + 1, 0.0), frag_sum(kTop + 1, 0.0);
  std::vector<int> events(kTop + 1, 0);
  double arrived = 0;
  // The trace in a random order, then (FGD's inflation) pods drawn again at random from it, until
  // the next pod's request would take the arrived requests over 130% of capacity.
  std::uniform_int_distribution<size_t> resample(0, trace_pods.size() - 1);
  for (size_t i = 0;; ++i) {
    const TracePod& t = trace_pods[i < order.size() ? order[i] : resample(rng)];
    const double request = static_cast<double>(t.gpus) * (t.gpus > 0 ? t.gpu_milli : 0);
    if (arrived + request > 1.3 * capacity) break;
    SimPod pod;
    pod.id = static_cast<int>(i);
    pod.name = t.name;
    pod.cpu_milli = t.cpu_milli;
    pod.memory_mib = t.memory_mib;
    pod.gpus = t.gpus;
    pod.milli = t.gpus > 0 ? t.gpu_milli : 0;
    pod.gpu_spec = t.gpu_spec;
    arrived += request;
    const Placement p = placer->Choose(cluster, pod);
    // GpusFit also holds a CPU-only pod to no GPUs: it takes CPU and memory only.
    if (p.node >= 0 && cluster.GpusFit(p.node, pod, p.gpus)) {
      cluster.Apply(pod, p);
      placer->OnPlaced(cluster, pod, p);
    } else if (pod.gpus > 0) {
      ++r.pending;
    }
    const auto percent = static_cast<int>(std::nearbyint(100.0 * arrived / capacity));
    if (percent < 0 || percent > kTop) continue;
    const auto b = static_cast<size_t>(percent);
    alloc_sum[b] += 100.0 * static_cast<double>(cluster.allocated_milli()) / capacity;
    ++events[b];
    if (percent >= 99 && percent <= 101) {
      frag_sum[b] += 100.0 * cluster.FragmentedMilli(mix) / capacity;
    }
  }
  // The mean at a percent; without arrivals there, over those within one percent of it.
  auto mean = [&](const std::vector<double>& sum, int percent) {
    const auto at = static_cast<size_t>(percent);
    if (events[at] > 0) return sum[at] / events[at];
    double total = 0;
    int count = 0;
    for (int q = std::max(0, percent - 1); q <= std::min(kTop, percent + 1); ++q) {
      total += sum[static_cast<size_t>(q)];
      count += events[static_cast<size_t>(q)];
    }
    return count > 0 ? total / count : NAN;
  };
  for (int q = 0; q <= kTop; ++q) {
    const double v = mean(alloc_sum, q);
    r.curve.push_back(std::isnan(v) && !r.curve.empty() ? r.curve.back() : v);
  }
  r.alloc100 = mean(alloc_sum, 100);
  r.alloc130 = mean(alloc_sum, kTop);
  r.frag100 = mean(frag_sum, 100);
  r.overcommitted = OvercommittedPlacements(*placer);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

// Mean of the published results (fgd_expected_results/*.csv) for one workload and policy.
struct Published {
  double alloc100 = NAN, alloc130 = NAN, frag100 = NAN;
};
std::map<std::pair<std::string, std::string>, Published> LoadPublished(const std::string& dir) {
  std::map<std::pair<std::string, std::string>, Published> out;
  auto read = [&](const std::string& file, int first_value_column, auto assign) {
    std::ifstream in(dir + "/fgd_expected_results/" + file);
    std::string line;
    std::getline(in, line);
    std::map<std::pair<std::string, std::string>, std::pair<double, double>> sums;  // (100, 130)
    std::map<std::pair<std::string, std::string>, int> counts;
    while (std::getline(in, line)) {
      std::vector<std::string> f;
      std::stringstream ss(line);
      std::string cell;
      while (std::getline(ss, cell, ',')) f.push_back(cell);
      if (f.size() < static_cast<size_t>(first_value_column + 131)) continue;
      const std::string workload = f[0].substr(f[0].find("list_") + 5);
      const std::string policy = f[1].substr(f[1].find('-') + 1);
      sums[{workload, policy}].first += std::stod(f[static_cast<size_t>(first_value_column + 100)]);
      sums[{workload, policy}].second +=
          std::stod(f[static_cast<size_t>(first_value_column + 130)]);
      counts[{workload, policy}] += 1;
    }
    for (const auto& [key, sum] : sums)
      assign(out[key], sum.first / counts[key], sum.second / counts[key]);
  };
  read("analysis_allo_discrete.csv", 5, [](Published& p, double a, double b) {
    p.alloc100 = a;
    p.alloc130 = b;
  });
  read("analysis_frag_discrete.csv", 4, [](Published& p, double a, double) { p.frag100 = a; });
  return out;
}

std::string Fixed(double v, int digits = 2) {
  if (std::isnan(v)) return "-";
  char text[32];
  std::snprintf(text, sizeof(text), "%.*f", digits, v);
  return text;
}

int Main(int argc, char** argv) {
  CLI::App cli{"gputopo placement quality on the Alibaba GPU-sharing trace (FGD methodology)"};
  std::string data = "../shared/data/alibaba-gpu-v2023";
  std::string workloads = "default,multigpu50,gpushare100";
  std::string policy_list = "random,bestfit,stock,gputopo:default,gputopo:binpack,gputopo-all:pack";
  int seeds = 10;
  int replicas = 20;
  int threads = 2;
  std::string out = "bench/results";
  cli.add_option("--data", data, "folder of the trace")->capture_default_str();
  cli.add_option("--workloads", workloads, "pod lists (openb_pod_list_<name>.csv)")
      ->capture_default_str();
  cli.add_option(
         "--policies", policy_list,
         "random, bestfit, stock, fgd, fgd-exact, fgd-random-ties, fgd-exact-random-ties, "
         "fgd-pack:<milli per unit of packing>, fgd-as-extender, "
         "gputopo:<preset>, gputopo-alone:<preset>, gputopo-all:<preset>, gputopo-decides:<preset> "
         "(all-pod mode with --filter-decides; shipped presets, "
         "learned-pack=<packing share>, or trace-allpods[=<packing share>]: pack with the "
         "trace's mix pinned), each optionally @half=;mem=;cover=;classes=;check=;distance= "
         "for the workload learner")
      ->capture_default_str();
  cli.add_option("--seeds", seeds, "arrival orders per workload (seeds 42..)")
      ->capture_default_str();
  cli.add_option("--replicas", replicas, "time-slice slots per GPU (high: shares bind, not slots)")
      ->capture_default_str();
  cli.add_option("--threads", threads, "runs in parallel")->capture_default_str();
  cli.add_option("--out", out, "folder for alibaba.csv, alibaba_curves.csv, alibaba.md")
      ->capture_default_str();
  CLI11_PARSE(cli, argc, argv);

  Result<policies::PresetCatalog> presets = LoadShippedPresets();
  if (!presets.ok()) {
    std::cerr << presets.status().ToString() << "\n";
    return 2;
  }
  Result<std::vector<TraceNode>> nodes = LoadAlibabaNodes(data + "/openb_node_list_gpu_node.csv");
  if (!nodes.ok()) {
    std::cerr << nodes.status().ToString() << "\n";
    return 2;
  }
  std::vector<std::string> policy_names;
  for (std::stringstream ss(policy_list); ss.good();) {
    std::string p;
    std::getline(ss, p, ',');
    if (p.rfind("gputopo", 0) == 0 && p.find(":trace-") == std::string::npos &&
        p.find(":learned-") == std::string::npos &&
        presets->Find(p.substr(p.find(':') + 1, p.find('@') - p.find(':') - 1)) == nullptr) {
      std::cerr << "unknown preset in " << p << "\n";
      return 2;
    }
    policy_names.push_back(p);
  }
  std::filesystem::create_directories(out);
  std::ofstream csv(out + "/alibaba.csv");
  csv << "workload,policy,seed,alloc100,alloc130,frag100,pending,overcommitted,seconds\n";
  std::ofstream curves(out + "/alibaba_curves.csv");
  curves << "workload,policy,seed,arrived_percent,allocated_percent\n";
  std::map<std::pair<std::string, std::string>, std::vector<RunResult>> results;
  std::vector<std::string> workload_names;
  std::mutex mutex;

  for (std::stringstream ws(workloads); ws.good();) {
    std::string workload;
    std::getline(ws, workload, ',');
    workload_names.push_back(workload);
    Result<std::vector<TracePod>> pods =
        LoadAlibabaPods(data + "/openb_pod_list_" + workload + ".csv");
    if (!pods.ok()) {
      std::cerr << pods.status().ToString() << "\n";
      return 2;
    }
    const WorkloadMix mix = FgdMix(*pods);
    std::vector<std::pair<std::string, uint64_t>> jobs;
    for (const std::string& policy : policy_names) {
      for (int s = 0; s < seeds; ++s) jobs.emplace_back(policy, 42 + s);
    }
    size_t next = 0;
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
      workers.emplace_back([&] {
        while (true) {
          std::pair<std::string, uint64_t> job;
          {
            std::lock_guard<std::mutex> lock(mutex);
            if (next >= jobs.size()) return;
            job = jobs[next++];
          }
          RunResult r =
              Run(workload, *nodes, *pods, mix, job.first, job.second, replicas, *presets);
          std::lock_guard<std::mutex> lock(mutex);
          std::fprintf(stderr, "%-12s %-22s seed %llu: alloc %.2f%% / %.2f%%, frag %.2f%%, %.1fs\n",
                       workload.c_str(), r.policy.c_str(), static_cast<unsigned long long>(r.seed),
                       r.alloc100, r.alloc130, r.frag100, r.seconds);
          csv << workload << "," << r.policy << "," << r.seed << "," << r.alloc100 << ","
              << r.alloc130 << "," << r.frag100 << "," << r.pending << "," << r.overcommitted << ","
              << r.seconds << "\n";
          for (size_t i = 0; i < r.curve.size(); ++i) {
            curves << workload << "," << r.policy << "," << r.seed << "," << i << "," << r.curve[i]
                   << "\n";
          }
          results[{workload, job.first}].push_back(std::move(r));
        }
      });
    }
    for (auto& w : workers) w.join();
  }

  const auto published = LoadPublished(data);
  std::ostringstream md;
  md << "| workload | policy | alloc @100% | alloc @130% | frag @100% | pending GPU pods | runs | "
        "s/run |\n"
     << "|---|---|---|---|---|---|---|---|\n";
  for (const std::string& workload : workload_names) {
    for (const char* pub : {"Random", "BestFit", "FGD"}) {
      auto it = published.find({workload, pub});
      if (it == published.end()) continue;
      md << "| " << workload << " | *published " << pub << "* | " << Fixed(it->second.alloc100)
         << "% | " << Fixed(it->second.alloc130) << "% | " << Fixed(it->second.frag100)
         << "% | | 10 | |\n";
    }
    for (const std::string& policy : policy_names) {
      const auto& runs = results[{workload, policy}];
      if (runs.empty()) continue;
      double a100 = 0, a130 = 0, f100 = 0, pending = 0, secs = 0, over = 0;
      for (const RunResult& r : runs) {
        a100 += r.alloc100;
        a130 += r.alloc130;
        f100 += r.frag100;
        pending += r.pending;
        secs += r.seconds;
        over += r.overcommitted;
      }
      const double n = static_cast<double>(runs.size());
      md << "| " << workload << " | " << runs.front().policy << " | " << Fixed(a100 / n) << "% | "
         << Fixed(a130 / n) << "% | " << Fixed(f100 / n) << "% | " << Fixed(pending / n, 0)
         << (over > 0 ? " (" + Fixed(over / n, 0) + " overcommitted)" : "") << " | " << runs.size()
         << " | " << Fixed(secs / n, 1) << " |\n";
    }
  }
  std::ofstream(out + "/alibaba.md") << md.str();
  std::cout << md.str();
  return 0;
}

}  // namespace
}  // namespace gputopo::bench

int main(int argc, char** argv) { return gputopo::bench::Main(argc, argv); }
