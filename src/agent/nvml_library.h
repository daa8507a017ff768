// NvmlLibrary: libnvidia-ml opened at run time with dlopen, and the entry points discovery uses.
//
// Open() fails only when the library cannot be loaded or lacks nvmlInit_v2, nvmlShutdown,
// nvmlDeviceGetCount_v2 or nvmlDeviceGetHandleByIndex_v2, without which nothing can be read. Every
// other entry point may be missing (older drivers, a stub library): its pointer is then null and
// the caller degrades that fact. Init() calls nvmlInit_v2 once; the destructor calls nvmlShutdown
// when Init succeeded, then dlclose.
//
// Thread safety: thread-compatible; NVML itself is thread-safe once initialised.
#ifndef GPUTOPO_SRC_AGENT_NVML_LIBRARY_H_
#define GPUTOPO_SRC_AGENT_NVML_LIBRARY_H_

#include <memory>
#include <string>

#include "gputopo/status.h"
#include "src/agent/nvml_api.h"

namespace gputopo::agent {

inline constexpr char kDefaultNvmlLibrary[] = "libnvidia-ml.so.1";

// The entry points; null when the library does not export one.
struct NvmlFunctions {
  nvmlInit_v2_t Init = nullptr;
  nvmlShutdown_t Shutdown = nullptr;
  nvmlErrorString_t ErrorString = nullptr;
  nvmlDeviceGetCount_v2_t DeviceGetCount = nullptr;
  nvmlDeviceGetHandleByIndex_v2_t DeviceGetHandleByIndex = nullptr;
  nvmlDeviceGetUUID_t DeviceGetUUID = nullptr;
  nvmlDeviceGetName_t DeviceGetName = nullptr;
  nvmlDeviceGetMemoryInfo_t DeviceGetMemoryInfo = nullptr;
  nvmlDeviceGetPciInfo_v3_t DeviceGetPciInfo = nullptr;
  nvmlDeviceGetTopologyCommonAncestor_t DeviceGetTopologyCommonAncestor = nullptr;
  nvmlDeviceGetNvLinkState_t DeviceGetNvLinkState = nullptr;
  nvmlDeviceGetNvLinkRemotePciInfo_v2_t DeviceGetNvLinkRemotePciInfo = nullptr;
  nvmlDeviceGetNvLinkRemoteDeviceType_t DeviceGetNvLinkRemoteDeviceType = nullptr;
  nvmlDeviceGetMigMode_t DeviceGetMigMode = nullptr;
};

class NvmlLibrary {
 public:
  // `path` as dlopen takes it: a file name searched on the library path, or a path.
  // Error "dlopen <path>: <dlerror>" or "<path> has no <symbol>".
  static Result<std::unique_ptr<NvmlLibrary>> Open(const std::string& path);
  ~NvmlLibrary();
  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;

  // nvmlInit_v2; error "nvmlInit_v2: <reason>".
  Status Init();

  const NvmlFunctions& functions() const { return functions_; }
  // NVML's own text for `code` (nvmlErrorString), or our name for it when the library has none.
  std::string ErrorString(nvmlReturn_t code) const;
  const std::string& path() const { return path_; }

 private:
  NvmlLibrary(void* handle, std::string path) : handle_(handle), path_(std::move(path)) {}

  void* handle_;  // from dlopen; owned
  std::string path_;
  NvmlFunctions functions_;
  bool initialised_ = false;
};

// Our name for an NVML return code ("GPU is lost", "not supported"), as nvmlErrorString says it.
std::string NvmlReturnName(nvmlReturn_t code);

}  // namespace gputopo::agent

#endif  // GPUTOPO_SRC_AGENT_NVML_LIBRARY_H_
