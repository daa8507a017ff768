// The simulated cluster every placement policy is measured against: the physical truth (CPU,
// memory, and each GPU's milli-GPU and time-slice slots in use), independent of any policy's
// own bookkeeping.
//
// The physical model is the FGD simulator's: a GPU has 1000 milli; pods declare a share; shares
// on one GPU never exceed 1000; a multi-GPU pod takes whole GPUs (1000 each) on distinct GPUs.
// On top, time-slicing: each GPU has `replicas` slots, one per pod on it.
//
// Thread safety: not thread-safe.
#ifndef GPUTOPO_BENCH_SIM_SIM_CLUSTER_H_
#define GPUTOPO_BENCH_SIM_SIM_CLUSTER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "gputopo/node_info.h"
#include "topology/topology_shape.h"

namespace gputopo::bench {

struct SimPod {
  int id = 0;
  std::string ns = "bench";
  std::string name;
  std::string group;  // spread group; empty: the pod alone
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int gpus = 0;
  int milli = 0;                      // share of each GPU; 0: the node's default, 1000 / replicas
  std::vector<std::string> gpu_spec;  // allowed GPU models
  std::vector<std::pair<std::string, std::string>> annotations;  // extra gputopo.io/* ones
};

struct SimNode {
  std::string name;
  std::string model;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int replicas = 1;
  std::shared_ptr<const topology::TopologyShape> shape;  // links/NUMA, or the fallback
  NodeInfo info;  // how the node looks to gputopo (labels, annotation)
};

// FGD's target workload ("typical pods"): pod classes with their share of the trace's pods
// (weights sum to 1). A class with gpus 0 is a CPU-only pod.
struct WorkloadMix {
  struct Class {
    int gpus = 1;
    int milli = 1000;  // share of each GPU; 0 for a CPU-only class
    double weight = 1;
    int64_t cpu_milli = 0;
    std::vector<std::string> gpu_spec;  // allowed GPU models; empty: any
  };
  std::vector<Class> classes;
};

// FGD's fragmentation of one node (milli): for each class, weighted, the node's free GPU milli
// that a pod of the class could not use. All of it where the class is CPU-only (such a pod uses
// no GPU), may not use the node's GPU model, lacks CPU on the node, or finds fewer GPUs with room
// than it needs; otherwise the free milli of the GPUs that could not take its share. A GPU has
// room when it has a free slot and the share left. `milli_used` and `pods` are per GPU.
double FgdNodeFragment(const WorkloadMix& mix, const std::string& model, int replicas,
                       const std::vector<int>& milli_used, const std::vector<int>& pods,
                       int64_t cpu_free);

struct Placement {
  int node = -1;          // -1: pending
  std::vector<int> gpus;  // one per requested GPU
};

class SimCluster {
 public:
  explicit SimCluster(std::vector<SimNode> nodes);

  int node_count() const { return static_cast<int>(nodes_.size()); }
  const SimNode& node(int n) const { return nodes_[static_cast<size_t>(n)]; }
  int gpu_count(int n) const { return node(n).shape->gpu_count(); }
  int gpu_milli_used(int n, int g) const { return state(n).milli[static_cast<size_t>(g)]; }
  int gpu_pods(int n, int g) const { return state(n).pods[static_cast<size_t>(g)]; }
  const std::vector<int>& gpu_groups(int n, int g) const;  // pod ids on the GPU
  int64_t cpu_used(int n) const { return state(n).cpu; }
  int64_t memory_used(int n) const { return state(n).memory; }
  int slots_used(int n) const;

  // CPU, memory and GPU model fit (what kube-scheduler's own filters check).
  bool HostFits(int n, const SimPod& pod) const;
  // Whether the GPUs are valid for the pod: distinct, each with a free slot and the share.
  bool GpusFit(int n, const SimPod& pod, const std::vector<int>& gpus) const;
  // The pod's share of each GPU on node n; 0 for a pod without GPUs (CPU and memory only).
  int ShareOn(int n, const SimPod& pod) const {
    if (pod.gpus == 0) return 0;
    return pod.milli > 0 ? pod.milli : 1000 / node(n).replicas;
  }
  // GPUs on node n that could take one more pod of this kind.
  std::vector<int> GpusWithRoom(int n, const SimPod& pod) const;

  // Precondition: GpusFit (a pod without GPUs is handed none).
  void Apply(const SimPod& pod, const Placement& placement);
  // Frees what `pod_id` holds; returns its placement (node -1 if it held nothing).
  Placement Remove(int pod_id);
  std::optional<Placement> PlacementOf(int pod_id) const;
  const SimPod* PodOf(int pod_id) const;

  int64_t capacity_milli() const { return capacity_milli_; }
  int64_t allocated_milli() const { return allocated_milli_; }
  // FGD's fragmentation measure of the cluster (milli): FgdNodeFragment summed over the nodes.
  double FragmentedMilli(const WorkloadMix& mix) const;
  // FgdNodeFragment of node n as it is.
  double NodeFragment(int n, const WorkloadMix& mix) const;
  const std::vector<int>& gpu_milli_used(int n) const { return state(n).milli; }
  const std::vector<int>& gpu_pods(int n) const { return state(n).pods; }

 private:
  struct NodeState {
    int64_t cpu = 0;
    int64_t memory = 0;
    std::vector<int> milli;
    std::vector<int> pods;
    std::vector<std::vector<int>> pod_ids;
  };
  const NodeState& state(int n) const { return states_[static_cast<size_t>(n)]; }

  std::vector<SimNode> nodes_;
  std::vector<NodeState> states_;
  struct Held {
    SimPod pod;
    Placement placement;
    int milli = 0;  // per GPU
  };
  std::unordered_map<int, Held> placed_;
  int64_t capacity_milli_ = 0;
  int64_t allocated_milli_ = 0;
};

}  // namespace gputopo::bench

#endif  // GPUTOPO_BENCH_SIM_SIM_CLUSTER_H_
