#include "src/service/decision_log.h"

#include <iterator>

namespace gputopo::service {

std::string_view VerbName(Verb verb) { return NameOf(kVerbNames, verb); }

const std::string& CycleRecord::NodeName(const NodeRef& ref) const {
  if ((ref.node & kUnknownNode) != 0) return unknown_nodes[ref.node & ~kUnknownNode];
  return StateOf(ref).name();
}

namespace {

size_t BytesOf(const std::string& s) { return sizeof(std::string) + s.capacity(); }

size_t BytesOf(const DecisionRecord& record) {
  return std::visit([](const auto& r) { return ApproxBytes(*r); }, record);
}

size_t BytesOf(const PodHistory& h) {
  return (h.filter ? ApproxBytes(*h.filter) : 0) + (h.prioritize ? ApproxBytes(*h.prioritize) : 0) +
         (h.bind ? ApproxBytes(*h.bind) : 0) + (h.preempt ? ApproxBytes(*h.preempt) : 0);
}

}  // namespace

size_t ApproxBytes(const CycleRecord& r) {
  size_t n = sizeof(CycleRecord) + r.pod_key.capacity() + r.pod_uid.capacity() +
             r.requirements.capacity() + r.preset.capacity() + r.error.capacity() +
             r.normalization.capacity();
  n += r.candidate_positions.capacity() * sizeof(size_t);
  n += r.candidate_evaluations.capacity() * sizeof(policies::EvaluationRef);
  n += r.nodes.capacity() * sizeof(CycleRecord::NodeRef);
  n += r.node_states.capacity() * sizeof(r.node_states[0]);
  n += r.lease.ApproxBytes();
  n += r.priorities.capacity() * sizeof(int);
  for (const std::string& name : r.unknown_nodes) n += BytesOf(name);
  for (const auto& [reason, count] : r.failure_reasons) n += 64 + BytesOf(reason);  // tree node
  return n;
}

size_t ApproxBytes(const BindRecord& r) {
  size_t n = sizeof(BindRecord) + r.pod_key.capacity() + r.pod_uid.capacity() + r.node.capacity() +
             r.placement.capacity() + r.error.capacity();
  for (const std::string& gpu : r.gpus) n += BytesOf(gpu);
  for (const policies::ComponentResult& c : r.components) {
    n += sizeof(c) + c.name.capacity() + c.detail.capacity();
  }
  return n;
}

size_t ApproxBytes(const PreemptRecord& r) {
  size_t n = sizeof(PreemptRecord) + r.pod_key.capacity() + r.pod_uid.capacity() +
             r.requirements.capacity() + r.preset.capacity() + r.error.capacity();
  for (const PreemptRecord::Node& node : r.nodes) {
    n += sizeof(node) + node.name.capacity() + node.placement.capacity() +
         node.choice.reason.capacity() + node.choice.detail.capacity();
    for (const std::string& uid : node.proposed) n += BytesOf(uid);
    for (const std::string& uid : node.choice.victims) n += BytesOf(uid);
    for (const std::string& key : node.victim_keys) n += BytesOf(key);
    for (const std::string& key : node.budgets) n += BytesOf(key);
  }
  return n;
}

PodHistory& DecisionLog::PodLocked(const std::string& pod_key) {
  auto [it, inserted] = pods_.try_emplace(pod_key);
  if (inserted) {
    pod_order_.push_back(pod_key);
    pods_bytes_ += 2 * BytesOf(pod_key);
  }
  return it->second;
}

void DecisionLog::TrimPodsLocked(Retired& retired) {
  // The newest pod always stays, whatever its size.
  while (pod_order_.size() > 1 && (pod_order_.size() > max_pods_ || pods_bytes_ > max_bytes_)) {
    auto it = pods_.find(pod_order_.front());
    pods_bytes_ -= BytesOf(it->second) + 2 * BytesOf(it->first);
    retired.pods.push_back(std::move(it->second));
    pods_.erase(it);
    pod_order_.pop_front();
  }
}

void DecisionLog::AddLocked(DecisionRecord record, uint64_t sequence, Retired& retired) {
  auto at = events_.end();  // almost always the end: look from there
  while (at != events_.begin() && std::prev(at)->first > sequence) --at;
  events_bytes_ += BytesOf(record);
  events_.emplace(at, sequence, std::move(record));
  while (events_.size() > 1 && (events_.size() > max_events_ || events_bytes_ > max_bytes_)) {
    events_bytes_ -= BytesOf(events_.front().second);
    retired.events.push_back(std::move(events_.front().second));
    events_.pop_front();
  }
}

template <typename Record>
void DecisionLog::AddLocked(std::shared_ptr<const Record>& latest,
                            const std::shared_ptr<const Record>& record, Retired& retired) {
  if (latest == nullptr || latest->sequence < record->sequence) {
    pods_bytes_ += ApproxBytes(*record);
    if (latest != nullptr) {
      pods_bytes_ -= ApproxBytes(*latest);
      retired.events.emplace_back(std::move(latest));
    }
    latest = record;
  }
  AddLocked(record, record->sequence, retired);
}

void DecisionLog::Add(std::shared_ptr<const CycleRecord> record) {
  Retired retired;  // destroyed after the lock is released (declared before it)
  MutexLock lock(mutex_);
  PodHistory& history = PodLocked(record->pod_key);
  AddLocked(record->verb == Verb::kFilter ? history.filter : history.prioritize, record, retired);
  TrimPodsLocked(retired);
}

void DecisionLog::Add(std::shared_ptr<const BindRecord> record) {
  Retired retired;
  MutexLock lock(mutex_);
  AddLocked(PodLocked(record->pod_key).bind, record, retired);
  TrimPodsLocked(retired);
}

void DecisionLog::Add(std::shared_ptr<const PreemptRecord> record) {
  Retired retired;
  MutexLock lock(mutex_);
  AddLocked(PodLocked(record->pod_key).preempt, record, retired);
  TrimPodsLocked(retired);
}

std::vector<DecisionRecord> DecisionLog::Recent(size_t limit) const {
  MutexLock lock(mutex_);
  std::vector<DecisionRecord> out;
  for (auto it = events_.rbegin(); it != events_.rend() && out.size() < limit; ++it) {
    out.push_back(it->second);
  }
  return out;
}

std::optional<PodHistory> DecisionLog::ForPod(const std::string& pod_key) const {
  MutexLock lock(mutex_);
  auto it = pods_.find(pod_key);
  if (it == pods_.end()) return std::nullopt;
  return it->second;
}

}  // namespace gputopo::service
