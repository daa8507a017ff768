// WorkloadLearner: the mix of GPU pod classes the cluster asks for, learned online.
//
// Fragmentation (policies/fragmentation) measures how much free GPU capacity the pods still to
// come could not use; FGD takes "the pods still to come" to be a sample of the pods seen so far.
// The learner keeps a decayed histogram of the GPU pods it is shown, one bucket per class (GPU
// count, share of each GPU, CPU and memory requests), each observation weighing 1 and every
// weight halving every `half_life_pods` observations, so the mix follows a changing workload.
//
// What it publishes (an ObservedWorkload) is FGD's target workload: the heaviest classes that
// together hold `coverage` of the weight (at most `max_classes`), weights renormalized. A mix is
// republished only when it has moved: at checks, when its total variation distance from the
// published one exceeds `republish_distance`. Every publish makes every node's evaluation new,
// so checks come often while little has been seen (a young mix moves fast, and the first pods'
// placements shape the cluster) and rarely once it is stable: every observations/32 pods,
// clamped to `min_check_every`..`max_check_every`.
//
// Memory is not part of the class key (nor of FGD's classes): pods alike in GPUs and CPU but a
// little apart in memory would split the mix into many light classes. A class asks the decayed
// mean memory of its pods instead. At most `max_buckets` buckets are kept; beyond that the
// lightest are dropped.
//
// Thread safety: not thread-safe (ClusterState calls it under its own lock).
#ifndef GPUTOPO_CLUSTER_WORKLOAD_LEARNER_H_
#define GPUTOPO_CLUSTER_WORKLOAD_LEARNER_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <tuple>

#include "policies/registry/component_args.h"

namespace gputopo::cluster {

struct WorkloadLearnerOptions {
  double half_life_pods = 5000;  // > 0
  double coverage = 1.0;         // (0, 1]
  size_t max_classes = 64;
  size_t max_buckets = 1024;
  uint64_t min_check_every = 8;  // observations between republish checks; >= 1
  uint64_t max_check_every = 256;
  double republish_distance = 0.02;  // total variation distance, 0..1
  bool memory = true;                // classes ask their pods' mean memory; false: none
};

class WorkloadLearner {
 public:
  explicit WorkloadLearner(WorkloadLearnerOptions options = {});

  // One GPU pod seen for the first time: `gpus` GPUs with `milli` of each (0: the node's default
  // share), `cpu_milli` and `memory_bytes` requested. Pods without GPUs are not part of the mix.
  // Returns true when a new mix was published (Published() has it).
  bool Observe(int gpus, int milli, int64_t cpu_milli, int64_t memory_bytes);

  // The mix published last; null before the first.
  const std::shared_ptr<const policies::ObservedWorkload>& Published() const { return published_; }
  // The mix as the histogram stands now (not published).
  policies::ObservedWorkload Current() const;
  uint64_t observations() const { return observations_; }

 private:
  using Key = std::tuple<int, int, int64_t>;  // gpus, milli, cpu
  struct Bucket {
    double weight = 0.0;         // divided by scale_
    double memory_weight = 0.0;  // sum of weight * memory bytes, likewise
  };

  const WorkloadLearnerOptions options_;
  std::map<Key, Bucket> weights_;
  double scale_ = 1.0;  // grows by 2^(1/half-life) per observation
  double growth_ = 1.0;
  uint64_t observations_ = 0;
  uint64_t next_check_;  // the observation count of the next republish check
  uint64_t next_version_ = 1;
  std::shared_ptr<const policies::ObservedWorkload> published_;
};

// Total variation distance between two mixes (0: equal, 1: disjoint). Pure.
double MixDistance(const policies::ObservedWorkload& a, const policies::ObservedWorkload& b);

}  // namespace gputopo::cluster

#endif  // GPUTOPO_CLUSTER_WORKLOAD_LEARNER_H_
