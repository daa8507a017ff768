#include "src/agent/topology_discovery.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <fstream>
#include <optional>
#include <sstream>
#include <utility>

#include "topology/link_type.h"
#include "topology/nvidia_smi_parser.h"
#include "topology/nvlink_count.h"

namespace gputopo::agent {
namespace {

constexpr size_t kMaxReason = 200;  // document strings are capped at 256

// The notes of one discovery, each said once: a fact missing or not supported on several GPUs
// gives one line naming them all, in order of first appearance.
class Notes {
 public:
  void Add(std::string note) { Entry(std::move(note), ""); }
  void Missing(const std::string& function, const std::string& consequence) {
    Entry(function + " missing: " + consequence, "");
  }
  void NotSupported(const std::string& function, int gpu, const std::string& consequence) {
    PerGpu(function + " not supported", gpu, ": " + consequence);
  }
  // "<head> on GPUs 0, 3<tail>".
  void PerGpu(std::string head, int gpu, std::string tail) {
    Entry(std::move(head), std::move(tail)).second.push_back(gpu);
  }
  std::vector<std::string> Take() {
    std::vector<std::string> out;
    for (auto& [key, gpus] : entries_) {
      std::string line = key.first;
      if (!gpus.empty()) {
        line += gpus.size() == 1 ? " on GPU " : " on GPUs ";
        for (size_t i = 0; i < gpus.size(); ++i) {
          line += (i == 0 ? "" : ", ") + std::to_string(gpus[i]);
        }
      }
      out.push_back(line + key.second);
    }
    return out;
  }

 private:
  using Key = std::pair<std::string, std::string>;
  std::pair<Key, std::vector<int>>& Entry(std::string head, std::string tail) {
    Key key{std::move(head), std::move(tail)};
    for (auto& entry : entries_) {
      if (entry.first == key) return entry;
    }
    entries_.emplace_back(std::move(key), std::vector<int>{});
    return entries_.back();
  }
  std::vector<std::pair<Key, std::vector<int>>> entries_;
};

std::string Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return std::string(s);
}

// A C string from a buffer NVML filled, terminated even if NVML did not.
template <size_t N>
std::string FromBuffer(char (&buffer)[N]) {
  buffer[N - 1] = '\0';
  return std::string(buffer);
}

std::optional<Link> FromAncestor(nvmlGpuTopologyLevel_t level) {
  switch (level) {
    case NVML_TOPOLOGY_INTERNAL:
    case NVML_TOPOLOGY_SINGLE:
      return Link{LinkType::kPix, 0};
    case NVML_TOPOLOGY_MULTIPLE:
      return Link{LinkType::kPxb, 0};
    case NVML_TOPOLOGY_HOSTBRIDGE:
      return Link{LinkType::kPhb, 0};
    case NVML_TOPOLOGY_NODE:
      return Link{LinkType::kNode, 0};
    case NVML_TOPOLOGY_SYSTEM:
      return Link{LinkType::kSys, 0};
  }
  return std::nullopt;
}

topology::NvLinkPeer FromDeviceType(nvmlIntNvLinkDeviceType_t type) {
  switch (type) {
    case NVML_NVLINK_DEVICE_TYPE_GPU:
      return topology::NvLinkPeer::kGpu;
    case NVML_NVLINK_DEVICE_TYPE_SWITCH:
      return topology::NvLinkPeer::kSwitch;
    case NVML_NVLINK_DEVICE_TYPE_IBMNPU:
      return topology::NvLinkPeer::kOther;
    case NVML_NVLINK_DEVICE_TYPE_UNKNOWN:
      break;
  }
  return topology::NvLinkPeer::kUnknown;
}

// Reads the per-GPU facts of one GPU through NVML, recording what is missing.
class GpuReader {
 public:
  GpuReader(const NvmlLibrary& nvml, Notes& notes, GpuInfo& gpu, int index)
      : nvml_(nvml), f_(nvml.functions()), notes_(notes), gpu_(gpu), index_(index) {}

  // True when `rc` is success. NOT_SUPPORTED (and FUNCTION_NOT_FOUND) degrade the fact with a
  // note; any other failure marks the GPU unhealthy, naming the first call that failed.
  bool Check(const char* function, nvmlReturn_t rc, const char* consequence) {
    if (rc == NVML_SUCCESS) return true;
    if (rc == NVML_ERROR_NOT_SUPPORTED || rc == NVML_ERROR_FUNCTION_NOT_FOUND) {
      notes_.NotSupported(function, index_, consequence);
      return false;
    }
    if (gpu_.healthy) {
      gpu_.healthy = false;
      gpu_.health_reason = std::string(function) + ": " + nvml_.ErrorString(rc);
      if (gpu_.health_reason.size() > kMaxReason) gpu_.health_reason.resize(kMaxReason);
    }
    return false;
  }

