// Placement quality where topology matters: clusters of DGX-1 V100 (hybrid cube-mesh), HGX H100
// (NVSwitch) and 8-GPU PCIe 2-NUMA servers, time-sliced 2 to 4 ways; Deployments of several
// single-GPU replicas that stay, and multi-GPU jobs sized by the Philly trace that arrive and
// leave. Reported per policy (mean over seeds):
//  - same-group replica pairs on one physical GPU (lower is better);
//  - multi-GPU pods inside one NVLink island, and inside one NUMA node;
//  - mean pairwise link weight inside multi-GPU pods (relative GB/s: NV<n> = 25n, SYS = 6);
//  - pods left pending while enough free GPU slots existed somewhere in the cluster.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <queue>
#include <random>
#include <sstream>

#include "bench/sim/placers.h"
#include "bench/sim/trace.h"
#include "gputopo/well_known.h"
#include "src/app/app.h"
#include "topology/link_type.h"

namespace gputopo::bench {
namespace {

struct Metrics {
  std::string policy;
  double same_gpu_pairs = 0;  // % of same-group pairs sharing a GPU
  double in_island = 0;       // % of multi-GPU pods inside one NVLink island
  double in_numa = 0;         // % inside one NUMA node
  double link_weight = 0;     // mean pairwise link weight in multi-GPU pods
  double nvlink_pairs = 0;    // % of pairs inside multi-GPU pods that are NVLink
  int pending_with_room = 0;  // pods left pending while enough slots were free somewhere
  int pending = 0;
  int placed = 0;
};

struct Machine {
  const char* profile;
  int replicas;
};

std::vector<SimNode> BuildCluster(int per_type, const topology::ProfileCatalog& profiles) {
  const Machine machines[] = {{"dgx1-v100", 2}, {"hgx-h100", 4}, {"pcie-8gpu-2numa", 3}};
  std::vector<SimNode> nodes;
  for (const Machine& m : machines) {
    const topology::Profile* profile = profiles.Find(m.profile);
    for (int i = 0; i < per_type; ++i) {
      SimNode node;
      node.name = std::string(m.profile) + "-" + std::to_string(i);
      node.model = profile->machine.gpu(0).model;
      node.cpu_milli = 256000;
      node.memory_mib = 2 << 20;
      node.replicas = m.replicas;
      node.shape = profile->shape;
      node.info.name = node.name;
      node.info.allocatable_gpus = int64_t{profile->machine.gpu_count()} * m.replicas;
      node.info.label_topology_profile = m.profile;
      node.info.label_gpu_replicas = std::to_string(m.replicas);
      nodes.push_back(std::move(node));
    }
  }
  return nodes;
}

struct Event {
  double time;
  int kind;  // 0 arrive, 1 leave
  int pod;
  bool operator>(const Event& o) const {
    return time > o.time || (time == o.time && kind < o.kind);
  }
};

Metrics Run(const std::string& policy, uint64_t seed, int per_type,
            const std::vector<PhillyJob>& philly, const topology::ProfileCatalog& profiles,
            const policies::PresetCatalog& presets, int deployments, int jobs, int share_milli) {
  SimCluster cluster(BuildCluster(per_type, profiles));
  std::unique_ptr<Placer> placer;
  if (policy == "random")
    placer = MakeRandomPlacer(seed);
  else if (policy == "bestfit")
    placer = MakeBestFitPlacer(seed);
  else if (policy == "stock")
    placer = MakeStockKubernetesPlacer(seed);
  else {
    // gputopo:<preset> behind kube-scheduler, gputopo-all:<preset> in all-pod mode;
    // <preset>@check=<pods> delays the learned mix's first publication (experiments).
    std::string preset = policy.substr(policy.find(':') + 1);
    cluster::WorkloadLearnerOptions learner;
    if (const size_t at = preset.find("@check="); at != std::string::npos) {
      learner.min_check_every = std::stoull(preset.substr(at + 7));
      learner.max_check_every = learner.min_check_every;
      preset = preset.substr(0, at);
    }
    placer =
        MakeGputopoPlacer(cluster, policy.substr(policy.find(':') + 1), presets.Find(preset), seed,
                          policy.rfind("gputopo-all:", 0) == 0 ? GputopoMode::kAllPods
                                                               : GputopoMode::kBehindScheduler,
                          learner);
  }
  std::mt19937_64 rng(seed);
  std::vector<SimPod> pods;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events;
  // Deployments: 4..8 replicas of one GPU each, arriving over the first hour.
  for (int d = 0; d < deployments; ++d) {
    const int replicas = std::uniform_int_distribution<int>(4, 8)(rng);
    for (int r = 0; r < replicas; ++r) {
      SimPod pod;
      pod.id = static_cast<int>(pods.size());
      pod.name = "deploy" + std::to_string(d) + "-" + std::to_string(r);
      pod.group = "deploy" + std::to_string(d);
      pod.gpus = 1;
      pod.milli = share_milli;  // 0: the node's slot count sets the share (1000 / R)
      pod.cpu_milli = 1000;
      pod.memory_mib = 1024;
      pods.push_back(pod);
      events.push({std::uniform_real_distribution<double>(0, 3600)(rng), 0, pod.id});
    }
  }
  // Jobs: Philly shapes (pods of up to 8 GPUs), Poisson arrivals, Philly durations scaled down.
  std::vector<const PhillyJob*> usable;
  for (const PhillyJob& job : philly) {
    if (std::all_of(job.pods.begin(), job.pods.end(), [](int g) { return g <= 8; }))
      usable.push_back(&job);
  }
  double t = 0;
  for (int j = 0; j < jobs; ++j) {
    const PhillyJob& job =
        *usable[std::uniform_int_distribution<size_t>(0, usable.size() - 1)(rng)];
    t += std::exponential_distribution<double>(1.0 / 60.0)(rng);
    const double duration = std::clamp(job.duration_s / 20.0, 300.0, 6.0 * 3600.0);
    for (size_t p = 0; p < job.pods.size(); ++p) {
      SimPod pod;
      pod.id = static_cast<int>(pods.size());
      pod.name = "job" + std::to_string(j) + "-" + std::to_string(p);
      pod.group = "job" + std::to_string(j);
      pod.gpus = job.pods[p];
      pod.cpu_milli = 2000;
      pod.memory_mib = 4096;
      pods.push_back(pod);
      events.push({t, 0, pod.id});
      events.push({t + duration, 1, pod.id});
    }
  }

  Metrics m;
  m.policy = placer->Name();
  double weight_sum = 0;
  int pairs = 0, nvlink_pairs = 0, multi = 0, in_island = 0, in_numa = 0;
  while (!events.empty()) {
    const Event e = events.top();
    events.pop();
    SimPod& pod = pods[static_cast<size_t>(e.pod)];
    if (e.kind == 1) {
      const Placement p = cluster.Remove(pod.id);
      if (p.node >= 0) placer->OnRemoved(cluster, pod, p);
      continue;
    }
    // pod.milli is 0: each node's slot count sets the pod's share there (1000 / R).
    Placement p = placer->Choose(cluster, pod);
    if (p.node >= 0 && !cluster.GpusFit(p.node, pod, p.gpus)) p.node = -1;
    if (p.node < 0) {
      ++m.pending;
      int free_slots = 0;
      for (int n = 0; n < cluster.node_count(); ++n) {
        free_slots += cluster.gpu_count(n) * cluster.node(n).replicas - cluster.slots_used(n);
      }
      if (free_slots >= pod.gpus) ++m.pending_with_room;
      continue;
    }
    cluster.Apply(pod, p);
    placer->OnPlaced(cluster, pod, p);
    ++m.placed;
    if (pod.gpus > 1) {
      const topology::TopologyShape& shape = *cluster.node(p.node).shape;
      const topology::GpuMask set = topology::FromIndices(p.gpus);
      ++multi;
      in_island += shape.has_nvlink() && shape.InOneIsland(set) ? 1 : 0;
      in_numa += shape.InOneNuma(set) ? 1 : 0;
      for (size_t a = 0; a < p.gpus.size(); ++a) {
        for (size_t b = a + 1; b < p.gpus.size(); ++b) {
          ++pairs;
          weight_sum += shape.weight(p.gpus[a], p.gpus[b]);
          nvlink_pairs += shape.link(p.gpus[a], p.gpus[b]).IsNvLink() ? 1 : 0;
        }
      }
    }
  }
  // Same-group pairs sharing a GPU, over the Deployments still placed at the end.
  std::map<std::string, std::vector<std::pair<int, int>>> groups;  // group -> (node, gpu)
  for (const SimPod& pod : pods) {
    if (pod.group.rfind("deploy", 0) != 0) continue;
    if (auto p = cluster.PlacementOf(pod.id)) groups[pod.group].push_back({p->node, p->gpus[0]});
  }
  int group_pairs = 0, shared = 0;
  for (const auto& [group, placed] : groups) {
    for (size_t a = 0; a < placed.size(); ++a) {
      for (size_t b = a + 1; b < placed.size(); ++b) {
        ++group_pairs;
        shared += placed[a] == placed[b] ? 1 : 0;
      }
    }
  }
  m.same_gpu_pairs = group_pairs > 0 ? 100.0 * shared / group_pairs : 0;
  m.in_island = multi > 0 ? 100.0 * in_island / multi : 0;
  m.in_numa = multi > 0 ? 100.0 * in_numa / multi : 0;
  m.link_weight = pairs > 0 ? weight_sum / pairs : 0;
  m.nvlink_pairs = pairs > 0 ? 100.0 * nvlink_pairs / pairs : 0;
  return m;
}

int Main(int argc, char** argv) {
  CLI::App cli{"gputopo placement quality on topology-rich clusters"};
  std::string philly_path = "../shared/data/philly/philly_jobs_rfold_derived.csv";
  std::string policy_list =
      "random,bestfit,stock,gputopo:default,gputopo:binpack,gputopo:spread,gputopo:topology,"
      "gputopo-all:pack";
  int seeds = 5;
  int per_type = 8;
  int deployments = 24;
  int jobs = 600;
  int share_milli = 0;
  std::string out = "bench/results";
  cli.add_option("--philly", philly_path)->capture_default_str();
  cli.add_option("--policies", policy_list)->capture_default_str();
  cli.add_option("--seeds", seeds)->capture_default_str();
  cli.add_option("--nodes-per-type", per_type, "nodes of each machine type")->capture_default_str();
  cli.add_option("--deployments", deployments)->capture_default_str();
  cli.add_option("--jobs", jobs)->capture_default_str();
  cli.add_option("--share-milli", share_milli,
                 "gputopo.io/gpu-milli of each Deployment replica (0: none declared; below 1000, "
                 "pack orders them as FGD does, docs/scoring.md)")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  cli.add_option("--out", out)->capture_default_str();
  CLI11_PARSE(cli, argc, argv);

  auto philly = LoadPhillyJobs(philly_path);
  auto presets = LoadShippedPresets();
  if (!philly.ok() || !presets.ok()) {
    std::cerr << (philly.ok() ? presets.status() : philly.status()).ToString() << "\n";
    return 2;
  }
  topology::ShapeInterner interner;
  topology::ProfileCatalog profiles(interner);
  if (Status s = app::LoadProfiles("", profiles); !s.ok()) {
    std::cerr << s.ToString() << "\n";
    return 2;
  }
  std::filesystem::create_directories(out);
  std::ostringstream md;
  md << "Cluster: " << per_type << " x DGX-1 V100 (2 replicas/GPU), " << per_type
     << " x HGX H100 (4), " << per_type << " x 8-GPU PCIe 2-NUMA (3); " << deployments
     << " Deployments of 4-8 replicas"
     << (share_milli > 0 ? " (each declaring a share of " + std::to_string(share_milli) + " milli)"
                         : std::string())
     << "; " << jobs << " Philly-sized jobs; mean of " << seeds << " seeds.\n\n"
     << "| policy | same-group pairs on one GPU | multi-GPU pods in one NVLink island | "
        "in one NUMA node | mean link weight | NVLink pairs | pending with room | pending | placed "
        "|\n"
     << "|---|---|---|---|---|---|---|---|---|\n";
  for (std::stringstream ss(policy_list); ss.good();) {
    std::string policy;
    std::getline(ss, policy, ',');
    Metrics sum;
    for (int s = 0; s < seeds; ++s) {
      Metrics m = Run(policy, 42 + static_cast<uint64_t>(s), per_type, *philly, profiles, *presets,
                      deployments, jobs, share_milli);
      sum.policy = m.policy;
      sum.same_gpu_pairs += m.same_gpu_pairs / seeds;
      sum.in_island += m.in_island / seeds;
      sum.in_numa += m.in_numa / seeds;
      sum.link_weight += m.link_weight / seeds;
      sum.nvlink_pairs += m.nvlink_pairs / seeds;
      sum.pending_with_room += m.pending_with_room;
      sum.pending += m.pending;
      sum.placed += m.placed;
      std::fprintf(stderr, "%-22s seed %d: same-GPU pairs %.1f%%, island %.1f%%, NUMA %.1f%%\n",
                   m.policy.c_str(), s, m.same_gpu_pairs, m.in_island, m.in_numa);
    }
    char row[512];
    std::snprintf(
        row, sizeof(row),
        "| %s | %.1f%% | %.1f%% | %.1f%% | %.0f | %.1f%% | %.1f | %.1f | %.0f |\n",
        sum.policy.c_str(), sum.same_gpu_pairs, sum.in_island, sum.in_numa, sum.link_weight,
        sum.nvlink_pairs, static_cast<double>(sum.pending_with_room) / seeds,
        static_cast<double>(sum.pending) / seeds, static_cast<double>(sum.placed) / seeds);
    md << row;
  }
  std::ofstream(out + "/topology.md") << md.str();
  std::cout << md.str();
  return 0;
}

}  // namespace
}  // namespace gputopo::bench

int main(int argc, char** argv) { return gputopo::bench::Main(argc, argv); }
