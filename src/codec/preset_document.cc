#include "src/codec/preset_document.h"

#include <nlohmann/json.hpp>

#include "src/codec/quantity.h"

namespace gputopo::codec {
namespace {

using nlohmann::json;

Status Bad(const std::string& what) { return InvalidArgument("preset document: " + what); }

}  // namespace

Result<policies::PresetSpec> ParsePresetDocument(std::string_view text) {
  const json doc = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return Bad("not a JSON object");
  policies::PresetSpec spec;
  auto name = doc.find("name");
  if (name == doc.end() || !name->is_string()) return Bad("name must be a string");
  spec.name = name->get<std::string>();
  if (auto d = doc.find("description"); d != doc.end() && d->is_string()) {
    spec.description = d->get<std::string>();
  }
  if (auto n = doc.find("normalization"); n != doc.end()) {
    if (!n->is_string()) return Bad("normalization must be a string");
    spec.normalization = n->get<std::string>();
  }
  if (auto steps = doc.find("sharingPodSteps"); steps != doc.end() && !steps->is_null()) {
    if (!steps->is_number_integer() ||
        (steps->is_number_unsigned() && steps->get<uint64_t>() > 1000000) ||
        (!steps->is_number_unsigned() && steps->get<int64_t>() < -1000000)) {
      return Bad("sharingPodSteps must be an integer in 0..10000");
    }
    // Range-checked by BuildPreset; read wide so that no value wraps into range.
    spec.sharing_pod_steps = static_cast<int>(steps->get<int64_t>());
  }
  auto components = doc.find("components");
  if (components == doc.end() || !components->is_array()) return Bad("components must be an array");
  for (size_t i = 0; i < components->size(); ++i) {
    const json& c = (*components)[i];
    const std::string where = "components[" + std::to_string(i) + "]";
    if (!c.is_object()) return Bad(where + " must be an object");
    policies::ComponentSpec component;
    auto cname = c.find("name");
    if (cname == c.end() || !cname->is_string()) return Bad(where + ".name must be a string");
    component.name = cname->get<std::string>();
    auto weight = c.find("weight");
    if (weight == c.end() || !weight->is_number()) return Bad(where + ".weight must be a number");
    component.weight = weight->get<double>();
    if (auto args = c.find("args"); args != c.end() && !args->is_null()) {
      if (!args->is_object()) return Bad(where + ".args must be an object");
      for (const auto& [key, value] : args->items()) {
        if (!value.is_number()) return Bad(where + ".args." + key + " must be a number");
        component.args.numbers[key] = value.get<double>();
      }
    }
    if (auto workload = c.find("workload"); workload != c.end() && !workload->is_null()) {
      if (!workload->is_array()) return Bad(where + ".workload must be an array");
      for (const json& w : *workload) {
        if (!w.is_object() || !w.value("gpus", json()).is_number_integer() ||
            !w.value("milli", json()).is_number_integer() ||
            !w.value("weight", json()).is_number()) {
          return Bad(where + ".workload entries need integer gpus and milli and a number weight");
        }
        // Read wide, then narrow: a value beyond int must be rejected, not wrapped into range.
        const int64_t gpus = w["gpus"].get<int64_t>();
        const int64_t milli = w["milli"].get<int64_t>();
        if (gpus < 1 || gpus > 64 || milli < 1 || milli > 1000 ||
            (w["gpus"].is_number_unsigned() && w["gpus"].get<uint64_t>() > 64) ||
            (w["milli"].is_number_unsigned() && w["milli"].get<uint64_t>() > 1000)) {
          return Bad(where + ".workload entries need gpus in 1..64 and milli in 1..1000");
        }
        policies::WorkloadClass cls{static_cast<int>(gpus), static_cast<int>(milli),
                                    w["weight"].get<double>()};
        // Optional: what a pod of the class takes of the node besides GPUs, as quantities.
        for (const auto& [key, field] :
             {std::pair{"cpu", &cls.cpu_milli}, std::pair{"memory", &cls.memory_bytes}}) {
          auto it = w.find(key);
          if (it == w.end() || it->is_null()) continue;
          if (!it->is_string()) {
            return Bad(where + ".workload " + key + " must be a quantity string");
          }
          Result<int64_t> milli_units = ParseQuantityMilli(it->get<std::string>());
          if (!milli_units.ok() || *milli_units < 0) {
            return Bad(where + ".workload " + key +
                       " is not a quantity: " + it->get<std::string>().substr(0, 64));
          }
          *field = std::string_view(key) == "cpu" ? *milli_units : *milli_units / 1000;
        }
        component.args.workload.push_back(cls);
      }
    }
    spec.components.push_back(std::move(component));
  }
  return spec;
}

}  // namespace gputopo::codec
