// Our own declarations of the few NVML entry points the node agent uses.
//
// No NVIDIA header or library exists at build time (Debian ships them only in non-free), so the
// types below are written from NVML's documented C API (nvml.h, NVML API Reference): the same
// names, values and struct layouts, so a pointer from dlsym on the real libnvidia-ml.so.1 can be
// called through them. Only what discovery needs is declared. The fake NVML in
// test/fakes/fake_nvml/ implements the same signatures.
//
// Thread safety: declarations only.
#ifndef GPUTOPO_SRC_AGENT_NVML_API_H_
#define GPUTOPO_SRC_AGENT_NVML_API_H_

extern "C" {

// The enums are int-sized, as C's are; the fixed underlying type makes every value NVML may
// answer (including ones newer than these declarations) a valid value in C++.
typedef enum nvmlReturn_enum : int {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NO_PERMISSION = 4,
  NVML_ERROR_ALREADY_INITIALIZED = 5,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_INSUFFICIENT_POWER = 8,
  NVML_ERROR_DRIVER_NOT_LOADED = 9,
  NVML_ERROR_TIMEOUT = 10,
  NVML_ERROR_IRQ_ISSUE = 11,
  NVML_ERROR_LIBRARY_NOT_FOUND = 12,
  NVML_ERROR_FUNCTION_NOT_FOUND = 13,
  NVML_ERROR_CORRUPTED_INFOROM = 14,
  NVML_ERROR_GPU_IS_LOST = 15,
  NVML_ERROR_RESET_REQUIRED = 16,
  NVML_ERROR_OPERATING_SYSTEM = 17,
  NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
  NVML_ERROR_IN_USE = 19,
  NVML_ERROR_MEMORY = 20,
  NVML_ERROR_NO_DATA = 21,
  NVML_ERROR_VGPU_ECC_NOT_SUPPORTED = 22,
  NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
  NVML_ERROR_FREQ_NOT_SUPPORTED = 24,
  NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
  NVML_ERROR_DEPRECATED = 26,
  NVML_ERROR_NOT_READY = 27,
  NVML_ERROR_GPU_NOT_FOUND = 28,
  NVML_ERROR_INVALID_STATE = 29,
  NVML_ERROR_UNKNOWN = 999,
} nvmlReturn_t;

typedef struct nvmlDevice_st* nvmlDevice_t;

// Buffer sizes nvml.h names NVML_DEVICE_UUID_V2_BUFFER_SIZE and NVML_DEVICE_NAME_V2_BUFFER_SIZE.
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE 96
#define NVML_DEVICE_NAME_V2_BUFFER_SIZE 96
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE 32
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE 16
// The most NVLinks one GPU has (18 on H100).
#define NVML_NVLINK_MAX_LINKS 18

// nvmlPciInfo_t as of nvmlDeviceGetPciInfo_v3 / nvmlDeviceGetNvLinkRemotePciInfo_v2.
typedef struct nvmlPciInfo_st {
  char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];  // "0000:07:00.0" (old form)
  unsigned int domain;                                      // 0 to 0xffffffff
  unsigned int bus;                                         // 0 to 0xff
  unsigned int device;                                      // 0 to 31
  unsigned int pciDeviceId;                                 // device id << 16 | vendor id
  unsigned int pciSubSystemId;                              // subsystem id
  char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];           // "00000000:07:00.0"
} nvmlPciInfo_t;

typedef struct nvmlMemory_st {
  unsigned long long total;  // bytes
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_t;

typedef enum nvmlGpuLevel_enum : int {
  NVML_TOPOLOGY_INTERNAL = 0,
  NVML_TOPOLOGY_SINGLE = 10,
  NVML_TOPOLOGY_MULTIPLE = 20,
  NVML_TOPOLOGY_HOSTBRIDGE = 30,
  NVML_TOPOLOGY_NODE = 40,
  NVML_TOPOLOGY_SYSTEM = 50,
} nvmlGpuTopologyLevel_t;

typedef enum nvmlEnableState_enum : int {
  NVML_FEATURE_DISABLED = 0,
  NVML_FEATURE_ENABLED = 1,
} nvmlEnableState_t;

typedef enum nvmlIntNvLinkDeviceType_enum : int {
  NVML_NVLINK_DEVICE_TYPE_GPU = 0x00,
  NVML_NVLINK_DEVICE_TYPE_IBMNPU = 0x01,
  NVML_NVLINK_DEVICE_TYPE_SWITCH = 0x02,
  NVML_NVLINK_DEVICE_TYPE_UNKNOWN = 0xFF,
} nvmlIntNvLinkDeviceType_t;

#define NVML_DEVICE_MIG_DISABLE 0
#define NVML_DEVICE_MIG_ENABLE 1

// The entry points, as function pointer types (the names dlsym looks up, with the versioned
// suffixes nvml.h maps its plain names to).
typedef nvmlReturn_t (*nvmlInit_v2_t)(void);
typedef nvmlReturn_t (*nvmlShutdown_t)(void);
typedef const char* (*nvmlErrorString_t)(nvmlReturn_t result);
typedef nvmlReturn_t (*nvmlDeviceGetCount_v2_t)(unsigned int* device_count);
typedef nvmlReturn_t (*nvmlDeviceGetHandleByIndex_v2_t)(unsigned int index, nvmlDevice_t* device);
typedef nvmlReturn_t (*nvmlDeviceGetUUID_t)(nvmlDevice_t device, char* uuid, unsigned int length);
typedef nvmlReturn_t (*nvmlDeviceGetName_t)(nvmlDevice_t device, char* name, unsigned int length);
typedef nvmlReturn_t (*nvmlDeviceGetMemoryInfo_t)(nvmlDevice_t device, nvmlMemory_t* memory);
typedef nvmlReturn_t (*nvmlDeviceGetPciInfo_v3_t)(nvmlDevice_t device, nvmlPciInfo_t* pci);
typedef nvmlReturn_t (*nvmlDeviceGetTopologyCommonAncestor_t)(nvmlDevice_t device1,
                                                              nvmlDevice_t device2,
                                                              nvmlGpuTopologyLevel_t* level);
typedef nvmlReturn_t (*nvmlDeviceGetNvLinkState_t)(nvmlDevice_t device, unsigned int link,
                                                   nvmlEnableState_t* is_active);
typedef nvmlReturn_t (*nvmlDeviceGetNvLinkRemotePciInfo_v2_t)(nvmlDevice_t device,
                                                              unsigned int link,
                                                              nvmlPciInfo_t* pci);
typedef nvmlReturn_t (*nvmlDeviceGetNvLinkRemoteDeviceType_t)(nvmlDevice_t device,
                                                              unsigned int link,
                                                              nvmlIntNvLinkDeviceType_t* type);
typedef nvmlReturn_t (*nvmlDeviceGetMigMode_t)(nvmlDevice_t device, unsigned int* current_mode,
                                               unsigned int* pending_mode);

}  // extern "C"

#endif  // GPUTOPO_SRC_AGENT_NVML_API_H_
