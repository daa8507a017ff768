// CachedEvaluations: the EvaluationSource that reuses evaluations, and the one place that does.
//
// It owns every memo, table, refresh and lifetime:
// - the EvaluationCache (evaluation_cache.h): per (pod shape, group) tables over the snapshot's
//   node positions, tagged with each node's state version, and node answers by (node version,
//   pod shape, group GPUs);
// - the recent calls' answers by pod: a call for the same pod (pod_key), on the same snapshot
//   generation, with the same pod shape and group, whose candidates are a subsequence of the
//   earlier call's known ones (kube-scheduler's prioritize after its filter: the nodes that
//   passed, in order) takes the earlier positions and answers as they are; the earlier call's
//   names are kept side by side in one string, so that checking a prioritize's names reads
//   memory in order (looking each up again in the snapshot's index, or reading the index's name
//   at each kept position, is a cache miss per name: 0.1-0.2 ms at 5000 nodes);
// - Refresh: after a snapshot is published, every recently used table is brought up to date
//   with it (only the nodes that changed since the table's last refresh, when the snapshots'
//   name indices are the same), so that the next cycle of each reads instead of evaluating.
// Every answer is what PlainEvaluations gives (test/evaluation/ checks it through random
// clusters, pods, binds, deletes, node changes and refreshes).
//
// Thread safety: as EvaluationSource.
#ifndef GPUTOPO_EVALUATION_CACHED_EVALUATIONS_H_
#define GPUTOPO_EVALUATION_CACHED_EVALUATIONS_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "evaluation/evaluation_cache.h"
#include "evaluation/evaluation_source.h"
#include "evaluation/parallel_for.h"
#include "gputopo/mutex.h"

namespace gputopo::evaluation {

class CachedEvaluations final : public EvaluationSource {
 public:
  // `helpers` (whose executor must outlive this) may run the searches of a new pod shape's
  // first cycle beside the request thread (PodEvaluator::UseHelpers); refreshes never use them.
  explicit CachedEvaluations(EvaluationHelpers helpers = {}) : helpers_(helpers) {}
  Evaluations Evaluate(const EvaluationQuery& query) override;
  uint64_t Refresh(const std::shared_ptr<const policies::ClusterSnapshot>& snapshot) override;

  static constexpr size_t kRecentCalls = 8;  // pods whose last answers are kept (schedulers)
  // A dropped call is kept as the spare only when its buffers hold at most this many bytes and
  // at most twice what it used: one huge request, or a large buffer refilled by a small call,
  // does not stay allocated.
  static constexpr size_t kMaxSpareBytes = 8u << 20;

  // Allocates the node-answer cache's arrays now rather than on the request path
  // (EvaluationCache::ReserveAnswerArrays): for a server, before it serves.
  void ReserveAnswerArrays() { cache_.ReserveAnswerArrays(); }

  EvaluationCache& cache() { return cache_; }  // for metrics, tests and benchmarks
  // Bytes held by the spare recent call's buffers (see spare_); for tests.
  size_t SpareBytes() const;

 private:
  // One call's answers, for the same pod's next call.
  struct RecentCall {
    std::string pod_key;
    uint64_t shape_id = 0;
    std::string group;
    uint64_t generation = 0;
    std::vector<size_t> positions;
    std::vector<policies::EvaluationRef> per_node;
    EvaluationLease lease;
    // The call's candidate names: name i is names[ends[i-1], ends[i]) (ends[-1] = 0).
    std::string names;
    std::vector<uint32_t> ends;
    std::string_view NameAt(size_t i) const {
      const uint32_t begin = i == 0 ? 0 : ends[i - 1];
      return std::string_view(names).substr(begin, ends[i] - begin);
    }
    // Bytes its buffers hold, and those its candidates use.
    size_t CapacityBytes() const {
      return names.capacity() + ends.capacity() * sizeof(uint32_t) +
             positions.capacity() * sizeof(size_t) +
             per_node.capacity() * sizeof(policies::EvaluationRef);
    }
    size_t UsedBytes() const {
      return names.size() + ends.size() * sizeof(uint32_t) + positions.size() * sizeof(size_t) +
             per_node.size() * sizeof(policies::EvaluationRef);
    }
  };
  // The answers of `query`'s pod's last call when they answer it too (see above).
  bool Reuse(const EvaluationQuery& query, uint64_t shape_id, Evaluations& out) const;
  void Remember(const EvaluationQuery& query, uint64_t shape_id, const Evaluations& answers);

  const EvaluationHelpers helpers_;
  EvaluationCache cache_;

  mutable Mutex calls_mutex_;
  std::deque<std::shared_ptr<RecentCall>> calls_ GPUTOPO_GUARDED_BY(calls_mutex_);  // newest last
  // The last call dropped from calls_ that nothing else held (and not too large, see
  // kMaxSpareBytes), emptied: the next Remember fills its buffers (at 5000 nodes about 260 KB)
  // instead of allocating and faulting in new ones.
  std::shared_ptr<RecentCall> spare_ GPUTOPO_GUARDED_BY(calls_mutex_);

  // Refresh's own (one Refresh at a time): the snapshot it last refreshed against, and for each
  // table the generation it was last brought up to; a table current as of last_refreshed_ only
  // needs the nodes that changed since (found by comparing the two snapshots' node pointers).
  std::shared_ptr<const policies::ClusterSnapshot> last_refreshed_;
  std::vector<std::pair<std::shared_ptr<ShapeTable>, uint64_t>> synced_;
};

}  // namespace gputopo::evaluation

#endif  // GPUTOPO_EVALUATION_CACHED_EVALUATIONS_H_
