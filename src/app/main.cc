// gputopo: a topology-aware GPU scheduler extender for kube-scheduler.
//
//   gputopo serve [--kubeconfig FILE]                  serve a live cluster (in-cluster by default)
//   gputopo serve --listen HOST:PORT --snapshot FILE   serve a cluster loaded from a List
//   gputopo demo                                       serve the embedded demo cluster and
//                                                      schedule its pending pods through HTTP
//   gputopo topology import < topo.txt                 nvidia-smi topo -m -> topology document
//   gputopo topology profiles                          list the shipped machine profiles
//   gputopo agent discover                             print this node's topology document
//   gputopo agent run --node-name NAME                 the node agent (observe or enforce mode)
//
// main is the only place that reads flags, installs signal handling and configures logging.
#include <curl/curl.h>
#include <malloc.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <cctype>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <thread>

#include "src/agent/agent_server.h"
#include "src/agent/enforce_mode.h"
#include "src/agent/topology_discovery.h"
#include "src/app/allocator_tuning.h"
#include "src/app/app.h"
#include "src/app/cli_checks.h"
#include "src/app/demo.h"
#include "src/app/system_clock.h"
#include "src/codec/topology_document.h"
#include "src/kube/kube_config.h"
#include "src/observability/json_log.h"
#include "topology/nvidia_smi_parser.h"

