// ClusterState: the cache of GPU nodes and GPU pods that scheduling decisions read, and of the
// CPU and memory every other pod bound to a GPU node takes there.
//
// Fed with Node and Pod changes (from a snapshot file, or a watch of the API server) and with
// reservations made by bind. Every change rebuilds the NodeState of the node it touches from
// the pod table, so no pod is ever counted twice, and publishes a new immutable
// ClusterSnapshot. Filter and prioritize read snapshots and never block on writers for longer
// than a pointer copy.
//
// Reservations: bind reserves GPUs here before it writes to the API server, so concurrent
// cycles see them at once. Reserve() is optimistic: it names the NodeState version it decided
// on and fails with Conflict if the node changed since, so that the caller decides again. A
// reservation becomes a plain placement when the pod is seen bound (ConfirmBinding or a pod
// update), and is undone by CancelReservation on any failure.
//
// Claims: after preempt, kube-scheduler nominates the pod to one of the nodes gputopo kept
// (status.nominatedNodeName) and retries it once the victims are gone. The preemptor offers
// the GPUs it chose on each node (OfferClaims); when the pod watch shows the pod nominated to
// one of them, the pod holds a claim on those GPUs there (policies::Occupant::nominated), so
// that no pod of its priority or lower takes them meanwhile. A claim ends when the pod is
// bound (or reserved by its bind), nominated elsewhere, or gone.
//
// The one mutable part of the scheduling state (cluster/: policies/ holds only pure code and
// the immutable NodeState and ClusterSnapshot values it reads).
//
// Thread safety: thread-safe. Writers are serialised by an internal mutex; readers take
// snapshots.
#ifndef GPUTOPO_CLUSTER_CLUSTER_STATE_H_
#define GPUTOPO_CLUSTER_CLUSTER_STATE_H_

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "cluster/workload_learner.h"
#include "gputopo/mutex.h"
#include "gputopo/node_info.h"
#include "gputopo/pod_info.h"
#include "gputopo/status.h"
#include "policies/state/cluster_snapshot.h"
#include "policies/state/node_state.h"
#include "policies/state/node_state_list.h"
#include "topology/topology_resolver.h"

namespace gputopo::cluster {

struct Reservation {
  PodInfo pod;
  std::string node;
  std::vector<int> gpus;      // GPU indices on the node, one per requested replica
  uint64_t node_version = 0;  // the NodeState version the choice was made on
  std::chrono::steady_clock::time_point made{};  // when, for ExpireReservations
};

// Where preemption would put a pod on one node: the GPUs it chose there (indices, one per
// requested replica).
struct ClaimOffer {
  std::string node;
  std::vector<int> gpus;
};

// True when both lists are non-empty and name different GPUs (in any order): the node agent saw
// the pod on other GPUs than gputopo chose.
bool GpusMismatch(const std::vector<std::string>& assigned,
                  const std::vector<std::string>& observed);

struct ClusterCounts {
  size_t nodes = 0;
  size_t pods = 0;          // GPU pods known, pending included
  size_t placed_pods = 0;   // holding GPUs on a node
  size_t reservations = 0;  // binds in flight
  size_t claims = 0;        // nominated pods holding claims
  size_t host_pods = 0;     // GPU-less pods counted for their CPU and memory only
};

class ClusterState {
 public:
  // Told of every snapshot as it is published, while the state's writer lock is held: it must
  // be quick and must not call back into the state.
  using PublishListener =
      std::function<void(const std::shared_ptr<const policies::ClusterSnapshot>&)>;

  // `resolver` must outlive the state. Every GPU pod seen for the first time is shown to a
  // WorkloadLearner; each mix it publishes is handed to every node's state (and so to the
  // fragmentation of presets that pin no workload).
  explicit ClusterState(const topology::TopologyResolver& resolver,
                        PublishListener on_publish = nullptr, WorkloadLearnerOptions learner = {});
  ClusterState(const ClusterState&) = delete;
  ClusterState& operator=(const ClusterState&) = delete;

  // Replaces the whole state (a fresh list), keeping reservations of pods still pending.
  void Reset(const std::vector<NodeInfo>& nodes, const std::vector<PodInfo>& pods);
  // Replace one kind after a fresh list from the API server (each kind is watched, and relisted
  // after 410 Gone, on its own). Nodes or pods missing from the list are gone; reservations of
  // pods still pending in the list are kept.
  void ReplaceNodes(const std::vector<NodeInfo>& nodes);
  void ReplacePods(const std::vector<PodInfo>& pods);
  void UpsertNode(const NodeInfo& node);
  void RemoveNode(std::string_view name);
  // A pod that has finished is dropped (and frees what it held). A bound pod that requests no
  // GPU is kept as its node, CPU and memory only (a few dozen bytes). A bound
  // pod holds the GPUs of its gputopo.io/observed-gpus (the node agent's ground truth) where it
  // has that annotation, else those of gputopo.io/assigned-gpus. Returns true when this update
  // is the first to show the two annotations naming different GPUs (GpusMismatch), so that
  // the caller reports it once. An update that changes nothing the cache derives from the pod
  // (kubelet's status updates: conditions, Pending to Running) rebuilds and publishes nothing,
  // so the snapshot generation that prioritize's reuse of its filter checks stays the same.
  bool UpsertPod(const PodInfo& pod);
  void RemovePod(std::string_view uid);

