#include "cluster/cluster_state.h"

#include <algorithm>

#include "gputopo/saturating.h"
#include "gputopo/well_known.h"
#include "policies/requirements/pod_requirements.h"

namespace gputopo::cluster {
namespace {

// The pod as the cache keeps it: without its labels (the DisruptionBudgetIndex interns them),
// which would otherwise cost every GPU pod a few hundred bytes.
void StoreInfo(PodInfo& stored, const PodInfo& pod) {
  stored = pod;
  stored.labels = LabelSet();
}

// Whether an update of a pod changes nothing that the cache derives from it: it differs from
// the pod as stored only in its resourceVersion, its labels (not kept), or a phase that stays
// non-terminal. Every other field, present or future, counts (PodInfo's operator==).
bool ChangesNothingKept(const PodInfo& stored, const PodInfo& update) {
  if (stored.IsTerminal() || update.IsTerminal()) return false;
  PodInfo comparable = update;
  comparable.resource_version = stored.resource_version;
  comparable.labels = stored.labels;
  comparable.phase = stored.phase;
  comparable.annotations = stored.annotations;  // compared below, in any order
  if (!(comparable == stored)) return false;
  if (update.annotations.size() != stored.annotations.size()) return false;
  AnnotationList a = stored.annotations;
  AnnotationList b = update.annotations;
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  return a == b;
}

}  // namespace

using policies::ClusterSnapshot;
using policies::DefaultGroupOf;
using policies::FlatNameIndex;
using policies::NodeIndex;
using policies::NodeState;
using policies::NodeSummary;
using policies::PodPlacement;
using policies::PodRequirements;
using policies::RequirementsOf;

std::vector<std::string> SplitAssignedGpus(std::string_view value) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= value.size()) {
    size_t end = value.find(',', start);
    if (end == std::string_view::npos) end = value.size();
    std::string_view item = value.substr(start, end - start);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (!item.empty()) out.emplace_back(item);
    start = end + 1;
  }
  return out;
}

bool GpusMismatch(const std::vector<std::string>& assigned,
                  const std::vector<std::string>& observed) {
  if (assigned.empty() || observed.empty()) return false;
  std::vector<std::string> a = assigned;
  std::vector<std::string> b = observed;
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  return a != b;
}

ClusterState::ClusterState(const topology::TopologyResolver& resolver, PublishListener on_publish,
                           WorkloadLearnerOptions learner)
    : resolver_(resolver), on_publish_(std::move(on_publish)), learner_(learner) {
  MutexLock lock(mutex_);
  SetIndexLocked(std::make_shared<const NodeIndex>());
  PublishLocked();
}

void ClusterState::Reset(const std::vector<NodeInfo>& nodes, const std::vector<PodInfo>& pods) {
  MutexLock lock(mutex_);
  // Keep reservations of binds in flight whose pods are still pending in the new list.
  std::unordered_map<std::string, PodEntry> reserved;
  for (auto& [uid, entry] : pods_) {
    if (entry.reserved) reserved.emplace(uid, std::move(entry));
  }
  nodes_.clear();
  pods_.clear();
  pods_by_node_.clear();
  claimed_nodes_.clear();
  host_pods_.clear();
  host_use_.clear();
  deferred_rebuilds_.emplace();  // every node is rebuilt below
  for (const NodeInfo& node : nodes) {
    nodes_.insert_or_assign(node.name, NodeEntry{node, resolver_.Resolve(node)});
  }
  for (const PodInfo& pod : pods) {
    auto it = reserved.find(pod.uid);
    if (it != reserved.end() && pod.node_name.empty() && !pod.HoldsNothing()) {
      PodEntry entry = std::move(it->second);
      reserved.erase(it);  // a pod listed twice must not take the moved-from entry
      StoreInfo(entry.info, pod);
      pods_by_node_[entry.node].insert(pod.uid);
      pods_.insert_or_assign(pod.uid, std::move(entry));
      continue;
    }
    PutPodLocked(pod);
  }
  deferred_rebuilds_.reset();
  RebuildAllLocked();
}

