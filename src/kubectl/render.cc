#include "src/kubectl/render.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "gputopo/machine_topology.h"
#include "topology/gpu_mask.h"
#include "topology/link_type.h"

namespace gputopo::kubectl {
namespace {

using nlohmann::json;

constexpr size_t kPadding = 3;  // kubectl's tabwriter padding
constexpr size_t kMaxFittingRows = 20;
constexpr size_t kExampleNodes = 3;

std::string Paint(bool on, const char* code, std::string_view text) {
  if (!on || text.empty()) return std::string(text);
  return std::string("\033[") + code + "m" + std::string(text) + "\033[0m";
}

// Visible width: ANSI sequences take no room; UTF-8 continuation bytes neither.
size_t Width(std::string_view text) {
  size_t width = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\033') {
      while (i < text.size() && text[i] != 'm') ++i;
      continue;
    }
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) ++width;
  }
  return width;
}

std::string Join(const std::vector<int>& values, std::string_view separator = ",") {
  std::string out;
  for (int v : values) out += (out.empty() ? "" : std::string(separator)) + std::to_string(v);
  return out;
}

std::string Gpus(policies::GpuMask mask) { return Join(topology::ToIndices(mask)); }

std::string OrNone(std::string text) { return text.empty() ? "<none>" : text; }

// "8" or "4+4" or "2+2+2+2": the GPU counts of the NVLink islands; "-" without NVLink.
std::string IslandSizes(const topology::TopologyShape& shape) {
  std::string out;
  for (int i = 0; i < shape.island_count(); ++i) {
    const int n = topology::Count(shape.island(i));
    if (n < 2) continue;
    out += (out.empty() ? "" : "+") + std::to_string(n);
  }
  return out.empty() ? "-" : out;
}

std::string SlotsCell(const policies::NodeState& node, const Style& style) {
  const std::string text =
      std::to_string(node.used_slots()) + "/" + std::to_string(node.total_slots());
  if (node.free_slots() == 0) return style.Bad(text);
  return node.used_slots() == 0 ? style.Good(text) : text;
}

std::string Model(const policies::NodeState& node) {
  const auto& gpus = *node.topology().gpus;
  if (gpus.empty() || gpus.front().model.empty()) return "<unknown>";
  for (const GpuInfo& g : gpus) {
    if (g.model != gpus.front().model) return "<mixed>";
  }
  return gpus.front().model;
}

std::string Occupant(const policies::Occupant& o) {
  std::string flags = "group " + o.group + ", " + std::to_string(o.milli) + "m";
  if (o.exclusive) flags += ", exclusive";
  if (o.observed) flags += ", observed";
  if (!o.recorded.empty()) flags += ", assigned " + o.recorded + " (mismatch)";
  return o.pod_key + " (" + flags + ")";
}

std::string Namespace(const std::string& pod_key) { return pod_key.substr(0, pod_key.find('/')); }

}  // namespace

std::string Style::Bold(std::string_view text) const { return Paint(color, "1", text); }
std::string Style::Good(std::string_view text) const { return Paint(color, "32", text); }
std::string Style::Warn(std::string_view text) const { return Paint(color, "33", text); }
std::string Style::Bad(std::string_view text) const { return Paint(color, "31", text); }

