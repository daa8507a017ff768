// A fake libnvidia-ml: the NVML entry points the node agent uses, serving a machine described by
// the fixture file named by the environment variable GPUTOPO_FAKE_NVML_MACHINE (read again by
// every nvmlInit_v2, so one process can load several machines). Built as a shared library and
// loaded through dlopen, exactly as the real one is.
//
// Fixture format: one directive a line, '#' starts a comment.
//   init_error <code>              nvmlInit_v2 answers <code> (e.g. 9, driver not loaded)
//   ancestor_default <level>       nvmlDeviceGetTopologyCommonAncestor for pairs not listed
//   ancestor <a> <b> <level>       ... for the pair a, b (either order)
//   gpu <index>                    starts GPU <index>'s section (indices 0..n-1, in order)
//     uuid <text> | name <rest of the line> | memory_mib <n> | bus_id <NVML form>
//     mig <0|1>                    nvmlDeviceGetMigMode's current mode (absent: NOT_SUPPORTED)
//     handle_fail <code>           nvmlDeviceGetHandleByIndex_v2 answers <code>
//     fail <code>                  every call on the GPU after its handle answers <code>
//     nvlink_unsupported           nvmlDeviceGetNvLinkState answers NOT_SUPPORTED on every link
//     link <n> <gpu|switch|npu|unknown> <remote bus id> [inactive]
//     links <first>-<last> <kind> <remote bus id>   the same for a range of links
//     numa <n>                     not NVML: the test writes it to its fake sysfs
// Links not listed answer NOT_SUPPORTED, as links past a GPU's own count do.
//
// Built twice: with GPUTOPO_FAKE_NVML_MINIMAL it lacks nvmlErrorString, nvmlDeviceGetPciInfo_v3,
// nvmlDeviceGetMigMode and the three NVLink entry points, as an old or stub library would.
//
// Thread safety: none; tests call it from one thread.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "src/agent/nvml_api.h"

struct FakeLink {
  nvmlIntNvLinkDeviceType_t type = NVML_NVLINK_DEVICE_TYPE_GPU;
  std::string remote_bus_id;
  bool active = true;
};

// NVML's opaque device type, defined here: a handle points at one of these.
struct nvmlDevice_st {
  std::string uuid;
  std::string name;
  unsigned long long memory_mib = 0;
  std::string bus_id;
  int mig = -1;
  nvmlReturn_t handle_fail = NVML_SUCCESS;
  nvmlReturn_t fail = NVML_SUCCESS;
  bool nvlink_unsupported = false;
  std::map<unsigned int, FakeLink> links;
};

