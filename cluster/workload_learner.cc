#include "cluster/workload_learner.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

namespace gputopo::cluster {
namespace {

bool SameClass(const policies::WorkloadClass& a, const policies::WorkloadClass& b) {
  return a.gpus == b.gpus && a.milli == b.milli && a.cpu_milli == b.cpu_milli;
}

}  // namespace

WorkloadLearner::WorkloadLearner(WorkloadLearnerOptions options)
    : options_(options),
      growth_(std::exp2(1.0 / std::max(1e-9, options.half_life_pods))),
      next_check_(std::max<uint64_t>(1, options.min_check_every)) {}

bool WorkloadLearner::Observe(int gpus, int milli, int64_t cpu_milli, int64_t memory_bytes) {
  if (gpus <= 0) return false;
  Bucket& seen = weights_[{gpus, std::clamp(milli, 0, 1000), std::max<int64_t>(0, cpu_milli)}];
  seen.weight += scale_;
  seen.memory_weight += scale_ * static_cast<double>(std::max<int64_t>(0, memory_bytes));
  scale_ *= growth_;
  ++observations_;
  if (scale_ > 1e150) {  // fold the scale into the weights before it overflows
    for (auto& [key, bucket] : weights_) {
      bucket.weight /= scale_;
      bucket.memory_weight /= scale_;
    }
    scale_ = 1.0;
  }
  if (weights_.size() > options_.max_buckets) {
    // Drop the lightest quarter: classes that have not been seen for many half-lives.
    std::vector<std::pair<double, Key>> by_weight;
    for (const auto& [key, bucket] : weights_) by_weight.emplace_back(bucket.weight, key);
    std::sort(by_weight.begin(), by_weight.end());
    for (size_t i = 0; i < by_weight.size() / 4; ++i) weights_.erase(by_weight[i].second);
  }
  if (observations_ < next_check_) return false;
  next_check_ =
      observations_ + std::clamp<uint64_t>(observations_ / 32,
                                           std::max<uint64_t>(1, options_.min_check_every),
                                           std::max<uint64_t>(1, options_.max_check_every));
  policies::ObservedWorkload current = Current();
  if (published_ != nullptr && MixDistance(current, *published_) <= options_.republish_distance) {
    return false;
  }
  current.version = next_version_++;
  published_ = std::make_shared<const policies::ObservedWorkload>(std::move(current));
  return true;
}

policies::ObservedWorkload WorkloadLearner::Current() const {
  std::vector<std::pair<double, Key>> by_weight;
  double total = 0.0;
  for (const auto& [key, bucket] : weights_) {
    by_weight.emplace_back(bucket.weight, key);
    total += bucket.weight;
  }
  // Heaviest first; among equals, the larger class first (deterministic).
  std::sort(by_weight.begin(), by_weight.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second > b.second;
  });
  policies::ObservedWorkload mix;
  double covered = 0.0;
  for (const auto& [weight, key] : by_weight) {
    if (covered >= options_.coverage * total || mix.classes.size() >= options_.max_classes) break;
    covered += weight;
    policies::WorkloadClass cls;
    cls.gpus = std::get<0>(key);
    cls.milli = std::get<1>(key);
    cls.cpu_milli = std::get<2>(key);
    const Bucket& bucket = weights_.at(key);
    cls.memory_bytes =
        options_.memory ? static_cast<int64_t>(bucket.memory_weight / bucket.weight) : 0;
    cls.weight = weight;
    mix.classes.push_back(cls);
  }
  for (policies::WorkloadClass& cls : mix.classes) cls.weight /= covered;
  return mix;
}

double MixDistance(const policies::ObservedWorkload& a, const policies::ObservedWorkload& b) {
  double distance = 0.0;
  for (const policies::WorkloadClass& x : a.classes) {
    double other = 0.0;
    for (const policies::WorkloadClass& y : b.classes) {
      if (SameClass(x, y)) other = y.weight;
    }
    distance += std::abs(x.weight - other);
  }
  for (const policies::WorkloadClass& y : b.classes) {
    bool found = false;
    for (const policies::WorkloadClass& x : a.classes) found |= SameClass(x, y);
    if (!found) distance += y.weight;
  }
  return distance / 2.0;
}

}  // namespace gputopo::cluster
