#include "policies/state/node_state.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <functional>
#include <thread>

#include "policies/requirements/pod_requirements.h"

namespace gputopo::policies {
namespace {

void AppendInt(std::string& out, int64_t value) {
  char buffer[sizeof(value)];
  std::memcpy(buffer, &value, sizeof(value));
  out.append(buffer, sizeof(value));
}

}  // namespace

std::string NodeState::GpuLabel(int index) const {
  const auto& gpus = *topology_.gpus;
  if (index >= 0 && index < static_cast<int>(gpus.size()) &&
      !gpus[static_cast<size_t>(index)].uuid.empty()) {
    return gpus[static_cast<size_t>(index)].uuid;
  }
  return std::to_string(index);
}

Result<std::vector<int>> NodeState::ParseAssigned(const std::vector<std::string>& entries) const {
  std::vector<int> indices;
  const auto& gpus = *topology_.gpus;
  for (const std::string& entry : entries) {
    int found = -1;
    for (size_t i = 0; i < gpus.size(); ++i) {
      if (!gpus[i].uuid.empty() && gpus[i].uuid == entry) found = static_cast<int>(i);
    }
    if (found < 0) {
      int index = -1;
      auto [ptr, ec] = std::from_chars(entry.data(), entry.data() + entry.size(), index);
      if (ec == std::errc() && ptr == entry.data() + entry.size() && index >= 0 &&
          index < gpu_count()) {
        found = index;
      }
    }
    if (found < 0) return InvalidArgument("GPU '" + entry + "' is not on node " + name_);
    indices.push_back(found);
  }
  return indices;
}

int NodeState::gpu_free_slots(int index) const {
  const GpuOccupancy& g = gpu(index);
  if (g.exclusive) return 0;
  return g.slots_used >= replicas() ? 0 : replicas() - g.slots_used;
}

int NodeState::gpu_free_milli(int index) const {
  const GpuOccupancy& g = gpu(index);
  if (g.exclusive) return 0;
  return g.milli_used >= kWholeGpuMilli ? 0 : kWholeGpuMilli - g.milli_used;
}

GpuMask NodeState::GroupGpus(std::string_view group) const {
  return GroupGpus(group, std::hash<std::string_view>{}(group));
}

GpuMask NodeState::GroupGpus(std::string_view group, size_t group_hash) const {
  if (!group_filter_.MayContain(group_hash)) return 0;
  for (const GroupGpuMask& g : groups_) {
    if (g.hash == group_hash && g.group == group) return g.gpus;
  }
  return 0;
}

NodeState NodeState::Build(std::string name, Result<topology::ResolvedTopology> resolved,
                           const std::vector<PodPlacement>& pods, uint64_t version,
                           HostResources host, std::shared_ptr<const ObservedWorkload> workload) {
  NodeState node;
  node.name_ = std::move(name);
  node.version_ = version;
  node.host_ = host;
  node.workload_ = std::move(workload);
  if (!resolved.ok()) {
    node.topology_error_ = resolved.status().message();
    if (node.topology_error_.empty()) node.topology_error_ = "topology unavailable";
    // Pods still count against the node: it has slots kubelet hands out.
    for (const PodPlacement& pod : pods) {
      node.unplaced_.push_back({pod.pod_uid, pod.pod_key, pod.slots, "node topology unknown",
                                pod.priority, pod.cpu_milli, pod.memory_bytes});
      node.unplaced_slots_ += pod.slots;
    }
    node.used_slots_ = node.unplaced_slots_;
    node.signature_ = "error";
    return node;
  }
  node.topology_ = std::move(resolved).value();
  node.gpus_.resize(static_cast<size_t>(node.topology_.shape->gpu_count()));
  for (const PodPlacement& pod : pods) {
    Result<std::vector<int>> indices =
        pod.assigned.empty() ? Result<std::vector<int>>(NotFound("no gputopo.io/assigned-gpus"))
                             : node.ParseAssigned(pod.assigned);
    if (!indices.ok()) {
      node.unplaced_.push_back({pod.pod_uid, pod.pod_key, pod.slots, indices.status().message(),
                                pod.priority, pod.cpu_milli, pod.memory_bytes});
      continue;
    }
    const int milli = pod.exclusive ? kWholeGpuMilli
                      : pod.milli_per_gpu > 0
                          ? pod.milli_per_gpu
                          : kWholeGpuMilli / (node.replicas() < 1 ? 1 : node.replicas());
    // One slot per assigned entry; a pod that names the same GPU twice holds two of its slots.
    for (int index : *indices) {
      GpuOccupancy& gpu = node.gpus_[static_cast<size_t>(index)];
      Occupant occupant;
      occupant.pod_uid = pod.pod_uid;
      occupant.pod_key = pod.pod_key;
      occupant.group = pod.group;
      occupant.priority = pod.priority;
      occupant.milli = milli;
      occupant.exclusive = pod.exclusive;
      occupant.nominated = pod.nominated;
      occupant.observed = pod.observed;
      occupant.cpu_milli = pod.cpu_milli;
      occupant.memory_bytes = pod.memory_bytes;
      for (const std::string& label : pod.recorded)
        occupant.recorded += (occupant.recorded.empty() ? "" : ",") + label;
      gpu.occupants.push_back(std::move(occupant));
    }
    // Replicas requested beyond the GPUs listed are held somewhere unknown on the node.
    const int extra = pod.slots - static_cast<int>(indices->size());
    if (extra > 0) {
      node.unplaced_.push_back({pod.pod_uid, pod.pod_key, extra,
                                "requests more replicas than gputopo.io/assigned-gpus lists",
                                pod.priority, 0, 0});
    }
  }
  node.Finish();
  return node;
}

void NodeState::Finish() {
  unplaced_slots_ = 0;
  for (const UnplacedPod& pod : unplaced_) unplaced_slots_ += pod.slots;
  used_slots_ = unplaced_slots_;
  empty_gpus_ = 0;
  unhealthy_gpus_ = 0;
  groups_.clear();
  nominees_.clear();
  group_filter_ = GroupFilter();
  signature_.clear();
  for (GpuOccupancy& gpu : gpus_) {
    gpu.slots_used = static_cast<int>(gpu.occupants.size());  // one slot per occupant entry
    gpu.milli_used = 0;
    gpu.exclusive = false;
    for (const Occupant& o : gpu.occupants) {
      gpu.milli_used += o.milli;
      gpu.exclusive |= o.exclusive;
      if (o.nominated && std::none_of(nominees_.begin(), nominees_.end(),
                                      [&](const Nominee& n) { return n.pod_uid == o.pod_uid; })) {
        nominees_.push_back({o.pod_uid, o.priority});
      }
    }
  }
  for (size_t i = 0; i < gpus_.size(); ++i) {
    for (const Occupant& o : gpus_[i].occupants) {
      auto it = std::find_if(groups_.begin(), groups_.end(),
                             [&](const GroupGpuMask& g) { return g.group == o.group; });
      if (it == groups_.end()) {
        groups_.push_back({std::hash<std::string_view>{}(o.group), o.group, 0});
        it = groups_.end() - 1;
      }
      it->gpus |= topology::Bit(static_cast<int>(i));
    }
  }
  for (const GroupGpuMask& g : groups_) group_filter_.Add(g.hash);
  std::string& sig = signature_;
  sig.reserve(32 + gpus_.size() * 8);
  const auto shape_address = reinterpret_cast<std::uintptr_t>(topology_.shape.get());
  AppendInt(sig, static_cast<int64_t>(shape_address));
  AppendInt(sig, replicas());
  AppendInt(sig, total_slots());
  AppendInt(sig, unplaced_slots_);
  if (topology_.gpus != nullptr) {
    for (size_t i = 0; i < topology_.gpus->size() && i < gpus_.size(); ++i) {
      if (!(*topology_.gpus)[i].healthy) unhealthy_gpus_ |= topology::Bit(static_cast<int>(i));
    }
  }
  AppendInt(sig, static_cast<int64_t>(unhealthy_gpus_));
  AppendInt(sig, workload_ == nullptr ? 0 : static_cast<int64_t>(workload_->version));
  if (host_.cpu_allocatable_milli > 0 || host_.memory_allocatable_bytes > 0) {
    AppendInt(sig, host_.cpu_free_milli());
    AppendInt(sig, host_.memory_free_bytes());
  }
  for (size_t i = 0; i < gpus_.size(); ++i) {
    const GpuOccupancy& gpu = gpus_[i];
    used_slots_ += gpu.slots_used;
    if (gpu.occupants.empty()) empty_gpus_ |= topology::Bit(static_cast<int>(i));
    const int32_t packed[2] = {gpu.slots_used, gpu.milli_used * 2 + (gpu.exclusive ? 1 : 0)};
    sig.append(reinterpret_cast<const char*>(packed), sizeof(packed));
  }
  signature_hash_ = std::hash<std::string_view>{}(sig);
}

NodeState NodeState::Without(const std::vector<std::string_view>& pod_uids,
                             uint64_t version) const {
  auto listed = [&](const std::string& uid) {
    return std::find(pod_uids.begin(), pod_uids.end(), uid) != pod_uids.end();
  };
  NodeState node = *this;
  node.version_ = version;
  // Each listed pod's CPU and memory, once (a multi-GPU pod has an entry on each GPU).
  std::vector<std::string_view> freed;
  auto free_host = [&](std::string_view uid, int64_t cpu, int64_t memory) {
    if (std::find(freed.begin(), freed.end(), uid) != freed.end()) return;
    freed.push_back(uid);
    node.host_.cpu_requested_milli = std::max<int64_t>(0, node.host_.cpu_requested_milli - cpu);
    node.host_.memory_requested_bytes =
        std::max<int64_t>(0, node.host_.memory_requested_bytes - memory);
  };
  for (const GpuOccupancy& gpu : gpus_) {
    for (const Occupant& o : gpu.occupants) {
      if (listed(o.pod_uid)) free_host(o.pod_uid, o.cpu_milli, o.memory_bytes);
    }
  }
  for (const UnplacedPod& p : unplaced_) {
    if (listed(p.pod_uid) && (p.cpu_milli > 0 || p.memory_bytes > 0)) {
      free_host(p.pod_uid, p.cpu_milli, p.memory_bytes);
    }
  }
  for (GpuOccupancy& gpu : node.gpus_) {
    std::erase_if(gpu.occupants, [&](const Occupant& o) { return listed(o.pod_uid); });
  }
  std::erase_if(node.unplaced_, [&](const UnplacedPod& p) { return listed(p.pod_uid); });
  if (!has_topology()) {
    node.unplaced_slots_ = 0;
    for (const UnplacedPod& p : node.unplaced_) node.unplaced_slots_ += p.slots;
    node.used_slots_ = node.unplaced_slots_;
    return node;
  }
  node.Finish();
  return node;
}

std::vector<std::string_view> ClaimsIgnoredBy(const NodeState& node, std::string_view uid,
                                              int32_t priority) {
  std::vector<std::string_view> ignored;
  for (const Nominee& n : node.nominees()) {
    if (n.pod_uid == uid || n.priority < priority) ignored.push_back(n.pod_uid);
  }
  return ignored;
}

}  // namespace gputopo::policies