std::string Table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> widths;
  for (const auto& row : rows) {
    if (widths.size() < row.size()) widths.resize(row.size(), 0);
    for (size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], Width(row[c]));
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size()) line.append(widths[c] - Width(row[c]) + kPadding, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

std::string NodesTable(const std::vector<const policies::NodeState*>& nodes, bool wide,
                       const Style& style) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> header = {"NAME",  "GPUS",    "REPLICAS", "SLOTS",    "FREE",
                                     "EMPTY", "ISLANDS", "TOPOLOGY", "UNHEALTHY"};
  if (wide) {
    for (const char* h : {"MODEL", "NUMA", "PODS", "UNKNOWN-GPU SLOTS"}) header.push_back(h);
  }
  for (std::string& h : header) h = style.Bold(h);
  rows.push_back(header);
  for (const policies::NodeState* node : nodes) {
    if (!node->has_topology()) {
      std::vector<std::string> row = {
          node->name(), "?", "?", std::to_string(node->used_slots()) + "/?",
          "?",          "?", "?", style.Bad("error: " + node->topology_error()),
          "?"};
      if (wide) row.insert(row.end(), {"?", "?", "?", std::to_string(node->unplaced_slots())});
      rows.push_back(std::move(row));
      continue;
    }
    const topology::TopologyShape& shape = node->shape();
    std::string source(NameOf(kTopologySourceNames, node->topology().source));
    if (node->topology().source == TopologySource::kProfile)
      source = node->topology().source_detail;
    if (!shape.links_known()) source += " (links unknown)";
    const policies::GpuMask unhealthy = node->unhealthy_gpus();
    std::vector<std::string> row = {
        node->name(),
        std::to_string(node->gpu_count()),
        std::to_string(node->replicas()),
        SlotsCell(*node, style),
        std::to_string(node->free_slots()),
        std::to_string(topology::Count(node->empty_gpus())),
        IslandSizes(shape),
        node->topology().source == TopologySource::kFallback ? style.Warn(source) : source,
        unhealthy == 0 ? "<none>" : style.Bad(Gpus(unhealthy))};
    if (wide) {
      std::vector<std::string> pods;
      for (int g = 0; g < node->gpu_count(); ++g) {
        for (const policies::Occupant& o : node->gpu(g).occupants) pods.push_back(o.pod_uid);
      }
      for (const policies::UnplacedPod& p : node->unplaced()) pods.push_back(p.pod_uid);
      std::sort(pods.begin(), pods.end());
      pods.erase(std::unique(pods.begin(), pods.end()), pods.end());
      row.insert(row.end(), {Model(*node), std::to_string(shape.numa_ids().size()),
                             std::to_string(pods.size()), std::to_string(node->unplaced_slots())});
    }
    rows.push_back(std::move(row));
  }
  return Table(rows);
}

std::string NodeDetail(const policies::NodeState& node, const std::string& namespace_filter,
                       const Style& style) {
  std::vector<std::vector<std::string>> head;
  head.push_back({"Name:", node.name()});
  if (!node.has_topology()) {
    head.push_back({"Topology:", style.Bad("error: " + node.topology_error())});
    head.push_back({"Slots used:", std::to_string(node.used_slots()) + " (GPUs unknown)"});
    return Table(head);
  }
  const topology::TopologyShape& shape = node.shape();
  const auto& t = node.topology();
  const std::string source(NameOf(kTopologySourceNames, t.source));
  head.push_back({"Topology:", (t.source_detail.rfind(source, 0) == 0 ? t.source_detail
                                : t.source_detail.empty()             ? source
                                                          : source + " (" + t.source_detail + ")") +
                                   (shape.links_known() ? "" : ", links unknown")});
  head.push_back({"Model:", Model(node)});
  head.push_back({"GPUs:", std::to_string(node.gpu_count()) + ", " +
                               std::to_string(node.replicas()) +
                               " replicas each: " + std::to_string(node.total_slots()) +
                               " slots, " + std::to_string(node.used_slots()) + " used, " +
                               std::to_string(node.free_slots()) + " free"});
  std::string islands;
  for (int i = 0; i < shape.island_count(); ++i) {
    if (topology::Count(shape.island(i)) < 2) continue;
    islands +=
        (islands.empty() ? "" : "   ") + std::to_string(i) + ": GPUs " + Gpus(shape.island(i));
  }
  head.push_back({"NVLink islands:", OrNone(islands)});
  std::string numa;
  for (int id : shape.numa_ids()) {
    numa +=
        (numa.empty() ? "" : "   ") + std::to_string(id) + ": GPUs " + Gpus(shape.numa_gpus(id));
  }
  head.push_back({"NUMA nodes:", OrNone(numa)});
  std::string out = Table(head) + "\n";

  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> header = {"GPU", "UUID", "NUMA", "ISLAND", "SLOTS", "FREE", "OCCUPANTS"};
  for (std::string& h : header) h = style.Bold(h);
  rows.push_back(header);
  for (int g = 0; g < node.gpu_count(); ++g) {
    const GpuInfo& info = (*t.gpus)[static_cast<size_t>(g)];
    const policies::GpuOccupancy& use = node.gpu(g);
    std::vector<std::string> occupants;
    int hidden = 0;
    for (const policies::Occupant& o : use.occupants) {
      if (!namespace_filter.empty() && Namespace(o.pod_key) != namespace_filter) {
        ++hidden;
        continue;
      }
      occupants.push_back(Occupant(o));
    }
    if (hidden > 0) occupants.push_back(std::to_string(hidden) + " in other namespaces");
    std::string slots = std::to_string(use.slots_used) + "/" + std::to_string(node.replicas());
    std::string free = std::to_string(node.gpu_free_milli(g)) + "m";
    if (!info.healthy) {
      slots = style.Bad("unhealthy");
      free = style.Bad(info.health_reason.empty() ? "-" : info.health_reason);
    } else if (use.exclusive || node.gpu_free_slots(g) == 0) {
      slots = style.Bad(slots);
    } else if (use.occupants.empty()) {
      slots = style.Good(slots);
    }
    const int island = shape.island_of(g);
    rows.push_back({std::to_string(g), info.uuid.empty() ? "<unknown>" : info.uuid,
                    shape.numa_of(g) < 0 ? "?" : std::to_string(shape.numa_of(g)),
                    topology::Count(shape.island(island)) < 2 ? "-" : std::to_string(island), slots,
                    free, occupants.empty() ? "<none>" : occupants.front()});
    for (size_t i = 1; i < occupants.size(); ++i)
      rows.push_back({"", "", "", "", "", "", occupants[i]});
  }
  out += Table(rows);
  if (!node.unplaced().empty()) {
    out += "\nPods holding slots on unknown GPUs:\n";
    for (const policies::UnplacedPod& p : node.unplaced()) {
      out += "  " + p.pod_key + ": " + std::to_string(p.slots) + " slot" +
             (p.slots == 1 ? "" : "s") + " (" + p.reason + ")\n";
    }
  }
  return out;
}

