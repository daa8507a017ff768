#include "bench/sim/placers.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "evaluation/pod_evaluator.h"
#include "gputopo/well_known.h"
#include "policies/engine/candidate_order.h"
#include "policies/engine/evaluation.h"
#include "policies/engine/normalize.h"
#include "src/app/app.h"
#include "topology/best_set.h"

namespace gputopo::bench {
namespace {

// Picks uniformly among the candidates with the best score (kube-scheduler's selectHost), or,
// given a rank per candidate, the best-ranked among them.
class BestOf {
 public:
  explicit BestOf(std::mt19937_64& rng, const std::vector<int>* rank = nullptr)
      : rng_(rng), rank_(rank) {}
  void Offer(int node, double score) {
    if (best_ < 0 || score > score_) {
      best_ = node;
      score_ = score;
      ties_ = 1;
    } else if (score == score_) {
      ++ties_;
      if (rank_ != nullptr) {
        if ((*rank_)[static_cast<size_t>(node)] < (*rank_)[static_cast<size_t>(best_)]) {
          best_ = node;
        }
      } else if (std::uniform_int_distribution<int>(1, ties_)(rng_) == 1) {
        best_ = node;
      }
    }
  }
  int best() const { return best_; }

 private:
  std::mt19937_64& rng_;
  const std::vector<int>* rank_;
  int best_ = -1;
  double score_ = 0.0;
  int ties_ = 0;
};

// The FGD authors' simulator breaks ties between nodes by name (its kube-scheduler fork picks the
// smallest), and names its nodes with a random prefix: a node order drawn once per run.
const std::vector<int>& NodeRanks(std::vector<int>& ranks, int nodes, std::mt19937_64& rng) {
  if (static_cast<int>(ranks.size()) != nodes) {
    ranks.resize(static_cast<size_t>(nodes));
    std::iota(ranks.begin(), ranks.end(), 0);
    std::shuffle(ranks.begin(), ranks.end(), rng);
  }
  return ranks;
}

bool HasGpuRoom(const SimCluster& cluster, int n, const SimPod& pod) {
  if (pod.gpus == 0) return true;
  return static_cast<int>(cluster.GpusWithRoom(n, pod).size()) >= pod.gpus;
}

class RandomPlacer final : public Placer {
 public:
  explicit RandomPlacer(uint64_t seed) : rng_(seed) {}
  std::string Name() const override { return "Random"; }
  Placement Choose(const SimCluster& cluster, const SimPod& pod) override {
    std::vector<int> feasible;
    for (int n = 0; n < cluster.node_count(); ++n) {
      if (cluster.HostFits(n, pod) && HasGpuRoom(cluster, n, pod)) feasible.push_back(n);
    }
    if (feasible.empty()) return {};
    Placement p;
    p.node = feasible[std::uniform_int_distribution<size_t>(0, feasible.size() - 1)(rng_)];
    std::vector<int> room = cluster.GpusWithRoom(p.node, pod);
    std::shuffle(room.begin(), room.end(), rng_);
    p.gpus.assign(room.begin(), room.begin() + pod.gpus);
    return p;
  }

 private:
  std::mt19937_64 rng_;
};

// The GPUs with room for the pod, the tightest first (the most milli already used).
std::vector<int> TightestGpus(const SimCluster& cluster, int n, const SimPod& pod) {
  std::vector<int> room = cluster.GpusWithRoom(n, pod);
  std::stable_sort(room.begin(), room.end(), [&](int a, int b) {
    return cluster.gpu_milli_used(n, a) > cluster.gpu_milli_used(n, b);
  });
  room.resize(static_cast<size_t>(pod.gpus));
  return room;
}

double GpuMilliFree(const SimCluster& cluster, int n) {
  double free = 0.0;
  for (int g = 0; g < cluster.gpu_count(n); ++g) free += 1000 - cluster.gpu_milli_used(n, g);
  return free;
}

class BestFitPlacer final : public Placer {
 public:
  explicit BestFitPlacer(uint64_t seed) : rng_(seed) {}
  std::string Name() const override { return "BestFit"; }
  Placement Choose(const SimCluster& cluster, const SimPod& pod) override {
    BestOf best(rng_);
    for (int n = 0; n < cluster.node_count(); ++n) {
      if (!cluster.HostFits(n, pod) || !HasGpuRoom(cluster, n, pod)) continue;
      const SimNode& node = cluster.node(n);
      const double gpu_free =
          GpuMilliFree(cluster, n) - static_cast<double>(pod.gpus) * cluster.ShareOn(n, pod);
      const double gpu_cap = 1000.0 * std::max(1, cluster.gpu_count(n));
      const double left =
          static_cast<double>(node.cpu_milli - cluster.cpu_used(n) - pod.cpu_milli) /
              node.cpu_milli +
          static_cast<double>(node.memory_mib - cluster.memory_used(n) - pod.memory_mib) /
              node.memory_mib +
          gpu_free / gpu_cap;
      best.Offer(n, -left);
    }
    if (best.best() < 0) return {};
    return {best.best(), TightestGpus(cluster, best.best(), pod)};
  }

