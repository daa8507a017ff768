#include "src/agent/device_ids.h"

#include <charconv>
#include <optional>

#include "gputopo/excerpt.h"

namespace gputopo::agent {
namespace {

// kubelet's limit on a device ID (the device plugin API's Device.ID).
constexpr size_t kMaxDeviceIdLength = 63;

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsUuidChar(char c) {
  return IsDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-';
}

// A decimal number without sign, leading zeros (except "0" itself) or spaces, in int range.
std::optional<int> ParseDecimal(std::string_view text) {
  if (text.empty() || (text.size() > 1 && text[0] == '0')) return std::nullopt;
  for (char c : text) {
    if (!IsDigit(c)) return std::nullopt;
  }
  int value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

MappedDeviceId Unknown(std::string_view id, std::string why) {
  MappedDeviceId out;
  out.form = DeviceIdForm::kUnknown;
  out.reason = "device ID \"" + Excerpt(id, 80) + "\" is of unknown form: " + std::move(why);
  return out;
}

}  // namespace

std::string_view DeviceIdFormName(DeviceIdForm form) {
  const std::string_view name = NameOf(kDeviceIdFormNames, form);
  return name == "?" ? "unknown" : name;
}

MappedDeviceId MapDeviceId(std::string_view id, const MachineTopology& topology) {
  if (id.empty()) return Unknown(id, "empty");
  if (id.size() > kMaxDeviceIdLength) {
    return Unknown(id, "longer than " + std::to_string(kMaxDeviceIdLength) + " characters");
  }
  if (id.starts_with("MIG-") || (id.find(':') != std::string_view::npos &&
                                 id.find("::") == std::string_view::npos && IsDigit(id[0]))) {
    MappedDeviceId out;
    out.form = DeviceIdForm::kMig;
    out.reason = "device ID \"" + std::string(id) + "\" is a MIG device, which is not handled";
    return out;
  }

  // The GPU part and the optional "::<n>" replica suffix.
  std::string_view base = id;
  int replica = -1;
  if (const size_t sep = id.find("::"); sep != std::string_view::npos) {
    base = id.substr(0, sep);
    const std::string_view suffix = id.substr(sep + 2);
    std::optional<int> n = ParseDecimal(suffix);
    if (!n) return Unknown(id, "the replica after \"::\" is not a number");
    replica = *n;
  }

  MappedDeviceId out;
  out.replica = replica;
  if (base.starts_with("GPU-")) {
    const std::string_view rest = base.substr(4);
    if (rest.empty()) return Unknown(id, "nothing after \"GPU-\"");
    for (char c : rest) {
      if (!IsUuidChar(c)) return Unknown(id, "the UUID has a character other than [0-9A-Za-z-]");
    }
    out.form = DeviceIdForm::kUuid;
    out.gpu = std::string(base);
    for (const GpuInfo& gpu : topology.gpus()) {
      if (gpu.uuid == base) out.gpu_index = gpu.index;
    }
    if (out.gpu_index < 0) out.reason = std::string(base) + " is not among this node's GPUs";
    return out;
  }
  if (!base.empty() && IsDigit(base[0])) {
    std::optional<int> index = ParseDecimal(base);
    if (!index) return Unknown(id, "not a GPU index");
    out.form = DeviceIdForm::kIndex;
    if (*index >= topology.gpu_count()) {
      out.reason = "GPU index " + std::to_string(*index) + " is not on this node (it has " +
                   std::to_string(topology.gpu_count()) + " GPUs)";
      return out;
    }
    const GpuInfo& gpu = topology.gpu(*index);
    out.gpu_index = gpu.index;
    out.gpu = gpu.uuid.empty() ? std::to_string(gpu.index) : gpu.uuid;
    return out;
  }
  return Unknown(id, "neither GPU-<uuid>, <index> nor MIG-<uuid>, optionally with ::<replica>");
}

}  // namespace gputopo::agent
