// The metrics read at scrape time from the parts that hold them (observability/metrics.h
// collectors): the cluster cache, the background refresh, the node-answer cache, the Event queue
// and the watch. The
// metric names, labels and help texts are the ones docs/operations.md and the dashboards use.
//
// Thread safety: each collector reads its part through the part's own thread-safe accessors.
// The parts must outlive the registry's last Render().
#ifndef GPUTOPO_SRC_APP_METRIC_COLLECTORS_H_
#define GPUTOPO_SRC_APP_METRIC_COLLECTORS_H_

#include "cluster/cluster_state.h"
#include "cluster/disruption_budget_index.h"
#include "evaluation/evaluation_cache.h"
#include "src/kube/cluster_watcher.h"
#include "src/observability/metrics.h"
#include "src/service/event_queue.h"
#include "src/service/table_refresher.h"

namespace gputopo::app {

// gputopo_node_gpu_slots{node,state}, gputopo_nodes{topology}, gputopo_pods{state},
// gputopo_reservations.
void CollectClusterState(observability::MetricsRegistry& metrics,
                         const cluster::ClusterState& state);
// gputopo_background_evaluations_total.
void CollectBackgroundEvaluations(observability::MetricsRegistry& metrics,
                                  const service::TableRefresher& refresher);
// gputopo_node_answer_lookups_total{result}, gputopo_node_answers_skipped_total,
// gputopo_node_answers.
void CollectNodeAnswers(observability::MetricsRegistry& metrics,
                        const evaluation::EvaluationCache& cache);
// gputopo_events_total{outcome}, gputopo_events_pending.
void CollectEvents(observability::MetricsRegistry& metrics, const service::EventQueue& events);
// gputopo_watch_events_total, gputopo_watch_reconnects_total, gputopo_watch_relists_total,
// gputopo_reservations_expired_total, gputopo_cache_age_seconds, gputopo_cache_synced.
void CollectWatch(observability::MetricsRegistry& metrics, const kube::ClusterWatcher& watcher);
// gputopo_disruption_budgets, gputopo_disruption_budgets_synced,
// gputopo_disruption_budget_pods, gputopo_disruption_budget_label_sets.
void CollectDisruptionBudgets(observability::MetricsRegistry& metrics,
                              const cluster::DisruptionBudgetIndex& budgets);

}  // namespace gputopo::app

#endif  // GPUTOPO_SRC_APP_METRIC_COLLECTORS_H_
