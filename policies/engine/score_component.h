// ScoreComponent: one named, pure part of a node's score.
//
// A component rates placing the pod on one candidate GPU set of one node, from 0 (worst) to 10
// (best). The engine first Prepare()s a component for one (pod, node) - the place to compute
// what every candidate set shares, like kube-scheduler's PreScore - and then asks the prepared
// scorer about many candidate sets, so PreparedScore::Score() must be cheap. Explain() is asked
// once, for the chosen set. A preset weighs components into the node score. Prepared scorers
// live in the memory the engine hands PrepareIn(): one scratch arena per evaluation.
//
// Thread safety: components are immutable and safe to share; a PreparedScore belongs to one
// evaluation on one thread.
#ifndef GPUTOPO_POLICIES_ENGINE_SCORE_COMPONENT_H_
#define GPUTOPO_POLICIES_ENGINE_SCORE_COMPONENT_H_

#include <cstddef>
#include <memory>
#include <memory_resource>
#include <new>
#include <string>
#include <string_view>
#include <utility>

#include "policies/engine/placement_context.h"

namespace gputopo::policies {

inline constexpr double kMaxComponentScore = 10.0;

class PreparedScore {
 public:
  virtual ~PreparedScore() = default;
  // 0..10. `gpus` has ctx.pod.gpus GPUs, all eligible.
  virtual double Score(GpuMask gpus) const = 0;
  // Why Score() gave what it gave, in a few words.
  virtual std::string Explain(GpuMask gpus) const = 0;
  // At least Score(gpus), and cheaper to know: the search skips a set whose weighted bound
  // cannot reach the best set found so far. The default, the top score, bounds any scorer.
  virtual double Bound(GpuMask /*gpus*/) const { return kMaxComponentScore; }
  // True when Bound(gpus) is Score(gpus) itself: a search that bounded a set does not ask again.
  virtual bool BoundIsScore() const { return false; }
};

// Destroys a PreparedScore and gives its bytes back to the memory they came from (for an
// evaluation's scratch arena, giving back is free: the arena is dropped whole).
class PreparedScoreDeleter {
 public:
  PreparedScoreDeleter() = default;
  PreparedScoreDeleter(std::pmr::memory_resource* memory, size_t bytes, size_t alignment)
      : memory_(memory), bytes_(bytes), alignment_(alignment) {}
  void operator()(PreparedScore* scorer) const {
    scorer->~PreparedScore();
    memory_->deallocate(scorer, bytes_, alignment_);
  }

 private:
  std::pmr::memory_resource* memory_ = nullptr;
  size_t bytes_ = 0;
  size_t alignment_ = 0;
};
using PreparedScorePtr = std::unique_ptr<PreparedScore, PreparedScoreDeleter>;

// Makes a T (a PreparedScore) in `memory`.
template <typename T, typename... Args>
PreparedScorePtr MakePreparedScore(std::pmr::memory_resource& memory, Args&&... args) {
  void* bytes = memory.allocate(sizeof(T), alignof(T));
  try {
    T* scorer = new (bytes) T(std::forward<Args>(args)...);
    return PreparedScorePtr(scorer, PreparedScoreDeleter(&memory, sizeof(T), alignof(T)));
  } catch (...) {
    memory.deallocate(bytes, sizeof(T), alignof(T));
    throw;
  }
}

class ScoreComponent {
 public:
  virtual ~ScoreComponent() = default;
  // Stable name, used in preset files and on /debug.
  virtual std::string_view Name() const = 0;
  // A scorer for the pod and node of `ctx`; `ctx` must outlive it. The scorer, and whatever it
  // allocates, lives in `memory` (which must outlive it too): an evaluation prepares every
  // component of its preset for every node it evaluates, and gives them one scratch arena so
  // that preparing allocates nothing from the heap.
  virtual PreparedScorePtr PrepareIn(const PlacementContext& ctx,
                                     std::pmr::memory_resource& memory) const = 0;
  // The same, on the heap (tests, one-off explanations).
  PreparedScorePtr Prepare(const PlacementContext& ctx) const {
    return PrepareIn(ctx, *std::pmr::new_delete_resource());
  }
  // Whether the component has something to say about a pod that requests no GPU (it is then
  // asked about the empty set). The others give such a pod the top score on every node.
  virtual bool ScoresGpuLessPods() const { return false; }
  // Whether scores depend on the pod's CPU and memory requests and the node's free CPU and
  // memory (caches must then tell pods apart by their requests).
  virtual bool ReadsHostResources() const { return false; }
};

// A PreparedScore that needs nothing precomputed: forwards to two functions of (ctx, gpus). Such
// a score is cheap (a few counts), so it is its own bound.
template <typename ScoreFn, typename ExplainFn>
class SimplePreparedScore final : public PreparedScore {
 public:
  SimplePreparedScore(const PlacementContext& ctx, ScoreFn score, ExplainFn explain)
      : ctx_(ctx), score_(std::move(score)), explain_(std::move(explain)) {}
  double Score(GpuMask gpus) const override { return score_(ctx_, gpus); }
  double Bound(GpuMask gpus) const override { return score_(ctx_, gpus); }
  bool BoundIsScore() const override { return true; }
  std::string Explain(GpuMask gpus) const override { return explain_(ctx_, gpus); }

 private:
  const PlacementContext& ctx_;
  ScoreFn score_;
  ExplainFn explain_;
};

template <typename ScoreFn, typename ExplainFn>
PreparedScorePtr MakeSimplePreparedScore(const PlacementContext& ctx,
                                         std::pmr::memory_resource& memory, ScoreFn score,
                                         ExplainFn explain) {
  return MakePreparedScore<SimplePreparedScore<ScoreFn, ExplainFn>>(memory, ctx, std::move(score),
                                                                    std::move(explain));
}

}  // namespace gputopo::policies

#endif  // GPUTOPO_POLICIES_ENGINE_SCORE_COMPONENT_H_
