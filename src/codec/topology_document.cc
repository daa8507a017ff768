#include "src/codec/topology_document.h"

#include <nlohmann/json.hpp>

#include "topology/link_type.h"

namespace gputopo::codec {
namespace {

using nlohmann::json;

constexpr size_t kMaxStringField = 256;

Status Corrupt(const std::string& what) { return InvalidArgument("topology document: " + what); }

// Reads an optional integer field into *out, checking [lo, hi].
Status ReadInt(const json& object, const char* key, int64_t lo, int64_t hi, int64_t* out,
               const std::string& where) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return Status::Ok();
  if (!it->is_number_integer()) return Corrupt(where + "." + key + " must be an integer");
  const int64_t v = it->get<int64_t>();
  if (v < lo || v > hi) {
    return Corrupt(where + "." + key + " must be in " + std::to_string(lo) + ".." +
                   std::to_string(hi));
  }
  *out = v;
  return Status::Ok();
}

Status ReadString(const json& object, const char* key, std::string* out, const std::string& where) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return Status::Ok();
  if (!it->is_string()) return Corrupt(where + "." + key + " must be a string");
  const auto& s = it->get_ref<const std::string&>();
  if (s.size() > kMaxStringField) return Corrupt(where + "." + key + " is too long");
  *out = s;
  return Status::Ok();
}

Result<MachineTopology> FromJson(const json& doc) {
  if (!doc.is_object()) return Corrupt("must be a JSON object");
  int64_t version = 0;
  if (Status s = ReadInt(doc, "version", 1, 1, &version, "document"); !s.ok()) return s;
  if (version != 1) return Corrupt("version must be 1");
  auto gpus_it = doc.find("gpus");
  if (gpus_it == doc.end() || !gpus_it->is_array() || gpus_it->empty()) {
    return Corrupt("gpus must be a non-empty array");
  }
  const json& gpus = *gpus_it;
  if (gpus.size() > static_cast<size_t>(kMaxGpusPerNode)) {
    return Corrupt("at most " + std::to_string(kMaxGpusPerNode) + " GPUs are supported");
  }
  const int n = static_cast<int>(gpus.size());
  MachineTopology machine(n);
  std::vector<bool> seen(static_cast<size_t>(n), false);
  for (size_t i = 0; i < gpus.size(); ++i) {
    const json& entry = gpus[i];
    const std::string where = "gpus[" + std::to_string(i) + "]";
    if (!entry.is_object()) return Corrupt(where + " must be an object");
    auto index_it = entry.find("index");
    if (index_it == entry.end() || !index_it->is_number_integer()) {
      return Corrupt(where + ".index must be an integer");
    }
    const int64_t index = index_it->get<int64_t>();
    if (index < 0 || index >= n) {
      return Corrupt(where + ".index " + std::to_string(index) + " is not in 0.." +
                     std::to_string(n - 1));
    }
    if (seen[static_cast<size_t>(index)]) {
      return Corrupt("GPU index " + std::to_string(index) + " appears twice");
    }
    seen[static_cast<size_t>(index)] = true;
    GpuInfo& gpu = machine.gpu(static_cast<int>(index));
    int64_t numa = -1;
    int64_t memory = 0;
    if (Status s = ReadString(entry, "uuid", &gpu.uuid, where); !s.ok()) return s;
    if (Status s = ReadString(entry, "model", &gpu.model, where); !s.ok()) return s;
    if (Status s = ReadString(entry, "cpuAffinity", &gpu.cpu_affinity, where); !s.ok()) return s;
    if (Status s = ReadString(entry, "pciBusId", &gpu.pci_bus_id, where); !s.ok()) return s;
    if (auto it = entry.find("healthy"); it != entry.end() && !it->is_null()) {
      if (!it->is_boolean()) return Corrupt(where + ".healthy must be true or false");
      gpu.healthy = it->get<bool>();
    }
    if (!gpu.healthy) {
      if (Status s = ReadString(entry, "healthReason", &gpu.health_reason, where); !s.ok()) {
        return s;
      }
    }
    if (Status s = ReadInt(entry, "numaNode", -1, kMaxNumaNode, &numa, where); !s.ok()) return s;
    if (Status s = ReadInt(entry, "memoryMiB", 0, int64_t{1} << 40, &memory, where); !s.ok()) {
      return s;
    }
    gpu.numa_node = static_cast<int>(numa);
    gpu.memory_mib = memory;
  }
  for (int i = 0; i < n; ++i) {
    for (int j = i + 1; j < n; ++j) {
      if (!machine.gpu(i).uuid.empty() && machine.gpu(i).uuid == machine.gpu(j).uuid) {
        return Corrupt("GPUs " + std::to_string(i) + " and " + std::to_string(j) +
                       " have the same uuid");
      }
    }
  }
  int64_t replicas = 0;
  if (Status s = ReadInt(doc, "replicas", 1, kMaxReplicasPerGpu, &replicas, "document"); !s.ok()) {
    return s;
  }
  machine.set_replicas_per_gpu(static_cast<int>(replicas));

  auto links_it = doc.find("links");
  if (links_it != doc.end() && !links_it->is_null()) {
    if (!links_it->is_array()) return Corrupt("links must be an array");
    std::vector<bool> set(static_cast<size_t>(n) * static_cast<size_t>(n), false);
    for (size_t i = 0; i < links_it->size(); ++i) {
      const json& entry = (*links_it)[i];
      const std::string where = "links[" + std::to_string(i) + "]";
      if (!entry.is_object()) return Corrupt(where + " must be an object");
      auto pair = entry.find("gpus");
      if (pair == entry.end() || !pair->is_array() || pair->size() != 2 ||
          !(*pair)[0].is_number_integer() || !(*pair)[1].is_number_integer()) {
        return Corrupt(where + ".gpus must be two GPU indices");
      }
      const int64_t a = (*pair)[0].get<int64_t>();
      const int64_t b = (*pair)[1].get<int64_t>();
      if (a < 0 || a >= n || b < 0 || b >= n || a == b) {
        return Corrupt(where + ".gpus names a GPU that does not exist, or one GPU twice");
      }
      auto type = entry.find("type");
      if (type == entry.end() || !type->is_string())
        return Corrupt(where + ".type must be a string");
      std::optional<Link> link = topology::ParseLink(type->get_ref<const std::string&>());
      if (!link) {
        return Corrupt(where + ".type '" + type->get<std::string>().substr(0, 32) +
                       "' is not NV<n>, PIX, PXB, PHB, NODE or SYS");
      }
      const auto ia = static_cast<int>(a);
      const auto ib = static_cast<int>(b);
      const size_t slot = static_cast<size_t>(std::min(ia, ib)) * static_cast<size_t>(n) +
                          static_cast<size_t>(std::max(ia, ib));
      if (set[slot] && !(machine.link(ia, ib) == *link)) {
        return Corrupt("GPUs " + std::to_string(a) + " and " + std::to_string(b) +
                       " are given two different link types");
      }
      set[slot] = true;
      machine.SetLink(ia, ib, *link);
    }
  }
  return machine;
}

