#include "src/http/debug_views.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <map>
#include <nlohmann/json.hpp>

#include "cluster/cluster_state.h"
#include "gputopo/well_known.h"
#include "src/codec/json_text.h"
#include "src/service/scheduling_context.h"
#include "topology/link_type.h"

namespace gputopo::http {
namespace {

using nlohmann::ordered_json;

std::string Dump(const ordered_json& j) {
  return j.dump(2, ' ', false, ordered_json::error_handler_t::replace) + "\n";
}

double Round2(double v) { return std::round(v * 100.0) / 100.0; }

ordered_json NodeSummary(const policies::NodeState& node) {
  ordered_json j;
  j["name"] = node.name();
  if (!node.has_topology()) {
    j["error"] = node.topology_error();
    j["slotsUsed"] = node.used_slots();
    return j;
  }
  const auto& t = node.topology();
  j["topologySource"] = NameOf(kTopologySourceNames, t.source);
  j["topologyKnown"] = node.shape().links_known();
  j["gpus"] = node.gpu_count();
  j["replicasPerGpu"] = node.replicas();
  j["slotsTotal"] = node.total_slots();
  j["slotsUsed"] = node.used_slots();
  j["slotsFree"] = node.free_slots();
  j["emptyGpus"] = topology::Count(node.empty_gpus());
  // islandCount agrees with the `islands` the node view lists, where a GPU without NVLink is an
  // island of its own; nvlinkIslands counts those whose GPUs NVLink joins (0 on a PCIe node).
  const topology::TopologyShape& shape = node.shape();
  int nvlink_islands = 0;
  for (int i = 0; i < shape.island_count(); ++i) {
    if (topology::Count(shape.island(i)) >= 2) ++nvlink_islands;
  }
  j["islandCount"] = shape.island_count();
  j["nvlinkIslands"] = nvlink_islands;
  const auto& gpus = *t.gpus;
  if (!gpus.empty() && !gpus.front().model.empty() &&
      std::all_of(gpus.begin(), gpus.end(),
                  [&](const GpuInfo& g) { return g.model == gpus.front().model; })) {
    j["model"] = gpus.front().model;
  }
  // Per GPU: slots used and the groups of its pods (the overview's cells).
  ordered_json used = ordered_json::array();
  ordered_json groups = ordered_json::array();
  for (int g = 0; g < node.gpu_count(); ++g) {
    used.push_back(node.gpu(g).slots_used);
    std::vector<std::string> names;
    for (const policies::Occupant& o : node.gpu(g).occupants) {
      if (std::find(names.begin(), names.end(), o.group) == names.end()) names.push_back(o.group);
    }
    groups.push_back(names);
  }
  j["gpuSlotsUsed"] = used;
  j["gpuGroups"] = groups;
  if (node.unhealthy_gpus() != 0) j["unhealthyGpus"] = topology::ToIndices(node.unhealthy_gpus());
  // CPU and memory besides the GPUs (every bound pod's requests), where the node says them.
  const policies::HostResources& host = node.host();
  if (host.cpu_allocatable_milli > 0) {
    j["cpuMilli"] = {{"allocatable", host.cpu_allocatable_milli},
                     {"requested", host.cpu_requested_milli}};
  }
  if (host.memory_allocatable_bytes > 0) {
    j["memoryBytes"] = {{"allocatable", host.memory_allocatable_bytes},
                        {"requested", host.memory_requested_bytes}};
  }
  return j;
}

ordered_json ComponentsJson(const std::vector<policies::ComponentResult>& components) {
  ordered_json list = ordered_json::array();
  for (const auto& c : components) {
    list.push_back(
        {{"name", c.name}, {"weight", c.weight}, {"score", Round2(c.score)}, {"detail", c.detail}});
  }
  return list;
}

ordered_json EvaluationJson(const service::CycleRecord& record,
                            const service::CycleRecord::NodeRef& ref) {
  const policies::NodeEvaluation& e = record.EvaluationOf(ref);
  ordered_json j;
  j["node"] = record.NodeName(ref);
  j["verdict"] = policies::VerdictName(e.verdict);
  if (!e.fits()) {
    j["reason"] = e.reason;
    j["detail"] = e.detail;
    return j;
  }
  if (!record.priorities.empty()) {
    j["priority"] = record.priorities[static_cast<size_t>(&ref - record.nodes.data())];
  }
  j["weightedScore"] = Round2(e.weighted_score);
  if ((ref.node & service::CycleRecord::kUnknownNode) == 0) {
    const policies::NodeState& node = record.StateOf(ref);
    ordered_json gpus = ordered_json::array();
    for (int g : topology::ToIndices(e.gpus)) gpus.push_back(node.GpuLabel(g));
    j["gpus"] = gpus;
    j["placement"] = service::DescribePlacement(node, e.gpus);
    if (record.pod && record.preset_used) {
      j["components"] = ComponentsJson(
          policies::ExplainPlacement(*record.pod, node, *record.preset_used, e.gpus));
    }
  }
  if (e.heuristic) j["search"] = "heuristic (" + std::to_string(e.candidates) + " candidate sets)";
  if (e.locality_missed) j["localityMissed"] = true;  // no eligible set here meets the target
  return j;
}

ordered_json CycleJson(const service::CycleRecord& record, size_t max_nodes) {
  ordered_json j;
  j["time"] = codec::FormatRfc3339(record.time, 6);
  j["tookMicros"] = record.duration.count();
  if (!record.error.empty()) {
    j["error"] = record.error;
    return j;
  }
  j["preset"] = record.preset;
  if (!record.priorities.empty()) j["normalization"] = record.normalization;
  j["candidates"] = record.passed + record.failed + record.unresolvable;
  j["passed"] = record.passed;
  j["failed"] = record.failed;
  j["unresolvable"] = record.unresolvable;
  j["evaluated"] = record.evaluated;
  if (record.from_filter) j["evaluationsFrom"] = "filter";
  if (record.GpuLessFilter()) {
    j["note"] = "pod requests no GPU: every candidate passes; its prioritize scores them";
  }
  if (!record.decided_node.empty()) {
    j["decided"] = record.decided_node;
    j["note"] = "--filter-decides: the reply passed only the best of the " +
                std::to_string(record.passed) +
                " nodes that fit, so kube-scheduler binds there without scoring";
  }
  std::vector<const service::CycleRecord::NodeRef*> failed;
  std::vector<const service::CycleRecord::NodeRef*> passed;
  for (const auto& ref : record.nodes) {
    (record.EvaluationOf(ref).fits() ? passed : failed).push_back(&ref);
  }
  if (!record.failure_reasons.empty()) j["failureReasons"] = record.failure_reasons;
  // Best scores first; ties by node name, as a reader expects.
  std::stable_sort(passed.begin(), passed.end(), [&](const auto* a, const auto* b) {
    const auto& ea = record.EvaluationOf(*a);
    const auto& eb = record.EvaluationOf(*b);
    if (ea.weighted_score != eb.weighted_score) return ea.weighted_score > eb.weighted_score;
    return record.NodeName(*a) < record.NodeName(*b);
  });
  ordered_json nodes = ordered_json::array();
  for (const auto* ref : passed) {
    if (nodes.size() >= max_nodes) break;
    nodes.push_back(EvaluationJson(record, *ref));
  }
  for (const auto* ref : failed) {
    if (nodes.size() >= max_nodes) break;
    nodes.push_back(EvaluationJson(record, *ref));
  }
  j["nodes"] = nodes;
  const size_t candidates = record.passed + record.failed + record.unresolvable;
  if (candidates > nodes.size()) j["nodesOmitted"] = candidates - nodes.size();
  return j;
}

ordered_json BindJson(const service::BindRecord& record) {
  ordered_json j;
  j["time"] = codec::FormatRfc3339(record.time, 6);
  j["tookMicros"] = record.duration.count();
  j["node"] = record.node;
  if (!record.error.empty()) {
    j["error"] = record.error;
    return j;
  }
  j["gpus"] = record.gpus;
  j["placement"] = record.placement;
  j["weightedScore"] = Round2(record.weighted_score);
  j["components"] = ComponentsJson(record.components);
  return j;
}

ordered_json PreemptJson(const service::PreemptRecord& record) {
  ordered_json j;
  j["time"] = codec::FormatRfc3339(record.time, 6);
  j["tookMicros"] = record.duration.count();
  j["priority"] = record.priority;
  j["victimsSentAs"] = record.full_pods ? "pods" : "uids";
  if (!record.requirements.empty()) j["requirements"] = record.requirements;
  if (!record.preset.empty()) j["preset"] = record.preset;
  if (!record.error.empty()) j["error"] = record.error;
  j["offered"] = record.nodes.size();
  j["kept"] = record.kept;
  ordered_json nodes = ordered_json::array();
  for (const service::PreemptRecord::Node& node : record.nodes) {
    const policies::VictimChoice& c = node.choice;
    ordered_json n;
    n["node"] = node.name;
    n["proposedVictims"] = node.proposed.size();
    n["proposedPdbViolations"] = node.proposed_pdb_violations;
    n["kept"] = c.possible;
    if (!c.possible) {
      n["reason"] = c.reason;
    } else {
      n["asProposed"] = c.as_proposed;
      n["victims"] = node.victim_keys.empty() ? c.victims : node.victim_keys;
      n["victimUids"] = c.victims;
      if (c.pdb_counted) {
        // Counted from the watched PodDisruptionBudgets that count this node's pods.
        n["pdbViolations"] = c.pdb_violations;
        n["disruptionBudgets"] = node.budgets;
      } else {
        // Bounded from the scheduler's count: gputopo has not synced the budgets.
        n["pdbViolationsAtMost"] = c.pdb_violations;
      }
      n["highestVictimPriority"] = c.max_priority;
      if (c.added > 0) n["added"] = c.added;
      if (c.spared > 0) n["spared"] = c.spared;
      if (!node.placement.empty()) n["placement"] = node.placement;
    }
    if (!c.detail.empty()) n["detail"] = c.detail;
    if (c.evaluations > 0) n["victimSetsTried"] = c.evaluations;
    nodes.push_back(std::move(n));
  }
  j["nodes"] = nodes;
  return j;
}

}  // namespace

std::string RenderNodes(const policies::ClusterSnapshot& snapshot, size_t offset, size_t limit) {
  ordered_json list = ordered_json::array();
  const auto& nodes = snapshot.nodes();
  for (size_t i = offset; i < nodes.size() && i - offset < limit; ++i) {
    list.push_back(NodeSummary(*nodes[i]));
  }
  return Dump({{"generation", snapshot.generation()},
               {"total", nodes.size()},
               {"offset", offset},
               {"nodes", list}});
}

std::string RenderNode(const policies::NodeState& node,
                       const std::unordered_set<std::string>& reserved_pods) {
  ordered_json j = NodeSummary(node);
  if (!node.has_topology()) return Dump(j);
  const auto& t = node.topology();
  const topology::TopologyShape& shape = node.shape();
  j["topologyDetail"] = t.source_detail;
  if (!shape.links_known()) j["note"] = "topology unknown: links between GPUs are not known";
  ordered_json gpus = ordered_json::array();
  for (int g = 0; g < node.gpu_count(); ++g) {
    const GpuInfo& info = (*t.gpus)[static_cast<size_t>(g)];
    const policies::GpuOccupancy& use = node.gpu(g);
    ordered_json gpu;
    gpu["index"] = g;
    if (!info.uuid.empty()) gpu["uuid"] = info.uuid;
    if (!info.model.empty()) gpu["model"] = info.model;
    if (info.memory_mib > 0) gpu["memoryMiB"] = info.memory_mib;
    if (!info.pci_bus_id.empty()) gpu["pciBusId"] = info.pci_bus_id;
    if (!info.healthy) {
      gpu["healthy"] = false;  // nothing is placed on it
      gpu["healthReason"] = info.health_reason;
    }
    gpu["numaNode"] = shape.numa_of(g);
    gpu["island"] = shape.island_of(g);
    gpu["slotsUsed"] = use.slots_used;
    gpu["slotsFree"] = node.gpu_free_slots(g);
    gpu["milliUsed"] = use.milli_used;
    gpu["milliFree"] = node.gpu_free_milli(g);
    if (use.exclusive) gpu["exclusive"] = true;
    ordered_json occupants = ordered_json::array();
    for (const policies::Occupant& o : use.occupants) {
      ordered_json occ = {{"pod", o.pod_key}, {"group", o.group}, {"milli", o.milli}};
      if (o.exclusive) occ["exclusive"] = true;
      if (reserved_pods.contains(o.pod_uid)) occ["reserved"] = true;
      if (o.nominated) occ["nominated"] = true;
      if (o.observed) occ["observed"] = true;  // seen on this GPU by the node agent
      if (!o.recorded.empty()) {
        occ["mismatch"] = true;  // gputopo chose other GPUs
        occ["assignedGpus"] = o.recorded;
      }
      occupants.push_back(std::move(occ));
    }
    gpu["occupants"] = occupants;
    gpus.push_back(std::move(gpu));
  }
  j["gpuList"] = gpus;
  ordered_json islands = ordered_json::array();
  for (int i = 0; i < shape.island_count(); ++i)
    islands.push_back(topology::ToIndices(shape.island(i)));
  j["islands"] = islands;
  ordered_json numa = ordered_json::object();
  for (int id : shape.numa_ids())
    numa[std::to_string(id)] = topology::ToIndices(shape.numa_gpus(id));
  j["numaNodes"] = numa;
  ordered_json links = ordered_json::array();
  for (int a = 0; a < node.gpu_count(); ++a) {
    ordered_json row = ordered_json::array();
    for (int b = 0; b < node.gpu_count(); ++b) {
      row.push_back(a == b ? "X" : topology::FormatLink(shape.link(a, b)));
    }
    links.push_back(std::move(row));
  }
  j["links"] = links;
  if (!node.unplaced().empty()) {
    ordered_json unplaced = ordered_json::array();
    for (const auto& u : node.unplaced()) {
      unplaced.push_back({{"pod", u.pod_key}, {"slots", u.slots}, {"reason", u.reason}});
    }
    j["podsOnUnknownGpus"] = unplaced;
  }
  return Dump(j);
}

std::string RenderDecisions(const std::vector<service::DecisionRecord>& records) {
  ordered_json list = ordered_json::array();
  for (const service::DecisionRecord& record : records) {
    ordered_json j;
    if (const auto* cycle = std::get_if<std::shared_ptr<const service::CycleRecord>>(&record)) {
      const service::CycleRecord& c = **cycle;
      j["time"] = codec::FormatRfc3339(c.time, 6);
      j["verb"] = service::VerbName(c.verb);
      j["pod"] = c.pod_key;
      j["tookMicros"] = c.duration.count();
      if (!c.error.empty()) {
        j["error"] = c.error;
      } else {
        j["candidates"] = c.passed + c.failed + c.unresolvable;
        j["passed"] = c.passed;
        j["failed"] = c.failed + c.unresolvable;
      }
    } else if (const auto* preempt =
                   std::get_if<std::shared_ptr<const service::PreemptRecord>>(&record)) {
      const service::PreemptRecord& p = **preempt;
      j["time"] = codec::FormatRfc3339(p.time, 6);
      j["verb"] = "preempt";
      j["pod"] = p.pod_key;
      j["tookMicros"] = p.duration.count();
      if (!p.error.empty()) {
        j["error"] = p.error;
      } else {
        j["offered"] = p.nodes.size();
        j["kept"] = p.kept;
      }
    } else {
      const service::BindRecord& b = *std::get<std::shared_ptr<const service::BindRecord>>(record);
      j["time"] = codec::FormatRfc3339(b.time, 6);
      j["verb"] = "bind";
      j["pod"] = b.pod_key;
      j["tookMicros"] = b.duration.count();
      j["node"] = b.node;
      if (b.error.empty()) {
        j["gpus"] = b.gpus;
        j["placement"] = b.placement;
      } else {
        j["error"] = b.error;
      }
    }
    list.push_back(std::move(j));
  }
  return Dump({{"decisions", list}});
}

std::string RenderPod(const std::string& pod_key, const service::PodHistory& history,
                      size_t max_nodes, const PodInfo* current) {
  ordered_json j;
  j["pod"] = pod_key;
  const service::CycleRecord* any =
      history.prioritize ? history.prioritize.get() : history.filter.get();
  if (any != nullptr) {
    j["uid"] = any->pod_uid;
    if (!any->requirements.empty()) j["requirements"] = any->requirements;
  }
  if (history.filter) j["filter"] = CycleJson(*history.filter, max_nodes);
  if (history.prioritize) j["prioritize"] = CycleJson(*history.prioritize, max_nodes);
  if (history.bind) j["bind"] = BindJson(*history.bind);
  if (history.preempt) {
    if (any == nullptr) j["uid"] = history.preempt->pod_uid;
    j["preempt"] = PreemptJson(*history.preempt);
  }
  if (current != nullptr && !current->node_name.empty()) {
    const auto assigned = FindAnnotation(current->annotations, kAnnotationAssignedGpus);
    const auto observed = FindAnnotation(current->annotations, kAnnotationObservedGpus);
    ordered_json gpus;
    gpus["node"] = current->node_name;
    gpus["assigned"] = assigned ? std::string(*assigned) : std::string();
    gpus["observed"] = observed ? std::string(*observed) : std::string();
    gpus["mismatch"] = assigned && observed &&
                       cluster::GpusMismatch(cluster::SplitAssignedGpus(*assigned),
                                             cluster::SplitAssignedGpus(*observed));
    j["gpus"] = gpus;
  }
  return Dump(j);
}

std::string RenderIndex(const cluster::ClusterCounts& counts, const std::string& default_preset,
                        const std::vector<std::string>& presets,
                        const policies::ObservedWorkload* workload, uint64_t observed) {
  ordered_json j;
  j["nodes"] = counts.nodes;
  j["gpuPods"] = counts.pods;
  j["placedPods"] = counts.placed_pods;
  j["bindsInFlight"] = counts.reservations;
  j["nominatedClaims"] = counts.claims;
  j["defaultPreset"] = default_preset;
  j["presets"] = presets;
  j["hostPods"] = counts.host_pods;
  // The learned pod mix fragmentation measures against (presets that pin no workload).
  ordered_json mix = ordered_json::array();
  if (workload != nullptr) {
    for (const policies::WorkloadClass& c : workload->classes) {
      mix.push_back({{"gpus", c.gpus},
                     {"milli", c.milli},
                     {"cpuMilli", c.cpu_milli},
                     {"memoryBytes", c.memory_bytes},
                     {"weight", std::round(c.weight * 10000.0) / 10000.0}});
    }
  }
  j["learnedWorkload"] = {{"version", workload == nullptr ? 0 : workload->version},
                          {"podsSeen", observed},
                          {"classes", mix}};
  j["endpoints"] = {"/debug/decisions", "/debug/pods/<namespace>/<name>", "/debug/nodes",
                    "/debug/nodes/<name>", "/debug/snapshot"};
  return Dump(j);
}

}  // namespace gputopo::http
