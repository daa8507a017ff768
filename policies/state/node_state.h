// NodeState: one node's GPUs and who holds them, at one instant.
//
// Time-slicing makes each physical GPU R `nvidia.com/gpu` replicas ("slots"). Each pod placed
// on a GPU takes one slot and a share of it in milli-GPUs (its gputopo.io/gpu-milli, else
// 1000/R); shares on one GPU never exceed 1000 when gputopo places them. An exclusive pod's GPU
// takes no other pod. Pods bound to the node without a readable gputopo.io/assigned-gpus hold
// slots of the node but no known GPU ("unplaced").
//
// Immutable once built: ClusterState builds a new NodeState on every change, so a scheduling
// cycle can read a snapshot without locks.
//
// Thread safety: immutable; safe to share.
#ifndef GPUTOPO_POLICIES_STATE_NODE_STATE_H_
#define GPUTOPO_POLICIES_STATE_NODE_STATE_H_

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gputopo/status.h"
#include "policies/registry/component_args.h"
#include "policies/state/group_filter.h"
#include "topology/gpu_mask.h"
#include "topology/topology_resolver.h"

namespace gputopo::policies {

using topology::GpuMask;

// The node's CPU and memory besides its GPUs: what kube-scheduler's NodeResourcesFit counts.
// Requests of every pod bound to the node, GPU-less ones included.
struct HostResources {
  int64_t cpu_allocatable_milli = 0;  // 0: the node does not say
  int64_t memory_allocatable_bytes = 0;
  int64_t cpu_requested_milli = 0;
  int64_t memory_requested_bytes = 0;
  // Free CPU and memory; where the node does not say, unlimited.
  int64_t cpu_free_milli() const {
    if (cpu_allocatable_milli <= 0) return std::numeric_limits<int64_t>::max();
    return std::max<int64_t>(0, cpu_allocatable_milli - cpu_requested_milli);
  }
  int64_t memory_free_bytes() const {
    if (memory_allocatable_bytes <= 0) return std::numeric_limits<int64_t>::max();
    return std::max<int64_t>(0, memory_allocatable_bytes - memory_requested_bytes);
  }
  friend bool operator==(const HostResources&, const HostResources&) = default;
};

struct Occupant {
  std::string pod_uid;
  std::string pod_key;  // "<namespace>/<name>"
  std::string group;
  int32_t priority = 0;  // the pod's spec.priority
  int milli = 0;         // share of this GPU held
  bool exclusive = false;
  // A claim, not a placement: the pod is nominated to this node (status.nominatedNodeName,
  // after gputopo chose its victims here) and holds these GPUs while its victims leave.
  bool nominated = false;
  bool observed = false;  // known from the node agent's gputopo.io/observed-gpus
  std::string recorded;   // gputopo.io/assigned-gpus where it differs from the observed GPUs
  int64_t cpu_milli = 0;  // the pod's cpu and memory requests (on each of its GPUs' entries)
  int64_t memory_bytes = 0;
};

struct GpuOccupancy {
  int slots_used = 0;
  int milli_used = 0;
  bool exclusive = false;  // held by an exclusive pod: nobody else may join
  std::vector<Occupant> occupants;
};

struct UnplacedPod {
  std::string pod_uid;
  std::string pod_key;
  int slots = 0;
  std::string reason;  // why its GPUs are unknown
  int32_t priority = 0;
  int64_t cpu_milli = 0;
  int64_t memory_bytes = 0;
};

// A nominated pod with a claim on the node.
struct Nominee {
  std::string pod_uid;
  int32_t priority = 0;
  friend bool operator==(const Nominee&, const Nominee&) = default;
};

// A pod's hold on this node, the input NodeState is built from. Whether the hold is a bind still
// in flight (a reservation) is not part of it: the cluster state keeps that
// (ClusterState::ReservedPods), so that confirming a bind changes no node's state.
struct PodPlacement {
  std::string pod_uid;
  std::string pod_key;
  std::string group;
  int32_t priority = 0;   // spec.priority
  int milli_per_gpu = 0;  // 0: the node's default share, 1000/R
  bool exclusive = false;
  bool nominated = false;             // a nominated pod's claim (Occupant::nominated)
  int slots = 0;                      // nvidia.com/gpu replicas the pod holds
  std::vector<std::string> assigned;  // the GPUs it holds (labels); empty: not known
  bool observed = false;              // `assigned` is the node agent's observed-gpus
  std::vector<std::string> recorded;  // assigned-gpus, when they differ from observed-gpus
  int64_t cpu_milli = 0;              // cpu and memory requests
  int64_t memory_bytes = 0;
  friend bool operator==(const PodPlacement&, const PodPlacement&) = default;
};

class NodeState {
 public:
  // `version` must differ from that of every other NodeState of this node.
  // `host`: the node's allocatable CPU and memory and the requests of every pod bound to it
  // (those in `pods` included).
  static NodeState Build(std::string name, Result<topology::ResolvedTopology> topology,
                         const std::vector<PodPlacement>& pods, uint64_t version,
                         HostResources host = {},
                         std::shared_ptr<const ObservedWorkload> workload = nullptr);

  // This node as it would be without the pods whose uids are listed (the others' placements
  // unchanged, their CPU and memory freed): what preemption asks. The result carries `version`,
  // which must be one no cache has seen (0 for a state that is only evaluated, never published).
  NodeState Without(const std::vector<std::string_view>& pod_uids, uint64_t version) const;