  // Conflict when the node changed since reservation.node_version, or the pod is already
  // placed; NotFound when the node is unknown.
  Status Reserve(const Reservation& reservation);
  // Preemption chose GPUs for pod `uid` on these nodes; replaces the pod's earlier offers. The
  // offers of the kMaxClaimOffers pods offered most recently are kept.
  void OfferClaims(const std::string& uid, const std::vector<ClaimOffer>& offers);
  static constexpr size_t kMaxClaimOffers = 4096;
  // The reserved pod was bound, with the Binding's `annotations` (which the API server copies
  // onto the pod): its reservation becomes a placement, and the pod as stored carries them, so
  // that the watch's event of the same bind changes nothing kept (UpsertPod).
  void ConfirmBinding(std::string_view uid, std::string_view node,
                      const AnnotationList& annotations = {});
  // Undoes a reservation; does nothing when `uid` holds none.
  void CancelReservation(std::string_view uid);
  // Undoes reservations made before `cutoff` that were never seen bound: a bind whose outcome
  // could not be read back keeps its GPUs reserved (the safe side) until the watch shows the
  // pod bound, or until this expiry. Returns how many expired.
  size_t ExpireReservations(std::chrono::steady_clock::time_point cutoff);

  std::shared_ptr<const policies::ClusterSnapshot> Snapshot() const;
  // Copies of the nodes and GPU pods known now (for /debug/snapshot in live mode; GPU-less pods
  // are not kept whole, so they are left out).
  std::pair<std::vector<NodeInfo>, std::vector<PodInfo>> Export() const;
  std::optional<PodInfo> FindPod(std::string_view uid) const;
  // The uids of the pods on `node` whose bind is in flight (reserved, not yet confirmed), for
  // /debug/nodes/<name>: node states do not carry it (PodPlacement). Reads that node's pods only.
  std::unordered_set<std::string> ReservedPods(std::string_view node) const;
  ClusterCounts Counts() const;
  // The learned workload mix now in the snapshots (null before the first), and the number of
  // GPU pods it has been shown.
  std::pair<std::shared_ptr<const policies::ObservedWorkload>, uint64_t> Workload() const;

 private:
  struct PodEntry {
    PodInfo info;
    std::string node;  // where it holds GPUs; empty when it holds none
    std::vector<std::string>
        assigned;           // GPU labels it holds (from the annotations or a reservation)
    bool observed = false;  // `assigned` is the node agent's observed-gpus
    bool mismatch = false;  // observed-gpus and assigned-gpus differ
    std::vector<std::string> recorded;  // assigned-gpus, kept only while they differ
    bool reserved = false;
    std::chrono::steady_clock::time_point reserved_at{};
    bool nominated = false;  // `node` and `assigned` are a claim: the pod is still pending
  };
  // A bound pod without GPUs: what it takes of its node besides GPUs.
  struct HostPod {
    std::string node;
    int64_t cpu_milli = 0;
    int64_t memory_bytes = 0;
  };
  struct NodeEntry {
    NodeInfo info;
    Result<topology::ResolvedTopology> topology{InvalidArgument("unresolved")};
  };

  // All private functions require mutex_ to be held.
  struct PutResult {
    bool new_mismatch = false;  // UpsertPod's answer
    bool changed = true;        // false: nothing to publish
  };
  PutResult PutPodLocked(const PodInfo& pod) GPUTOPO_REQUIRES(mutex_);
  void DetachPodLocked(PodEntry& entry) GPUTOPO_REQUIRES(mutex_);
  // Makes a pending, unreserved pod's claim match its nominated node and the offers: sets,
  // moves or drops it.
  void ClaimLocked(PodEntry& entry) GPUTOPO_REQUIRES(mutex_);
  // Whether an offer_order_ entry still names its pod's current offer (not a stale one).
  bool IsCurrentOfferLocked(const std::pair<uint64_t, std::string>& entry) const
      GPUTOPO_REQUIRES(mutex_);
  // Records (or, with an empty node, forgets) a GPU-less pod's CPU and memory; rebuilds the
  // nodes whose totals changed. False when nothing changed.
  bool PutHostPodLocked(const std::string& uid, HostPod pod) GPUTOPO_REQUIRES(mutex_);
  void RebuildNodeLocked(const std::string& name) GPUTOPO_REQUIRES(mutex_);
  // What the node state of `entry`'s node is built from for this pod.
  static policies::PodPlacement PlacementOf(const std::string& uid, const PodEntry& entry);
  // Positions assigned afresh (the node set changed), every node rebuilt, then published.
  void RebuildAllLocked() GPUTOPO_REQUIRES(mutex_);
  void PublishLocked() GPUTOPO_REQUIRES(mutex_);
  // Replaces the name index and rebuilds the snapshots' flat copy of it.
  void SetIndexLocked(std::shared_ptr<const policies::NodeIndex> index) GPUTOPO_REQUIRES(mutex_);