 private:
  std::mt19937_64 rng_;
};

class FgdBestFitPlacer final : public Placer {
 public:
  explicit FgdBestFitPlacer(uint64_t seed) : rng_(seed) {}
  std::string Name() const override { return "BestFit"; }
  Placement Choose(const SimCluster& cluster, const SimPod& pod) override {
    constexpr double kMaxCpuMilli = 128000;  // the largest node of the FGD authors' cluster
    constexpr double kMaxGpuMilli = 8000;
    BestOf best(rng_, &NodeRanks(ranks_, cluster.node_count(), rng_));
    for (int n = 0; n < cluster.node_count(); ++n) {
      if (!cluster.HostFits(n, pod) || !HasGpuRoom(cluster, n, pod)) continue;
      const double cpu_left =
          static_cast<double>(cluster.node(n).cpu_milli - cluster.cpu_used(n) - pod.cpu_milli);
      const double gpu_left =
          GpuMilliFree(cluster, n) - static_cast<double>(pod.gpus) * cluster.ShareOn(n, pod);
      const double left = 0.5 * cpu_left / kMaxCpuMilli + 0.5 * gpu_left / kMaxGpuMilli;
      // An integer score, as a kube-scheduler plugin returns it (its min-max normalisation
      // keeps the order).
      best.Offer(n, static_cast<double>(static_cast<int64_t>((1.0 - left) * 100.0)));
    }
    if (best.best() < 0) return {};
    return {best.best(), TightestGpus(cluster, best.best(), pod)};
  }

 private:
  std::mt19937_64 rng_;
  std::vector<int> ranks_;
};

}  // namespace

class FgdPlacer final : public Placer {
 public:
  FgdPlacer(WorkloadMix mix, uint64_t seed, FgdOptions options)
      : mix_(std::move(mix)), rng_(seed), options_(options) {
    if (options_.as_extender) options_.random_ties = true;
  }
  std::string Name() const override {
    if (options_.as_extender) return "FGD as an extender (re-implemented)";
    // No commas: the name is a CSV field.
    std::string name = "FGD (re-implemented";
    if (options_.exact) name += "; exact score";
    if (options_.random_ties) name += "; ties at random";
    if (options_.pack_weight > 0) {
      char text[48];
      std::snprintf(text, sizeof(text), "; packing %g milli", options_.pack_weight);
      name += text;
    }
    return name + ")";
  }

  // The fragmentation decrease of placing `pod` on `gpus` of node n (negative: an increase).
  double Decrease(const SimCluster& cluster, int n, const SimPod& pod,
                  const std::vector<int>& gpus) const {
    const SimNode& node = cluster.node(n);
    std::vector<int> milli = cluster.gpu_milli_used(n);
    std::vector<int> pods = cluster.gpu_pods(n);
    const int64_t cpu_free = node.cpu_milli - cluster.cpu_used(n);
    const double before = FgdNodeFragment(mix_, node.model, node.replicas, milli, pods, cpu_free);
    for (int g : gpus) {
      milli[static_cast<size_t>(g)] += cluster.ShareOn(n, pod);
      pods[static_cast<size_t>(g)] += 1;
    }
    return before -
           FgdNodeFragment(mix_, node.model, node.replicas, milli, pods, cpu_free - pod.cpu_milli);
  }

