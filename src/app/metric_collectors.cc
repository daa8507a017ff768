#include "src/app/metric_collectors.h"

#include <string_view>

namespace gputopo::app {

void CollectClusterState(observability::MetricsRegistry& metrics,
                         const cluster::ClusterState& state) {
  metrics.AddCollector([state = &state](observability::MetricsWriter& out) {
    const auto snapshot = state->Snapshot();
    size_t resolved = 0;
    constexpr std::string_view kSlotsHelp =
        "nvidia.com/gpu slots (time-sliced replicas) per node with a known topology: used, free.";
    for (const auto& node : snapshot->nodes()) {
      if (!node->has_topology()) continue;
      ++resolved;
      out.WriteGauge("gputopo_node_gpu_slots", kSlotsHelp,
                     {{"node", node->name()}, {"state", "used"}},
                     static_cast<double>(node->used_slots()));
      out.WriteGauge("gputopo_node_gpu_slots", kSlotsHelp,
                     {{"node", node->name()}, {"state", "free"}},
                     static_cast<double>(node->free_slots()));
    }
    const size_t unresolved = snapshot->node_count() - resolved;
    constexpr std::string_view kNodesHelp =
        "GPU nodes known, by whether their topology could be resolved.";
    out.WriteGauge("gputopo_nodes", kNodesHelp, {{"topology", "resolved"}},
                   static_cast<double>(resolved));
    out.WriteGauge("gputopo_nodes", kNodesHelp, {{"topology", "unresolved"}},
                   static_cast<double>(unresolved));

    const cluster::ClusterCounts counts = state->Counts();
    constexpr std::string_view kPodsHelp = "GPU pods known: placed on a node, or pending.";
    out.WriteGauge("gputopo_pods", kPodsHelp, {{"state", "placed"}},
                   static_cast<double>(counts.placed_pods));
    out.WriteGauge("gputopo_pods", kPodsHelp, {{"state", "pending"}},
                   static_cast<double>(counts.pods - counts.placed_pods));
    out.WriteGauge("gputopo_reservations",
                   "Binds in flight: GPUs held for a pod not yet seen bound.", {},
                   static_cast<double>(counts.reservations));
    out.WriteGauge("gputopo_nominated_claims",
                   "Pods nominated after a preemption, holding the GPUs their victims free.", {},
                   static_cast<double>(counts.claims));
  });
}

void CollectBackgroundEvaluations(observability::MetricsRegistry& metrics,
                                  const service::TableRefresher& refresher) {
  metrics.AddCollector([refresher = &refresher](observability::MetricsWriter& out) {
    out.WriteCounter("gputopo_background_evaluations_total",
                     "Node evaluations made off the request path, for recent pod shapes, after "
                     "the cluster changed.",
                     {}, static_cast<double>(refresher->nodes_evaluated()));
  });
}

void CollectNodeAnswers(observability::MetricsRegistry& metrics,
                        const evaluation::EvaluationCache& cache) {
  metrics.AddCollector([cache = &cache](observability::MetricsWriter& out) {
    constexpr std::string_view kLookupsHelp =
        "Lookups of a node's answer for a pod shape in the node-answer cache (behind the "
        "per-shape tables), by result: hit, miss.";
    out.WriteCounter("gputopo_node_answer_lookups_total", kLookupsHelp, {{"result", "hit"}},
                     static_cast<double>(cache->hits()));
    out.WriteCounter("gputopo_node_answer_lookups_total", kLookupsHelp, {{"result", "miss"}},
                     static_cast<double>(cache->misses()));
    out.WriteCounter("gputopo_node_answers_skipped_total",
                     "Uses of the node-answer cache that a filter or prioritize skipped because "
                     "the background refresh held its lock: lookups (also counted as misses) "
                     "and answers not kept. The cycle evaluates instead of waiting.",
                     {}, static_cast<double>(cache->skipped_when_busy()));
    out.WriteGauge("gputopo_node_answers", "Answers kept in the node-answer cache.", {},
                   static_cast<double>(cache->node_answers()));
  });
}

void CollectEvents(observability::MetricsRegistry& metrics, const service::EventQueue& events) {
  metrics.AddCollector([events = &events](observability::MetricsWriter& out) {
    const service::EventQueueStats stats = events->Stats();
    constexpr std::string_view kHelp =
        "Kubernetes Events about pods (GPUsAssigned), by outcome: posted, failed (the API server "
        "refused them or could not be reached), dropped (the queue was full).";
    out.WriteCounter("gputopo_events_total", kHelp, {{"outcome", "posted"}},
                     static_cast<double>(stats.posted));
    out.WriteCounter("gputopo_events_total", kHelp, {{"outcome", "failed"}},
                     static_cast<double>(stats.failed));
    out.WriteCounter("gputopo_events_total", kHelp, {{"outcome", "dropped"}},
                     static_cast<double>(stats.dropped));
    out.WriteGauge("gputopo_events_pending", "Events queued, not yet posted.", {},
                   static_cast<double>(stats.pending));
  });
}

void CollectWatch(observability::MetricsRegistry& metrics, const kube::ClusterWatcher& watcher) {
  metrics.AddCollector([watcher = &watcher](observability::MetricsWriter& out) {
    const kube::WatcherStats stats = watcher->Stats();
    out.WriteCounter("gputopo_watch_events_total", "Watch events applied to the cache.", {},
                     static_cast<double>(stats.events));
    out.WriteCounter("gputopo_watch_reconnects_total",
                     "Watches resumed from their resourceVersion after a broken stream.", {},
                     static_cast<double>(stats.reconnects));
    out.WriteCounter("gputopo_watch_relists_total",
                     "Full lists after the first (the resourceVersion was too old: 410 Gone).", {},
                     static_cast<double>(stats.relists));
    out.WriteCounter("gputopo_reservations_expired_total",
                     "Reservations freed because the pod was never seen bound.", {},
                     static_cast<double>(stats.expired_reservations));
    out.WriteGauge("gputopo_cache_age_seconds",
                   "Seconds since the last watch event, bookmark or list.", {},
                   stats.cache_age_seconds);
    out.WriteGauge("gputopo_cache_synced", "1 once both watches have listed and are current.", {},
                   stats.synced ? 1.0 : 0.0);
  });
}

void CollectDisruptionBudgets(observability::MetricsRegistry& metrics,
                              const cluster::DisruptionBudgetIndex& budgets) {
  metrics.AddCollector([budgets = &budgets](observability::MetricsWriter& out) {
    const cluster::DisruptionBudgetCounts counts = budgets->Counts();
    out.WriteGauge("gputopo_disruption_budgets",
                   "PodDisruptionBudgets watched, which preempt counts violations against.", {},
                   static_cast<double>(counts.budgets));
    out.WriteGauge("gputopo_disruption_budgets_synced",
                   "1 once PodDisruptionBudgets have been listed; 0: preempt bounds PDB "
                   "violations from the scheduler's count.",
                   {}, counts.synced ? 1.0 : 0.0);
    out.WriteGauge("gputopo_disruption_budget_pods",
                   "GPU pods whose labels are kept for budget selectors.", {},
                   static_cast<double>(counts.pods));
    out.WriteGauge("gputopo_disruption_budget_label_sets",
                   "Distinct label sets among them (interned).", {},
                   static_cast<double>(counts.label_sets));
  });
}

}  // namespace gputopo::app
