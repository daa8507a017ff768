#include "src/service/decision_log.h"

#include <iterator>

namespace gputopo::service {

std::string_view VerbName(Verb verb) {
  switch (verb) {
    case Verb::kFilter:
      return "filter";
    case Verb::kPrioritize:
      return "prioritize";
    case Verb::kBind:
      return "bind";
  }
  return "?";
}

const std::string& CycleRecord::NodeName(const NodeRef& ref) const {
  if ((ref.node & kUnknownNode) != 0) return unknown_nodes[ref.node & ~kUnknownNode];
  return StateOf(ref).name();
}

PodHistory& DecisionLog::PodLocked(const std::string& pod_key) {
  auto [it, inserted] = pods_.try_emplace(pod_key);
  if (inserted) {
    pod_order_.push_back(pod_key);
    while (pod_order_.size() > max_pods_) {
      pods_.erase(pod_order_.front());
      pod_order_.pop_front();
    }
    return pods_[pod_key];
  }
  return it->second;
}

void DecisionLog::AddLocked(DecisionRecord record, uint64_t sequence) {
  auto at = events_.end();  // almost always the end: look from there
  while (at != events_.begin() && std::prev(at)->first > sequence) --at;
  events_.emplace(at, sequence, std::move(record));
  while (events_.size() > max_events_) events_.pop_front();
}

template <typename Record>
void DecisionLog::AddLocked(std::shared_ptr<const Record>& latest,
                            const std::shared_ptr<const Record>& record) {
  if (latest == nullptr || latest->sequence < record->sequence) latest = record;
  AddLocked(record, record->sequence);
}

void DecisionLog::Add(std::shared_ptr<const CycleRecord> record) {
  std::lock_guard<std::mutex> lock(mutex_);
  PodHistory& history = PodLocked(record->pod_key);
  AddLocked(record->verb == Verb::kFilter ? history.filter : history.prioritize, record);
}

void DecisionLog::Add(std::shared_ptr<const BindRecord> record) {
  std::lock_guard<std::mutex> lock(mutex_);
  AddLocked(PodLocked(record->pod_key).bind, record);
}

std::vector<DecisionRecord> DecisionLog::Recent(size_t limit) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<DecisionRecord> out;
  for (auto it = events_.rbegin(); it != events_.rend() && out.size() < limit; ++it) {
    out.push_back(it->second);
  }
  return out;
}

std::optional<PodHistory> DecisionLog::ForPod(const std::string& pod_key) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = pods_.find(pod_key);
  if (it == pods_.end()) return std::nullopt;
  return it->second;
}

}  // namespace gputopo::service