  Placement Choose(const SimCluster& cluster, const SimPod& pod) override {
    BestOf best(rng_);
    if (pod.gpus == 0 && options_.as_extender) {  // kube-scheduler alone places pods without GPUs
      for (int n = 0; n < cluster.node_count(); ++n) {
        if (cluster.HostFits(n, pod)) best.Offer(n, KubeDefaultScore(cluster, n, pod));
      }
      Placement p;
      p.node = best.best();
      return p;
    }
    // Behind kube-scheduler, ties at random; in the FGD authors' simulator, by its node order.
    BestOf fgd(rng_,
               options_.random_ties ? nullptr : &NodeRanks(ranks_, cluster.node_count(), rng_));
    std::vector<std::vector<int>> choice(static_cast<size_t>(cluster.node_count()));
    for (int n = 0; n < cluster.node_count(); ++n) {
      if (!cluster.HostFits(n, pod) || !HasGpuRoom(cluster, n, pod)) continue;
      std::vector<int> room = cluster.GpusWithRoom(n, pod);
      std::vector<int> chosen;
      double score = 0.0;
      if (pod.gpus == 1 && cluster.ShareOn(n, pod) < 1000) {
        // A shared GPU: each GPU with room scored, the first of the best kept.
        for (int g : room) {
          const double s = Score(Decrease(cluster, n, pod, {g}));
          if (chosen.empty() || s > score) {
            chosen = {g};
            score = s;
          }
        }
      } else {
        // No GPU (CPU and memory only), or whole GPUs: the first free ones.
        chosen.assign(room.begin(), room.begin() + pod.gpus);
        score = Score(Decrease(cluster, n, pod, chosen));
      }
      if (options_.pack_weight > 0) {
        const double cpu_left =
            static_cast<double>(cluster.node(n).cpu_milli - cluster.cpu_used(n) - pod.cpu_milli);
        const double gpu_left =
            GpuMilliFree(cluster, n) - static_cast<double>(pod.gpus) * cluster.ShareOn(n, pod);
        score += options_.pack_weight * (1.0 - 0.5 * cpu_left / 128000.0 - 0.5 * gpu_left / 8000.0);
      }
      fgd.Offer(n, score);
      if (fgd.best() == n) choice[static_cast<size_t>(n)] = std::move(chosen);
    }
    if (fgd.best() < 0) return {};
    return {fgd.best(), choice[static_cast<size_t>(fgd.best())]};
  }

 private:
  // The plugin's score: 100 * sigmoid(decrease / 1000), truncated to an integer.
  double Score(double decrease) const {
    if (options_.exact) return decrease;
    const double sigmoid = 1.0 / (1.0 + std::exp(-decrease / 1000.0));
    return static_cast<double>(static_cast<int64_t>(sigmoid * 100.0));
  }

  WorkloadMix mix_;
  std::mt19937_64 rng_;
  FgdOptions options_;
  std::vector<int> ranks_;
};

class StockKubernetesPlacer final : public Placer {
 public:
  explicit StockKubernetesPlacer(uint64_t seed) : rng_(seed) {}
  std::string Name() const override { return "Stock Kubernetes"; }
  Placement Choose(const SimCluster& cluster, const SimPod& pod) override {
    BestOf best(rng_);
    for (int n = 0; n < cluster.node_count(); ++n) {
      if (!cluster.HostFits(n, pod)) continue;
      // NodeResourcesFit on nvidia.com/gpu: replicas only.
      const int replicas = cluster.gpu_count(n) * cluster.node(n).replicas;
      if (cluster.slots_used(n) + pod.gpus > replicas) continue;
      best.Offer(n, KubeDefaultScore(cluster, n, pod));
    }
    if (best.best() < 0) return {};
    Placement p;
    p.node = best.best();
    if (pod.gpus == 0) return p;
    const int n = p.node;
    std::vector<int> available;
    for (int g = 0; g < cluster.gpu_count(n); ++g) {
      if (cluster.gpu_pods(n, g) < cluster.node(n).replicas) available.push_back(g);
    }
    if (cluster.node(n).replicas == 1 && pod.gpus > 1) {
      // Best-effort policy: the available set with the best links.
      const topology::BestSet set = topology::FindBestSetByBandwidth(
          *cluster.node(n).shape, topology::FromIndices(available), pod.gpus);
      p.gpus = topology::ToIndices(set.gpus);
    } else {
      // Distributed policy: the GPUs with the fewest allocated replicas.
      std::stable_sort(available.begin(), available.end(), [&](int a, int b) {
        return cluster.gpu_pods(n, a) < cluster.gpu_pods(n, b);
      });
      p.gpus.assign(available.begin(),
                    available.begin() + std::min<size_t>(available.size(), pod.gpus));
    }
    if (!cluster.GpusFit(n, pod, p.gpus)) {
      ++overcommitted_;  // the plugin handed out a GPU that cannot hold the pod's share
      return {};
    }
    return p;
  }
  int overcommitted() const { return overcommitted_; }