Result<json> ParseJson(std::string_view text) {
  json doc = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Corrupt("not valid JSON");
  return doc;
}

}  // namespace

Result<MachineTopology> ParseTopologyDocument(std::string_view text) {
  Result<json> doc = ParseJson(text);
  if (!doc.ok()) return doc.status();
  return FromJson(*doc);
}

Result<ProfileDocument> ParseProfileDocument(std::string_view text) {
  Result<json> doc = ParseJson(text);
  if (!doc.ok()) return doc.status();
  Result<MachineTopology> machine = FromJson(*doc);
  if (!machine.ok()) return machine.status();
  ProfileDocument profile;
  profile.machine = std::move(machine).value();
  if (Status s = ReadString(*doc, "name", &profile.name, "profile"); !s.ok()) return s;
  if (Status s = ReadString(*doc, "description", &profile.description, "profile"); !s.ok()) {
    return s;
  }
  if (profile.name.empty()) return Corrupt("profile has no name");
  return profile;
}

std::string FormatTopologyDocument(const MachineTopology& machine,
                                   const TopologyFormatOptions& options) {
  json doc = json::object();
  doc["version"] = 1;
  if (machine.replicas_per_gpu() > 0) doc["replicas"] = machine.replicas_per_gpu();
  json gpus = json::array();
  for (const GpuInfo& gpu : machine.gpus()) {
    json entry = {{"index", gpu.index}};
    if (!gpu.uuid.empty()) entry["uuid"] = gpu.uuid;
    if (!gpu.model.empty()) entry["model"] = gpu.model;
    if (gpu.memory_mib > 0) entry["memoryMiB"] = gpu.memory_mib;
    if (gpu.numa_node >= 0) entry["numaNode"] = gpu.numa_node;
    if (!gpu.cpu_affinity.empty()) entry["cpuAffinity"] = gpu.cpu_affinity;
    if (!gpu.pci_bus_id.empty()) entry["pciBusId"] = gpu.pci_bus_id;
    if (!gpu.healthy) {
      entry["healthy"] = false;
      if (!gpu.health_reason.empty()) entry["healthReason"] = gpu.health_reason;
    }
    gpus.push_back(std::move(entry));
  }
  doc["gpus"] = std::move(gpus);
  json links = json::array();
  for (int a = 0; a < machine.gpu_count(); ++a) {
    for (int b = a + 1; b < machine.gpu_count(); ++b) {
      const Link& link = machine.link(a, b);
      if (link.type == LinkType::kUnknown) continue;
      links.push_back({{"gpus", {a, b}}, {"type", topology::FormatLink(link)}});
    }
  }
  doc["links"] = std::move(links);
  if (!options.comments.empty()) doc["notes"] = options.comments;
  return doc.dump(options.pretty ? 2 : -1, ' ', false, json::error_handler_t::replace);
}

}  // namespace gputopo::codec
