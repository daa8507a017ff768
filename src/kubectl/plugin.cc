#include "src/kubectl/plugin.h"

#include <yaml-cpp/yaml.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "policies/engine/evaluation.h"
#include "policies/requirements/pod_requirements.h"
#include "src/app/app.h"
#include "src/app/system_clock.h"
#include "src/http/debug_views.h"
#include "src/kube/kube_client.h"
#include "src/kube/kube_config.h"
#include "src/kubectl/cluster_view.h"
#include "src/kubectl/exec_credential.h"
#include "src/kubectl/gputopo_access.h"
#include "src/kubectl/render.h"
#include "src/service/scheduling_context.h"

namespace gputopo::kubectl {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

struct Flags {
  std::string kubeconfig;
  std::string context;
  std::string namespace_name;
  bool all_namespaces = false;
  std::string output;  // "", wide, json, yaml
  std::string token;   // bearer token for the API server and gputopo (overrides the kubeconfig's)
  std::string server;  // gputopo's admin listener, straight
  bool server_insecure = false;
  // Else gputopo's replicas through the API server's pods/proxy, unless no_gputopo.
  bool no_gputopo = false;
  std::string gputopo_namespace = "gputopo-system";
  std::string gputopo_selector =
      "app.kubernetes.io/name=gputopo,app.kubernetes.io/component=scheduler";
  int gputopo_port = 0;  // 0: each pod's container port named "admin"
  std::string color = "auto";
  std::string preset = "default";
  int request_timeout_s = 10;
};

std::string OneLine(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text;
}

int Fail(PluginEnvironment& env, const std::string& message) {
  env.err << "error: " << OneLine(message) << "\n";
  return 1;
}

void Warn(PluginEnvironment& env, const std::string& message) {
  env.err << "warning: " << OneLine(message) << "\n";
}

std::string Var(const PluginEnvironment& env, const std::string& name) {
  auto it = env.vars.find(name);
  return it == env.vars.end() ? "" : it->second;
}

void EmitYaml(YAML::Emitter& out, const ordered_json& j) {
  if (j.is_object()) {
    out << YAML::BeginMap;
    for (const auto& [key, value] : j.items()) {
      out << YAML::Key << key << YAML::Value;
      EmitYaml(out, value);
    }
    out << YAML::EndMap;
  } else if (j.is_array()) {
    out << YAML::BeginSeq;
    for (const auto& value : j) EmitYaml(out, value);
    out << YAML::EndSeq;
  } else if (j.is_string()) {
    out << YAML::DoubleQuoted << j.get<std::string>();
  } else if (j.is_null()) {
    out << YAML::Null;
  } else {
    out << j.dump();
  }
}

// Prints `text` (a JSON document) as -o asks: JSON as is, or YAML.
void PrintDocument(PluginEnvironment& env, const Flags& flags, const std::string& text) {
  if (flags.output == "yaml") {
    YAML::Emitter out;
    EmitYaml(out, ordered_json::parse(text));
    env.out << out.c_str() << "\n";
    return;
  }
  env.out << text;
  if (text.empty() || text.back() != '\n') env.out << "\n";
}

bool Structured(const Flags& flags) { return flags.output == "json" || flags.output == "yaml"; }

Result<kube::KubeConfig> ApiConfig(const Flags& flags, const PluginEnvironment& env) {
  std::string path = flags.kubeconfig;
  if (path.empty()) {
    const std::string list = Var(env, "KUBECONFIG");
    path = list.substr(0, list.find(':'));  // the first file of the list
  }
  if (path.empty()) {
    const std::string home = Var(env, "HOME");
    if (home.empty()) return InvalidArgument("no kubeconfig: pass --kubeconfig or set KUBECONFIG");
    path = home + "/.kube/config";
  }
  return kube::LoadKubeconfig(path, flags.context, /*allow_exec=*/true);
}

kube::ClientOptions ClientOptionsFor(const Flags& flags) {
  kube::ClientOptions options;
  options.request_timeout = std::chrono::seconds(flags.request_timeout_s);
  options.component = "kubectl-gputopo";
  return options;
}

// How to reach gputopo's admin listener: straight to --server, with the kubeconfig's token (its
// TokenReview authenticates it); else through the API server's pods/proxy (gputopo_access.h);
// null when neither is asked for.
Result<std::unique_ptr<GputopoAccess>> AccessToGputopo(const Flags& flags,
                                                       const kube::KubeConfig& api,
                                                       kube::KubeClient& api_client,
                                                       const Clock& clock) {
  if (!flags.server.empty()) {
    kube::KubeConfig config;
    config.server = flags.server;
    while (!config.server.empty() && config.server.back() == '/') config.server.pop_back();
    config.token = api.token;
    config.token_file = api.token_file;
    config.insecure_skip_tls_verify = flags.server_insecure;
    const std::string url = config.server;
    return DirectAccess(url,
                        std::make_unique<kube::KubeClient>(config, ClientOptionsFor(flags), clock));
  }
  if (flags.no_gputopo) return std::unique_ptr<GputopoAccess>();
  Result<std::string> token = kube::CurrentToken(api);
  if (!token.ok()) return token.status().WithContext("reading the kubeconfig's token");
  return ProxiedAccess(api_client, flags.gputopo_namespace, flags.gputopo_selector,
                       flags.gputopo_port, *token);
}

// The first answer that is a JSON object (parsed into `parsed`), else the first error (or the
// first answer; `parsed` is then left as it was).
const GputopoAnswer* FirstJsonAnswer(const std::vector<GputopoAnswer>& answers, json& parsed) {
  for (const GputopoAnswer& a : answers) {
    if (!a.body.ok()) continue;
    json document = json::parse(*a.body, nullptr, false);
    if (document.is_object()) {
      parsed = std::move(document);
      return &a;
    }
  }
  for (const GputopoAnswer& a : answers) {
    if (!a.body.ok()) return &a;
  }
  return answers.empty() ? nullptr : &answers.front();
}

// "<where>: <what>" for each node where gputopo's /debug/nodes differs from `snapshot`.
std::vector<std::string> Differences(const policies::ClusterSnapshot& snapshot,
                                     const json& gputopo) {
  std::vector<std::string> out;
  std::map<std::string, json> theirs;
  for (const json& node : gputopo.value("nodes", json::array())) {
    theirs[node.value("name", "")] = node;
  }
  for (const auto& node : snapshot.nodes()) {
    auto it = theirs.find(node->name());
    if (it == theirs.end()) {
      out.push_back("node " + node->name() + ": not in gputopo's cache");
      continue;
    }
    const json& t = it->second;
    auto differ = [&](const char* what, int here) {
      if (t.contains(what) && t[what].is_number_integer() && t[what].get<int>() != here) {
        out.push_back("node " + node->name() + ": " + what + " " + std::to_string(here) +
                      " here, " + std::to_string(t[what].get<int>()) + " in gputopo");
      }
    };
    differ("slotsUsed", node->used_slots());
    if (node->has_topology()) {
      differ("gpus", node->gpu_count());
      differ("slotsTotal", node->total_slots());
    }
    theirs.erase(it);
  }
  for (const auto& [name, node] : theirs) {
    out.push_back("node " + name + ": in gputopo's cache, not in the API server's list");
  }
  return out;
}

int Nodes(const Flags& flags, const std::vector<std::string>& names, ClusterView& view,
          GputopoAccess* gputopo, const Style& style, PluginEnvironment& env) {
  const auto snapshot = view.snapshot();
  std::vector<const policies::NodeState*> found;
  std::vector<std::string> missing;
  for (const std::string& name : names) {
    const policies::NodeState* node = snapshot->Find(name);
    if (node == nullptr)
      missing.push_back(name);
    else
      found.push_back(node);
  }
  if (names.empty()) {
    for (const auto& node : snapshot->nodes()) found.push_back(node.get());
    std::sort(found.begin(), found.end(),
              [](const auto* a, const auto* b) { return a->name() < b->name(); });
  }
  const std::string ns = flags.all_namespaces ? "" : flags.namespace_name;
  if (Structured(flags)) {
    if (names.empty()) {
      PrintDocument(env, flags, http::RenderNodes(*snapshot));
    } else if (found.size() == 1) {
      PrintDocument(env, flags, http::RenderNode(*found.front()));
    } else if (!found.empty()) {
      ordered_json list = ordered_json::array();
      for (const auto* node : found) list.push_back(ordered_json::parse(http::RenderNode(*node)));
      PrintDocument(env, flags, ordered_json{{"nodes", list}}.dump(2));
    }
  } else if (names.empty()) {
    if (found.empty()) {
      env.err << "No GPU nodes found.\n";
    } else {
      env.out << NodesTable(found, flags.output == "wide", style);
    }
  } else {
    for (size_t i = 0; i < found.size(); ++i) {
      if (i > 0) env.out << "\n";
      env.out << NodeDetail(*found[i], ns, style);
    }
  }
  // Compared only when every node asked for was found: a failure stays its own lines.
  if (gputopo != nullptr && !Structured(flags) && missing.empty()) {
    const std::vector<GputopoAnswer> answers = gputopo->GetAll("/debug/nodes");
    json theirs;
    const GputopoAnswer* answer = FirstJsonAnswer(answers, theirs);
    const std::string source = answer != nullptr ? answer->source : gputopo->Describe();
    if (answer != nullptr && !answer->body.ok()) {
      Warn(env, "cannot compare with gputopo's view: " + answer->body.status().message());
    } else if (!theirs.is_object()) {
      Warn(env, "cannot compare with gputopo's view: /debug/nodes is not JSON");
    } else {
      std::vector<std::string> diffs = Differences(*snapshot, theirs);
      if (!names.empty()) {
        std::erase_if(diffs, [&](const std::string& d) {
          return std::none_of(names.begin(), names.end(), [&](const std::string& n) {
            return d.rfind("node " + n + ":", 0) == 0;
          });
        });
      }
      if (diffs.empty()) {
        env.out << "\ngputopo's view (" << source << ") agrees.\n";
      } else {
        env.out << "\n" << style.Warn("gputopo's view (" + source + ") differs:") << "\n";
        for (const std::string& d : diffs) env.out << "  " << d << "\n";
      }
    }
  }
  for (const std::string& name : missing) {
    env.err << "error: node \"" << name << "\" not found (or not a GPU node)\n";
  }
  return missing.empty() ? 0 : 1;
}

int Topo(const Flags& flags, const std::string& name, ClusterView& view, const Style& style,
         PluginEnvironment& env) {
  const auto snapshot = view.snapshot();
  const policies::NodeState* node = snapshot->Find(name);
  if (node == nullptr) return Fail(env, "node \"" + name + "\" not found (or not a GPU node)");
  if (Structured(flags)) {
    PrintDocument(env, flags, http::RenderNode(*node));
  } else {
    env.out << TopoMatrix(*node, style);
  }
  return 0;
}

int Explain(const Flags& flags, std::string pod_arg, ClusterView& view, GputopoAccess* gputopo,
            const Style& style, PluginEnvironment& env) {
  if (pod_arg.rfind("pod/", 0) == 0) pod_arg = pod_arg.substr(4);
  if (pod_arg.rfind("pods/", 0) == 0) pod_arg = pod_arg.substr(5);
  std::string ns = flags.namespace_name;
  std::string name = pod_arg;
  if (const size_t slash = pod_arg.find('/'); slash != std::string::npos) {
    ns = pod_arg.substr(0, slash);
    name = pod_arg.substr(slash + 1);
  }
  if (name.empty()) return Fail(env, "explain needs a pod name");
  // Why gputopo's record is not shown; printed only once the answer computed here is ready, so
  // that a failure below stays one line.
  std::string gputopo_warning;
  if (gputopo != nullptr) {
    // Every replica is asked; the record with the latest decision wins (after a leader change
    // the former leader may hold the pod's filter and the new one its bind).
    const std::vector<GputopoAnswer> answers = gputopo->GetAll("/debug/pods/" + ns + "/" + name);
    const GputopoAnswer* best = nullptr;
    json best_record;
    std::string best_time;
    const GputopoAnswer* failure = nullptr;
    bool not_json = false;
    for (const GputopoAnswer& a : answers) {
      if (!a.body.ok()) {
        if (a.body.status().code() != StatusCode::kNotFound && failure == nullptr) failure = &a;
        continue;
      }
      json record = json::parse(*a.body, nullptr, false);
      if (!record.is_object()) {
        not_json = true;
        continue;
      }
      const std::string time = LatestRecordTime(record);
      if (best == nullptr || time > best_time) {
        best = &a;
        best_time = time;
        best_record = std::move(record);
      }
    }
    if (best != nullptr) {
      if (Structured(flags)) {
        PrintDocument(env, flags, *best->body);
      } else {
        env.out << ExplainRecorded(best_record, style);
        env.out << "\nRecorded by gputopo: " << best->source << "\n";
      }
      return 0;
    }
    if (failure != nullptr) {
      gputopo_warning = "cannot reach gputopo (" + failure->source +
                        "): " + failure->body.status().message() + "; computing here";
    } else if (not_json) {
      gputopo_warning = "gputopo's /debug/pods answer is not JSON; computing here";
    } else {
      gputopo_warning =
          "gputopo has no recent decision for pod " + ns + "/" + name + "; computing here";
    }
  }
  std::optional<PodInfo> pod = view.FindPod(ns, name);
  if (!pod) return Fail(env, "pods \"" + name + "\" not found in namespace " + ns);
  Result<policies::PodRequirements> req = policies::RequirementsOf(*pod);
  if (!req.ok()) return Fail(env, "pod " + pod->Key() + ": " + req.status().message());
  Result<policies::PresetCatalog> presets = app::LoadPresets("");
  if (!presets.ok()) return Fail(env, presets.status().message());
  const std::string preset_name = req->policy.empty() ? flags.preset : req->policy;
  std::shared_ptr<const policies::Preset> preset = presets->Find(preset_name);
  if (preset == nullptr) return Fail(env, "unknown policy preset '" + preset_name + "'");

  const auto snapshot = view.snapshot();
  std::vector<NodeVerdict> verdicts;
  std::vector<policies::ComponentResult> components;
  if (!pod->node_name.empty()) {
    if (const policies::NodeState* node = snapshot->Find(pod->node_name);
        node != nullptr && node->has_topology()) {
      policies::GpuMask gpus = 0;
      for (int g = 0; g < node->gpu_count(); ++g) {
        for (const policies::Occupant& o : node->gpu(g).occupants) {
          if (o.pod_uid == pod->uid) gpus |= topology::Bit(g);
        }
      }
      if (gpus != 0) {
        components = policies::ExplainPlacement(*req, node->Without({pod->uid}, 0), *preset, gpus);
      }
    }
  } else {
    for (const auto& node : snapshot->nodes()) {
      NodeVerdict v{node->name(), policies::EvaluateNode(*req, *node, *preset), ""};
      if (v.evaluation.fits()) v.placement = service::DescribePlacement(*node, v.evaluation.gpus);
      verdicts.push_back(std::move(v));
    }
  }
  const std::string requirements = service::DescribeRequirements(*req);
  if (!gputopo_warning.empty()) Warn(env, gputopo_warning);
  if (Structured(flags)) {
    ordered_json j;
    j["pod"] = pod->Key();
    j["requirements"] = requirements;
    j["preset"] = preset_name;
    j["computedBy"] = "kubectl-gputopo";
    if (!pod->node_name.empty()) j["node"] = pod->node_name;
    ordered_json nodes = ordered_json::array();
    for (const NodeVerdict& v : verdicts) {
      ordered_json n = {{"node", v.node}, {"verdict", policies::VerdictName(v.evaluation.verdict)}};
      if (v.evaluation.fits()) {
        n["weightedScore"] = v.evaluation.weighted_score;
        n["placement"] = v.placement;
      } else {
        n["reason"] = v.evaluation.reason;
        n["detail"] = v.evaluation.detail;
      }
      nodes.push_back(std::move(n));
    }
    if (pod->node_name.empty()) j["nodes"] = nodes;
    ordered_json comps = ordered_json::array();
    for (const auto& c : components) {
      comps.push_back(
          {{"name", c.name}, {"weight", c.weight}, {"score", c.score}, {"detail", c.detail}});
    }
    if (!components.empty()) j["components"] = comps;
    PrintDocument(env, flags, j.dump(2));
    return 0;
  }
  env.out << ExplainComputed(*pod, requirements, preset_name, verdicts, components, style);
  return 0;
}

}  // namespace

