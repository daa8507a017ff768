#include "topology/nvlink_count.h"

#include <algorithm>
#include <cctype>

namespace gputopo::topology {
namespace {

bool AllHex(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isxdigit(static_cast<unsigned char>(c)) != 0;
  });
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

std::string NormalizePciBusId(std::string_view id) {
  // [domain:]bus:device.function
  const size_t dot = id.rfind('.');
  if (dot == std::string_view::npos) return "";
  const std::string_view function = id.substr(dot + 1);
  const std::string_view head = id.substr(0, dot);
  const size_t last_colon = head.rfind(':');
  if (last_colon == std::string_view::npos) return "";
  const std::string_view device = head.substr(last_colon + 1);
  const std::string_view before = head.substr(0, last_colon);
  const size_t first_colon = before.rfind(':');
  std::string_view domain = "0000";
  std::string_view bus = before;
  if (first_colon != std::string_view::npos) {
    domain = before.substr(0, first_colon);
    bus = before.substr(first_colon + 1);
  }
  if (!AllHex(domain) || !AllHex(bus) || !AllHex(device) || !AllHex(function)) return "";
  if (bus.size() > 2 || device.size() > 2 || function.size() != 1 || domain.size() > 8) return "";
  // Leading zeros of an 8-digit NVML domain go; the rest must fit sysfs's 4 digits.
  while (domain.size() > 4 && domain.front() == '0') domain.remove_prefix(1);
  if (domain.size() > 4) return "";
  const auto pad = [](std::string_view s, size_t width) {
    return std::string(width - s.size(), '0') + Lower(s);
  };
  return pad(domain, 4) + ":" + pad(bus, 2) + ":" + pad(device, 2) + "." + Lower(function);
}

NvLinkCounts CountNvLinks(const std::vector<GpuNvLinks>& gpus) {
  const int n = static_cast<int>(gpus.size());
  const auto un = static_cast<size_t>(n);
  NvLinkCounts result;
  result.gpu_count = n;
  result.counts.assign(un * un, 0);
  result.unknown.assign(un * un, false);
  std::vector<std::string> bus_ids(un);
  for (size_t i = 0; i < un; ++i) bus_ids[i] = NormalizePciBusId(gpus[i].pci_bus_id);
  auto find_gpu = [&](const std::string& remote) -> int {
    const std::string id = NormalizePciBusId(remote);
    if (id.empty()) return -1;
    for (size_t i = 0; i < un; ++i) {
      if (bus_ids[i] == id) return static_cast<int>(i);
    }
    return -1;
  };
  std::vector<int> direct(un * un, 0);  // direct[a * n + b]: a's links that end at b
  std::vector<int> to_switch(un, 0);
  for (size_t a = 0; a < un; ++a) {
    if (!gpus[a].known) continue;
    for (const NvLinkEnd& end : gpus[a].active) {
      if (end.peer == NvLinkPeer::kSwitch) {
        ++to_switch[a];
        continue;
      }
      if (end.peer == NvLinkPeer::kOther) continue;
      const int b = find_gpu(end.remote_pci_bus_id);
      if (b < 0 || static_cast<size_t>(b) == a) {
        ++result.unmatched_links;
        continue;
      }
      ++direct[a * un + static_cast<size_t>(b)];
    }
  }
  for (size_t a = 0; a < un; ++a) {
    for (size_t b = a + 1; b < un; ++b) {
      if (!gpus[a].known || !gpus[b].known) {
        result.unknown[a * un + b] = result.unknown[b * un + a] = true;
        continue;
      }
      const int count =
          std::min(direct[a * un + b], direct[b * un + a]) + std::min(to_switch[a], to_switch[b]);
      result.counts[a * un + b] = result.counts[b * un + a] = count;
    }
  }
  return result;
}

}  // namespace gputopo::topology
