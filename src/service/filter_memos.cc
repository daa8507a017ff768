#include "src/service/filter_memos.h"

#include "policies/engine/evaluation_cache.h"

namespace gputopo::service {

bool FilterMemo::Match(const std::vector<std::string_view>& candidates,
                       std::vector<size_t>& positions_out,
                       std::vector<policies::EvaluationRef>& per_node_out) const {
  positions_out.resize(candidates.size());
  per_node_out.resize(candidates.size());
  size_t j = 0;
  for (size_t i = 0; i < candidates.size(); ++i) {
    while (j < name_ends.size() && NameAt(j) != candidates[i]) ++j;
    if (j == name_ends.size()) return false;
    positions_out[i] = positions[j];
    per_node_out[i] = per_node[j];
    ++j;
  }
  return true;
}

void FilterMemos::Remember(std::shared_ptr<const FilterMemo> memo) {
  std::shared_ptr<const FilterMemo> dropped;  // freed outside the lock
  std::lock_guard<std::mutex> lock(mutex_);
  memos_.push_back(std::move(memo));
  if (memos_.size() > kMemos) {
    dropped = std::move(memos_.front());
    memos_.pop_front();
  }
}

std::shared_ptr<const FilterMemo> FilterMemos::Find(std::string_view pod) const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = memos_.rbegin(); it != memos_.rend(); ++it) {
    if ((*it)->pod == pod) return *it;
  }
  return nullptr;
}

std::string ShapeKey(const policies::PodRequirements& pod, const policies::Preset& preset) {
  std::string key = policies::EvaluationShape(pod, preset);
  key.push_back('\0');
  key += pod.group;
  return key;
}

}  // namespace gputopo::service
