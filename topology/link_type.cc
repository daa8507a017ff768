#include "topology/link_type.h"

#include <charconv>

namespace gputopo::topology {

std::optional<Link> ParseLink(std::string_view text) {
  if (text == "SYS" || text == "SOC") return Link{LinkType::kSys, 0};
  if (text == "NODE") return Link{LinkType::kNode, 0};
  if (text == "PHB") return Link{LinkType::kPhb, 0};
  if (text == "PXB") return Link{LinkType::kPxb, 0};
  if (text == "PIX") return Link{LinkType::kPix, 0};
  if (text.size() > 2 && text.substr(0, 2) == "NV") {
    int count = 0;
    const char* begin = text.data() + 2;
    const char* end = text.data() + text.size();
    auto [ptr, ec] = std::from_chars(begin, end, count);
    if (ec != std::errc() || ptr != end || count < 1 || count > kMaxBondedNvLinks) {
      return std::nullopt;
    }
    return Link{LinkType::kNvLink, count};
  }
  return std::nullopt;
}

std::string FormatLink(const Link& link) {
  switch (link.type) {
    case LinkType::kNvLink:
      return "NV" + std::to_string(link.nvlinks);
    case LinkType::kPix:
      return "PIX";
    case LinkType::kPxb:
      return "PXB";
    case LinkType::kPhb:
      return "PHB";
    case LinkType::kNode:
      return "NODE";
    case LinkType::kSys:
      return "SYS";
    case LinkType::kUnknown:
      break;
  }
  return "UNKNOWN";
}

double LinkWeight(const Link& link) {
  switch (link.type) {
    case LinkType::kNvLink:
      return kNvLinkWeightPerLink * link.nvlinks;
    case LinkType::kPix:
      return kPixWeight;
    case LinkType::kPxb:
      return kPxbWeight;
    case LinkType::kPhb:
      return kPhbWeight;
    case LinkType::kNode:
      return kNodeWeight;
    case LinkType::kSys:
      return kSysWeight;
    case LinkType::kUnknown:
      break;
  }
  return 0.0;
}

}  // namespace gputopo::topology