void ClusterState::RebuildAllLocked() {
  workload_changed_ = false;  // every node is rebuilt here, with the current mix
  claimed_nodes_.clear();     // and says again whether it holds a claim
  auto index = std::make_shared<NodeIndex>();
  node_states_.clear();
  summaries_.clear();
  for (const auto& [name, entry] : nodes_) {
    index->emplace(name, node_states_.size());
    node_states_.push_back(nullptr);
    summaries_.emplace_back();
  }
  SetIndexLocked(std::move(index));
  for (const auto& [name, entry] : nodes_) RebuildNodeLocked(name);
  PublishLocked();
}

void ClusterState::ReplaceNodes(const std::vector<NodeInfo>& nodes) {
  MutexLock lock(mutex_);
  std::map<std::string, const NodeInfo*, std::less<>> fresh;
  for (const NodeInfo& node : nodes) fresh[node.name] = &node;
  std::erase_if(nodes_, [&](const auto& entry) { return fresh.count(entry.first) == 0; });
  for (const NodeInfo& node : nodes) {
    nodes_.insert_or_assign(node.name, NodeEntry{node, resolver_.Resolve(node)});
  }
  // Positions are assigned afresh: the node set may have changed either way.
  RebuildAllLocked();
}

void ClusterState::ReplacePods(const std::vector<PodInfo>& pods) {
  MutexLock lock(mutex_);
  std::unordered_map<std::string, const PodInfo*> fresh;
  for (const PodInfo& pod : pods) fresh[pod.uid] = &pod;
  std::vector<std::string> gone;
  for (const auto& [uid, entry] : pods_) {
    if (fresh.count(uid) == 0) gone.push_back(uid);
  }
  std::vector<std::string> gone_host;
  for (const auto& [uid, entry] : host_pods_) {
    if (fresh.count(uid) == 0) gone_host.push_back(uid);
  }
  deferred_rebuilds_.emplace();
  for (const std::string& uid : gone_host) PutHostPodLocked(uid, {});
  for (const std::string& uid : gone) {
    auto it = pods_.find(uid);
    DetachPodLocked(it->second);
    pods_.erase(it);
  }
  for (const PodInfo& pod : pods) PutPodLocked(pod);
  const std::set<std::string, std::less<>> touched = std::move(*deferred_rebuilds_);
  deferred_rebuilds_.reset();
  for (const std::string& name : touched) RebuildNodeLocked(name);
  PublishLocked();
}

void ClusterState::UpsertNode(const NodeInfo& node) {
  MutexLock lock(mutex_);
  nodes_.insert_or_assign(node.name, NodeEntry{node, resolver_.Resolve(node)});
  if (index_->find(node.name) == index_->end()) {
    auto index = std::make_shared<NodeIndex>(*index_);
    index->emplace(node.name, node_states_.size());
    node_states_.push_back(nullptr);
    summaries_.emplace_back();
    SetIndexLocked(std::move(index));
  }
  RebuildNodeLocked(node.name);
  PublishLocked();
}

void ClusterState::RemoveNode(std::string_view name) {
  MutexLock lock(mutex_);
  auto it = nodes_.find(name);
  if (it == nodes_.end()) return;
  nodes_.erase(it);
  claimed_nodes_.erase(std::string(name));
  // Pods bound to it stay in the pod table: they are the API server's to delete.
  auto index = std::make_shared<NodeIndex>();
  policies::NodeStateList states;
  std::vector<NodeSummary> summaries;
  for (size_t i = 0; i < node_states_.size(); ++i) {
    if (node_states_[i]->name() == name) continue;
    index->emplace(node_states_[i]->name(), states.size());
    states.push_back(node_states_[i]);
    summaries.push_back(summaries_[i]);
  }
  node_states_ = std::move(states);
  summaries_ = std::move(summaries);
  SetIndexLocked(std::move(index));
  PublishLocked();
}