  const std::string& name() const { return name_; }
  uint64_t version() const { return version_; }

  bool has_topology() const { return topology_error_.empty(); }
  // Precondition: has_topology().
  const topology::ResolvedTopology& topology() const { return topology_; }
  const topology::TopologyShape& shape() const { return *topology_.shape; }
  // Why the topology could not be resolved; empty when it was.
  const std::string& topology_error() const { return topology_error_; }

  const HostResources& host() const { return host_; }
  // The cluster's learned workload mix when this state was built; null before one is learned.
  const std::shared_ptr<const ObservedWorkload>& observed_workload() const { return workload_; }
  int gpu_count() const { return static_cast<int>(gpus_.size()); }
  int replicas() const { return topology_.replicas_per_gpu; }
  int total_slots() const { return topology_.total_slots; }
  const GpuOccupancy& gpu(int index) const { return gpus_[static_cast<size_t>(index)]; }
  const std::vector<UnplacedPod>& unplaced() const { return unplaced_; }
  int unplaced_slots() const { return unplaced_slots_; }
  int used_slots() const { return used_slots_; }
  int free_slots() const { return used_slots_ >= total_slots() ? 0 : total_slots() - used_slots_; }

  // Free slots and milli of one GPU (never negative); an exclusive GPU has none.
  int gpu_free_slots(int index) const;
  int gpu_free_milli(int index) const;
  // The pods with a claim on this node (Occupant::nominated), each once; usually none.
  const std::vector<Nominee>& nominees() const { return nominees_; }
  // GPUs holding no pod at all.
  GpuMask empty_gpus() const { return empty_gpus_; }
  // GPUs the node agent found not answering NVML (the topology document's `healthy: false`):
  // nothing is placed on them. Their pods still count.
  GpuMask unhealthy_gpus() const { return unhealthy_gpus_; }
  // GPUs that hold at least one pod of `group`. `group_hash` is std::hash of the group, for
  // callers that ask many nodes about one group.
  GpuMask GroupGpus(std::string_view group) const;
  GpuMask GroupGpus(std::string_view group, size_t group_hash) const;
  // Every group with a pod on this node is in it.
  const GroupFilter& group_filter() const { return group_filter_; }

  // Bytes that identify everything placement depends on apart from the pod's group: the shape,
  // replicas, slot totals, each GPU's use, free CPU and memory where the node says, and the
  // learned workload's version.
  // Equal signatures evaluate equally.
  const std::string& signature() const { return signature_; }
  // std::hash of signature(), computed once.
  size_t signature_hash() const { return signature_hash_; }

  // Asks the CPU to fetch this state's own bytes (PrefetchObject), then what they point to and an
  // evaluation reads (PrefetchParts; once the object has arrived), for a caller that is about to
  // evaluate many scattered states in turn. No effect on behaviour.
  void PrefetchObject() const {
    const char* bytes = reinterpret_cast<const char*>(this);
    for (size_t offset = 0; offset < sizeof(NodeState); offset += 64) {
      __builtin_prefetch(bytes + offset);
    }
  }
  void PrefetchParts() const {
    __builtin_prefetch(gpus_.data());
    __builtin_prefetch(reinterpret_cast<const char*>(gpus_.data()) + 64 * 2);
    __builtin_prefetch(reinterpret_cast<const char*>(gpus_.data()) + 64 * 4);
    __builtin_prefetch(groups_.data());
    __builtin_prefetch(signature_.data());
  }

  // The label gputopo writes for GPU `index` in gputopo.io/assigned-gpus: its UUID, or the index.
  std::string GpuLabel(int index) const;
  // Parses assigned-gpus entries (UUIDs or indices) into GPU indices; error names the bad entry.
  Result<std::vector<int>> ParseAssigned(const std::vector<std::string>& entries) const;

 private:
  // Derives the per-GPU totals, the group masks and the signature from gpus_' occupants and
  // unplaced_.
  void Finish();

  std::string name_;
  uint64_t version_ = 0;
  topology::ResolvedTopology topology_;
  std::string topology_error_;
  HostResources host_;
  std::shared_ptr<const ObservedWorkload> workload_;
  std::vector<GpuOccupancy> gpus_;
  std::vector<UnplacedPod> unplaced_;
  std::vector<Nominee> nominees_;
  int unplaced_slots_ = 0;
  int used_slots_ = 0;
  GpuMask empty_gpus_ = 0;
  GpuMask unhealthy_gpus_ = 0;
  struct GroupGpuMask {
    size_t hash = 0;
    std::string group;
    GpuMask gpus = 0;
  };
  std::vector<GroupGpuMask> groups_;  // one per group with a pod on this node
  GroupFilter group_filter_;          // holds each group in groups_
  std::string signature_;
  size_t signature_hash_ = 0;
};

// The claims that a pod (`uid`, `priority`) looks through on `node`: its own, and those of
// nominees of lower priority. That is kube-scheduler's rule (addNominatedPods): a nominated
// pod counts only against pods of its priority or lower. Empty on nodes without claims.
std::vector<std::string_view> ClaimsIgnoredBy(const NodeState& node, std::string_view uid,
                                              int32_t priority);

}  // namespace gputopo::policies

#endif  // GPUTOPO_POLICIES_STATE_NODE_STATE_H_