  // Shows a GPU pod to the learner; a new mix marks every node for rebuilding.
  void LearnLocked(const PodInfo& pod) GPUTOPO_REQUIRES(mutex_);

  const topology::TopologyResolver& resolver_;
  const PublishListener on_publish_;

  mutable Mutex mutex_;
  std::map<std::string, NodeEntry, std::less<>> nodes_ GPUTOPO_GUARDED_BY(mutex_);
  std::unordered_map<std::string, PodEntry> pods_ GPUTOPO_GUARDED_BY(mutex_);
  std::map<std::string, std::set<std::string>, std::less<>> pods_by_node_
      GPUTOPO_GUARDED_BY(mutex_);
  std::unordered_map<std::string, HostPod> host_pods_ GPUTOPO_GUARDED_BY(mutex_);
  // Per node: the summed CPU and memory of its host_pods_.
  std::map<std::string, std::pair<int64_t, int64_t>, std::less<>> host_use_
      GPUTOPO_GUARDED_BY(mutex_);
  policies::NodeStateList node_states_ GPUTOPO_GUARDED_BY(mutex_);
  // One preempt call's choice for a pod: the GPU labels on each node it kept. `sequence` tells
  // the call apart from the pod's earlier ones in offer_order_.
  struct Offer {
    uint64_t sequence = 0;
    std::vector<std::pair<std::string, std::vector<std::string>>> nodes;
  };
  // Per pod uid: its latest offer. offer_order_ lists (sequence, uid), oldest first; an entry
  // whose sequence is no longer its pod's offer is stale (the offer was replaced or dropped),
  // and is skipped when it comes up for eviction, and compacted away once it would double the
  // queue.
  std::unordered_map<std::string, Offer> offers_ GPUTOPO_GUARDED_BY(mutex_);
  std::deque<std::pair<uint64_t, std::string>> offer_order_ GPUTOPO_GUARDED_BY(mutex_);
  uint64_t next_offer_sequence_ GPUTOPO_GUARDED_BY(mutex_) = 0;
  // Nodes whose state holds a claim, for the snapshots' claimed_positions().
  std::set<std::string, std::less<>> claimed_nodes_ GPUTOPO_GUARDED_BY(mutex_);
  std::vector<policies::NodeSummary> summaries_
      GPUTOPO_GUARDED_BY(mutex_);  // parallel to node_states_
  std::shared_ptr<const policies::NodeIndex> index_ GPUTOPO_GUARDED_BY(mutex_);
  std::shared_ptr<const policies::FlatNameIndex> flat_index_
      GPUTOPO_GUARDED_BY(mutex_);  // rebuilt with index_
  WorkloadLearner learner_ GPUTOPO_GUARDED_BY(mutex_);
  std::shared_ptr<const policies::ObservedWorkload> workload_ GPUTOPO_GUARDED_BY(mutex_);
  bool workload_changed_ GPUTOPO_GUARDED_BY(mutex_) = false;  // nodes not yet rebuilt with it
  // While set, RebuildNodeLocked only notes the node: a relist (Reset, ReplacePods) rebuilds
  // each node it touched once at its end, not once per pod.
  std::optional<std::set<std::string, std::less<>>> deferred_rebuilds_ GPUTOPO_GUARDED_BY(mutex_);
  uint64_t next_version_ GPUTOPO_GUARDED_BY(mutex_) = 1;
  uint64_t generation_ GPUTOPO_GUARDED_BY(mutex_) = 0;

  mutable Mutex snapshot_mutex_;
  std::shared_ptr<const policies::ClusterSnapshot> snapshot_ GPUTOPO_GUARDED_BY(snapshot_mutex_);
};

// Splits "a,b,c" into entries, trimming spaces and dropping empty ones.
std::vector<std::string> SplitAssignedGpus(std::string_view value);

}  // namespace gputopo::cluster

#endif  // GPUTOPO_CLUSTER_CLUSTER_STATE_H_