bool ClusterState::UpsertPod(const PodInfo& pod) {
  MutexLock lock(mutex_);
  const PutResult result = PutPodLocked(pod);
  if (result.changed) PublishLocked();
  return result.new_mismatch;
}

void ClusterState::RemovePod(std::string_view uid) {
  MutexLock lock(mutex_);
  if (host_pods_.count(std::string(uid)) > 0) {
    PutHostPodLocked(std::string(uid), {});
    PublishLocked();
    return;
  }
  offers_.erase(std::string(uid));
  auto it = pods_.find(std::string(uid));
  if (it == pods_.end()) return;
  DetachPodLocked(it->second);
  pods_.erase(it);
  PublishLocked();
}

ClusterState::PutResult ClusterState::PutPodLocked(const PodInfo& pod) {
  auto it = pods_.find(pod.uid);
  if (!pod.node_name.empty() || pod.HoldsNothing()) offers_.erase(pod.uid);  // no claim to come
  if (pod.gpu_request <= 0 || pod.HoldsNothing()) {
    bool changed = false;
    if (it != pods_.end()) {
      DetachPodLocked(it->second);
      pods_.erase(it);
      changed = true;
    }
    HostPod host;
    if (!pod.HoldsNothing() && !pod.node_name.empty() &&
        (pod.cpu_request_milli > 0 || pod.memory_request_bytes > 0)) {
      host = {pod.node_name, pod.cpu_request_milli, pod.memory_request_bytes};
    }
    changed = PutHostPodLocked(pod.uid, std::move(host)) || changed;
    return {false, changed};
  }
  // Requests cannot change on a live pod, but a pod may be listed anew under its uid.
  const bool was_host_pod = host_pods_.count(pod.uid) > 0 && PutHostPodLocked(pod.uid, {});
  if (it == pods_.end()) {
    it = pods_.emplace(pod.uid, PodEntry{}).first;
    LearnLocked(pod);
  }
  PodEntry& entry = it->second;
  if (pod.node_name.empty()) {
    // Pending. A reservation stays (its bind is in flight); a pod seen bound never goes back
    // to pending (spec.nodeName is immutable), so such an event is stale and ignored.
    if (!entry.node.empty() && !entry.reserved && !entry.nominated) return {false, was_host_pod};
    StoreInfo(entry.info, pod);
    if (entry.reserved) {
      RebuildNodeLocked(entry.node);
    } else {
      ClaimLocked(entry);
    }
    return {false, true};
  }
  if (!entry.reserved && !entry.nominated && entry.node == pod.node_name &&
      ChangesNothingKept(entry.info, pod)) {
    StoreInfo(entry.info, pod);  // the latest resourceVersion and phase
    return {false, was_host_pod};
  }
  // What the pod holds: the node agent's ground truth over gputopo's own choice.
  std::vector<std::string> recorded;
  if (auto value = FindAnnotation(pod.annotations, kAnnotationAssignedGpus)) {
    recorded = SplitAssignedGpus(*value);
  }
  std::vector<std::string> observed;
  if (auto value = FindAnnotation(pod.annotations, kAnnotationObservedGpus)) {
    observed = SplitAssignedGpus(*value);
  }
  const bool mismatch = GpusMismatch(recorded, observed);
  const bool new_mismatch = mismatch && !entry.mismatch;
  entry.mismatch = mismatch;
  entry.observed = !observed.empty();
  entry.recorded = mismatch ? std::move(recorded) : std::vector<std::string>();
  std::vector<std::string> assigned = observed.empty() ? std::move(recorded) : std::move(observed);
  if (entry.reserved && entry.node == pod.node_name &&
      (assigned.empty() || assigned == entry.assigned)) {
    // Our own bind, now seen through the API: the reservation becomes a placement.
    StoreInfo(entry.info, pod);
    entry.reserved = false;
    RebuildNodeLocked(entry.node);
    return {new_mismatch, true};
  }
  if (entry.node != pod.node_name) DetachPodLocked(entry);
  StoreInfo(entry.info, pod);
  entry.node = pod.node_name;
  entry.assigned = std::move(assigned);
  entry.reserved = false;
  entry.nominated = false;
  pods_by_node_[entry.node].insert(pod.uid);
  RebuildNodeLocked(entry.node);
  return {new_mismatch, true};
}

