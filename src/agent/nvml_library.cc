#include "src/agent/nvml_library.h"

#include <dlfcn.h>

#include <utility>

namespace gputopo::agent {
namespace {

// dlsym's void* to a function pointer type (POSIX guarantees the conversion works).
template <typename F>
void Load(void* handle, const char* name, F& out) {
  void* symbol = dlsym(handle, name);
  static_assert(sizeof(symbol) == sizeof(out));
  out = reinterpret_cast<F>(symbol);
}

}  // namespace

Result<std::unique_ptr<NvmlLibrary>> NvmlLibrary::Open(const std::string& path) {
  dlerror();  // clear
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return Unavailable("dlopen " + path + ": " + (why != nullptr ? why : "unknown error"));
  }
  std::unique_ptr<NvmlLibrary> library(new NvmlLibrary(handle, path));
  NvmlFunctions& f = library->functions_;
  Load(handle, "nvmlInit_v2", f.Init);
  Load(handle, "nvmlShutdown", f.Shutdown);
  Load(handle, "nvmlErrorString", f.ErrorString);
  Load(handle, "nvmlDeviceGetCount_v2", f.DeviceGetCount);
  Load(handle, "nvmlDeviceGetHandleByIndex_v2", f.DeviceGetHandleByIndex);
  Load(handle, "nvmlDeviceGetUUID", f.DeviceGetUUID);
  Load(handle, "nvmlDeviceGetName", f.DeviceGetName);
  Load(handle, "nvmlDeviceGetMemoryInfo", f.DeviceGetMemoryInfo);
  Load(handle, "nvmlDeviceGetPciInfo_v3", f.DeviceGetPciInfo);
  Load(handle, "nvmlDeviceGetTopologyCommonAncestor", f.DeviceGetTopologyCommonAncestor);
  Load(handle, "nvmlDeviceGetNvLinkState", f.DeviceGetNvLinkState);
  Load(handle, "nvmlDeviceGetNvLinkRemotePciInfo_v2", f.DeviceGetNvLinkRemotePciInfo);
  Load(handle, "nvmlDeviceGetNvLinkRemoteDeviceType", f.DeviceGetNvLinkRemoteDeviceType);
  Load(handle, "nvmlDeviceGetMigMode", f.DeviceGetMigMode);
  const std::pair<const char*, bool> required[] = {
      {"nvmlInit_v2", f.Init != nullptr},
      {"nvmlShutdown", f.Shutdown != nullptr},
      {"nvmlDeviceGetCount_v2", f.DeviceGetCount != nullptr},
      {"nvmlDeviceGetHandleByIndex_v2", f.DeviceGetHandleByIndex != nullptr},
  };
  for (const auto& [name, present] : required) {
    if (!present) return Unavailable(path + " has no " + name);
  }
  return library;
}

NvmlLibrary::~NvmlLibrary() {
  if (initialised_) functions_.Shutdown();
  dlclose(handle_);
}

Status NvmlLibrary::Init() {
  if (initialised_) return Status::Ok();
  const nvmlReturn_t rc = functions_.Init();
  if (rc != NVML_SUCCESS) return Unavailable("nvmlInit_v2: " + ErrorString(rc));
  initialised_ = true;
  return Status::Ok();
}

std::string NvmlLibrary::ErrorString(nvmlReturn_t code) const {
  if (functions_.ErrorString != nullptr) {
    const char* text = functions_.ErrorString(code);
    if (text != nullptr && *text != '\0') return text;
  }
  return NvmlReturnName(code);
}

std::string NvmlReturnName(nvmlReturn_t code) {
  switch (code) {
    case NVML_SUCCESS:
      return "success";
    case NVML_ERROR_UNINITIALIZED:
      return "uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT:
      return "invalid argument";
    case NVML_ERROR_NOT_SUPPORTED:
      return "not supported";
    case NVML_ERROR_NO_PERMISSION:
      return "insufficient permissions";
    case NVML_ERROR_NOT_FOUND:
      return "not found";
    case NVML_ERROR_INSUFFICIENT_SIZE:
      return "insufficient size";
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return "driver not loaded";
    case NVML_ERROR_TIMEOUT:
      return "timeout";
    case NVML_ERROR_LIBRARY_NOT_FOUND:
      return "library not found";
    case NVML_ERROR_FUNCTION_NOT_FOUND:
      return "function not found";
    case NVML_ERROR_GPU_IS_LOST:
      return "GPU is lost";
    case NVML_ERROR_RESET_REQUIRED:
      return "GPU requires reset";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
      return "driver/library version mismatch";
    case NVML_ERROR_UNKNOWN:
      return "unknown error";
    default:
      return "NVML error " + std::to_string(static_cast<int>(code));
  }
}

}  // namespace gputopo::agent
