#include "src/agent/observed_gpus.h"

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

#include "gputopo/well_known.h"
#include "src/agent/device_ids.h"

namespace gputopo::agent {

std::vector<ObservedPod> ObserveGpus(const std::vector<PodInfo>& pods,
                                     const std::vector<PodDeviceIds>& devices,
                                     const MachineTopology& topology) {
  std::map<std::string, const PodInfo*> by_key;
  for (const PodInfo& pod : pods) by_key[pod.Key()] = &pod;

  std::vector<ObservedPod> out;
  for (const PodDeviceIds& listed : devices) {
    auto it = by_key.find(listed.Key());
    if (it == by_key.end()) continue;  // not (or no longer) a pod of this node that we know
    const PodInfo& pod = *it->second;
    if (pod.HoldsNothing()) continue;

    ObservedPod observed;
    observed.pod = PodRef{pod.namespace_name, pod.name, pod.uid};
    observed.resource_version = pod.resource_version;
    if (std::optional<std::string_view> now =
            FindAnnotation(pod.annotations, kAnnotationObservedGpus)) {
      observed.current = std::string(*now);
    }

    // (index or past-the-end, name): GPUs on this node in index order, the others after, by name.
    std::vector<std::pair<int, std::string>> gpus;
    bool complete = true;
    for (const ContainerDeviceIds& container : listed.containers) {
      for (const std::string& id : container.device_ids) {
        MappedDeviceId mapped = MapDeviceId(id, topology);
        if (!mapped.reason.empty()) {
          observed.problems.push_back("container " + container.container + ": " + mapped.reason);
        }
        if (!mapped.mapped()) {
          complete = false;
          continue;
        }
        const int order = mapped.gpu_index >= 0 ? mapped.gpu_index : kMaxGpusPerNode;
        std::pair<int, std::string> key{order, std::move(mapped.gpu)};
        if (std::find(gpus.begin(), gpus.end(), key) == gpus.end()) gpus.push_back(std::move(key));
      }
    }
    if (complete && !gpus.empty()) {
      std::sort(gpus.begin(), gpus.end());
      for (const auto& [order, gpu] : gpus) {
        observed.value += (observed.value.empty() ? "" : ",") + gpu;
      }
      observed.needs_write = observed.value != observed.current;
    }
    out.push_back(std::move(observed));
  }
  return out;
}

}  // namespace gputopo::agent