void ClusterState::DetachPodLocked(PodEntry& entry) {
  if (entry.node.empty()) return;
  const std::string node = entry.node;
  auto it = pods_by_node_.find(node);
  if (it != pods_by_node_.end()) {
    it->second.erase(entry.info.uid);
    if (it->second.empty()) pods_by_node_.erase(it);
  }
  entry.node.clear();
  entry.assigned.clear();
  entry.reserved = false;
  entry.nominated = false;
  RebuildNodeLocked(node);
}

void ClusterState::ClaimLocked(PodEntry& entry) {
  const std::string& target = entry.info.nominated_node;
  const std::vector<std::string>* gpus = nullptr;
  if (auto it = offers_.find(entry.info.uid); it != offers_.end() && !target.empty()) {
    for (const auto& [node, labels] : it->second.nodes) {
      if (node == target) gpus = &labels;
    }
  }
  if (entry.nominated && gpus != nullptr && entry.node == target && entry.assigned == *gpus) {
    RebuildNodeLocked(entry.node);  // the pod's other fields may have changed
    return;
  }
  if (entry.nominated) DetachPodLocked(entry);
  if (gpus == nullptr) return;
  entry.node = target;
  entry.assigned = *gpus;
  entry.nominated = true;
  pods_by_node_[entry.node].insert(entry.info.uid);
  RebuildNodeLocked(entry.node);
}

void ClusterState::OfferClaims(const std::string& uid, const std::vector<ClaimOffer>& offers) {
  MutexLock lock(mutex_);
  std::vector<std::pair<std::string, std::vector<std::string>>> labelled;
  for (const ClaimOffer& offer : offers) {
    auto index_it = index_->find(offer.node);
    if (index_it == index_->end() || offer.gpus.empty()) continue;
    const NodeState& node = *node_states_[index_it->second];
    std::vector<std::string> labels;
    for (int gpu : offer.gpus) {
      if (gpu >= 0 && gpu < node.gpu_count()) labels.push_back(node.GpuLabel(gpu));
    }
    if (labels.size() == offer.gpus.size()) labelled.emplace_back(offer.node, std::move(labels));
  }
  const uint64_t sequence = ++next_offer_sequence_;
  offers_.insert_or_assign(uid, Offer{sequence, std::move(labelled)});
  offer_order_.emplace_back(sequence, uid);
  // Plain loops, not predicate lambdas: a lambda is a function of its own to the thread safety
  // analysis, which would not know that mutex_ is held there.
  while (offers_.size() > kMaxClaimOffers) {
    if (IsCurrentOfferLocked(offer_order_.front())) offers_.erase(offer_order_.front().second);
    offer_order_.pop_front();
  }
  if (offer_order_.size() > 2 * kMaxClaimOffers) {
    std::deque<std::pair<uint64_t, std::string>> current;
    for (auto& entry : offer_order_) {
      if (IsCurrentOfferLocked(entry)) current.push_back(std::move(entry));
    }
    offer_order_.swap(current);
  }
  // Usually the pod is nominated only after this call, and nothing changes (nor is published)
  // now. A pod already nominated (a second preemption for it) claims at once. A pod with a
  // reservation or a placement holds GPUs that no claim replaces.
  auto pod = pods_.find(uid);
  if (pod == pods_.end() || pod->second.info.nominated_node.empty() ||
      (!pod->second.node.empty() && !pod->second.nominated)) {
    return;
  }
  ClaimLocked(pod->second);
  PublishLocked();
}

