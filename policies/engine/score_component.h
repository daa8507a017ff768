// ScoreComponent: one named, pure part of a node's score.
//
// A component rates placing the pod on one candidate GPU set of one node, from 0 (worst) to 10
// (best). The engine first Prepare()s a component for one (pod, node) - the place to compute
// what every candidate set shares, like kube-scheduler's PreScore - and then asks the prepared
// scorer about many candidate sets, so PreparedScore::Score() must be cheap. Explain() is asked
// once, for the chosen set. A preset weighs components into the node score.
//
// Thread safety: components are immutable and safe to share; a PreparedScore belongs to one
// evaluation on one thread.
#ifndef GPUTOPO_POLICIES_ENGINE_SCORE_COMPONENT_H_
#define GPUTOPO_POLICIES_ENGINE_SCORE_COMPONENT_H_

#include <memory>
#include <string>
#include <string_view>

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
};

class ScoreComponent {
 public:
  virtual ~ScoreComponent() = default;
  // Stable name, used in preset files and on /debug.
  virtual std::string_view Name() const = 0;
  // A scorer for the pod and node of `ctx`; `ctx` must outlive it.
  virtual std::unique_ptr<PreparedScore> Prepare(const PlacementContext& ctx) const = 0;
  // Whether the component has something to say about a pod that requests no GPU (it is then
  // asked about the empty set). The others give such a pod the top score on every node.
  virtual bool ScoresGpuLessPods() const { return false; }
  // Whether scores depend on the pod's CPU and memory requests and the node's free CPU and
  // memory (caches must then tell pods apart by their requests).
  virtual bool ReadsHostResources() const { return false; }
};

// A PreparedScore that needs nothing precomputed: forwards to two functions of (ctx, gpus).
template <typename ScoreFn, typename ExplainFn>
class SimplePreparedScore final : public PreparedScore {
 public:
  SimplePreparedScore(const PlacementContext& ctx, ScoreFn score, ExplainFn explain)
      : ctx_(ctx), score_(std::move(score)), explain_(std::move(explain)) {}
  double Score(GpuMask gpus) const override { return score_(ctx_, gpus); }
  std::string Explain(GpuMask gpus) const override { return explain_(ctx_, gpus); }

 private:
  const PlacementContext& ctx_;
  ScoreFn score_;
  ExplainFn explain_;
};

template <typename ScoreFn, typename ExplainFn>
std::unique_ptr<PreparedScore> MakeSimplePreparedScore(const PlacementContext& ctx, ScoreFn score,
                                                       ExplainFn explain) {
  return std::make_unique<SimplePreparedScore<ScoreFn, ExplainFn>>(ctx, std::move(score),
                                                                   std::move(explain));
}

}  // namespace gputopo::policies

#endif  // GPUTOPO_POLICIES_ENGINE_SCORE_COMPONENT_H_