 private:
  std::mt19937_64 rng_;
  int overcommitted_ = 0;
};

namespace {

PodInfo ToPodInfo(const SimPod& pod) {
  PodInfo info;
  info.namespace_name = pod.ns;
  info.name = pod.name;
  info.uid = "uid-" + std::to_string(pod.id);
  info.gpu_request = pod.gpus;
  info.cpu_request_milli = pod.cpu_milli;
  info.memory_request_bytes = pod.memory_mib * 1024 * 1024;
  if (pod.gpus > 0 && pod.milli > 0) {
    info.annotations.emplace_back(std::string(kAnnotationGpuMilli), std::to_string(pod.milli));
  }
  if (!pod.group.empty()) info.annotations.emplace_back(std::string(kAnnotationGroup), pod.group);
  for (const auto& a : pod.annotations) info.annotations.push_back(a);
  return info;
}

class GputopoPlacer final : public Placer {
 public:
  GputopoPlacer(const SimCluster& cluster, std::string name,
                std::shared_ptr<const policies::Preset> preset, uint64_t seed, GputopoMode mode,
                cluster::WorkloadLearnerOptions learner)
      : name_(std::move(name)),
        preset_(std::move(preset)),
        rng_(seed),
        mode_(mode),
        state_(resolver_, nullptr, learner) {
    (void)app::LoadProfiles("", profiles_);  // the machine profiles nodes may name
    std::vector<NodeInfo> nodes;
    for (int n = 0; n < cluster.node_count(); ++n) nodes.push_back(cluster.node(n).info);
    state_.Reset(nodes, {});
    auto snapshot = state_.Snapshot();
    for (int n = 0; n < cluster.node_count(); ++n) {
      index_.push_back(snapshot->FindIndex(cluster.node(n).name));
    }
  }
  std::string Name() const override {
    switch (mode_) {
      case GputopoMode::kAlone:
        return "gputopo alone " + name_;
      case GputopoMode::kAllPods:
        return "gputopo all-pod " + name_;
      case GputopoMode::kAllPodsFilterDecides:
        return "gputopo all-pod, filter decides " + name_;
      case GputopoMode::kBehindScheduler:
        break;
    }
    return "gputopo " + name_;
  }

  Placement Choose(const SimCluster& cluster, const SimPod& pod) override {
    BestOf best(rng_);
    const bool all_pods =
        mode_ == GputopoMode::kAllPods || mode_ == GputopoMode::kAllPodsFilterDecides;
    if (pod.gpus == 0 && !all_pods) {
      // With managedResources nvidia.com/gpu, the extender is not called for pods without it.
      for (int n = 0; n < cluster.node_count(); ++n) {
        if (cluster.HostFits(n, pod)) best.Offer(n, KubeDefaultScore(cluster, n, pod));
      }
      Placement p;
      p.node = best.best();
      return p;
    }
    const PodInfo info = ToPodInfo(pod);
    Result<policies::PodRequirements> req = policies::RequirementsOf(info);
    if (!req.ok()) return {};
    // The watch shows the pod pending before kube-scheduler asks: the learned mix counts it.
    if (pod.gpus > 0) state_.UpsertPod(info);
    auto snapshot = state_.Snapshot();
    evaluation::PodEvaluator evaluator(*req, *preset_);
    // Filter, then prioritize: the weighted scores of the nodes that fit, normalized across
    // them as the preset says, added to kube-scheduler's own scores with weight 5.
    const policies::CandidateOrder order(*preset_, *req);
    std::vector<int> candidates;
    std::vector<uint32_t> evaluations;
    std::vector<std::optional<double>> weighted;
    for (int n = 0; n < cluster.node_count(); ++n) {
      if (!cluster.HostFits(n, pod)) continue;
      const uint32_t e = evaluator.Evaluate(*snapshot->nodes()[index_[static_cast<size_t>(n)]]);
      if (!evaluator.evaluation(e).fits()) continue;
      candidates.push_back(n);
      evaluations.push_back(e);
      weighted.push_back(
          order.Input(policies::EvaluationRef::To(evaluator.evaluation(e)), cluster.node(n).name));
    }
    if (candidates.empty()) return {};
    size_t chosen = 0;
    if (mode_ == GputopoMode::kAllPodsFilterDecides && pod.gpus > 0) {
      // The filter passes gputopo's best node alone: kube-scheduler takes it without scoring.
      chosen = *policies::DecidedCandidate(
          candidates.size(), [&](size_t i) { return weighted[i]; },
          [&](size_t i) {
            return policies::FilterDecidesTieKey(info.uid, cluster.node(candidates[i]).name);
          });
    } else {
      const std::vector<int> priorities =
          candidates.size() > 1 ? policies::NormalizeScores(weighted, preset_->normalization())
                                : std::vector<int>(1, 0);  // kube-scheduler skips prioritize
      for (size_t i = 0; i < candidates.size(); ++i) {
        switch (mode_) {
          case GputopoMode::kAlone:
            best.Offer(static_cast<int>(i), *weighted[i]);
            break;
          case GputopoMode::kAllPods:
          case GputopoMode::kAllPodsFilterDecides:  // a GPU-less pod: every node passes
            // manifests/variants/all-pods: kube-scheduler's resource scores are off; the
            // extender's priority (weight 10) decides, ties at random.
            best.Offer(static_cast<int>(i), 100.0 * priorities[i]);
            break;
          case GputopoMode::kBehindScheduler:
            best.Offer(static_cast<int>(i),
                       KubeDefaultScore(cluster, candidates[i], pod) + 50.0 * priorities[i]);
            break;
        }
      }
      chosen = static_cast<size_t>(best.best());
    }
    Placement p;
    p.node = candidates[chosen];
    if (pod.gpus > 0) p.gpus = topology::ToIndices(evaluator.evaluation(evaluations[chosen]).gpus);
    return p;
  }