bool ClusterState::IsCurrentOfferLocked(const std::pair<uint64_t, std::string>& entry) const {
  auto it = offers_.find(entry.second);
  return it != offers_.end() && it->second.sequence == entry.first;
}

bool ClusterState::PutHostPodLocked(const std::string& uid, HostPod pod) {
  auto it = host_pods_.find(uid);
  const bool existed = it != host_pods_.end();
  if (existed) {
    const HostPod& old = it->second;
    if (old.node == pod.node && old.cpu_milli == pod.cpu_milli &&
        old.memory_bytes == pod.memory_bytes) {
      return false;
    }
    auto use = host_use_.find(old.node);
    if (use != host_use_.end()) {
      use->second.first -= old.cpu_milli;
      use->second.second -= old.memory_bytes;
      if (use->second.first <= 0 && use->second.second <= 0) host_use_.erase(use);
    }
    const std::string old_node = old.node;
    host_pods_.erase(it);
    if (old_node != pod.node) RebuildNodeLocked(old_node);  // else rebuilt once, below
  }
  if (pod.node.empty()) return existed;
  auto& use = host_use_[pod.node];
  use.first = SaturatingAdd(use.first, pod.cpu_milli);
  use.second = SaturatingAdd(use.second, pod.memory_bytes);
  const std::string node = pod.node;
  host_pods_.emplace(uid, std::move(pod));
  RebuildNodeLocked(node);
  return true;
}

PodPlacement ClusterState::PlacementOf(const std::string& uid, const PodEntry& entry) {
  PodPlacement placement;
  placement.pod_uid = uid;
  placement.pod_key = entry.info.Key();
  placement.slots = static_cast<int>(entry.info.gpu_request);
  placement.priority = entry.info.priority;
  placement.nominated = entry.nominated;
  placement.assigned = entry.assigned;
  placement.observed = entry.observed;
  placement.recorded = entry.recorded;
  placement.cpu_milli = entry.info.cpu_request_milli;
  placement.memory_bytes = entry.info.memory_request_bytes;
  Result<PodRequirements> req = RequirementsOf(entry.info);
  if (req.ok()) {
    placement.group = req->group;
    placement.milli_per_gpu = req->gpu_milli.value_or(0);
    placement.exclusive = req->exclusive;
  } else {
    placement.group = DefaultGroupOf(entry.info).first;
  }
  return placement;
}

void ClusterState::RebuildNodeLocked(const std::string& name) {
  if (deferred_rebuilds_) {
    deferred_rebuilds_->insert(name);
    return;
  }
  auto node_it = nodes_.find(name);
  auto index_it = index_->find(name);
  if (node_it == nodes_.end() || index_it == index_->end()) return;  // node not known (yet)
  std::vector<PodPlacement> placements;
  policies::HostResources host;
  host.cpu_allocatable_milli = node_it->second.info.allocatable_cpu_milli;
  host.memory_allocatable_bytes = node_it->second.info.allocatable_memory_bytes;
  if (auto use = host_use_.find(name); use != host_use_.end()) {
    host.cpu_requested_milli = use->second.first;
    host.memory_requested_bytes = use->second.second;
  }
  if (auto pods_it = pods_by_node_.find(name); pods_it != pods_by_node_.end()) {
    placements.reserve(pods_it->second.size());
    for (const std::string& uid : pods_it->second) {
      PodPlacement placement = PlacementOf(uid, pods_.at(uid));
      host.cpu_requested_milli = SaturatingAdd(host.cpu_requested_milli, placement.cpu_milli);
      host.memory_requested_bytes =
          SaturatingAdd(host.memory_requested_bytes, placement.memory_bytes);
      placements.push_back(std::move(placement));
    }
  }
  auto state = std::make_shared<const NodeState>(NodeState::Build(
      name, node_it->second.topology, placements, next_version_++, host, workload_));
  if (state->nominees().empty()) {
    claimed_nodes_.erase(name);
  } else {
    claimed_nodes_.insert(name);
  }
  summaries_[index_it->second] = {state->version(), state->group_filter()};
  node_states_.Set(index_it->second, std::move(state));
}

