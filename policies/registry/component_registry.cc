#include "policies/registry/component_registry.h"

#include <cmath>
#include <set>
#include <string>

#include "policies/fragmentation/fragmentation.h"
#include "policies/locality/locality.h"
#include "policies/packing/packing.h"
#include "policies/replica_spread/replica_spread.h"
#include "policies/slot_balance/slot_balance.h"

namespace gputopo::policies {
namespace {

// Reads the optional number `key` from args into *out, checking it lies in [lo, hi].
Status ReadNumber(const ComponentArgs& args, const std::string& key, double lo, double hi,
                  double* out) {
  auto it = args.numbers.find(key);
  if (it == args.numbers.end()) return Status::Ok();
  if (!std::isfinite(it->second) || it->second < lo || it->second > hi) {
    return InvalidArgument("argument " + key + " must be in [" + std::to_string(lo) + ", " +
                           std::to_string(hi) + "]");
  }
  *out = it->second;
  return Status::Ok();
}

Status OnlyKnown(const ComponentArgs& args, const std::set<std::string>& known, bool workload) {
  for (const auto& [key, value] : args.numbers) {
    if (known.count(key) == 0) return InvalidArgument("unknown argument " + key);
  }
  if (!workload && !args.workload.empty()) return InvalidArgument("takes no workload");
  return Status::Ok();
}

Result<std::shared_ptr<const ScoreComponent>> MakeReplicaSpread(const ComponentArgs& args) {
  if (Status s = OnlyKnown(args, {"islandPenalty"}, false); !s.ok()) return s;
  double penalty = ReplicaSpread::kDefaultIslandPenalty;
  if (Status s = ReadNumber(args, "islandPenalty", 0.0, 1.0, &penalty); !s.ok()) return s;
  return std::shared_ptr<const ScoreComponent>(std::make_shared<ReplicaSpread>(penalty));
}

Result<std::shared_ptr<const ScoreComponent>> MakeLocality(const ComponentArgs& args) {
  if (Status s = OnlyKnown(args, {"unmetCap", "unknownScore", "numaWeight"}, false); !s.ok()) {
    return s;
  }
  double cap = LocalityComponent::kDefaultUnmetCap;
  double unknown = LocalityComponent::kDefaultUnknownScore;
  double numa = LocalityComponent::kDefaultNumaWeight;
  if (Status s = ReadNumber(args, "unmetCap", 0.0, 10.0, &cap); !s.ok()) return s;
  if (Status s = ReadNumber(args, "unknownScore", 0.0, 10.0, &unknown); !s.ok()) return s;
  if (Status s = ReadNumber(args, "numaWeight", 0.0, 1.0, &numa); !s.ok()) return s;
  return std::shared_ptr<const ScoreComponent>(
      std::make_shared<LocalityComponent>(cap, unknown, numa));
}

Result<std::shared_ptr<const ScoreComponent>> MakeFragmentation(const ComponentArgs& args) {
  if (Status s = OnlyKnown(args, {"learnedWorkload"}, true); !s.ok()) return s;
  // learnedWorkload 1: the cluster's learned mix (the built-in one until there is one);
  // otherwise the workload listed, else the built-in one, pinned.
  double learned = 0;
  if (Status s = ReadNumber(args, "learnedWorkload", 0.0, 1.0, &learned); !s.ok()) return s;
  if (learned != 0.0 && learned != 1.0) return InvalidArgument("learnedWorkload must be 0 or 1");
  if (learned == 1.0 && !args.workload.empty()) {
    return InvalidArgument("a workload is either listed (pinned) or learned, not both");
  }
  std::vector<WorkloadClass> workload =
      args.workload.empty() ? Fragmentation::DefaultWorkload() : args.workload;
  for (const WorkloadClass& cls : workload) {
    if (cls.gpus < 1 || cls.gpus > 64) return InvalidArgument("workload gpus must be 1..64");
    if (cls.milli < 1 || cls.milli > 1000) return InvalidArgument("workload milli must be 1..1000");
    if (!std::isfinite(cls.weight) || cls.weight <= 0.0) {
      return InvalidArgument("workload weight must be positive");
    }
  }
  return std::shared_ptr<const ScoreComponent>(
      std::make_shared<Fragmentation>(workload, /*pinned=*/learned == 0.0));
}

Result<std::shared_ptr<const ScoreComponent>> MakeSlotBalance(const ComponentArgs& args) {
  if (Status s = OnlyKnown(args, {}, false); !s.ok()) return s;
  return std::shared_ptr<const ScoreComponent>(std::make_shared<SlotBalance>());
}

Result<std::shared_ptr<const ScoreComponent>> MakePacking(const ComponentArgs& args) {
  if (Status s = OnlyKnown(args, {"cpuReferenceCores", "gpuReference"}, false); !s.ok()) return s;
  double cores = 128.0;
  double gpus = 8.0;
  if (Status s = ReadNumber(args, "cpuReferenceCores", 0.001, 1e6, &cores); !s.ok()) return s;
  if (Status s = ReadNumber(args, "gpuReference", 0.001, 4096.0, &gpus); !s.ok()) return s;
  return std::shared_ptr<const ScoreComponent>(
      std::make_shared<Packing>(cores * 1000.0, gpus * 1000.0));
}

}  // namespace

Status ComponentRegistry::Register(std::string name, ComponentFactory factory) {
  if (factories_.count(name) != 0) return {StatusCode::kAlreadyExists, "component " + name};
  factories_.emplace(std::move(name), std::move(factory));
  return Status::Ok();
}

Result<std::shared_ptr<const ScoreComponent>> ComponentRegistry::Create(
    std::string_view name, const ComponentArgs& args) const {
  auto it = factories_.find(name);
  if (it == factories_.end()) {
    std::string known;
    for (const auto& [n, f] : factories_) known += (known.empty() ? "" : ", ") + n;
    return NotFound("unknown component '" + std::string(name) + "' (known: " + known + ")");
  }
  Result<std::shared_ptr<const ScoreComponent>> made = it->second(args);
  if (!made.ok()) return made.status().WithContext("component " + std::string(name));
  return made;
}

std::vector<std::string> ComponentRegistry::Names() const {
  std::vector<std::string> names;
  for (const auto& [name, factory] : factories_) names.push_back(name);
  return names;
}

ComponentRegistry BuiltinComponents() {
  ComponentRegistry registry;
  (void)registry.Register(std::string(ReplicaSpread::kName), MakeReplicaSpread);
  (void)registry.Register(std::string(LocalityComponent::kName), MakeLocality);
  (void)registry.Register(std::string(Fragmentation::kName), MakeFragmentation);
  (void)registry.Register(std::string(SlotBalance::kName), MakeSlotBalance);
  (void)registry.Register(std::string(Packing::kName), MakePacking);
  return registry;
}

Result<std::shared_ptr<const Preset>> BuildPreset(const PresetSpec& spec,
                                                  const ComponentRegistry& registry) {
  if (spec.name.empty()) return InvalidArgument("preset has no name");
  if (spec.components.size() > Preset::kMaxComponents) {
    return InvalidArgument("preset " + spec.name + " has " +
                           std::to_string(spec.components.size()) + " components, more than " +
                           std::to_string(Preset::kMaxComponents));
  }
  std::vector<WeightedComponent> components;
  std::set<std::string> seen;
  double total = 0.0;
  for (const ComponentSpec& c : spec.components) {
    const std::string context = "preset " + spec.name;
    if (!seen.insert(c.name).second) {
      return InvalidArgument("component " + c.name + " appears twice").WithContext(context);
    }
    if (!std::isfinite(c.weight) || c.weight < 0.0 || c.weight > 1000.0) {
      return InvalidArgument("weight of " + c.name + " must be in [0, 1000]").WithContext(context);
    }
    Result<std::shared_ptr<const ScoreComponent>> made = registry.Create(c.name, c.args);
    if (!made.ok()) return made.status().WithContext(context);
    total += c.weight;
    components.push_back({*made, c.weight});
  }
  if (total <= 0.0) return InvalidArgument("preset " + spec.name + " has no positive weight");
  std::optional<ScoreNormalization> normalization = ParseScoreNormalization(spec.normalization);
  if (!normalization) {
    return InvalidArgument("preset " + spec.name + ": normalization '" + spec.normalization +
                           "' is not minmax, rank or none");
  }
  SharingPodOrder sharing;
  if (spec.sharing_pod_steps != 0) {
    const std::string context = "preset " + spec.name + ": sharingPodSteps";
    if (spec.sharing_pod_steps < 0 || spec.sharing_pod_steps > kMaxSharingPodSteps) {
      return InvalidArgument(context + " must be in 0.." + std::to_string(kMaxSharingPodSteps));
    }
    if (*normalization != ScoreNormalization::kRank) {
      return InvalidArgument(context + " needs rank normalization");
    }
    sharing.steps = spec.sharing_pod_steps;
    bool fragmentation = false;
    for (size_t i = 0; i < components.size(); ++i) {
      const std::string_view name = components[i].component->Name();
      if (name == Fragmentation::kName) {
        sharing.fragmentation = i;
        fragmentation = true;
      } else if (name == ReplicaSpread::kName) {
        sharing.replica_spread = i;
      }
    }
    if (!fragmentation) return InvalidArgument(context + " needs the fragmentation component");
  }
  return std::make_shared<const Preset>(spec.name, spec.description, std::move(components),
                                        *normalization, sharing);
}

void PresetCatalog::Add(std::shared_ptr<const Preset> preset) {
  presets_.insert_or_assign(preset->name(), std::move(preset));
}

std::shared_ptr<const Preset> PresetCatalog::Find(std::string_view name) const {
  auto it = presets_.find(name);
  return it == presets_.end() ? nullptr : it->second;
}

std::vector<std::string> PresetCatalog::Names() const {
  std::vector<std::string> names;
  for (const auto& [name, preset] : presets_) names.push_back(name);
  return names;
}

}  // namespace gputopo::policies
