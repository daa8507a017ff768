#include "topology/topology_resolver.h"

#include <algorithm>
#include <charconv>

#include "gputopo/well_known.h"

namespace gputopo::topology {
namespace {

// The most nvidia.com/gpu replicas a node may advertise before we call the number absurd.
constexpr int64_t kMaxAllocatable = int64_t{kMaxGpusPerNode} * kMaxReplicasPerGpu;

// Parses a label that must hold an integer in [1, max].
Result<int> ParsePositiveLabel(std::string_view key, const std::string& value, int max) {
  int parsed = 0;
  const char* end = value.data() + value.size();
  auto [ptr, ec] = std::from_chars(value.data(), end, parsed);
  if (ec != std::errc() || ptr != end || parsed < 1 || parsed > max) {
    return InvalidArgument("label " + std::string(key) + "='" + value +
                           "' is not an integer in 1.." + std::to_string(max));
  }
  return parsed;
}

}  // namespace

Result<ResolvedTopology> TopologyResolver::Resolve(const NodeInfo& node) const {
  const int64_t allocatable = node.allocatable_gpus;
  if (allocatable < 0 || allocatable > kMaxAllocatable) {
    return InvalidArgument("allocatable " + std::string(kGpuResource) + " " +
                           std::to_string(allocatable) + " is out of range 0.." +
                           std::to_string(kMaxAllocatable));
  }
  std::optional<int> label_replicas;
  if (node.label_gpu_replicas) {
    Result<int> r =
        ParsePositiveLabel(kLabelGpuReplicas, *node.label_gpu_replicas, kMaxReplicasPerGpu);
    if (!r.ok()) return r.status();
    label_replicas = *r;
  }
  std::optional<int> label_count;
  if (node.label_gpu_count) {
    Result<int> c = ParsePositiveLabel(kLabelGpuCount, *node.label_gpu_count, kMaxGpusPerNode);
    if (!c.ok()) return c.status();
    label_count = *c;
  }

  ResolvedTopology resolved;
  int document_replicas = 0;
  if (node.annotation_topology) {
    const Result<MachineTopology>& document = *node.annotation_topology;
    if (!document.ok()) {
      return document.status().WithContext("annotation " + std::string(kAnnotationTopology));
    }
    Result<std::shared_ptr<const TopologyShape>> shape = interner_.Intern(*document);
    if (!shape.ok()) {
      return shape.status().WithContext("annotation " + std::string(kAnnotationTopology));
    }
    resolved.shape = *shape;
    resolved.gpus = std::make_shared<const std::vector<GpuInfo>>(document->gpus());
    resolved.source = TopologySource::kAnnotation;
    resolved.source_detail = "annotation " + std::string(kAnnotationTopology);
    document_replicas = document->replicas_per_gpu();
  } else if (node.label_topology_profile) {
    const Profile* profile = profiles_.Find(*node.label_topology_profile);
    if (profile == nullptr) {
      std::string known;
      for (const std::string& name : profiles_.Names()) known += (known.empty() ? "" : ", ") + name;
      return NotFound("label " + std::string(kLabelTopologyProfile) + " names unknown profile '" +
                      *node.label_topology_profile + "' (known: " + known + ")");
    }
    resolved.shape = profile->shape;
    resolved.gpus = profile->gpus;
    resolved.source = TopologySource::kProfile;
    resolved.source_detail = "profile " + profile->name;
    document_replicas = profile->machine.replicas_per_gpu();
  } else {
    int count = 0;
    if (label_count) {
      count = *label_count;
      resolved.source_detail = "GPU count from label " + std::string(kLabelGpuCount);
    } else if (label_replicas) {
      count = static_cast<int>((allocatable + *label_replicas - 1) / *label_replicas);
      resolved.source_detail = "GPU count = allocatable / " + std::string(kLabelGpuReplicas);
    } else {
      if (allocatable > kMaxGpusPerNode) {
        return InvalidArgument("node advertises " + std::to_string(allocatable) + " " +
                               std::string(kGpuResource) + " and no " +
                               std::string(kLabelGpuCount) +
                               " label; without it each is taken as one physical GPU, and at "
                               "most " +
                               std::to_string(kMaxGpusPerNode) + " are supported");
      }
      count = static_cast<int>(allocatable);
      resolved.source_detail = "GPU count = allocatable (no labels: one physical GPU each)";
    }
    if (count < 1) {
      return FailedPrecondition("node advertises no " + std::string(kGpuResource));
    }
    MachineTopology machine(count);
    for (int g = 0; g < count; ++g) {
      if (node.label_gpu_product) machine.gpu(g).model = *node.label_gpu_product;
      if (node.label_gpu_memory) {
        int64_t mib = 0;
        const std::string& text = *node.label_gpu_memory;
        auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), mib);
        if (ec == std::errc() && ptr == text.data() + text.size() && mib > 0) {
          machine.gpu(g).memory_mib = mib;
        }
      }
    }
    Result<std::shared_ptr<const TopologyShape>> shape = interner_.Intern(machine);
    if (!shape.ok()) return shape.status();
    resolved.shape = *shape;
    resolved.gpus = std::make_shared<const std::vector<GpuInfo>>(machine.gpus());
    resolved.source = TopologySource::kFallback;
  }

  const int gpus = resolved.shape->gpu_count();
  if (label_replicas) {
    resolved.replicas_per_gpu = *label_replicas;
  } else if (document_replicas > 0) {
    resolved.replicas_per_gpu = document_replicas;
  } else if (allocatable > gpus) {
    resolved.replicas_per_gpu = static_cast<int>((allocatable + gpus - 1) / gpus);
  } else {
    resolved.replicas_per_gpu = 1;
  }
  if (resolved.replicas_per_gpu > kMaxReplicasPerGpu) {
    return InvalidArgument(std::to_string(resolved.replicas_per_gpu) +
                           " replicas per GPU is more than the " +
                           std::to_string(kMaxReplicasPerGpu) + " supported");
  }
  const int64_t capacity = int64_t{gpus} * resolved.replicas_per_gpu;
  resolved.total_slots = static_cast<int>(std::min(allocatable, capacity));
  return resolved;
}

}  // namespace gputopo::topology