void ClusterState::SetIndexLocked(std::shared_ptr<const NodeIndex> index) {
  index_ = std::move(index);
  std::vector<std::string_view> names(index_->size());
  for (const auto& [name, position] : *index_) names[position] = name;
  flat_index_ = std::make_shared<const FlatNameIndex>(names);
}

void ClusterState::LearnLocked(const PodInfo& pod) {
  Result<PodRequirements> req = RequirementsOf(pod);
  if (!req.ok() || req->gpus <= 0) return;
  const int milli = req->exclusive ? policies::kWholeGpuMilli : req->gpu_milli.value_or(0);
  if (learner_.Observe(req->gpus, milli, req->cpu_milli, req->memory_bytes)) {
    workload_ = learner_.Published();
    workload_changed_ = true;
  }
}

void ClusterState::PublishLocked() {
  if (workload_changed_) {
    workload_changed_ = false;
    for (const auto& [name, entry] : nodes_) RebuildNodeLocked(name);
  }
  std::vector<size_t> claimed;
  for (const std::string& name : claimed_nodes_) {
    if (auto it = index_->find(name); it != index_->end()) claimed.push_back(it->second);
  }
  std::sort(claimed.begin(), claimed.end());
  auto snapshot = std::make_shared<const ClusterSnapshot>(
      ++generation_, node_states_.Share(), summaries_, flat_index_, std::move(claimed));
  if (on_publish_) on_publish_(snapshot);
  MutexLock lock(snapshot_mutex_);
  snapshot_ = std::move(snapshot);
}

std::shared_ptr<const ClusterSnapshot> ClusterState::Snapshot() const {
  MutexLock lock(snapshot_mutex_);
  return snapshot_;
}

Status ClusterState::Reserve(const Reservation& reservation) {
  MutexLock lock(mutex_);
  auto index_it = index_->find(reservation.node);
  if (index_it == index_->end()) return NotFound("node " + reservation.node + " is not known");
  const NodeState& current = *node_states_[index_it->second];
  if (current.version() != reservation.node_version) {
    return Conflict("node " + reservation.node + " changed while the placement was chosen");
  }
  if (!current.has_topology()) return FailedPrecondition(current.topology_error());
  std::vector<std::string> labels;
  for (int gpu : reservation.gpus) {
    if (gpu < 0 || gpu >= current.gpu_count()) {
      return InvalidArgument("GPU " + std::to_string(gpu) + " is not on node " + reservation.node);
    }
    labels.push_back(current.GpuLabel(gpu));
  }
  auto it = pods_.find(reservation.pod.uid);
  if (it != pods_.end() && it->second.nominated) DetachPodLocked(it->second);  // claim -> bind
  if (it != pods_.end() && !it->second.node.empty()) {
    return Conflict("pod " + reservation.pod.Key() + " already holds GPUs on node " +
                    it->second.node);
  }
  if (it == pods_.end()) {
    it = pods_.emplace(reservation.pod.uid, PodEntry{}).first;
    LearnLocked(reservation.pod);
  }
  PodEntry& entry = it->second;
  StoreInfo(entry.info, reservation.pod);
  entry.node = reservation.node;
  entry.assigned = std::move(labels);
  entry.reserved = true;
  entry.reserved_at = reservation.made;
  pods_by_node_[entry.node].insert(entry.info.uid);
  RebuildNodeLocked(entry.node);
  PublishLocked();
  return Status::Ok();
}