std::string TopoMatrix(const policies::NodeState& node, const Style& style) {
  if (!node.has_topology()) return style.Bad("error: " + node.topology_error()) + "\n";
  const topology::TopologyShape& shape = node.shape();
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> header = {""};
  for (int g = 0; g < node.gpu_count(); ++g)
    header.push_back(style.Bold("GPU" + std::to_string(g)));
  header.push_back(style.Bold("NUMA Affinity"));
  header.push_back(style.Bold("NVLink Island"));
  rows.push_back(header);
  for (int a = 0; a < node.gpu_count(); ++a) {
    std::vector<std::string> row = {style.Bold("GPU" + std::to_string(a))};
    for (int b = 0; b < node.gpu_count(); ++b) {
      if (a == b) {
        row.push_back("X");
        continue;
      }
      const Link link = shape.link(a, b);
      const std::string cell = topology::FormatLink(link);
      row.push_back(link.IsNvLink() ? style.Good(cell) : cell);
    }
    row.push_back(shape.numa_of(a) < 0 ? "N/A" : std::to_string(shape.numa_of(a)));
    const int island = shape.island_of(a);
    row.push_back(topology::Count(shape.island(island)) < 2 ? "-" : std::to_string(island));
    rows.push_back(std::move(row));
  }
  std::string out = Table(rows);
  out += "\nNVLink islands:";
  bool any = false;
  for (int i = 0; i < shape.island_count(); ++i) {
    if (topology::Count(shape.island(i)) < 2) continue;
    std::string gpus;
    for (int g : topology::ToIndices(shape.island(i)))
      gpus += (gpus.empty() ? "" : " ") + std::string("GPU") + std::to_string(g);
    out += "\n  " + std::to_string(i) + ": " + gpus;
    any = true;
  }
  if (!any) out += " <none>";
  out += "\n";
  if (!shape.links_known()) {
    out += style.Warn("\nLinks are not known for this node (" +
                      std::string(NameOf(kTopologySourceNames, node.topology().source)) +
                      " topology): publish a topology document (the node agent does).") +
           "\n";
  }
  out +=
      "\nLegend:\n\n"
      "  X    = Self\n"
      "  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes\n"
      "  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges "
      "within a NUMA node\n"
      "  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)\n"
      "  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host "
      "Bridge)\n"
      "  PIX  = Connection traversing at most a single PCIe bridge\n"
      "  NV#  = Connection traversing a bonded set of # NVLinks\n";
  return out;
}