int RunPlugin(const std::vector<std::string>& args, PluginEnvironment& env) {
  Flags flags;
  CLI::App cli{"kubectl gputopo: GPUs, NVLink islands and gputopo's decisions, per node and pod",
               "kubectl-gputopo"};
  cli.require_subcommand(1);
  cli.add_option("--kubeconfig", flags.kubeconfig,
                 "kubeconfig file (default: $KUBECONFIG, "
                 "else ~/.kube/config)");
  cli.add_option("--context", flags.context, "kubeconfig context (default: the current one)");
  cli.add_option("-n,--namespace", flags.namespace_name, "namespace (default: the context's)");
  cli.add_flag("-A,--all-namespaces", flags.all_namespaces, "every namespace");
  cli.add_option("-o,--output", flags.output, "output format: wide, json or yaml")
      ->check(CLI::IsMember({"", "wide", "json", "yaml"}));
  cli.add_option("--token", flags.token,
                 "bearer token for the API server and gputopo (default: the kubeconfig's)");
  cli.add_option("--server", flags.server,
                 "gputopo's admin listener, reached straight (e.g. http://127.0.0.1:8889 after "
                 "kubectl port-forward -n gputopo-system deploy/gputopo-scheduler 8889); "
                 "default: gputopo's pods through the API server's pods/proxy");
  cli.add_option("--gputopo-namespace", flags.gputopo_namespace,
                 "namespace of gputopo's scheduler pods, reached through the API server")
      ->capture_default_str()
      ->check([](const std::string& ns) { return ns.empty() ? "must not be empty" : ""; });
  cli.add_flag("--no-gputopo", flags.no_gputopo,
               "do not reach gputopo: show only what is computed from the API server");
  cli.add_option("--gputopo-selector", flags.gputopo_selector,
                 "labels of gputopo's scheduler pods (key=value,...)")
      ->capture_default_str();
  cli.add_option("--gputopo-port", flags.gputopo_port,
                 "gputopo's admin port on those pods (default: their container port named admin)")
      ->check(CLI::Range(0, 65535));
  cli.add_flag("--server-insecure-skip-tls-verify", flags.server_insecure,
               "do not verify --server's certificate");
  cli.add_option("--color", flags.color, "auto, always or never")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  cli.add_option("--preset", flags.preset,
                 "preset for explain when computed here (default: "
                 "default; a pod's gputopo.io/policy wins)");
  cli.add_option("--request-timeout", flags.request_timeout_s, "seconds per API call")
      ->check(CLI::Range(1, 3600));
  std::vector<std::string> node_names;
  CLI::App* nodes = cli.add_subcommand("nodes", "GPU nodes: one row each, or one node's GPUs");
  nodes->add_option("NAME", node_names, "nodes to show GPU by GPU");
  std::string topo_node;
  CLI::App* topo = cli.add_subcommand("topo", "a node's link matrix (nvidia-smi topo -m layout)");
  topo->add_option("NODE", topo_node, "the node")->required();
  std::string pod_name;
  CLI::App* explain =
      cli.add_subcommand("explain", "why a pod is where it is, or why it is pending");
  explain->add_option("POD", pod_name, "the pod (NAME, NAMESPACE/NAME or pod/NAME)")->required();
  for (CLI::App* sub : {nodes, topo, explain}) sub->fallthrough();

  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    cli.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    env.out << cli.help();
    return 0;
  } catch (const CLI::CallForAllHelp&) {
    env.out << cli.help("", CLI::AppFormatMode::All);
    return 0;
  } catch (const CLI::ParseError& e) {
    env.err << "error: " << OneLine(e.what()) << "\nSee 'kubectl gputopo --help'.\n";
    return 1;
  }

  Style style;
  style.color = flags.color == "always" ||
                (flags.color == "auto" && env.terminal && Var(env, "NO_COLOR").empty());
  Result<kube::KubeConfig> loaded = ApiConfig(flags, env);
  if (!loaded.ok()) return Fail(env, loaded.status().message());
  kube::KubeConfig config = *loaded;
  if (!flags.token.empty()) {
    config.token = flags.token;
    config.token_file.clear();
  } else if (Status ran = RunExecCredentialPlugin(config); !ran.ok()) {
    return Fail(env, ran.message());
  }
  if (flags.namespace_name.empty())
    flags.namespace_name = config.namespace_name.empty() ? "default" : config.namespace_name;

  app::SystemClock clock;
  kube::KubeClient client(config, ClientOptionsFor(flags), clock);
  Result<std::unique_ptr<GputopoAccess>> gputopo = AccessToGputopo(flags, config, client, clock);
  if (!gputopo.ok()) return Fail(env, gputopo.status().message());
  Result<std::unique_ptr<ClusterView>> view = ClusterView::Create();
  if (!view.ok()) return Fail(env, view.status().message());
  if (Status s = (*view)->Load(client); !s.ok()) {
    return Fail(env, s.message() + " (API server " + config.server + ")");
  }
  if (nodes->parsed()) return Nodes(flags, node_names, **view, gputopo->get(), style, env);
  if (topo->parsed()) return Topo(flags, topo_node, **view, style, env);
  return Explain(flags, pod_name, **view, gputopo->get(), style, env);
}

}  // namespace gputopo::kubectl
