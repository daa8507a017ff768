#include "evaluation/cached_evaluations.h"

#include <algorithm>
#include <cstdint>
#include <utility>

#include "evaluation/nominated_claims.h"
#include "evaluation/pod_evaluator.h"
#include "gputopo/short_copy.h"

namespace gputopo::evaluation {

bool CachedEvaluations::Reuse(const EvaluationQuery& query, uint64_t shape_id,
                              Evaluations& out) const {
  if (query.pod_key.empty()) return false;
  // Every count of a call changes under calls_mutex_, so a count read under it is exact: this
  // lets go of the call under the lock, and once Remember sees a dropped call held by nobody
  // else, every read made here happened before Remember refills it. When this was the last
  // holder, the call is freed after the lock.
  struct HeldCall {
    Mutex& mutex;
    std::shared_ptr<const RecentCall> call;
    ~HeldCall() {
      std::shared_ptr<const RecentCall> last;
      MutexLock lock(mutex);
      if (call.use_count() == 1) {
        last = std::move(call);
      } else {
        call.reset();
      }
    }
  } held{calls_mutex_, nullptr};
  {
    MutexLock lock(calls_mutex_);
    for (auto it = calls_.rbegin(); it != calls_.rend(); ++it) {
      if ((*it)->pod_key == query.pod_key) {
        held.call = *it;
        break;
      }
    }
  }
  const RecentCall* call = held.call.get();
  if (call == nullptr || call->generation != query.snapshot.generation() ||
      call->shape_id != shape_id || call->group != query.pod.group) {
    return false;
  }
  out.positions.resize(query.candidates.size());
  out.per_node.resize(query.candidates.size());
  size_t j = 0;
  for (size_t i = 0; i < query.candidates.size(); ++i) {
    while (j < call->positions.size() &&
           (call->positions[j] == policies::ClusterSnapshot::kNotFound ||
            !policies::SameName(call->NameAt(j), query.candidates[i]))) {
      ++j;
    }
    if (j == call->positions.size()) return false;
    out.positions[i] = call->positions[j];
    out.per_node[i] = call->per_node[j++];
  }
  out.lease = call->lease;
  out.reused = true;
  return true;
}

void CachedEvaluations::Remember(const EvaluationQuery& query, uint64_t shape_id,
                                 const Evaluations& answers) {
  if (query.pod_key.empty()) return;
  size_t bytes = 0;
  for (std::string_view name : query.candidates) bytes += name.size();
  if (bytes > UINT32_MAX) return;  // not kept: the next call evaluates
  std::shared_ptr<RecentCall> call;
  {
    MutexLock lock(calls_mutex_);
    call = std::move(spare_);
  }
  if (call == nullptr) call = std::make_shared<RecentCall>();
  call->pod_key.assign(query.pod_key);
  call->shape_id = shape_id;
  call->group.assign(query.pod.group);
  call->generation = query.snapshot.generation();
  call->positions.assign(answers.positions.begin(), answers.positions.end());
  // One resize each, then the names copied inline (CopyShort) through locals: stores through a
  // char pointer would otherwise make the compiler reload the vectors every name.
  const size_t count = query.candidates.size();
  call->names.resize(bytes);
  call->ends.resize(count);
  const std::string_view* names = query.candidates.data();
  uint32_t* ends = call->ends.data();
  char* const begin = call->names.data();
  char* at = begin;
  for (size_t i = 0; i < count; ++i) {
    at = CopyShort(at, names[i]);
    ends[i] = static_cast<uint32_t>(at - begin);
  }
  call->per_node.assign(answers.per_node.begin(), answers.per_node.end());
  call->lease = answers.lease;
  std::shared_ptr<RecentCall> dropped;  // freed, or made the spare, outside the lock
  {
    MutexLock lock(calls_mutex_);
    calls_.push_back(std::move(call));
    if (calls_.size() > kRecentCalls) {
      dropped = std::move(calls_.front());
      calls_.pop_front();
      // Out of calls_, a call is held only by a Reuse that found it before, which lets go of
      // it under this lock (Reuse): a count of one here is final, and that Reuse's reads are
      // done. A call still held is that Reuse's to free.
      if (dropped.use_count() != 1) dropped = nullptr;
    }
  }
  if (dropped == nullptr) return;
  const size_t capacity = dropped->CapacityBytes();
  if (capacity > kMaxSpareBytes || capacity > 2 * dropped->UsedBytes()) return;
  dropped->lease = EvaluationLease();  // may free evaluations
  MutexLock lock(calls_mutex_);
  if (spare_ == nullptr) spare_ = std::move(dropped);
}

size_t CachedEvaluations::SpareBytes() const {
  MutexLock lock(calls_mutex_);
  return spare_ == nullptr ? 0 : spare_->CapacityBytes();
}

Evaluations CachedEvaluations::Evaluate(const EvaluationQuery& query) {
  PodEvaluator evaluator(query.pod, query.preset, cache_, CacheAccess::kSkipWhenBusy);
  evaluator.UseHelpers(helpers_);
  const uint64_t shape_id = evaluator.shape_id();
  Evaluations out;
  if (Reuse(query, shape_id, out)) return out;
  std::vector<size_t> positions;
  query.snapshot.FindIndices(query.candidates, positions);
  out = evaluator.EvaluateAt(query.snapshot, positions);
  out.positions = std::move(positions);
  LookThroughClaims(query, out);
  Remember(query, shape_id, out);
  return out;
}

uint64_t CachedEvaluations::Refresh(
    const std::shared_ptr<const policies::ClusterSnapshot>& snapshot) {
  std::vector<size_t> changed;
  const bool comparable =
      last_refreshed_ != nullptr && last_refreshed_->name_index() == snapshot->name_index();
  if (comparable) {
    snapshot->nodes().ForEachDifference(last_refreshed_->nodes(),
                                        [&](size_t position) { changed.push_back(position); });
  }
  uint64_t evaluated = 0;
  std::vector<std::pair<std::shared_ptr<ShapeTable>, uint64_t>> synced;
  for (const EvaluationCache::TableShape& shape : cache_.RefreshableShapes()) {
    PodEvaluator evaluator(*shape.pod, shape.preset, cache_, shape.shape_id);
    const auto it = std::find_if(synced_.begin(), synced_.end(),
                                 [&](const auto& entry) { return entry.first == shape.table; });
    const bool current =
        comparable && it != synced_.end() && it->second == last_refreshed_->generation();
    evaluated += evaluator.RefreshTable(*shape.table, *snapshot, current ? &changed : nullptr);
    synced.emplace_back(shape.table, snapshot->generation());
  }
  synced_ = std::move(synced);  // tables no longer recent are forgotten
  cache_.ReleaseRetired();      // node answers the request path set aside, freed here
  last_refreshed_ = snapshot;
  return evaluated;
}

}  // namespace gputopo::evaluation