std::string ExplainComputed(const PodInfo& pod, const std::string& requirements,
                            const std::string& preset, const std::vector<NodeVerdict>& verdicts,
                            const std::vector<policies::ComponentResult>& bound_components,
                            const Style& style) {
  std::vector<std::vector<std::string>> head;
  head.push_back({"Pod:", pod.Key()});
  head.push_back({"Requirements:", requirements});
  head.push_back({"Preset:", preset + " (computed here from the cluster as read; gputopo's own "
                                      "record: --server)"});
  const auto assigned = FindAnnotation(pod.annotations, "gputopo.io/assigned-gpus");
  const auto observed = FindAnnotation(pod.annotations, "gputopo.io/observed-gpus");
  if (!pod.node_name.empty()) {
    head.push_back({"Node:", pod.node_name});
    head.push_back({"Assigned GPUs:", assigned ? std::string(*assigned) : "<none>"});
    head.push_back({"Observed GPUs:", observed ? std::string(*observed) : "<not reported>"});
  } else {
    head.push_back({"Status:", style.Warn("pending")});
  }
  std::string out = Table(head);
  if (!bound_components.empty()) {
    out += "\nWhy these GPUs (score components on " + pod.node_name + "):\n";
    std::vector<std::vector<std::string>> rows = {
        {style.Bold("COMPONENT"), style.Bold("WEIGHT"), style.Bold("SCORE"), style.Bold("DETAIL")}};
    for (const policies::ComponentResult& c : bound_components) {
      char weight[32], score[32];
      std::snprintf(weight, sizeof(weight), "%g", c.weight);
      std::snprintf(score, sizeof(score), "%.2f", c.score);
      rows.push_back({c.name, weight, score, c.detail});
    }
    out += Table(rows);
  }
  if (!pod.node_name.empty()) return out;

  std::vector<const NodeVerdict*> fits;
  std::map<std::string, std::vector<const NodeVerdict*>> failed;  // by reason
  for (const NodeVerdict& v : verdicts) {
    if (v.evaluation.fits())
      fits.push_back(&v);
    else
      failed[v.evaluation.reason].push_back(&v);
  }
  std::stable_sort(fits.begin(), fits.end(), [](const NodeVerdict* a, const NodeVerdict* b) {
    if (a->evaluation.weighted_score != b->evaluation.weighted_score)
      return a->evaluation.weighted_score > b->evaluation.weighted_score;
    return a->node < b->node;
  });
  out += "\n" + std::to_string(verdicts.size()) + " nodes: " + std::to_string(fits.size()) +
         " fit, " + std::to_string(verdicts.size() - fits.size()) + " do not.\n";
  if (!fits.empty()) {
    std::vector<std::vector<std::string>> rows = {
        {style.Bold("NODE"), style.Bold("SCORE"), style.Bold("GPUS")}};
    for (size_t i = 0; i < fits.size() && i < kMaxFittingRows; ++i) {
      char score[32];
      std::snprintf(score, sizeof(score), "%.2f", fits[i]->evaluation.weighted_score);
      rows.push_back({fits[i]->node, score, fits[i]->placement});
    }
    out += "\n" + Table(rows);
    if (fits.size() > kMaxFittingRows)
      out += "... and " + std::to_string(fits.size() - kMaxFittingRows) + " more that fit\n";
  }
  if (!failed.empty()) {
    std::vector<std::vector<std::string>> rows = {
        {style.Bold("NODES"), style.Bold("REASON"), style.Bold("FOR EXAMPLE")}};
    for (const auto& [reason, nodes] : failed) {
      std::string examples;
      for (size_t i = 0; i < nodes.size() && i < kExampleNodes; ++i) {
        examples += (examples.empty() ? "" : ", ") + nodes[i]->node;
        if (!nodes[i]->evaluation.detail.empty() && i == 0)
          examples += " (" + nodes[i]->evaluation.detail + ")";
      }
      if (nodes.size() > kExampleNodes) examples += ", ...";
      rows.push_back({std::to_string(nodes.size()), style.Bad(reason), examples});
    }
    out += "\n" + Table(rows);
  }
  return out;
}