  void ReadIdentity(nvmlDevice_t device, const std::string& sysfs_root) {
    if (f_.DeviceGetUUID == nullptr) {
      notes_.Missing("nvmlDeviceGetUUID", "no GPU UUIDs");
    } else {
      char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
      if (Check("nvmlDeviceGetUUID", f_.DeviceGetUUID(device, uuid, sizeof(uuid)), "no UUID")) {
        gpu_.uuid = FromBuffer(uuid);
      }
    }
    if (f_.DeviceGetName == nullptr) {
      notes_.Missing("nvmlDeviceGetName", "no GPU models");
    } else if (gpu_.healthy) {
      char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {};
      if (Check("nvmlDeviceGetName", f_.DeviceGetName(device, name, sizeof(name)), "no model")) {
        gpu_.model = FromBuffer(name);
      }
    }
    if (f_.DeviceGetMemoryInfo == nullptr) {
      notes_.Missing("nvmlDeviceGetMemoryInfo", "no GPU memory sizes");
    } else if (gpu_.healthy) {
      nvmlMemory_t memory{};
      if (Check("nvmlDeviceGetMemoryInfo", f_.DeviceGetMemoryInfo(device, &memory),
                "no memory size")) {
        gpu_.memory_mib = static_cast<int64_t>(memory.total >> 20);
      }
    }
    if (f_.DeviceGetPciInfo == nullptr) {
      notes_.Missing("nvmlDeviceGetPciInfo_v3",
                     "no PCI bus IDs, so no NUMA nodes and no NVLinks between GPUs");
    } else if (gpu_.healthy) {
      nvmlPciInfo_t pci{};
      if (Check("nvmlDeviceGetPciInfo_v3", f_.DeviceGetPciInfo(device, &pci),
                "no PCI bus ID, NUMA node or NVLinks toward it")) {
        gpu_.pci_bus_id = FromBuffer(pci.busId);
      }
    }
    if (!gpu_.pci_bus_id.empty()) {
      gpu_.numa_node = ReadNumaNode(sysfs_root, gpu_.pci_bus_id);
      if (gpu_.numa_node < 0) {
        notes_.PerGpu("no numa_node in " + sysfs_root + "/bus/pci/devices", index_,
                      ": NUMA node unknown");
      }
    }
    if (f_.DeviceGetMigMode != nullptr && gpu_.healthy) {
      unsigned int current = 0;
      unsigned int pending = 0;
      const nvmlReturn_t rc = f_.DeviceGetMigMode(device, &current, &pending);
      // NOT_SUPPORTED is the answer of every GPU without MIG: nothing to say.
      if (rc == NVML_SUCCESS && current == NVML_DEVICE_MIG_ENABLE) {
        notes_.Add("GPU " + std::to_string(index_) +
                   " has MIG enabled: MIG devices are not handled, the whole GPU is listed");
      } else if (rc != NVML_SUCCESS && rc != NVML_ERROR_NOT_SUPPORTED) {
        Check("nvmlDeviceGetMigMode", rc, "MIG mode unknown");
      }
    }
  }