void ClusterState::ConfirmBinding(std::string_view uid, std::string_view node,
                                  const AnnotationList& annotations) {
  MutexLock lock(mutex_);
  auto it = pods_.find(std::string(uid));
  if (it == pods_.end() || !it->second.reserved || it->second.node != node) return;
  const PodPlacement before = PlacementOf(it->first, it->second);
  it->second.reserved = false;
  it->second.info.node_name = std::string(node);
  AnnotationList& stored = it->second.info.annotations;
  for (const auto& [key, value] : annotations) {
    auto found = std::find_if(stored.begin(), stored.end(),
                              [&key = key](const auto& entry) { return entry.first == key; });
    if (found != stored.end()) {
      found->second = value;
    } else {
      stored.emplace_back(key, value);
    }
  }
  // A bind confirmed as reserved changes no node state: the reservation already placed the
  // pod, and whether it is in flight is not part of a node's state. Publishing nothing keeps
  // the snapshot generation that the next pod's prioritize reuses its filter by.
  if (PlacementOf(it->first, it->second) == before) return;
  RebuildNodeLocked(it->second.node);
  PublishLocked();
}

void ClusterState::CancelReservation(std::string_view uid) {
  MutexLock lock(mutex_);
  auto it = pods_.find(std::string(uid));
  if (it == pods_.end() || !it->second.reserved) return;
  DetachPodLocked(it->second);
  if (it->second.info.node_name.empty()) ClaimLocked(it->second);  // back to its claim, if any
  PublishLocked();
}

size_t ClusterState::ExpireReservations(std::chrono::steady_clock::time_point cutoff) {
  MutexLock lock(mutex_);
  size_t expired = 0;
  for (auto& [uid, entry] : pods_) {
    if (entry.reserved && entry.reserved_at < cutoff) {
      DetachPodLocked(entry);
      ++expired;
    }
  }
  if (expired > 0) PublishLocked();
  return expired;
}

std::pair<std::vector<NodeInfo>, std::vector<PodInfo>> ClusterState::Export() const {
  MutexLock lock(mutex_);
  std::pair<std::vector<NodeInfo>, std::vector<PodInfo>> out;
  for (const auto& [name, entry] : nodes_) out.first.push_back(entry.info);
  for (const auto& [uid, entry] : pods_) out.second.push_back(entry.info);
  std::sort(out.second.begin(), out.second.end(),
            [](const PodInfo& a, const PodInfo& b) { return a.Key() < b.Key(); });
  return out;
}

std::optional<PodInfo> ClusterState::FindPod(std::string_view uid) const {
  MutexLock lock(mutex_);
  auto it = pods_.find(std::string(uid));
  if (it == pods_.end()) return std::nullopt;
  return it->second.info;
}

std::pair<std::shared_ptr<const policies::ObservedWorkload>, uint64_t> ClusterState::Workload()
    const {
  MutexLock lock(mutex_);
  return {workload_, learner_.observations()};
}

std::unordered_set<std::string> ClusterState::ReservedPods(std::string_view node) const {
  MutexLock lock(mutex_);
  std::unordered_set<std::string> out;
  const auto on_node = pods_by_node_.find(node);
  if (on_node == pods_by_node_.end()) return out;
  for (const std::string& uid : on_node->second) {
    if (pods_.at(uid).reserved) out.insert(uid);
  }
  return out;
}

ClusterCounts ClusterState::Counts() const {
  MutexLock lock(mutex_);
  ClusterCounts counts;
  counts.nodes = nodes_.size();
  counts.pods = pods_.size();
  counts.host_pods = host_pods_.size();
  for (const auto& [uid, entry] : pods_) {
    counts.placed_pods += !entry.node.empty() && !entry.nominated ? 1 : 0;
    counts.reservations += entry.reserved ? 1 : 0;
    counts.claims += entry.nominated ? 1 : 0;
  }
  return counts;
}

}  // namespace gputopo::cluster
