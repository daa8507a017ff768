// Microbenchmarks of the request path, without HTTP: parsing an ExtenderArgs body (simdjson, as
// the server does, against nlohmann for reference), and the filter service on a parsed request
// over N nodes, with the evaluation cache warm (the next replica of a Deployment) and cold (a
// pod shape never seen, every node evaluated); a GPU-less pod's filter and prioritize in
// all-pod mode; and the PodDisruptionBudgets that count one node's pods, as preempt asks per
// candidate node.
#include <benchmark/benchmark.h>

#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "cluster/disruption_budget_index.h"
#include "gputopo/well_known.h"
#include "src/app/allocator_tuning.h"
#include "src/app/app.h"
#include "src/app/system_clock.h"
#include "src/codec/extender_codec.h"
#include "src/service/decision_recorder.h"

namespace gputopo::bench {
namespace {

using nlohmann::json;

// Node i of a bench cluster: 8 GPUs time-sliced 4 ways, a DGX-1 or an HGX H100 by turns;
// `allocatable` beside nvidia.com/gpu (CPU and memory, for all-pod mode).
json BenchNode(int i, const json& allocatable = json::object()) {
  json all = allocatable;
  all["nvidia.com/gpu"] = "32";
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata",
           {{"name", "gpu-node-" + std::to_string(i)},
            {"labels",
             {{"gputopo.io/topology-profile", i % 2 ? "dgx1-v100" : "hgx-h100"},
              {"nvidia.com/gpu.replicas", "4"}}}}},
          {"status", {{"allocatable", all}}}};
}

// Pod p of node i's bound pods, running with `requests` and `annotations`.
json BenchPod(int i, int p, const json& requests, const json& annotations) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", "p" + std::to_string(i) + "-" + std::to_string(p)},
            {"namespace", "prod"},
            {"uid", "u" + std::to_string(i) + "-" + std::to_string(p)},
            {"annotations", annotations}}},
          {"spec",
           {{"nodeName", "gpu-node-" + std::to_string(i)},
            {"containers", {{{"name", "m"}, {"resources", {{"requests", requests}}}}}}}},
          {"status", {{"phase", "Running"}}}};
}

// A cluster of `nodes` 8-GPU nodes (4 replicas each) with 10 pods each, and an args body for a
// pending pod with `milli` share (distinct milli values are distinct pod shapes).
struct Fixture {
  std::unique_ptr<app::App> app;
  std::string body_names;
  std::string body_nodes;
  // Replicas of one Deployment, pods of the body's shape each with a name of its own (more than
  // the evaluation cache's recent calls, so that no filter reuses an earlier one's answers).
  std::vector<std::string> replica_bodies;
  app::SystemClock clock;

  explicit Fixture(int nodes) {
    std::mt19937_64 rng(1);
    json items = json::array();
    std::vector<std::string> names;
    for (int i = 0; i < nodes; ++i) {
      names.push_back("gpu-node-" + std::to_string(i));
      items.push_back(BenchNode(i));
      for (int p = 0; p < 10; ++p) {
        items.push_back(
            BenchPod(i, p, {{"nvidia.com/gpu", "1"}},
                     {{"gputopo.io/assigned-gpus", std::to_string(rng() % 8)},
                      {"gputopo.io/group", "svc" + std::to_string(rng() % (nodes / 2 + 1))}}));
      }
    }
    app::AppOptions options;
    options.snapshot_json = json({{"kind", "List"}, {"items", items}}).dump();
    app = std::move(app::App::Create(options, clock).value());
    std::shuffle(names.begin(), names.end(), rng);
    json nodes_list = json::array();
    for (const json& item : items) {
      if (item["kind"] == "Node") nodes_list.push_back(item);
    }
    body_names = json({{"Pod", Pod(500)}, {"Nodes", nullptr}, {"NodeNames", names}}).dump();
    for (int k = 0; k < 16; ++k) {
      json pod = Pod(500);
      pod["metadata"]["name"] = "replica-" + std::to_string(k);
      pod["metadata"]["uid"] = "replica-uid-" + std::to_string(k);
      replica_bodies.push_back(
          json({{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", names}}).dump());
    }
    body_nodes = json({{"Pod", Pod(500)},
                       {"Nodes", {{"metadata", json::object()}, {"items", nodes_list}}},
                       {"NodeNames", nullptr}})
                     .dump();
  }

  static json Pod(int milli, int gpus = 1) {
    return {{"metadata",
             {{"name", "new"},
              {"namespace", "bench"},
              {"uid", "new-uid"},
              {"annotations", {{"gputopo.io/gpu-milli", std::to_string(milli)}}}}},
            {"spec",
             {{"containers",
               {{{"name", "m"},
                 {"resources", {{"requests", {{"nvidia.com/gpu", std::to_string(gpus)}}}}}}}}}}};
  }
};

Fixture& FixtureFor(int nodes) {
  static std::map<int, std::unique_ptr<Fixture>> fixtures;  // benchmark-local, built once
  auto& f = fixtures[nodes];
  if (!f) f = std::make_unique<Fixture>(nodes);
  return *f;
}

void BM_ParseNodeNames_Simdjson(benchmark::State& state) {
  Fixture& f = FixtureFor(static_cast<int>(state.range(0)));
  extender::ExtenderRequestParser parser(256u << 20);
  for (auto _ : state) benchmark::DoNotOptimize(parser.ParseArgs(f.body_names));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * f.body_names.size()));
}

void BM_ParseNodeNames_Nlohmann(benchmark::State& state) {
  Fixture& f = FixtureFor(static_cast<int>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(json::parse(f.body_names));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * f.body_names.size()));
}

void BM_ParseFullNodes_Simdjson(benchmark::State& state) {
  Fixture& f = FixtureFor(static_cast<int>(state.range(0)));
  extender::ExtenderRequestParser parser(256u << 20);
  for (auto _ : state) benchmark::DoNotOptimize(parser.ParseArgs(f.body_nodes));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * f.body_nodes.size()));
}