  // The GPU's active NVLinks and where they end.
  topology::GpuNvLinks ReadNvLinks(nvmlDevice_t device) {
    topology::GpuNvLinks links;
    links.pci_bus_id = gpu_.pci_bus_id;
    if (f_.DeviceGetNvLinkState == nullptr) {
      notes_.Missing("nvmlDeviceGetNvLinkState", "links from PCIe only");
      return links;
    }
    int unsupported = 0;
    for (unsigned int link = 0; link < NVML_NVLINK_MAX_LINKS && gpu_.healthy; ++link) {
      nvmlEnableState_t active = NVML_FEATURE_DISABLED;
      const nvmlReturn_t rc = f_.DeviceGetNvLinkState(device, link, &active);
      // Links past the GPU's own count answer NOT_SUPPORTED or INVALID_ARGUMENT.
      if (rc == NVML_ERROR_NOT_SUPPORTED || rc == NVML_ERROR_INVALID_ARGUMENT) {
        ++unsupported;
        continue;
      }
      if (!Check("nvmlDeviceGetNvLinkState", rc, "links from PCIe")) break;
      if (active != NVML_FEATURE_ENABLED) continue;
      topology::NvLinkEnd end;
      if (f_.DeviceGetNvLinkRemoteDeviceType == nullptr) {
        notes_.Missing("nvmlDeviceGetNvLinkRemoteDeviceType",
                       "an NVLink counts when it ends at another GPU's bus ID; links to NVSwitches "
                       "are not counted");
      } else {
        nvmlIntNvLinkDeviceType_t type = NVML_NVLINK_DEVICE_TYPE_UNKNOWN;
        const nvmlReturn_t type_rc = f_.DeviceGetNvLinkRemoteDeviceType(device, link, &type);
        if (Check("nvmlDeviceGetNvLinkRemoteDeviceType", type_rc,
                  "an NVLink counts when it ends at another GPU's bus ID")) {
          end.peer = FromDeviceType(type);
        }
      }
      if (end.peer != topology::NvLinkPeer::kSwitch && end.peer != topology::NvLinkPeer::kOther) {
        if (f_.DeviceGetNvLinkRemotePciInfo == nullptr) {
          notes_.Missing("nvmlDeviceGetNvLinkRemotePciInfo_v2",
                         "NVLinks between GPUs are not counted (NVSwitch links are)");
        } else {
          nvmlPciInfo_t remote{};
          if (Check("nvmlDeviceGetNvLinkRemotePciInfo_v2",
                    f_.DeviceGetNvLinkRemotePciInfo(device, link, &remote),
                    "its NVLinks toward GPUs are not counted")) {
            end.remote_pci_bus_id = FromBuffer(remote.busId);
          }
        }
      }
      if (!gpu_.healthy) break;
      links.active.push_back(std::move(end));
    }
    if (unsupported == NVML_NVLINK_MAX_LINKS) {
      notes_.NotSupported("nvmlDeviceGetNvLinkState", index_, "no NVLink, links from PCIe");
    }
    return links;
  }

 private:
  const NvmlLibrary& nvml_;
  const NvmlFunctions& f_;
  Notes& notes_;
  GpuInfo& gpu_;
  const int index_;
};

int ParseLeadingInt(std::string_view text, int64_t* out) {
  const std::string trimmed = Trim(text);
  const char* begin = trimmed.data();
  const char* end = begin + trimmed.size();
  const auto [ptr, ec] = std::from_chars(begin, end, *out);
  if (ec != std::errc()) return -1;
  return static_cast<int>(ptr - begin);
}

std::string ShortQuote(std::string_view text) {
  std::string out;
  for (char c : text.substr(0, 60)) {
    out += std::isprint(static_cast<unsigned char>(c)) ? c : '?';
  }
  return "'" + out + "'";
}

}  // namespace

int ReadNumaNode(const std::string& sysfs_root, const std::string& pci_bus_id) {
  const std::string id = topology::NormalizePciBusId(pci_bus_id);
  if (id.empty()) return -1;
  std::ifstream in(sysfs_root + "/bus/pci/devices/" + id + "/numa_node");
  if (!in) return -1;
  std::string text;
  std::getline(in, text);
  int64_t node = -1;
  if (ParseLeadingInt(text, &node) <= 0 || node < 0 || node > kMaxNumaNode) return -1;
  return static_cast<int>(node);
}