namespace {

struct Machine {
  bool loaded = false;
  nvmlReturn_t init_error = NVML_SUCCESS;
  nvmlGpuTopologyLevel_t ancestor_default = NVML_TOPOLOGY_SYSTEM;
  std::map<std::pair<int, int>, nvmlGpuTopologyLevel_t> ancestors;
  std::vector<nvmlDevice_st> gpus;
};

Machine& TheMachine() {
  static Machine machine;  // destroyed by dlclose or at exit
  return machine;
}

nvmlIntNvLinkDeviceType_t KindFrom(const std::string& kind) {
  if (kind == "gpu") return NVML_NVLINK_DEVICE_TYPE_GPU;
  if (kind == "switch") return NVML_NVLINK_DEVICE_TYPE_SWITCH;
  if (kind == "npu") return NVML_NVLINK_DEVICE_TYPE_IBMNPU;
  return NVML_NVLINK_DEVICE_TYPE_UNKNOWN;
}

bool Load(Machine& m) {
  m = Machine();
  const char* path = std::getenv("GPUTOPO_FAKE_NVML_MACHINE");
  if (path == nullptr) return false;
  std::ifstream in(path);
  if (!in) return false;
  std::string line;
  while (std::getline(in, line)) {
    if (const size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::string directive;
    if (!(words >> directive)) continue;
    nvmlDevice_st* gpu = m.gpus.empty() ? nullptr : &m.gpus.back();
    int code = 0;
    if (directive == "init_error" && words >> code) {
      m.init_error = static_cast<nvmlReturn_t>(code);
    } else if (directive == "ancestor_default" && words >> code) {
      m.ancestor_default = static_cast<nvmlGpuTopologyLevel_t>(code);
    } else if (directive == "ancestor") {
      int a = 0;
      int b = 0;
      if (words >> a >> b >> code) {
        m.ancestors[{std::min(a, b), std::max(a, b)}] = static_cast<nvmlGpuTopologyLevel_t>(code);
      }
    } else if (directive == "gpu") {
      m.gpus.emplace_back();
    } else if (gpu == nullptr) {
      continue;
    } else if (directive == "uuid") {
      words >> gpu->uuid;
    } else if (directive == "name") {
      std::getline(words >> std::ws, gpu->name);
      while (!gpu->name.empty() && gpu->name.back() == ' ') gpu->name.pop_back();
    } else if (directive == "memory_mib") {
      words >> gpu->memory_mib;
    } else if (directive == "bus_id") {
      words >> gpu->bus_id;
    } else if (directive == "mig") {
      words >> gpu->mig;
    } else if (directive == "handle_fail" && words >> code) {
      gpu->handle_fail = static_cast<nvmlReturn_t>(code);
    } else if (directive == "fail" && words >> code) {
      gpu->fail = static_cast<nvmlReturn_t>(code);
    } else if (directive == "nvlink_unsupported") {
      gpu->nvlink_unsupported = true;
    } else if (directive == "link" || directive == "links") {
      std::string range;
      std::string kind;
      FakeLink link;
      std::string flag;
      if (!(words >> range >> kind >> link.remote_bus_id)) continue;
      if (words >> flag && flag == "inactive") link.active = false;
      link.type = KindFrom(kind);
      const size_t dash = range.find('-');
      const unsigned long first = std::stoul(range.substr(0, dash));
      const unsigned long last =
          dash == std::string::npos ? first : std::stoul(range.substr(dash + 1));
      for (unsigned long i = first; i <= last; ++i) {
        gpu->links[static_cast<unsigned int>(i)] = link;
      }
    }
  }
  m.loaded = true;
  return true;
}

// The device, or nullptr when the handle is not one of ours.
nvmlDevice_st* Device(nvmlDevice_t device) {
  Machine& m = TheMachine();
  for (nvmlDevice_st& gpu : m.gpus) {
    if (&gpu == device) return &gpu;
  }
  return nullptr;
}

int IndexOf(nvmlDevice_t device) {
  Machine& m = TheMachine();
  for (size_t i = 0; i < m.gpus.size(); ++i) {
    if (&m.gpus[i] == device) return static_cast<int>(i);
  }
  return -1;
}

nvmlReturn_t CopyString(const std::string& value, char* out, unsigned int length) {
  if (out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (value.size() + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(out, value.c_str(), value.size() + 1);
  return NVML_SUCCESS;
}

[[maybe_unused]] void FillPci(const std::string& bus_id, nvmlPciInfo_t* pci) {
  *pci = nvmlPciInfo_t{};
  std::strncpy(pci->busId, bus_id.c_str(), sizeof(pci->busId) - 1);
  unsigned int domain = 0;
  unsigned int bus = 0;
  unsigned int dev = 0;
  if (std::sscanf(bus_id.c_str(), "%x:%x:%x", &domain, &bus, &dev) == 3) {
    pci->domain = domain;
    pci->bus = bus;
    pci->device = dev;
    std::snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), "%04x:%02x:%02x.0", domain & 0xffff,
                  bus, dev);
  }
}

// Common checks of a per-device call: initialised, a known handle, the GPU not failing.
#define FAKE_NVML_DEVICE(var, handle)                        \
  if (!TheMachine().loaded) return NVML_ERROR_UNINITIALIZED; \
  nvmlDevice_st* var = Device(handle);                       \
  if ((var) == nullptr) return NVML_ERROR_INVALID_ARGUMENT;  \
  if ((var)->fail != NVML_SUCCESS) return (var)->fail

}  // namespace

extern "C" {

__attribute__((visibility("default"))) nvmlReturn_t nvmlInit_v2(void) {
  Machine& m = TheMachine();
  if (!Load(m)) return NVML_ERROR_DRIVER_NOT_LOADED;
  if (m.init_error != NVML_SUCCESS) {
    const nvmlReturn_t rc = m.init_error;
    m.loaded = false;
    return rc;
  }
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlShutdown(void) {
  if (!TheMachine().loaded) return NVML_ERROR_UNINITIALIZED;
  TheMachine() = Machine();
  return NVML_SUCCESS;
}

#ifndef GPUTOPO_FAKE_NVML_MINIMAL
__attribute__((visibility("default"))) const char* nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
    case NVML_SUCCESS:
      return "Success";
    case NVML_ERROR_UNINITIALIZED:
      return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT:
      return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED:
      return "Not Supported";
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return "Driver Not Loaded";
    case NVML_ERROR_GPU_IS_LOST:
      return "GPU is lost";
    case NVML_ERROR_UNKNOWN:
      return "Unknown Error";
    default:
      return "Fake NVML Error";
  }
}
#endif

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  if (!TheMachine().loaded) return NVML_ERROR_UNINITIALIZED;
  if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *count = static_cast<unsigned int>(TheMachine().gpus.size());
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(
    unsigned int index, nvmlDevice_t* device) {
  Machine& m = TheMachine();
  if (!m.loaded) return NVML_ERROR_UNINITIALIZED;
  if (device == nullptr || index >= m.gpus.size()) return NVML_ERROR_INVALID_ARGUMENT;
  if (m.gpus[index].handle_fail != NVML_SUCCESS) return m.gpus[index].handle_fail;
  *device = &m.gpus[index];
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device,
                                                                      char* uuid,
                                                                      unsigned int length) {
  FAKE_NVML_DEVICE(gpu, device);
  return CopyString(gpu->uuid, uuid, length);
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device,
                                                                      char* name,
                                                                      unsigned int length) {
  FAKE_NVML_DEVICE(gpu, device);
  return CopyString(gpu->name, name, length);
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device,
                                                                            nvmlMemory_t* memory) {
  FAKE_NVML_DEVICE(gpu, device);
  if (memory == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  memory->total = gpu->memory_mib << 20;
  memory->used = memory->total / 100;
  memory->free = memory->total - memory->used;
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(
    nvmlDevice_t device1, nvmlDevice_t device2, nvmlGpuTopologyLevel_t* level) {
  FAKE_NVML_DEVICE(a, device1);
  FAKE_NVML_DEVICE(b, device2);
  if (level == nullptr || a == b) return NVML_ERROR_INVALID_ARGUMENT;
  const int ia = IndexOf(device1);
  const int ib = IndexOf(device2);
  Machine& m = TheMachine();
  auto it = m.ancestors.find({std::min(ia, ib), std::max(ia, ib)});
  *level = it == m.ancestors.end() ? m.ancestor_default : it->second;
  return NVML_SUCCESS;
}

#ifndef GPUTOPO_FAKE_NVML_MINIMAL
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device,
                                                                            nvmlPciInfo_t* pci) {
  FAKE_NVML_DEVICE(gpu, device);
  if (pci == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  FillPci(gpu->bus_id, pci);
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetMigMode(
    nvmlDevice_t device, unsigned int* current_mode, unsigned int* pending_mode) {
  FAKE_NVML_DEVICE(gpu, device);
  if (current_mode == nullptr || pending_mode == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (gpu->mig < 0) return NVML_ERROR_NOT_SUPPORTED;
  *current_mode = *pending_mode = static_cast<unsigned int>(gpu->mig);
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetNvLinkState(
    nvmlDevice_t device, unsigned int link, nvmlEnableState_t* is_active) {
  FAKE_NVML_DEVICE(gpu, device);
  if (is_active == nullptr || link >= NVML_NVLINK_MAX_LINKS) return NVML_ERROR_INVALID_ARGUMENT;
  auto it = gpu->links.find(link);
  if (gpu->nvlink_unsupported || it == gpu->links.end()) return NVML_ERROR_NOT_SUPPORTED;
  *is_active = it->second.active ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(
    nvmlDevice_t device, unsigned int link, nvmlPciInfo_t* pci) {
  FAKE_NVML_DEVICE(gpu, device);
  if (pci == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  auto it = gpu->links.find(link);
  if (gpu->nvlink_unsupported || it == gpu->links.end()) return NVML_ERROR_NOT_SUPPORTED;
  FillPci(it->second.remote_bus_id, pci);
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(
    nvmlDevice_t device, unsigned int link, nvmlIntNvLinkDeviceType_t* type) {
  FAKE_NVML_DEVICE(gpu, device);
  if (type == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  auto it = gpu->links.find(link);
  if (gpu->nvlink_unsupported || it == gpu->links.end()) return NVML_ERROR_NOT_SUPPORTED;
  *type = it->second.type;
  return NVML_SUCCESS;
}
#endif

}  // extern "C"