// Evicts the CPU caches, as the rest of a server's work does between two requests.
void EvictCaches() {
  static std::vector<char> junk(64u << 20);  // benchmark-local; larger than the L3
  for (size_t i = 0; i < junk.size(); i += 64) junk[i] = static_cast<char>(junk[i] + 1);
  benchmark::ClobberMemory();
}

// Parse + `verb` + reply over every node, as the handler does, with the evaluation cache warm;
// with `evict`, each request starts with cold CPU caches (what a server sees).
template <typename Verb>
void RunWarm(benchmark::State& state, bool evict, Verb verb) {
  Fixture& f = FixtureFor(static_cast<int>(state.range(0)));
  extender::ExtenderRequestParser parser(256u << 20);
  for (auto _ : state) {
    if (evict) {
      state.PauseTiming();
      EvictCaches();
      state.ResumeTiming();
    }
    auto args = parser.ParseArgs(f.body_names);
    verb(*f.app, **args);
    f.app->decision_recorder().Flush();  // the commit, in this thread, as before
  }
}

void FilterAndReply(app::App& app, const extender::ExtenderArgs& args) {
  auto reply = app.extender_service().Filter(args);
  benchmark::DoNotOptimize(extender::WriteFilterResult(args, reply.outcomes));
}

void PrioritizeAndReply(app::App& app, const extender::ExtenderArgs& args) {
  auto reply = app.extender_service().Prioritize(args);
  benchmark::DoNotOptimize(extender::WritePriorityList(args, reply.scores));
}

void BM_FilterWarm(benchmark::State& state) { RunWarm(state, false, FilterAndReply); }

// What kube-scheduler asks per pod while it schedules a Deployment's replicas one after another:
// each iteration a replica gputopo has not seen, filtered and then prioritized over every node,
// with the evaluation cache warm (nothing changes between iterations; binds are not made).
void BM_CycleSteady(benchmark::State& state) {
  Fixture& f = FixtureFor(static_cast<int>(state.range(0)));
  extender::ExtenderRequestParser parser(256u << 20);
  size_t next = 0;
  for (auto _ : state) {
    const std::string& body = f.replica_bodies[next++ % f.replica_bodies.size()];
    FilterAndReply(*f.app, **parser.ParseArgs(body));
    PrioritizeAndReply(*f.app, **parser.ParseArgs(body));
    f.app->decision_recorder().Flush();  // the commits, in this thread
  }
}
void BM_PrioritizeWarm(benchmark::State& state) { RunWarm(state, false, PrioritizeAndReply); }
void BM_FilterWarmEvicted(benchmark::State& state) { RunWarm(state, true, FilterAndReply); }
void BM_PrioritizeWarmEvicted(benchmark::State& state) { RunWarm(state, true, PrioritizeAndReply); }