Result<Discovery> DiscoverWithNvml(const NvmlLibrary& nvml, const std::string& sysfs_root) {
  const NvmlFunctions& f = nvml.functions();
  unsigned int count = 0;
  if (const nvmlReturn_t rc = f.DeviceGetCount(&count); rc != NVML_SUCCESS) {
    return Unavailable("nvmlDeviceGetCount_v2: " + nvml.ErrorString(rc));
  }
  if (count == 0) return NotFound("NVML sees no GPU");
  if (count > static_cast<unsigned int>(kMaxGpusPerNode)) {
    return ResourceExhausted("NVML sees " + std::to_string(count) + " GPUs, more than " +
                             std::to_string(kMaxGpusPerNode));
  }
  const int n = static_cast<int>(count);
  Discovery result;
  result.source = "nvml";
  MachineTopology& machine = result.machine;
  machine.Resize(n);
  Notes notes;
  std::vector<nvmlDevice_t> devices(count, nullptr);
  std::vector<topology::GpuNvLinks> nvlinks(count);
  for (int i = 0; i < n; ++i) {
    GpuInfo& gpu = machine.gpu(i);
    GpuReader reader(nvml, notes, gpu, i);
    nvmlDevice_t device = nullptr;
    if (reader.Check("nvmlDeviceGetHandleByIndex_v2",
                     f.DeviceGetHandleByIndex(static_cast<unsigned int>(i), &device),
                     "nothing known about it")) {
      devices[static_cast<size_t>(i)] = device;
      reader.ReadIdentity(device, sysfs_root);
      if (gpu.healthy) nvlinks[static_cast<size_t>(i)] = reader.ReadNvLinks(device);
    }
    if (!gpu.healthy) nvlinks[static_cast<size_t>(i)].known = false;
  }
  const topology::NvLinkCounts counts = topology::CountNvLinks(nvlinks);
  if (counts.unmatched_links > 0) {
    notes.Add(std::to_string(counts.unmatched_links) +
              " active NVLink(s) end at a device that is none of the GPUs: not counted");
  }
  for (int a = 0; a < n; ++a) {
    for (int b = a + 1; b < n; ++b) {
      const nvmlDevice_t da = devices[static_cast<size_t>(a)];
      const nvmlDevice_t db = devices[static_cast<size_t>(b)];
      if (!machine.gpu(a).healthy || !machine.gpu(b).healthy || !counts.known(a, b)) continue;
      if (const int links = counts.count(a, b); links > 0) {
        machine.SetLink(a, b, {LinkType::kNvLink, std::min(links, topology::kMaxBondedNvLinks)});
        continue;
      }
      if (f.DeviceGetTopologyCommonAncestor == nullptr) {
        notes.Missing("nvmlDeviceGetTopologyCommonAncestor", "PCIe links unknown");
        continue;
      }
      nvmlGpuTopologyLevel_t level = NVML_TOPOLOGY_SYSTEM;
      const nvmlReturn_t rc = f.DeviceGetTopologyCommonAncestor(da, db, &level);
      if (rc == NVML_ERROR_NOT_SUPPORTED) {
        notes.NotSupported("nvmlDeviceGetTopologyCommonAncestor", a, "PCIe links unknown");
        continue;
      }
      if (rc != NVML_SUCCESS) {
        notes.Add("nvmlDeviceGetTopologyCommonAncestor(" + std::to_string(a) + ", " +
                  std::to_string(b) + "): " + nvml.ErrorString(rc) + ": link unknown");
        continue;
      }
      if (const std::optional<Link> link = FromAncestor(level)) {
        machine.SetLink(a, b, *link);
      } else {
        notes.Add("nvmlDeviceGetTopologyCommonAncestor(" + std::to_string(a) + ", " +
                  std::to_string(b) + ") answered level " +
                  std::to_string(static_cast<int>(level)) + ": link unknown");
      }
    }
  }
  for (int i = 0; i < n; ++i) {
    if (!machine.gpu(i).healthy) {
      notes.Add("GPU " + std::to_string(i) + " is unhealthy (" + machine.gpu(i).health_reason +
                "): its links are unknown");
    }
  }
  result.notes = notes.Take();
  return result;
}

Result<std::vector<GpuInfo>> ParseNvidiaSmiGpuQuery(std::string_view csv) {
  std::vector<GpuInfo> gpus;
  std::istringstream in{std::string(csv)};
  std::string line;
  bool header = false;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (Trim(line).empty()) continue;
    if (!header) {
      if (Trim(line).rfind("index", 0) != 0) {
        return InvalidArgument("--query-gpu output has no header line: " + ShortQuote(line));
      }
      header = true;
      continue;
    }
    std::vector<std::string> cells;
    std::stringstream row(line);
    std::string cell;
    while (std::getline(row, cell, ',')) cells.push_back(Trim(cell));
    if (cells.size() < 5) {
      return InvalidArgument("--query-gpu row is not index, uuid, name, memory, bus id: " +
                             ShortQuote(line));
    }
    // A name with commas in it spans several cells.
    std::string name = cells[2];
    for (size_t i = 3; i + 2 < cells.size(); ++i) name += "," + cells[i];
    GpuInfo gpu;
    int64_t index = -1;
    if (ParseLeadingInt(cells[0], &index) != static_cast<int>(cells[0].size()) || index < 0 ||
        index >= kMaxGpusPerNode) {
      return InvalidArgument("--query-gpu row has a bad index: " + ShortQuote(line));
    }
    gpu.index = static_cast<int>(index);
    if (cells[1].rfind("GPU-", 0) == 0) gpu.uuid = cells[1];
    if (name.find("[N/A]") == std::string::npos) gpu.model = name;
    int64_t memory = 0;
    const std::string& memory_cell = cells[cells.size() - 2];
    if (ParseLeadingInt(memory_cell, &memory) > 0 && memory > 0) gpu.memory_mib = memory;
    const std::string& bus = cells.back();
    if (!topology::NormalizePciBusId(bus).empty()) gpu.pci_bus_id = bus;
    gpus.push_back(std::move(gpu));
  }
  if (gpus.empty()) return NotFound("--query-gpu lists no GPU");
  if (gpus.size() > static_cast<size_t>(kMaxGpusPerNode)) {
    return ResourceExhausted("--query-gpu lists more than " + std::to_string(kMaxGpusPerNode) +
                             " GPUs");
  }
  std::vector<GpuInfo> by_index(gpus.size());
  std::vector<bool> seen(gpus.size(), false);
  for (GpuInfo& gpu : gpus) {
    const auto i = static_cast<size_t>(gpu.index);
    if (i >= gpus.size() || seen[i]) {
      return InvalidArgument("--query-gpu indices are not 0.." + std::to_string(gpus.size() - 1));
    }
    seen[i] = true;
    by_index[i] = std::move(gpu);
  }
  return by_index;
}

