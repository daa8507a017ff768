// FilterMemos: what recent filter calls found, so that the prioritize call for the same pod can
// reuse the filter's node lookups and evaluations instead of repeating them.
//
// kube-scheduler sends prioritize right after filter, for the same pod, with the nodes that
// passed in the order the filter reply listed them: a subsequence of the filter's candidates.
// When the cluster has not changed in between (the same snapshot generation) and the pod asks
// for the same thing, the filter's evaluations are exactly what prioritize would compute. Any
// other case (a bind landed in between, a node the filter was not asked about, another order)
// is left to the caller to evaluate.
//
// Thread safety: thread-safe; memos are immutable once remembered.
#ifndef GPUTOPO_SRC_SERVICE_FILTER_MEMOS_H_
#define GPUTOPO_SRC_SERVICE_FILTER_MEMOS_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "policies/engine/evaluation.h"
#include "src/extender/extender_codec.h"

namespace gputopo::service {

struct FilterMemo {
  std::string pod;  // namespace/name/uid
  // The pod's requirements, preset and group as the evaluations saw them (ShapeKey).
  std::string shape;
  uint64_t generation = 0;  // of the snapshot the evaluations were made on
  // The candidates' names in request order: name i is names[name_begins[i], name_ends[i]).
  std::string names;
  std::vector<uint32_t> name_begins;
  std::vector<uint32_t> name_ends;
  std::vector<size_t> positions;  // per candidate, in that snapshot (kNotFound: unknown)
  std::vector<policies::EvaluationRef> per_node;
  std::vector<std::shared_ptr<const void>> owners;  // keep per_node's evaluations alive

  // Keeps the names of `args`. When they are raw tokens of its text, in order, the stretch of
  // text holding them is copied at once rather than name by name (5000 small copies took
  // ~40 us of a filter's time).
  void SetNames(const extender::ExtenderArgs& args);
  std::string_view NameAt(size_t i) const {
    return std::string_view(names).substr(name_begins[i], name_ends[i] - name_begins[i]);
  }
  // When `candidates` are a subsequence of this memo's, in its order: their positions and
  // evaluations, and true. False otherwise (outputs unspecified).
  bool Match(const std::vector<std::string_view>& candidates, std::vector<size_t>& positions_out,
             std::vector<policies::EvaluationRef>& per_node_out) const;
};

class FilterMemos {
 public:
  static constexpr size_t kMemos = 8;  // pods whose filter is remembered (several schedulers)

  void Remember(std::shared_ptr<const FilterMemo> memo);
  // The latest memo for `pod` (namespace/name/uid), or null.
  std::shared_ptr<const FilterMemo> Find(std::string_view pod) const;

 private:
  mutable std::mutex mutex_;
  std::deque<std::shared_ptr<const FilterMemo>> memos_;  // GUARDED_BY(mutex_), newest last
};

// What an evaluation depends on besides the cluster: requirements and preset (the shape) and
// the pod's group.
std::string ShapeKey(const policies::PodRequirements& pod, const policies::Preset& preset);

}  // namespace gputopo::service

#endif  // GPUTOPO_SRC_SERVICE_FILTER_MEMOS_H_
