#include "src/agent/time_slicing_config.h"

#include <yaml-cpp/yaml.h>

#include <exception>
#include <fstream>
#include <set>
#include <sstream>

#include "gputopo/machine_topology.h"

namespace gputopo::agent {
namespace {

constexpr std::string_view kPrefix = "time-slicing config: ";

Status Bad(const std::string& what) { return InvalidArgument(std::string(kPrefix) + what); }

// NVIDIA's ResourceName: a bare name is in the nvidia.com domain.
std::string QualifiedName(const std::string& name) {
  return name.find('/') == std::string::npos ? "nvidia.com/" + name : name;
}

// The scalar at `node` as T; false when it is not a scalar of that type.
template <typename T>
bool ReadScalar(const YAML::Node& node, T& out) {
  if (!node.IsScalar()) return false;
  try {
    out = node.as<T>();
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

Result<SharingConfig> ParseDocument(const YAML::Node& root, std::string_view resource_name) {
  SharingConfig config;
  config.advertised_resource = std::string(resource_name);
  if (!root.IsMap()) return Bad("the document is not a mapping");
  std::string version;
  if (!root["version"]) return Bad("no version (want \"v1\")");
  if (!ReadScalar(root["version"], version) || version != "v1") {
    return Bad("unsupported version (want \"v1\")");
  }
  const YAML::Node sharing = root["sharing"];
  if (!sharing || sharing.IsNull()) return config;
  if (!sharing.IsMap()) return Bad("sharing is not a mapping");
  if (sharing["mps"] && !sharing["mps"].IsNull()) {
    return Bad("sharing.mps is not supported by gputopo's agent (time-slicing only)");
  }
  const YAML::Node slicing = sharing["timeSlicing"];
  if (!slicing || slicing.IsNull()) return config;
  if (!slicing.IsMap()) return Bad("sharing.timeSlicing is not a mapping");
  bool rename_by_default = false;
  if (slicing["renameByDefault"] && !ReadScalar(slicing["renameByDefault"], rename_by_default)) {
    return Bad("sharing.timeSlicing.renameByDefault is not a boolean");
  }
  if (slicing["failRequestsGreaterThanOne"] &&
      !ReadScalar(slicing["failRequestsGreaterThanOne"], config.fail_requests_greater_than_one)) {
    return Bad("sharing.timeSlicing.failRequestsGreaterThanOne is not a boolean");
  }
  const YAML::Node resources = slicing["resources"];
  if (!resources || resources.IsNull()) return config;
  if (!resources.IsSequence()) return Bad("sharing.timeSlicing.resources is not a list");
  std::set<std::string> seen;
  bool found = false;
  for (size_t i = 0; i < resources.size(); ++i) {
    const YAML::Node entry = resources[i];
    const std::string where = "sharing.timeSlicing.resources[" + std::to_string(i) + "]";
    if (!entry.IsMap()) return Bad(where + " is not a mapping");
    std::string name;
    if (!entry["name"] || !ReadScalar(entry["name"], name) || name.empty()) {
      return Bad(where + ".name is missing or not a string");
    }
    name = QualifiedName(name);
    if (!seen.insert(name).second) return Bad(where + ": resource " + name + " listed twice");
    long long replicas = 0;
    if (!entry["replicas"] || !ReadScalar(entry["replicas"], replicas)) {
      return Bad(where + ".replicas is missing or not an integer");
    }
    if (replicas < 1 || replicas > kMaxReplicasPerGpu) {
      return Bad(where + ".replicas is " + std::to_string(replicas) + ", want 1.." +
                 std::to_string(kMaxReplicasPerGpu));
    }
    if (entry["devices"]) {
      std::string devices;
      if (!ReadScalar(entry["devices"], devices) || devices != "all") {
        return Bad(where + ".devices: only \"all\" is supported by gputopo's agent");
      }
    }
    std::string rename;
    if (entry["rename"] && !ReadScalar(entry["rename"], rename)) {
      return Bad(where + ".rename is not a string");
    }
    if (name != resource_name) continue;
    found = true;
    config.replicas = static_cast<int>(replicas);
    if (!rename.empty()) {
      config.advertised_resource = QualifiedName(rename);
    } else if (rename_by_default) {
      config.advertised_resource = name + ".shared";
    }
  }
  if (!found) config.fail_requests_greater_than_one = false;  // not shared: no limit
  return config;
}

}  // namespace

Result<SharingConfig> ParseTimeSlicingConfig(std::string_view yaml,
                                             std::string_view resource_name) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    return Bad("not YAML: " + e.msg + " at line " + std::to_string(e.mark.line + 1));
  } catch (const std::exception& e) {
    return Bad(std::string("not YAML: ") + e.what());
  }
  try {
    return ParseDocument(root, resource_name);
  } catch (const std::exception& e) {
    return Bad(std::string("unreadable: ") + e.what());
  }
}

Result<SharingConfig> LoadTimeSlicingConfig(const std::string& path,
                                            std::string_view resource_name) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound(std::string(kPrefix) + "cannot read " + path);
  std::ostringstream text;
  text << in.rdbuf();
  Result<SharingConfig> config = ParseTimeSlicingConfig(text.str(), resource_name);
  if (!config.ok()) return config.status().WithContext(path);
  return config;
}

}  // namespace gputopo::agent
