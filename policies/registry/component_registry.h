// ComponentRegistry: the explicit map from component name to factory, and presets built from it.
//
// A factory validates its arguments before it builds anything, so a preset file with a typo in
// a name, an unknown argument or an out-of-range value fails to load with a message, at start.
//
// Thread safety: build single-threaded, then share read-only.
#ifndef GPUTOPO_POLICIES_REGISTRY_COMPONENT_REGISTRY_H_
#define GPUTOPO_POLICIES_REGISTRY_COMPONENT_REGISTRY_H_

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gputopo/status.h"
#include "policies/engine/normalize.h"
#include "policies/engine/score_component.h"
#include "policies/registry/component_args.h"

namespace gputopo::policies {

using ComponentFactory =
    std::function<Result<std::shared_ptr<const ScoreComponent>>(const ComponentArgs&)>;

class ComponentRegistry {
 public:
  // AlreadyExists when the name is taken.
  Status Register(std::string name, ComponentFactory factory);
  // NotFound for an unknown name; the factory's error for bad arguments.
  Result<std::shared_ptr<const ScoreComponent>> Create(std::string_view name,
                                                       const ComponentArgs& args) const;
  std::vector<std::string> Names() const;

 private:
  std::map<std::string, ComponentFactory, std::less<>> factories_;
};

// replica-spread, locality, fragmentation, slot-balance.
ComponentRegistry BuiltinComponents();

struct WeightedComponent {
  std::shared_ptr<const ScoreComponent> component;
  double weight = 0.0;
};

// FGD's order for pods that take a share of one GPU (PresetSpec::sharing_pod_steps,
// candidate_order.h): which of the preset's components it reads.
struct SharingPodOrder {
  int steps = 0;             // 0: off; else the number of steps of the fragmentation change
  size_t fragmentation = 0;  // index of the fragmentation component in Preset::components()
  std::optional<size_t> replica_spread;  // index of the replica-spread component, if any
};

// A named weighting of components: how one kind of cluster wants nodes ranked.
class Preset {
 public:
  // A preset has at most this many components (BuildPreset checks it): an evaluation keeps
  // their scores inline (ComponentScores, evaluation.h).
  static constexpr size_t kMaxComponents = 8;
  Preset(std::string name, std::string description, std::vector<WeightedComponent> components,
         ScoreNormalization normalization = ScoreNormalization::kMinMax,
         SharingPodOrder sharing_pod_order = {})
      : name_(std::move(name)),
        description_(std::move(description)),
        components_(std::move(components)),
        normalization_(normalization),
        sharing_pod_order_(sharing_pod_order) {}
  const std::string& name() const { return name_; }
  const std::string& description() const { return description_; }
  const std::vector<WeightedComponent>& components() const { return components_; }
  // How prioritize turns this preset's weighted scores into 0..10 priorities.
  ScoreNormalization normalization() const { return normalization_; }
  // How prioritize orders pods that take a share of one GPU; steps 0 when as every other pod.
  const SharingPodOrder& sharing_pod_order() const { return sharing_pod_order_; }

 private:
  std::string name_;
  std::string description_;
  std::vector<WeightedComponent> components_;
  ScoreNormalization normalization_;
  SharingPodOrder sharing_pod_order_;
};

// Error when a component is unknown, its arguments are bad, a weight is negative or not finite,
// a component appears twice, there are more than Preset::kMaxComponents, all weights are zero,
// the normalization is unknown, or sharing_pod_steps is outside 0..kMaxSharingPodSteps or set
// without rank normalization and a fragmentation component.
inline constexpr int kMaxSharingPodSteps = 10000;
Result<std::shared_ptr<const Preset>> BuildPreset(const PresetSpec& spec,
                                                  const ComponentRegistry& registry);

// The presets a server knows, one of them the default.
class PresetCatalog {
 public:
  void Add(std::shared_ptr<const Preset> preset);
  // nullptr when unknown.
  std::shared_ptr<const Preset> Find(std::string_view name) const;
  std::vector<std::string> Names() const;

 private:
  std::map<std::string, std::shared_ptr<const Preset>, std::less<>> presets_;
};

}  // namespace gputopo::policies

#endif  // GPUTOPO_POLICIES_REGISTRY_COMPONENT_REGISTRY_H_
