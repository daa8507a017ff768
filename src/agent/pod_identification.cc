#include "src/agent/pod_identification.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <tuple>

#include "cluster/cluster_state.h"
#include "src/agent/device_ids.h"

namespace gputopo::agent {
namespace {

// How many rejected pods a reason names before "and N more".
constexpr size_t kReasonsShown = 4;

// A device ID of the request, mapped.
struct Replica {
  std::string id;
  int gpu = -1;
  int replica = -1;
};

struct Candidate {
  const BoundPod* pod = nullptr;
  std::string container;
  std::vector<int> gpus;
  std::vector<std::string> device_ids;
};

bool IsAllocated(const BoundPod& pod, const std::string& container,
                 const std::vector<AllocatedContainer>& allocated) {
  for (const AllocatedContainer& a : allocated) {
    if (a.namespace_name == pod.namespace_name && a.name == pod.name && a.container == container &&
        (a.uid.empty() || a.uid == pod.uid)) {
      return true;
    }
  }
  return false;
}

}  // namespace

std::string_view IdentificationVerdictName(IdentificationVerdict verdict) {
  return NameOf(kIdentificationVerdictNames, verdict);
}

AssignedGpus ParseAssignedGpus(std::string_view value, const MachineTopology& topology) {
  AssignedGpus out;
  const std::vector<std::string> items = cluster::SplitAssignedGpus(value);
  if (items.empty()) {
    out.error = "assigned-gpus is empty";
    return out;
  }
  for (const std::string& item : items) {
    const MappedDeviceId mapped = MapDeviceId(item, topology);
    if (mapped.replica >= 0 || mapped.gpu_index < 0 ||
        (mapped.form != DeviceIdForm::kUuid && mapped.form != DeviceIdForm::kIndex)) {
      out.gpus.clear();
      out.error = "assigned-gpus names \"" + item + "\", not a GPU of this node";
      return out;
    }
    if (std::find(out.gpus.begin(), out.gpus.end(), mapped.gpu_index) != out.gpus.end()) {
      out.gpus.clear();
      out.error = "assigned-gpus names GPU \"" + item + "\" twice";
      return out;
    }
    out.gpus.push_back(mapped.gpu_index);
  }
  return out;
}

Identification IdentifyAdmission(const std::vector<BoundPod>& pods,
                                 const std::vector<AllocatedContainer>& allocated,
                                 const PreferredRequest& request, const MachineTopology& topology,
                                 const std::vector<std::string>& trusted_schedulers) {
  // The request's replicas, per GPU, lowest replica index first.
  std::map<int, std::vector<Replica>> free_by_gpu;
  std::map<int, std::vector<std::string>> must_by_gpu;
  bool must_unmapped = false;
  for (const std::string& id : request.available) {
    const MappedDeviceId mapped = MapDeviceId(id, topology);
    if (mapped.gpu_index < 0) continue;
    if (std::find(request.must_include.begin(), request.must_include.end(), id) !=
        request.must_include.end()) {
      continue;
    }
    free_by_gpu[mapped.gpu_index].push_back({id, mapped.gpu_index, mapped.replica});
  }
  for (auto& [gpu, replicas] : free_by_gpu) {
    std::stable_sort(replicas.begin(), replicas.end(),
                     [](const Replica& a, const Replica& b) { return a.replica < b.replica; });
  }
  for (const std::string& id : request.must_include) {
    const MappedDeviceId mapped = MapDeviceId(id, topology);
    if (mapped.gpu_index < 0) {
      must_unmapped = true;
      continue;
    }
    must_by_gpu[mapped.gpu_index].push_back(id);
  }

  std::vector<Candidate> qualified;
  std::vector<std::string> rejected;  // "<pod>: <why>"
  std::vector<std::string> short_of;  // pods that fit but lack a free replica
  auto reject = [&](const BoundPod& pod, const std::string& why) {
    rejected.push_back(pod.Key() + ": " + why);
  };

  for (const BoundPod& pod : pods) {
    if (std::find(trusted_schedulers.begin(), trusted_schedulers.end(), pod.scheduler_name) ==
        trusted_schedulers.end()) {
      continue;  // not ours to steer; not worth a word
    }
    if (!pod.assigned_gpus.has_value()) continue;
    // The containers in kubelet's order, with each one's share of the assignment.
    std::vector<const BoundContainer*> order;
    for (const BoundContainer& c : pod.containers) {
      if (c.init && c.request > 0) order.push_back(&c);
    }
    for (const BoundContainer& c : pod.containers) {
      if (!c.init && c.request > 0) order.push_back(&c);
    }
    const BoundContainer* next = nullptr;
    size_t app_offset = 0;  // GPUs the app containers before `next` take
    for (const BoundContainer* c : order) {
      if (!IsAllocated(pod, c->name, allocated)) {
        next = c;
        break;
      }
      if (!c->init) app_offset += static_cast<size_t>(c->request);
    }
    if (next == nullptr) continue;  // every container holds its devices: not being admitted
    if (next->request != request.allocation_size) {
      reject(pod, "container " + next->name + " requests " + std::to_string(next->request) +
                      ", not " + std::to_string(request.allocation_size));
      continue;
    }
    const AssignedGpus assigned = ParseAssignedGpus(*pod.assigned_gpus, topology);
    if (!assigned.error.empty()) {
      reject(pod, assigned.error);
      continue;
    }
    const size_t offset = next->init ? 0 : app_offset;
    const auto size = static_cast<size_t>(next->request);
    if (offset + size > assigned.gpus.size()) {
      reject(pod, "assigned-gpus names " + std::to_string(assigned.gpus.size()) +
                      " GPUs, too few for container " + next->name);
      continue;
    }
    Candidate candidate;
    candidate.pod = &pod;
    candidate.container = next->name;
    candidate.gpus.assign(assigned.gpus.begin() + static_cast<std::ptrdiff_t>(offset),
                          assigned.gpus.begin() + static_cast<std::ptrdiff_t>(offset + size));
    bool fits = !must_unmapped;
    std::string why = must_unmapped ? "a must-include device is not a GPU of this node" : "";
    for (const auto& [gpu, ids] : must_by_gpu) {
      if (!fits) break;
      if (ids.size() > 1 ||
          std::find(candidate.gpus.begin(), candidate.gpus.end(), gpu) == candidate.gpus.end()) {
        fits = false;
        why = "must-include device " + ids.front() + " is not on its assigned GPUs";
      }
    }
    bool short_of_replicas = false;
    for (int gpu : candidate.gpus) {
      if (!fits) break;
      if (auto must = must_by_gpu.find(gpu); must != must_by_gpu.end()) {
        candidate.device_ids.push_back(must->second.front());
        continue;
      }
      auto free = free_by_gpu.find(gpu);
      if (free == free_by_gpu.end() || free->second.empty()) {
        fits = false;
        short_of_replicas = true;
        why = "assigned GPU " + std::to_string(gpu) + " has no free replica";
        continue;
      }
      candidate.device_ids.push_back(free->second.front().id);
    }
    if (!fits) {
      if (short_of_replicas) short_of.push_back(pod.Key());
      reject(pod, why);
      continue;
    }
    qualified.push_back(std::move(candidate));
  }

  Identification out;
  if (qualified.empty()) {
    out.verdict = short_of.empty() ? IdentificationVerdict::kNoneQualify
                                   : IdentificationVerdict::kNotEnoughReplicas;
    out.reason = std::string(IdentificationVerdictName(out.verdict));
    if (rejected.empty()) {
      out.reason += ": no pod of a trusted scheduler with assigned-gpus is waiting for devices";
    } else {
      out.reason += ": ";
      for (size_t i = 0; i < rejected.size() && i < kReasonsShown; ++i) {
        out.reason += (i == 0 ? "" : "; ") + rejected[i];
      }
      if (rejected.size() > kReasonsShown) {
        out.reason += "; and " + std::to_string(rejected.size() - kReasonsShown) + " more";
      }
    }
    return out;
  }
  auto order_key = [](const Candidate& c) {
    const uint64_t arrival = c.pod->arrival == 0 ? UINT64_MAX : c.pod->arrival;
    return std::tuple<std::chrono::system_clock::time_point, uint64_t, const std::string&,
                      const std::string&>(c.pod->created, arrival, c.pod->name,
                                          c.pod->namespace_name);
  };
  std::stable_sort(qualified.begin(), qualified.end(), [&](const Candidate& a, const Candidate& b) {
    return order_key(a) < order_key(b);
  });
  if (qualified.size() > 1 && qualified[0].pod->created == qualified[1].pod->created &&
      qualified[0].pod->arrival == qualified[1].pod->arrival &&
      qualified[0].pod->name == qualified[1].pod->name) {
    out.verdict = IdentificationVerdict::kAmbiguous;
    out.reason = "ambiguous: " + qualified[0].pod->Key() + " and " + qualified[1].pod->Key() +
                 " both qualify, created at the same time with the same name";
    return out;
  }
  Candidate& chosen = qualified.front();
  out.verdict = IdentificationVerdict::kSteered;
  out.namespace_name = chosen.pod->namespace_name;
  out.pod_name = chosen.pod->name;
  out.pod_uid = chosen.pod->uid;
  out.container = chosen.container;
  out.gpus = std::move(chosen.gpus);
  out.device_ids = std::move(chosen.device_ids);
  return out;
}

}  // namespace gputopo::agent