  // Every bound pod is seen through the watch: GPU-less ones for their CPU and memory.
  void OnPlaced(const SimCluster& cluster, const SimPod& pod, const Placement& p) override {
    PodInfo info = ToPodInfo(pod);
    info.node_name = cluster.node(p.node).name;
    info.phase = PodPhase::kRunning;
    std::string assigned;
    for (int g : p.gpus) assigned += (assigned.empty() ? "" : ",") + std::to_string(g);
    info.annotations.emplace_back(std::string(kAnnotationAssignedGpus), assigned);
    state_.UpsertPod(info);
  }
  void OnRemoved(const SimCluster&, const SimPod& pod, const Placement&) override {
    state_.RemovePod("uid-" + std::to_string(pod.id));
  }

 private:
  std::string name_;
  std::shared_ptr<const policies::Preset> preset_;
  std::mt19937_64 rng_;
  GputopoMode mode_;
  topology::ShapeInterner interner_;
  topology::ProfileCatalog profiles_{interner_};
  topology::TopologyResolver resolver_{profiles_, interner_};
  cluster::ClusterState state_;
  std::vector<size_t> index_;  // cluster node -> snapshot position
};

}  // namespace

double KubeDefaultScore(const SimCluster& cluster, int n, const SimPod& pod) {
  const SimNode& node = cluster.node(n);
  const double cpu = static_cast<double>(cluster.cpu_used(n) + pod.cpu_milli) / node.cpu_milli;
  const double memory =
      static_cast<double>(cluster.memory_used(n) + pod.memory_mib) / node.memory_mib;
  const double least_allocated = ((1.0 - cpu) * 100.0 + (1.0 - memory) * 100.0) / 2.0;
  const double balanced = (1.0 - std::abs(cpu - memory) / 2.0) * 100.0;
  return least_allocated + balanced;
}

std::unique_ptr<Placer> MakeFgdPlacer(WorkloadMix mix, uint64_t seed, FgdOptions options) {
  return std::make_unique<FgdPlacer>(std::move(mix), seed, options);
}
double FgdDelta(const SimCluster& cluster, int n, const SimPod& pod, const std::vector<int>& gpus,
                const WorkloadMix& mix) {
  return -FgdPlacer(mix, 0, {}).Decrease(cluster, n, pod, gpus);
}
std::unique_ptr<Placer> MakeRandomPlacer(uint64_t seed) {
  return std::make_unique<RandomPlacer>(seed);
}
std::unique_ptr<Placer> MakeBestFitPlacer(uint64_t seed) {
  return std::make_unique<BestFitPlacer>(seed);
}
std::unique_ptr<Placer> MakeFgdBestFitPlacer(uint64_t seed) {
  return std::make_unique<FgdBestFitPlacer>(seed);
}
std::unique_ptr<Placer> MakeStockKubernetesPlacer(uint64_t seed) {
  return std::make_unique<StockKubernetesPlacer>(seed);
}
std::unique_ptr<Placer> MakeGputopoPlacer(const SimCluster& cluster, const std::string& preset,
                                          std::shared_ptr<const policies::Preset> weights,
                                          uint64_t seed, GputopoMode mode,
                                          cluster::WorkloadLearnerOptions learner) {
  return std::make_unique<GputopoPlacer>(cluster, preset, std::move(weights), seed, mode, learner);
}

int OvercommittedPlacements(const Placer& placer) {
  const auto* stock = dynamic_cast<const StockKubernetesPlacer*>(&placer);
  return stock == nullptr ? 0 : stock->overcommitted();
}

Result<policies::PresetCatalog> LoadShippedPresets() { return app::LoadPresets(""); }

}  // namespace gputopo::bench