Result<Discovery> DiscoverWithNvidiaSmi(CommandRunner& runner, const std::string& nvidia_smi,
                                        const std::string& sysfs_root) {
  Result<std::string> query = runner.Run(
      {nvidia_smi, "--query-gpu=index,uuid,name,memory.total,pci.bus_id", "--format=csv"});
  if (!query.ok()) return query.status();
  Result<std::vector<GpuInfo>> gpus = ParseNvidiaSmiGpuQuery(*query);
  if (!gpus.ok()) return gpus.status();
  const int n = static_cast<int>(gpus->size());
  Discovery result;
  result.source = "nvidia-smi";
  result.machine.Resize(n);
  for (int i = 0; i < n; ++i) result.machine.gpu(i) = (*gpus)[static_cast<size_t>(i)];
  Result<std::string> topo = runner.Run({nvidia_smi, "topo", "-m"});
  if (!topo.ok()) {
    result.notes.push_back("nvidia-smi topo -m: " + topo.status().message() + ": links unknown");
  } else if (Result<topology::NvidiaSmiTopology> parsed = topology::ParseNvidiaSmiTopo(*topo);
             !parsed.ok()) {
    result.notes.push_back("nvidia-smi topo -m: " + parsed.status().message() + ": links unknown");
  } else if (parsed->machine.gpu_count() != n) {
    result.notes.push_back("nvidia-smi topo -m shows " +
                           std::to_string(parsed->machine.gpu_count()) + " GPUs and --query-gpu " +
                           std::to_string(n) + ": links unknown");
  } else {
    for (const std::string& d : parsed->diagnostics) result.notes.push_back("topo -m: " + d);
    for (int a = 0; a < n; ++a) {
      GpuInfo& gpu = result.machine.gpu(a);
      gpu.numa_node = parsed->machine.gpu(a).numa_node;
      gpu.cpu_affinity = parsed->machine.gpu(a).cpu_affinity;
      for (int b = a + 1; b < n; ++b) result.machine.SetLink(a, b, parsed->machine.link(a, b));
    }
  }
  // sysfs, where it answers, as discovery through NVML reads it.
  for (int i = 0; i < n; ++i) {
    GpuInfo& gpu = result.machine.gpu(i);
    if (const int numa = ReadNumaNode(sysfs_root, gpu.pci_bus_id); numa >= 0) gpu.numa_node = numa;
  }
  return result;
}

Result<Discovery> DiscoverTopology(const DiscoveryOptions& options, CommandRunner& runner) {
  std::string nvml_failure;
  {
    Result<std::unique_ptr<NvmlLibrary>> nvml = NvmlLibrary::Open(options.nvml_library);
    if (!nvml.ok()) {
      nvml_failure = nvml.status().message();
    } else if (Status init = (*nvml)->Init(); !init.ok()) {
      nvml_failure = init.message();
    } else {
      Result<Discovery> found = DiscoverWithNvml(**nvml, options.sysfs_root);
      if (found.ok()) {
        if (options.replicas > 0) found->machine.set_replicas_per_gpu(options.replicas);
        return found;
      }
      nvml_failure = found.status().message();
    }
  }
  Result<Discovery> found = DiscoverWithNvidiaSmi(runner, options.nvidia_smi, options.sysfs_root);
  if (!found.ok()) {
    return NotFound("no GPU found: NVML: " + nvml_failure +
                    "; nvidia-smi: " + found.status().message());
  }
  found->notes.insert(found->notes.begin(),
                      "NVML not used (" + nvml_failure + "): read from nvidia-smi");
  if (options.replicas > 0) found->machine.set_replicas_per_gpu(options.replicas);
  return found;
}

}  // namespace gputopo::agent
