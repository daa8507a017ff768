#include "src/agent/replica_choice.h"

#include <algorithm>
#include <map>

#include "src/agent/device_ids.h"
#include "topology/best_set.h"
#include "topology/gpu_mask.h"

namespace gputopo::agent {
namespace {

struct FreeReplica {
  int replica = -1;
  std::string id;
};

}  // namespace

std::string ReplicaId(const GpuInfo& gpu, int replica) {
  const std::string base = gpu.uuid.empty() ? std::to_string(gpu.index) : gpu.uuid;
  return base + "::" + std::to_string(replica);
}

std::vector<AdvertisedDevice> AdvertisedDevices(const MachineTopology& topology, int replicas) {
  std::vector<AdvertisedDevice> out;
  for (const GpuInfo& gpu : topology.gpus()) {
    for (int n = 0; n < replicas; ++n) {
      out.push_back({ReplicaId(gpu, n), gpu.index, n, gpu.numa_node, gpu.healthy});
    }
  }
  return out;
}

std::vector<std::string> ChooseFallback(const PreferredRequest& request,
                                        const MachineTopology& topology,
                                        const topology::TopologyShape* shape, int replicas) {
  const int size = std::max(request.allocation_size, 0);
  std::vector<std::string> chosen;
  auto contains = [](const std::vector<std::string>& list, const std::string& id) {
    return std::find(list.begin(), list.end(), id) != list.end();
  };
  std::vector<int> taken_gpus;  // GPUs already in `chosen`
  for (const std::string& id : request.must_include) {
    if (static_cast<int>(chosen.size()) >= size) break;
    if (contains(chosen, id)) continue;
    chosen.push_back(id);
    const MappedDeviceId mapped = MapDeviceId(id, topology);
    if (mapped.gpu_index >= 0) taken_gpus.push_back(mapped.gpu_index);
  }
  // Free replicas per GPU (lowest index first); devices that map to no GPU come last, as given.
  std::map<int, std::vector<FreeReplica>> free_by_gpu;
  std::vector<std::string> unmapped;
  for (const std::string& id : request.available) {
    if (contains(request.must_include, id)) continue;
    const MappedDeviceId mapped = MapDeviceId(id, topology);
    if (mapped.gpu_index < 0) {
      unmapped.push_back(id);
      continue;
    }
    free_by_gpu[mapped.gpu_index].push_back({mapped.replica, id});
  }
  for (auto& [gpu, list] : free_by_gpu) {
    std::stable_sort(list.begin(), list.end(), [](const FreeReplica& a, const FreeReplica& b) {
      return a.replica < b.replica;
    });
  }
  auto load = [&](int gpu) {
    auto it = free_by_gpu.find(gpu);
    const int free = it == free_by_gpu.end() ? 0 : static_cast<int>(it->second.size());
    return std::max(replicas - free, 0);
  };
  auto take_from = [&](int gpu) {
    std::vector<FreeReplica>& list = free_by_gpu[gpu];
    chosen.push_back(list.front().id);
    list.erase(list.begin());
    taken_gpus.push_back(gpu);
  };

  // Distinct GPUs not yet used, by load.
  std::vector<int> fresh;
  for (const auto& [gpu, list] : free_by_gpu) {
    if (!list.empty() && std::find(taken_gpus.begin(), taken_gpus.end(), gpu) == taken_gpus.end()) {
      fresh.push_back(gpu);
    }
  }
  std::stable_sort(fresh.begin(), fresh.end(), [&](int a, int b) { return load(a) < load(b); });
  const int need = size - static_cast<int>(chosen.size());
  const int distinct = std::min(need, static_cast<int>(fresh.size()));
  if (distinct > 0) {
    // The least-loaded GPUs that can fill the request: every GPU up to the load of the
    // `distinct`-th one.
    const int threshold = load(fresh[static_cast<size_t>(distinct - 1)]);
    std::vector<int> eligible;
    for (int gpu : fresh) {
      if (load(gpu) <= threshold) eligible.push_back(gpu);
    }
    std::vector<int> picked;
    const bool whole_set = taken_gpus.empty() && distinct >= 2 && shape != nullptr &&
                           shape->links_known() && shape->gpu_count() == topology.gpu_count();
    if (whole_set) {
      // Lower-loaded GPUs must be in; the best set fills the rest from the threshold's level.
      topology::GpuMask must = 0;
      topology::GpuMask level = 0;
      for (int gpu : eligible) {
        if (load(gpu) < threshold) {
          must |= topology::Bit(gpu);
        } else {
          level |= topology::Bit(gpu);
        }
      }
      if (must == 0) {
        const topology::BestSet best = topology::FindBestSetByBandwidth(*shape, level, distinct);
        picked = topology::ToIndices(best.gpus);
      }
    }
    if (picked.empty()) {
      // Greedy: least load, then the most bandwidth to what is chosen, then the lowest index.
      std::vector<int> pool = eligible;
      std::vector<int> in = taken_gpus;
      while (static_cast<int>(picked.size()) < distinct && !pool.empty()) {
        auto better = [&](int a, int b) {
          if (load(a) != load(b)) return load(a) < load(b);
          double wa = 0.0;
          double wb = 0.0;
          if (shape != nullptr && shape->gpu_count() == topology.gpu_count()) {
            for (int g : in) {
              wa += shape->weight(a, g);
              wb += shape->weight(b, g);
            }
          }
          if (wa != wb) return wa > wb;
          return a < b;
        };
        auto best = std::min_element(pool.begin(), pool.end(), better);
        picked.push_back(*best);
        in.push_back(*best);
        pool.erase(best);
      }
    }
    std::sort(picked.begin(), picked.end());
    for (int gpu : picked) take_from(gpu);
  }
  // Still short: more replicas of the least-loaded GPUs, then whatever else was offered.
  while (static_cast<int>(chosen.size()) < size) {
    int best_gpu = -1;
    for (const auto& [gpu, list] : free_by_gpu) {
      if (list.empty()) continue;
      if (best_gpu < 0 || load(gpu) < load(best_gpu)) best_gpu = gpu;
    }
    if (best_gpu < 0) break;
    take_from(best_gpu);
  }
  for (const std::string& id : unmapped) {
    if (static_cast<int>(chosen.size()) >= size) break;
    chosen.push_back(id);
  }
  return chosen;
}

}  // namespace gputopo::agent