std::string ExplainRecorded(const json& record, const Style& style) {
  auto text = [](const json& j, const char* key) {
    return j.contains(key) && j[key].is_string() ? j[key].get<std::string>()
           : j.contains(key)                     ? j[key].dump()
                                                 : std::string();
  };
  std::vector<std::vector<std::string>> head;
  head.push_back({"Pod:", text(record, "pod")});
  if (record.contains("requirements"))
    head.push_back({"Requirements:", text(record, "requirements")});
  if (record.contains("gpus")) {
    const json& g = record["gpus"];
    head.push_back({"Node:", text(g, "node")});
    head.push_back({"Assigned GPUs:", OrNone(text(g, "assigned"))});
    head.push_back(
        {"Observed GPUs:", text(g, "observed").empty() ? "<not reported>" : text(g, "observed")});
    if (g.value("mismatch", false)) head.push_back({"", style.Bad("assigned and observed differ")});
  }
  std::string out = Table(head);
  for (const char* verb : {"filter", "prioritize"}) {
    if (!record.contains(verb)) continue;
    const json& c = record[verb];
    out += "\n" + style.Bold(std::string(verb == std::string("filter") ? "Filter" : "Prioritize")) +
           " at " + text(c, "time");
    if (c.contains("error")) {
      out += ": " + style.Bad(text(c, "error")) + "\n";
      continue;
    }
    out += ": " + text(c, "candidates") + " candidates, " + text(c, "passed") + " passed, " +
           text(c, "failed") + " failed, " + text(c, "unresolvable") + " unresolvable (preset " +
           text(c, "preset") + ")\n";
    std::vector<std::vector<std::string>> rows = {{style.Bold("NODE"), style.Bold("VERDICT"),
                                                   style.Bold("PRIORITY"), style.Bold("SCORE"),
                                                   style.Bold("GPUS / REASON")}};
    for (const json& n : c.value("nodes", json::array())) {
      const bool fits = text(n, "verdict") == "fits";
      rows.push_back({text(n, "node"), fits ? style.Good("fits") : style.Bad(text(n, "verdict")),
                      n.contains("priority") ? text(n, "priority") : "-",
                      n.contains("weightedScore") ? text(n, "weightedScore") : "-",
                      fits ? text(n, "placement") : text(n, "reason") + ": " + text(n, "detail")});
    }
    out += Table(rows);
    if (c.contains("nodesOmitted")) out += "... and " + text(c, "nodesOmitted") + " more nodes\n";
  }
  if (record.contains("bind")) {
    const json& b = record["bind"];
    out += "\n" + style.Bold("Bind") + " at " + text(b, "time") + " to " + text(b, "node");
    if (b.contains("error")) {
      out += ": " + style.Bad(text(b, "error")) + "\n";
    } else {
      out += ": " + text(b, "placement") + "\n";
      std::vector<std::vector<std::string>> rows = {{style.Bold("COMPONENT"), style.Bold("WEIGHT"),
                                                     style.Bold("SCORE"), style.Bold("DETAIL")}};
      for (const json& comp : b.value("components", json::array())) {
        rows.push_back(
            {text(comp, "name"), text(comp, "weight"), text(comp, "score"), text(comp, "detail")});
      }
      out += Table(rows);
    }
  }
  if (record.contains("preempt")) {
    const json& p = record["preempt"];
    out += "\n" + style.Bold("Preempt") + " at " + text(p, "time") + " (priority " +
           text(p, "priority") + ")";
    if (p.contains("error")) {
      out += ": " + style.Bad(text(p, "error")) + "\n";
    } else {
      out += ": " + text(p, "offered") + " nodes offered, " + text(p, "kept") + " kept\n";
      std::vector<std::vector<std::string>> rows = {
          {style.Bold("NODE"), style.Bold("KEPT"), style.Bold("VICTIMS / REASON")}};
      for (const json& n : p.value("nodes", json::array())) {
        const bool kept = n.value("kept", false);
        std::string victims;
        for (const json& v : n.value("victims", json::array()))
          victims += (victims.empty() ? "" : ", ") + v.get<std::string>();
        rows.push_back({text(n, "node"), kept ? style.Good("yes") : style.Bad("no"),
                        kept ? victims : text(n, "reason")});
      }
      out += Table(rows);
    }
  }
  return out;
}

}  // namespace gputopo::kubectl