namespace gputopo::app {
namespace {

constexpr size_t kMaxTopologyInput = 16u << 20;

// SIGINT and SIGTERM, blocked in every thread: Main blocks them before anything starts a thread
// (the App's constructors do), so that only the signal thread ever sees them.
sigset_t StopSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  return signals;
}

// Stops `app` gracefully when SIGINT or SIGTERM arrives (they must already be blocked).
std::thread StopOnSignal(App& app) {
  return std::thread([&app] {
    const sigset_t signals = StopSignals();
    int received = 0;
    sigwait(&signals, &received);
    spdlog::info(
        "{} received: shutting down (no new connections, /readyz 503, requests in "
        "flight finish)",
        received == SIGTERM ? "SIGTERM" : "SIGINT");
    app.RequestStop();
  });
}

int RunServer(const AppOptions& options, bool demo, bool exit_after_demo) {
  SystemClock clock;
  Result<std::unique_ptr<App>> created = App::Create(options, clock);
  if (!created.ok()) {
    spdlog::error("cannot start: {}", created.status().ToString());
    return 2;
  }
  App& app = **created;
  std::thread signal_thread = StopOnSignal(app);
  signal_thread.detach();
  if (Status s = app.Start(); !s.ok()) {
    spdlog::error("cannot start: {}", s.ToString());
    return 2;
  }
  const std::string base = (options.server.http.tls_cert_file.empty() ? "http://" : "https://") +
                           options.server.http.host + ":" + std::to_string(app.port());
  if (app.admin_port() >= 0) {
    spdlog::info("/metrics and /debug on {}:{} ({})", options.server.admin_host, app.admin_port(),
                 options.kube && options.admin_auth
                     ? "bearer token checked by TokenReview and SubjectAccessReview"
                     : "no authentication");
  }
  if (app.live()) {
    // The lists have not arrived yet: /readyz says when they have.
    spdlog::info("gputopo serving on {} (listing nodes and pods; default preset {}{})", base,
                 options.default_preset, options.filter_decides ? "; filter decides" : "");
  } else {
    spdlog::info("gputopo serving on {} ({} nodes, default preset {}{})", base,
                 app.state().Counts().nodes, options.default_preset,
                 options.filter_decides ? "; filter decides" : "");
  }
  if (demo) {
    std::vector<std::string> names;
    for (const NodeInfo& node : app.cluster().Nodes()) names.push_back(node.name);
    std::cout << "\n== gputopo demo: scheduling " << app.cluster().PendingPodObjects().size()
              << " pending pods on " << names.size()
              << " nodes through POST /filter, /prioritize, /bind ==\n\n";
    Result<std::vector<DemoPlacement>> replay = ReplayPods(
        options.server.http.host, app.port(), app.cluster().PendingPodObjects(), names, std::cout);
    if (!replay.ok()) {
      spdlog::error("demo failed: {}", replay.status().ToString());
      app.Stop();
      return 1;
    }
    std::cout << "\nWhat gputopo sees and why it decided:\n"
              << "    open " << base << "/ui in a browser (every node's GPUs, live)\n"
              << "    curl " << base << "/debug/decisions\n"
              << "    curl " << base << "/debug/pods/research/train-4gpu-0-c8w2x\n"
              << "    curl " << base << "/debug/nodes/dgx1-a\n"
              << "    curl " << base << "/debug/snapshot\n";
    if (exit_after_demo) {
      app.Stop();
      return 0;
    }
    std::cout << "\ngputopo keeps serving on " << base << " - Ctrl-C to stop.\n" << std::flush;
  }
  app.Wait();
  app.Stop();  // the watch, the decision recorder and the Event queue
  spdlog::info("gputopo stopped");
  spdlog::default_logger()->flush();
  return 0;
}

int RunTopologyImport(int replicas, bool compact) {
  std::string input;
  char buffer[65536];
  while (std::cin.read(buffer, sizeof(buffer)) || std::cin.gcount() > 0) {
    input.append(buffer, static_cast<size_t>(std::cin.gcount()));
    if (input.size() > kMaxTopologyInput) {
      std::cerr << "gputopo: input larger than " << kMaxTopologyInput << " bytes\n";
      return 2;
    }
  }
  Result<topology::NvidiaSmiTopology> parsed = topology::ParseNvidiaSmiTopo(input);
  if (!parsed.ok()) {
    std::cerr << "gputopo: " << parsed.status().message() << "\n";
    return 1;
  }
  for (const std::string& d : parsed->diagnostics) std::cerr << "gputopo: note: " << d << "\n";
  if (replicas > 0) parsed->machine.set_replicas_per_gpu(replicas);
  codec::TopologyFormatOptions format;
  format.pretty = !compact;
  format.comments = parsed->diagnostics;
  std::cout << codec::FormatTopologyDocument(parsed->machine, format) << "\n";
  return 0;
}

int RunAgentDiscover(const agent::DiscoveryOptions& options) {
  agent::SubprocessRunner runner;
  Result<agent::Discovery> found = agent::DiscoverTopology(options, runner);
  if (!found.ok()) {
    std::cerr << "gputopo: agent discover: " << found.status().message() << "\n";
    return 1;
  }
  for (const std::string& note : found->notes) std::cerr << "gputopo: note: " << note << "\n";
  codec::TopologyFormatOptions format;
  format.comments = found->notes;
  std::cout << codec::FormatTopologyDocument(found->machine, format) << "\n";
  return 0;
}

int RunAgent(agent::AgentOptions options, const std::string& mode, const std::string& listen,
             const std::string& kubeconfig, agent::EnforceOptions enforce) {
  if (mode != "observe" && mode != "enforce") {
    std::cerr << "gputopo: agent run: --mode must be observe or enforce, not " << mode << "\n";
    return 2;
  }
  if (mode != "enforce" && (enforce.replicas != 0 || !enforce.time_slicing_config.empty())) {
    std::cerr << "gputopo: agent run: --replicas and --time-slicing-config need --mode enforce\n";
    return 2;
  }
  const HostPort address = SplitListen(listen);
  options.listen_host = address.host;
  options.listen_port = address.port;
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  Result<kube::KubeConfig> config = kubeconfig.empty()
                                        ? kube::InClusterConfig(host ? host : "", port ? port : "")
                                        : kube::LoadKubeconfig(kubeconfig);
  if (!config.ok()) {
    std::cerr << "gputopo: " << config.status().message() << "\n";
    return 2;
  }
  SystemClock clock;
  if (mode == "enforce") options.enforce = std::move(enforce);
  Result<std::unique_ptr<agent::AgentServer>> created =
      agent::AgentServer::Create(std::move(options), std::move(config).value(), clock);
  if (!created.ok()) {
    std::cerr << "gputopo: agent run: " << created.status().message() << "\n";
    return 2;
  }
  agent::AgentServer& server = **created;
  std::thread signal_thread([&server] {
    const sigset_t signals = StopSignals();
    int received = 0;
    sigwait(&signals, &received);
    spdlog::info("{} received: stopping the agent", received == SIGTERM ? "SIGTERM" : "SIGINT");
    server.RequestStop();
  });
  signal_thread.detach();
  if (Status s = server.Start(); !s.ok()) {
    spdlog::error("agent: cannot start: {}", s.ToString());
    return 2;
  }
  server.Wait();
  spdlog::info("agent stopped");
  spdlog::default_logger()->flush();
  return 0;
}

int RunListProfiles() {
  topology::ShapeInterner interner;
  topology::ProfileCatalog catalog(interner);
  if (Status s = LoadProfiles("", catalog); !s.ok()) {
    std::cerr << "gputopo: " << s.ToString() << "\n";
    return 2;
  }
  for (const std::string& name : catalog.Names()) {
    const topology::Profile* p = catalog.Find(name);
    std::cout << name << "\t" << p->machine.gpu_count() << " GPUs, " << p->shape->island_count()
              << " NVLink island(s), " << p->shape->numa_ids().size() << " NUMA node(s)\t"
              << p->description << "\n";
  }
  return 0;
}

std::string ReadFileOrEmpty(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

int Main(int argc, char** argv) {
  {
    const sigset_t signals = StopSignals();
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // before any thread exists
  }
  TuneAllocator();
  curl_global_init(
      CURL_GLOBAL_DEFAULT);  // before any thread starts; the Kubernetes client needs it
  CLI::App cli{"gputopo: places GPU pods by the real hardware topology (kube-scheduler extender)"};
  cli.require_subcommand(1);
  std::string log_level = "info";
  cli.add_option("--log-level", log_level, "trace, debug, info, warn, error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}));
  std::string log_format = "text";
  cli.add_option("--log-format", log_format,
                 "text, or json: one JSON object per line for log collectors")
      ->check(CLI::IsMember({"text", "json"}));
  cli.fallthrough();  // global flags may follow the subcommand: `gputopo serve --log-format=json`

  AppOptions options;
  std::string listen = "127.0.0.1:8888";
  std::string admin_listen;
  std::string admin_auth = "kubernetes";
  std::string snapshot_path;
  int max_body_mib = 64;
  int max_inflight_mib = 96;
  double grace_seconds = 10;
  auto add_server_flags = [&](CLI::App* cmd) {
    cmd->add_option("--listen", listen, "HOST:PORT to serve on (port 0: any free port)")
        ->check(ListenAddress())
        ->capture_default_str();
    cmd->add_option("--admin-listen", admin_listen,
                    "HOST:PORT for /metrics and /debug alone (default: served with the verbs)")
        ->check(ListenAddress());
    cmd->add_option("--admin-auth", admin_auth,
                    "on --admin-listen, live mode: kubernetes (TokenReview + "
                    "SubjectAccessReview, as kube-rbac-proxy), or none")
        ->check(CLI::IsMember({"kubernetes", "none"}))
        ->capture_default_str();
    cmd->add_option("--policy", options.default_preset, "default scoring preset")
        ->capture_default_str();
    cmd->add_flag("--filter-decides", options.filter_decides,
                  "a GPU pod's filter passes only gputopo's best node, so kube-scheduler skips "
                  "scoring: one round trip per pod, and gputopo's choice is final "
                  "(docs/scoring.md)");
    cmd->add_option("--presets-dir", options.presets_dir, "extra preset files (*.json)");
    cmd->add_option("--profiles-dir", options.profiles_dir, "extra machine profiles (*.json)");
    cmd->add_option("--max-body-mib", max_body_mib, "largest request body accepted")
        ->check(CLI::Range(1, 4096))
        ->capture_default_str();
    cmd->add_option("--max-inflight-body-mib", max_inflight_mib,
                    "all request bodies being read or handled at once (503 beyond)")
        ->check(CLI::Range(1, 16384))
        ->capture_default_str();
    cmd->add_option("--threads", options.server.http.verb_threads,
                    "filter/prioritize at once (I/O threads that may run them)")
        ->check(CLI::Range(1, 256))
        ->capture_default_str();
    cmd->add_option("--bind-threads", options.server.http.bind_threads, "bind worker threads")
        ->check(CLI::Range(1, 1024))
        ->capture_default_str();
    cmd->add_option("--evaluation-threads", options.evaluation_threads,
                    "threads that share a new pod shape's searches with the request thread "
                    "(-1: one less than the CPUs, at most 3)")
        ->check(CLI::Range(-1, 64))
        ->capture_default_str();
    AddDurationFlag(cmd, "--shutdown-grace", grace_seconds,
                    "on SIGTERM, how long requests in flight may take to finish (10s, 500ms)");
  };
  CLI::App* serve = cli.add_subcommand("serve", "serve filter/prioritize/bind for a cluster");
  add_server_flags(serve);
  std::string kubeconfig;
  std::string context;
  double staleness_seconds = 60;
  serve
      ->add_option("--snapshot", snapshot_path,
                   "serve this `kubectl get nodes,pods -A -o json` output instead of a live "
                   "cluster")
      ->check(CLI::ExistingFile);
  serve
      ->add_option("--kubeconfig", kubeconfig,
                   "kubeconfig file (YAML or JSON); default: the in-cluster service account")
      ->check(CLI::ExistingFile);
  serve->add_option("--context", context, "kubeconfig context (default: its current-context)");
  AddDurationFlag(serve, "--staleness", staleness_seconds,
                  "/readyz fails once the watch has been broken this long (90s, 2m)");
  serve
      ->add_option("--tls-cert", options.server.http.tls_cert_file,
                   "serve HTTPS with this PEM certificate")
      ->check(CLI::ExistingFile);
  serve->add_option("--tls-key", options.server.http.tls_key_file, "and this PEM private key")
      ->check(CLI::ExistingFile);
  serve
      ->add_option("--admin-tls-cert", options.server.admin_tls_cert_file,
                   "serve --admin-listen over HTTPS with this PEM certificate")
      ->check(CLI::ExistingFile);
  serve->add_option("--admin-tls-key", options.server.admin_tls_key_file, "and this key")
      ->check(CLI::ExistingFile);

  CLI::App* demo = cli.add_subcommand("demo", "serve the embedded demo cluster and schedule it");
  add_server_flags(demo);
  bool exit_after_demo = false;
  demo->add_flag("--exit", exit_after_demo, "stop after the replay instead of serving on");

  CLI::App* topo = cli.add_subcommand("topology", "topology documents and machine profiles");
  topo->require_subcommand(1);
  CLI::App* import = topo->add_subcommand(
      "import", "read `nvidia-smi topo -m` output on stdin, print the topology document");
  int replicas = 0;
  bool compact = false;
  import->add_option("--replicas", replicas, "time-slice replicas per GPU to record")
      ->check(CLI::Range(1, kMaxReplicasPerGpu));
  import->add_flag("--compact", compact, "one line, ready for the node annotation");
  CLI::App* profiles = topo->add_subcommand("profiles", "list the shipped machine profiles");

  CLI::App* agent_cmd = cli.add_subcommand("agent", "the node agent (runs on GPU nodes)");
  agent_cmd->require_subcommand(1);
  CLI::App* discover = agent_cmd->add_subcommand(
      "discover", "discover this node's GPUs (NVML, else nvidia-smi), print the topology document");
  agent::DiscoveryOptions discovery;
  discover->add_option("--nvml-library", discovery.nvml_library, "NVML, as dlopen takes it")
      ->capture_default_str();
  discover->add_option("--nvidia-smi", discovery.nvidia_smi, "nvidia-smi, when NVML fails")
      ->capture_default_str();
  discover->add_option("--sysfs-root", discovery.sysfs_root, "where sysfs is mounted")
      ->capture_default_str();
  discover->add_option("--replicas", discovery.replicas, "time-slice replicas per GPU to record")
      ->check(CLI::Range(1, kMaxReplicasPerGpu));
  CLI::App* agent_run = agent_cmd->add_subcommand(
      "run", "the node agent: observe which GPUs kubelet gave each pod (gputopo.io/observed-gpus)");
  agent::AgentOptions agent_options;
  std::string agent_mode = "observe";
  std::string agent_listen = "0.0.0.0:8890";
  std::string agent_kubeconfig;
  agent_run->add_option("--node-name", agent_options.node_name, "this node (spec.nodeName)")
      ->required();
  agent_run
      ->add_option("--kubeconfig", agent_kubeconfig,
                   "kubeconfig file; default: the in-cluster service account")
      ->check(CLI::ExistingFile);
  agent_run->add_option("--mode", agent_mode, "observe, or enforce (the device plugin too)")
      ->capture_default_str()
      ->check(CLI::IsMember({"observe", "enforce"}));
  agent::EnforceOptions enforce_options;
  agent_run
      ->add_option("--replicas", enforce_options.replicas, "enforce: time-slice replicas per GPU")
      ->check(CLI::Range(1, kMaxReplicasPerGpu));
  agent_run
      ->add_option("--time-slicing-config", enforce_options.time_slicing_config,
                   "enforce: NVIDIA's device plugin config file (sharing.timeSlicing)")
      ->check(CLI::ExistingFile);
  agent_run
      ->add_option("--trusted-schedulers", enforce_options.trusted_schedulers,
                   "enforce: schedulers whose assigned-gpus are honoured")
      ->delimiter(',')
      ->capture_default_str();
  agent_run->add_option("--kubelet-dir", agent_options.kubelet_dir, "kubelet's root directory")
      ->capture_default_str();
  agent_run->add_option("--resource-name", agent_options.resource_name, "the extended resource")
      ->capture_default_str();
  agent_run->add_option("--listen", agent_listen, "HOST:PORT for /healthz, /readyz, /metrics")
      ->check(ListenAddress())
      ->capture_default_str();
  agent_run->add_option("--nvml-library", agent_options.discovery.nvml_library,
                        "NVML, as dlopen takes it");
  agent_run->add_option("--sysfs-root", agent_options.discovery.sysfs_root,
                        "where sysfs is mounted");
  int rediscover_seconds = 30;
  agent_run
      ->add_option("--rediscover-seconds", rediscover_seconds,
                   "discover the topology again this often: publish it when it changed, and in "
                   "enforce mode advertise its GPU health to kubelet; 0: only at start")
      ->capture_default_str()
      ->check(CLI::Range(0, 86400));
  agent_run->add_flag("!--no-publish-topology", agent_options.publish_topology,
                      "do not write the gputopo.io/topology node annotation");

  try {
    cli.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return cli.exit(e);
  }
  spdlog::set_level(spdlog::level::from_str(log_level));
  if (log_format == "json") {
    observability::UseJsonLogs(*spdlog::default_logger());
  } else {
    observability::UseTextLogs(*spdlog::default_logger());
  }

  if (*import) return RunTopologyImport(replicas, compact);
  if (*profiles) return RunListProfiles();
  if (*discover) return RunAgentDiscover(discovery);
  if (*agent_run) {
    agent_options.rediscover = std::chrono::seconds(rediscover_seconds);
    return RunAgent(std::move(agent_options), agent_mode, agent_listen, agent_kubeconfig,
                    std::move(enforce_options));
  }
  const HostPort address = SplitListen(listen);
  options.server.http.host = address.host;
  options.server.http.port = address.port;
  if (!admin_listen.empty()) {
    const HostPort admin = SplitListen(admin_listen);
    options.server.admin_host = admin.host;
    options.server.admin_port = admin.port;
  }
  options.admin_auth = admin_auth == "kubernetes";
  options.server.http.max_body_bytes = static_cast<size_t>(max_body_mib) << 20;
  options.server.http.max_inflight_body_bytes = static_cast<size_t>(max_inflight_mib) << 20;
  options.server.http.grace_period = Milliseconds(grace_seconds);
  options.server.http.release_memory = [] { malloc_trim(0); };
  if (*serve) {
    if (options.server.http.tls_cert_file.empty() != options.server.http.tls_key_file.empty()) {
      std::cerr << "gputopo: --tls-cert and --tls-key go together\n";
      return 2;
    }
    if (!snapshot_path.empty()) {
      if (!kubeconfig.empty()) {
        std::cerr << "gputopo: --snapshot and --kubeconfig exclude each other\n";
        return 2;
      }
      options.snapshot_json = ReadFileOrEmpty(snapshot_path);
      return RunServer(options, /*demo=*/false, false);
    }
    options.watcher.staleness =
        std::chrono::duration_cast<std::chrono::seconds>(Milliseconds(staleness_seconds));
    const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
    const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
    Result<kube::KubeConfig> config =
        kubeconfig.empty() ? kube::InClusterConfig(host ? host : "", port ? port : "")
                           : kube::LoadKubeconfig(kubeconfig, context);
    if (!config.ok()) {
      std::cerr << "gputopo: " << config.status().message() << "\n";
      return 2;
    }
    spdlog::info("API server {} (context {})", config->server, config->context);
    options.kube = std::move(config).value();
    return RunServer(options, /*demo=*/false, false);
  }
  options.snapshot_json = DemoClusterJson();
  return RunServer(options, /*demo=*/true, exit_after_demo);
}

}  // namespace
}  // namespace gputopo::app

int main(int argc, char** argv) { return gputopo::app::Main(argc, argv); }