// The recorder's trim of one cycle's record (background work, on the CPUs the request path
// shares): every node fits, with scores in random order (as kube-scheduler's candidates come),
// of which the 200 best are kept with their node states.
void BM_TrimForLog(benchmark::State& state) {
  Fixture& f = FixtureFor(static_cast<int>(state.range(0)));
  const std::shared_ptr<const policies::ClusterSnapshot> snapshot = f.app->state().Snapshot();
  std::mt19937_64 rng(7);
  std::vector<std::shared_ptr<const policies::NodeEvaluation>> owned;
  service::CycleRecord full;
  full.snapshot = snapshot;
  for (size_t position = 0; position < snapshot->node_count(); ++position) {
    policies::NodeEvaluation e;
    e.verdict = policies::Verdict::kFits;
    e.weighted_score = static_cast<double>(rng() % 100000) / 1000.0;
    owned.push_back(std::make_shared<const policies::NodeEvaluation>(std::move(e)));
    full.candidate_positions.push_back(position);
    full.candidate_evaluations.push_back(policies::EvaluationRef::To(*owned.back()));
  }
  for (auto _ : state) {
    state.PauseTiming();
    service::CycleRecord record = full;
    state.ResumeTiming();
    service::TrimForLog(record, 200);
    benchmark::DoNotOptimize(record.nodes.data());
  }
}

// Looking up every requested name in the snapshot's name index (5000 names, shuffled), with
// CPU caches evicted before each request (as on a server between requests) or not: the
// difference is the time spent waiting for memory.
void RunFindNodeNames(benchmark::State& state, bool evict) {
  Fixture& f = FixtureFor(static_cast<int>(state.range(0)));
  extender::ExtenderRequestParser parser(256u << 20);
  auto args = parser.ParseArgs(f.body_names);
  auto snapshot = f.app->state().Snapshot();
  std::vector<size_t> positions;
  for (auto _ : state) {
    if (evict) {
      state.PauseTiming();
      EvictCaches();
      state.ResumeTiming();
    }
    snapshot->FindIndices((*args)->node_names, positions);
    benchmark::DoNotOptimize(positions.data());
  }
}

void BM_FindNodeNames(benchmark::State& state) { RunFindNodeNames(state, true); }
void BM_FindNodeNamesWarm(benchmark::State& state) { RunFindNodeNames(state, false); }

