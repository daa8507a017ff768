#include "src/service/filter_memos.h"

#include <cstdint>

#include "policies/engine/evaluation_cache.h"
#include "policies/state/name_index.h"

namespace gputopo::service {

void FilterMemo::SetNames(const extender::ExtenderArgs& args) {
  const std::vector<std::string_view>& candidates = args.node_names;
  auto address = [](std::string_view s) { return reinterpret_cast<uintptr_t>(s.data()); };
  name_begins.resize(candidates.size());
  name_ends.resize(candidates.size());
  if (candidates.empty()) {
    names.clear();
    return;
  }
  const uintptr_t first = address(candidates.front());
  bool in_text = true;
  uintptr_t at = first;  // where the previous candidate ends
  size_t bytes = 0;
  for (size_t i = 0; in_text && i < candidates.size(); ++i) {
    const uintptr_t begin = address(candidates[i]);
    const uintptr_t end = begin + candidates[i].size();
    in_text = args.IsRawToken(candidates[i]) && begin >= at && end - first <= UINT32_MAX;
    name_begins[i] = static_cast<uint32_t>(begin - first);
    name_ends[i] = static_cast<uint32_t>(end - first);
    at = end;
    bytes += candidates[i].size();
  }
  // Only a list of names (NodeNames: `","` between them), not names far apart in Node objects.
  if (in_text && at - first <= bytes + 8 * candidates.size()) {
    names.assign(candidates.front().data(), at - first);
    return;
  }
  names.clear();
  for (size_t i = 0; i < candidates.size(); ++i) {
    name_begins[i] = static_cast<uint32_t>(names.size());
    names.append(candidates[i]);
    name_ends[i] = static_cast<uint32_t>(names.size());
  }
}

bool FilterMemo::Match(const std::vector<std::string_view>& candidates,
                       std::vector<size_t>& positions_out,
                       std::vector<policies::EvaluationRef>& per_node_out) const {
  positions_out.resize(candidates.size());
  per_node_out.resize(candidates.size());
  size_t j = 0;
  for (size_t i = 0; i < candidates.size(); ++i) {
    while (j < name_ends.size() && !policies::SameName(NameAt(j), candidates[i])) ++j;
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
