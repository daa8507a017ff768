#include "topology/profile_catalog.h"

#include <cctype>

namespace gputopo::topology {
namespace {
bool IsAlnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }
}  // namespace

bool IsValidLabelValue(std::string_view value) {
  if (value.empty()) return true;
  if (value.size() > 63) return false;
  if (!IsAlnum(value.front()) || !IsAlnum(value.back())) return false;
  for (char c : value) {
    if (!IsAlnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

Status ProfileCatalog::Add(std::string name, std::string description,
                           const MachineTopology& machine) {
  if (name.empty() || !IsValidLabelValue(name)) {
    return InvalidArgument("profile name '" + name + "' is not a valid label value");
  }
  Result<std::shared_ptr<const TopologyShape>> shape = interner_.Intern(machine);
  if (!shape.ok()) return shape.status().WithContext("profile " + name);
  Profile profile{name, std::move(description), machine, *shape,
                  std::make_shared<const std::vector<GpuInfo>>(machine.gpus())};
  profiles_.insert_or_assign(std::move(name), std::move(profile));
  return Status::Ok();
}

const Profile* ProfileCatalog::Find(std::string_view name) const {
  auto it = profiles_.find(name);
  return it == profiles_.end() ? nullptr : &it->second;
}

std::vector<std::string> ProfileCatalog::Names() const {
  std::vector<std::string> names;
  for (const auto& [name, profile] : profiles_) names.push_back(name);
  return names;
}

}  // namespace gputopo::topology