// Writing a reply alone, from one warm cycle (the reply is most of the bytes): `write` makes
// it from the parsed args and the service.
template <typename Write>
void RunWriter(benchmark::State& state, Write write) {
  Fixture& f = FixtureFor(static_cast<int>(state.range(0)));
  extender::ExtenderRequestParser parser(256u << 20);
  auto args = parser.ParseArgs(f.body_names);
  auto reply = write(**args, f.app->extender_service());
  size_t bytes = 0;
  for (auto _ : state) {
    std::string out = reply();
    bytes += out.size();
    benchmark::DoNotOptimize(out);
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
}

void BM_WriteFilterResult(benchmark::State& state) {
  RunWriter(state, [](const extender::ExtenderArgs& args, service::ExtenderService& service) {
    return [&args, reply = service.Filter(args)] {
      return extender::WriteFilterResult(args, reply.outcomes);
    };
  });
}

void BM_WritePriorityList(benchmark::State& state) {
  RunWriter(state, [](const extender::ExtenderArgs& args, service::ExtenderService& service) {
    return [&args, reply = service.Prioritize(args)] {
      return extender::WritePriorityList(args, reply.scores);
    };
  });
}

// The first pod of a Deployment whose replicas run on some nodes: every iteration a pod of one
// warm shape (GPU count, gpu-milli 500) in a group the cache has no table for, held by ~20 of
// the nodes (the fixture's groups), which are evaluated afresh; the others answer from the
// shape's table.
void BM_FilterNewGroup(benchmark::State& state) {
  Fixture& f = FixtureFor(static_cast<int>(state.range(0)));
  extender::ExtenderRequestParser parser(256u << 20);
  const int gpus = static_cast<int>(state.range(1));
  // The request around the pod, written once (a body per group is 78 KiB at 5000 nodes).
  const std::string names = json::parse(f.body_names)["NodeNames"].dump();
  auto body_in_group = [&](int group) {
    json pod = Fixture::Pod(500, gpus);
    pod["metadata"]["namespace"] = "prod";
    pod["metadata"]["name"] = "first-of-svc" + std::to_string(group);
    pod["metadata"]["uid"] = "first-of-svc-uid" + std::to_string(group);
    if (group >= 0) {
      pod["metadata"]["annotations"]["gputopo.io/group"] = "svc" + std::to_string(group);
    }
    return "{\"Pod\":" + pod.dump() + ",\"Nodes\":null,\"NodeNames\":" + names + "}";
  };
  FilterAndReply(*f.app, **parser.ParseArgs(body_in_group(-1)));  // the shape's table
  // Groups not used before, across repetitions too (the fixture has nodes / 2 + 1 of them).
  static std::map<std::pair<int, int>, int> next_group;  // (nodes, GPUs) -> group
  int& group = next_group[{static_cast<int>(state.range(0)), gpus}];
  std::vector<std::string> bodies;
  for (int g = group; g < static_cast<int>(state.range(0)) / 2 && bodies.size() < 400; ++g) {
    bodies.push_back(body_in_group(g));
  }
  size_t i = 0;
  for (auto _ : state) {
    if (i == bodies.size()) {
      state.SkipWithError("out of new groups");
      break;
    }
    ++group;
    FilterAndReply(*f.app, **parser.ParseArgs(bodies[i++]));
    f.app->decision_recorder().Flush();  // the commit, in this thread, as before
  }
}

// Every iteration a pod shape the cache has not seen: every node is evaluated.
void BM_FilterCold(benchmark::State& state) {
  Fixture& f = FixtureFor(static_cast<int>(state.range(0)));
  extender::ExtenderRequestParser parser(256u << 20);
  service::ExtenderService* service = &f.app->extender_service();
  json body = json::parse(f.body_names);
  const int gpus = static_cast<int>(state.range(1));
  // Every request a pod shape this fixture has never seen, across repetitions too: the next
  // gpu-milli of this GPU count (1..1000; a run that needs more stops with an error).
  static std::map<std::pair<int, int>, int> next_milli;  // (nodes, GPUs) -> milli
  int& milli = next_milli[{static_cast<int>(state.range(0)), gpus}];
  std::vector<std::string> bodies;
  for (int m = milli + 1; m <= 1000 && bodies.size() < 400; ++m) {
    body["Pod"] = Fixture::Pod(m, gpus);
    bodies.push_back(body.dump());
  }
  size_t i = 0;
  for (auto _ : state) {
    if (i == bodies.size()) {
      state.SkipWithError("out of new pod shapes");
      break;
    }
    auto args = parser.ParseArgs(bodies[i++]);
    ++milli;
    auto reply = service->Filter(**args);
    benchmark::DoNotOptimize(extender::WriteFilterResult(**args, reply.outcomes));
    f.app->decision_recorder().Flush();  // the commit, in this thread, as before
  }
}

// All-pod mode (manifests/variants/all-pods, the pack preset): a CPU-only pod's whole cycle,
// filter then prioritize, each parsed and answered as the handlers do, over every node with the
// cache warm. One fixture per node count, its nodes with CPU and memory allocatable.
struct GpuLessFixture {
  std::unique_ptr<app::App> app;
  std::string body;
  app::SystemClock clock;

  explicit GpuLessFixture(int nodes) {
    std::mt19937_64 rng(2);
    json items = json::array();
    std::vector<std::string> names;
    for (int i = 0; i < nodes; ++i) {
      names.push_back("gpu-node-" + std::to_string(i));
      items.push_back(BenchNode(i, {{"cpu", "96"}, {"memory", "512Gi"}}));
      for (int p = 0; p < 10; ++p) {  // half of them GPU-less
        const bool gpu = p % 2 == 0;
        json requests = {{"cpu", std::to_string(1 + rng() % 8)}, {"memory", "8Gi"}};
        json annotations = json::object();
        if (gpu) {
          requests["nvidia.com/gpu"] = "1";
          annotations["gputopo.io/assigned-gpus"] = std::to_string(rng() % 8);
        }
        items.push_back(BenchPod(i, p, requests, annotations));
      }
    }
    app::AppOptions options;
    options.default_preset = "pack";
    options.snapshot_json = json({{"kind", "List"}, {"items", items}}).dump();
    app = std::move(app::App::Create(options, clock).value());
    std::shuffle(names.begin(), names.end(), rng);
    const json pod = {
        {"metadata", {{"name", "cpu-only"}, {"namespace", "bench"}, {"uid", "cpu-only-uid"}}},
        {"spec",
         {{"containers",
           {{{"name", "m"}, {"resources", {{"requests", {{"cpu", "4"}, {"memory", "16Gi"}}}}}}}}}}};
    body = json({{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", names}}).dump();
  }
};

void BM_GpuLessCycle(benchmark::State& state) {
  static std::map<int, std::unique_ptr<GpuLessFixture>> fixtures;  // benchmark-local
  auto& f = fixtures[static_cast<int>(state.range(0))];
  if (!f) f = std::make_unique<GpuLessFixture>(static_cast<int>(state.range(0)));
  extender::ExtenderRequestParser parser(256u << 20);
  service::ExtenderService& service = f->app->extender_service();
  for (auto _ : state) {
    auto filter_args = parser.ParseArgs(f->body);
    auto filtered = service.Filter(**filter_args);
    benchmark::DoNotOptimize(extender::WriteFilterResult(**filter_args, filtered.outcomes));
    auto prioritize_args = parser.ParseArgs(f->body);
    auto scored = service.Prioritize(**prioritize_args);
    benchmark::DoNotOptimize(extender::WritePriorityList(**prioritize_args, scored.scores));
    f->app->decision_recorder().Flush();  // the commits, in this thread
  }
}

// A cluster with `range(0)` PodDisruptionBudgets, 4 to a namespace (one per Deployment there),
// and 8 running GPU pods a node from 8 namespaces; each iteration asks which budgets count the
// pods of one node, as the preemptor does for every candidate node. The cost should follow the
// node's pods and their namespaces' budgets, not the cluster's budget count.
void BM_BudgetCoverageOfNode(benchmark::State& state) {
  const int budgets = static_cast<int>(state.range(0));
  const int namespaces = std::max(1, budgets / 4);
  cluster::DisruptionBudgetIndex index;
  std::vector<DisruptionBudgetInfo> all;
  for (int b = 0; b < budgets; ++b) {
    DisruptionBudgetInfo budget;
    budget.namespace_name = "team-" + std::to_string(b / 4);
    budget.name = "deploy-" + std::to_string(b % 4);
    budget.uid = "pdb-" + std::to_string(b);
    budget.selector = LabelSelector{{{"app", LabelRequirement::Operator::kIn, {budget.name}}}};
    budget.disruptions_allowed = 1;
    all.push_back(std::move(budget));
  }
  index.ReplaceBudgets(all);
  constexpr int kNodes = 64;
  std::vector<PodInfo> pods;
  for (int n = 0; n < kNodes; ++n) {
    for (int p = 0; p < 8; ++p) {
      PodInfo pod;
      pod.namespace_name = "team-" + std::to_string((n * 8 + p) % namespaces);
      pod.name = "pod-" + std::to_string(n) + "-" + std::to_string(p);
      pod.uid = "uid-" + pod.name;
      pod.gpu_request = 1;
      pod.phase = PodPhase::kRunning;
      pod.labels = {{"app", "deploy-" + std::to_string(p % 4)}};
      pods.push_back(std::move(pod));
    }
  }
  index.ReplacePods(pods);
  size_t node = 0;
  for (auto _ : state) {
    std::vector<std::string_view> uids;
    for (int p = 0; p < 8; ++p) uids.push_back(pods[node * 8 + static_cast<size_t>(p)].uid);
    benchmark::DoNotOptimize(index.CoverageOf(uids));
    node = (node + 1) % kNodes;
  }
}

BENCHMARK(BM_ParseNodeNames_Simdjson)->Arg(5000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ParseNodeNames_Nlohmann)->Arg(5000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ParseFullNodes_Simdjson)->Arg(5000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FilterWarm)->Arg(1000)->Arg(5000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_CycleSteady)->Arg(1000)->Arg(5000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PrioritizeWarm)->Arg(1000)->Arg(5000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_FilterWarmEvicted)->Arg(1000)->Arg(5000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PrioritizeWarmEvicted)->Arg(1000)->Arg(5000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_TrimForLog)->Arg(5000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_FindNodeNames)->Arg(5000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_FindNodeNamesWarm)->Arg(5000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_WriteFilterResult)->Arg(5000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_WritePriorityList)->Arg(5000)->Unit(benchmark::kMicrosecond);
// A fixed count: each iteration uses up a new pod shape (at most 400 per node and GPU count), and
// at 1000 nodes a time-based count ran out of them.
BENCHMARK(BM_FilterCold)
    ->Args({1000, 1})
    ->Args({5000, 1})
    ->Args({5000, 2})
    ->Args({5000, 4})
    ->Iterations(100)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_FilterNewGroup)
    ->Args({5000, 1})
    ->Args({5000, 2})
    ->Args({5000, 4})
    ->Iterations(200)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_GpuLessCycle)->Arg(500)->Arg(5000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_BudgetCoverageOfNode)->Arg(40)->Arg(4000)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace gputopo::bench

int main(int argc, char** argv) {
  // As gputopo's main does, so that the request path allocates as it does in the server (large
  // blocks from the heap, not mmap'ed and faulted in anew each request).
  gputopo::app::TuneAllocator();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
