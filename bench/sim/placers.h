// Placement policies compared in bench/: the baselines, implemented here, and gputopo's own
// filter/prioritize/bind code driven as kube-scheduler would drive it.
//
// Node choice follows kube-scheduler where a policy sits behind it: its filters (CPU, memory,
// GPU model, nvidia.com/gpu replicas) first, then the highest total score, ties broken at random
// (seeded). The total of stock Kubernetes is NodeResourcesFit (LeastAllocated, CPU and memory)
// plus NodeResourcesBalancedAllocation, each 0..100; with gputopo the extender's 0..10 score is
// added with weight 5 (x10 to the 0..100 scale), as in manifests/kube-scheduler-config.yaml.
//
// Thread safety: not thread-safe.
#ifndef GPUTOPO_BENCH_SIM_PLACERS_H_
#define GPUTOPO_BENCH_SIM_PLACERS_H_

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench/sim/sim_cluster.h"
#include "cluster/cluster_state.h"
#include "policies/registry/component_registry.h"
#include "topology/profile_catalog.h"
#include "topology/shape_interner.h"
#include "topology/topology_resolver.h"

namespace gputopo::bench {

class Placer {
 public:
  virtual ~Placer() = default;
  virtual std::string Name() const = 0;
  // Where `pod` goes; node -1 leaves it pending. The GPUs must pass cluster.GpusFit.
  virtual Placement Choose(const SimCluster& cluster, const SimPod& pod) = 0;
  // Told after the cluster applied or removed a placement.
  virtual void OnPlaced(const SimCluster&, const SimPod&, const Placement&) {}
  virtual void OnRemoved(const SimCluster&, const SimPod&, const Placement&) {}
};

// kube-scheduler's default node scores for CPU and memory (0..200 in total).
double KubeDefaultScore(const SimCluster& cluster, int node, const SimPod& pod);

// A feasible node at random, GPUs at random among those with room.
std::unique_ptr<Placer> MakeRandomPlacer(uint64_t seed);
// The node left with the least free CPU, memory and GPU (normalised, summed), GPUs with the
// least room that fits.
std::unique_ptr<Placer> MakeBestFitPlacer(uint64_t seed);
// Stock Kubernetes: kube-scheduler's default scores; NVIDIA's device plugin picks replicas by
// its "distributed" policy (the GPUs with the fewest allocated replicas, blind to shares and
// workloads), or, without time-slicing, by its best-effort policy (the set with the best links).
// A pod whose share does not fit on the GPU the plugin handed out counts as failed
// (overcommitted()).
class StockKubernetesPlacer;
// The FGD authors' simulator breaks ties between equally scored nodes by node name (its
// kube-scheduler fork takes the smallest; the nodes' names carry a random prefix): in effect a
// node order drawn once per run, which the two baselines below keep (a tie goes to the node first
// in it). Behind a stock kube-scheduler, ties go at random.
//
// BestFit as the FGD authors' simulator scores it: the node left with the least free CPU and
// GPU, 0.5 * CPU left / 128 cores + 0.5 * GPU milli left / 8 GPUs (after placement; memory only
// filters), as an integer 0..100 score; a shared GPU: the one with the least room that fits.
std::unique_ptr<Placer> MakeFgdBestFitPlacer(uint64_t seed);
// FGD (Weng et al., ATC'23) re-implemented on the simulator: the node and GPUs that increase the
// expected fragmentation (FgdNodeFragment) of the target workload `mix` the least. As the FGD
// authors' scheduler plugin scores it, the fragmentation decrease d (milli) becomes the integer
// score 100 * sigmoid(d / 1000), so decreases about 40 milli apart can tie (a shared GPU: the
// lowest index among the best). A pod without GPUs is placed by the fragmentation its CPU causes
// and takes no GPU. The paper's scheduler places every pod this way.
struct FgdOptions {
  // Pods without GPUs left to kube-scheduler's default scores, and ties at random, as they would
  // be when FGD (or gputopo) is an extender with managedResources nvidia.com/gpu.
  bool as_extender = false;
  bool exact = false;        // d itself is the score
  bool random_ties = false;  // ties at random, as a stock kube-scheduler breaks them
  // > 0: plus this many milli of fragmentation decrease per unit of packing (BestFit's measure,
  // 0..1 full), so that ties and near-ties go to the fuller node.
  double pack_weight = 0;
};
std::unique_ptr<Placer> MakeFgdPlacer(WorkloadMix mix, uint64_t seed, FgdOptions options = {});
// FGD's fragmentation change (milli) of placing `pod` on `gpus` of node n.
double FgdDelta(const SimCluster& cluster, int n, const SimPod& pod, const std::vector<int>& gpus,
                const WorkloadMix& mix);
std::unique_ptr<Placer> MakeStockKubernetesPlacer(uint64_t seed);
// How kube-scheduler and gputopo share the choice of node.
enum class GputopoMode {
  // manifests/kube-scheduler-config.yaml: managedResources nvidia.com/gpu, so GPU-less pods are
  // kube-scheduler's alone; its default scores plus gputopo's priority with weight 5.
  kBehindScheduler,
  // gputopo's weighted score alone picks the node (as with a very high extender weight).
  kAlone,
  // manifests/variants/all-pods: gputopo is called for every pod, kube-scheduler's resource
  // scores are off, and gputopo's priority (the preset's normalization) decides; ties at random.
  kAllPods,
  // kAllPods with gputopo's --filter-decides (manifests/variants/filter-decides): a GPU pod's
  // filter passes gputopo's best node alone (ties by the server's hash of pod uid and node name),
  // so kube-scheduler takes it without scoring; a GPU-less pod as in kAllPods.
  kAllPodsFilterDecides,
};
// gputopo: kube-scheduler's filters plus gputopo's filter and prioritize (preset `preset`) as
// `mode` combines them; GPUs as gputopo's bind chooses them. Every bound pod reaches gputopo's
// cluster state, as through the API server's watch.
std::unique_ptr<Placer> MakeGputopoPlacer(const SimCluster& cluster, const std::string& preset,
                                          std::shared_ptr<const policies::Preset> weights,
                                          uint64_t seed,
                                          GputopoMode mode = GputopoMode::kBehindScheduler,
                                          cluster::WorkloadLearnerOptions learner = {});

// The presets shipped in policies/presets/, parsed (bench links the adapters for this).
Result<policies::PresetCatalog> LoadShippedPresets();

// Count of placements a placer handed out that the GPU could not actually hold (stock only).
int OvercommittedPlacements(const Placer& placer);

}  // namespace gputopo::bench

#endif  // GPUTOPO_BENCH_SIM_PLACERS_H_
