// ScoreComponent: one named, pure part of a node's score.
//
// A component rates placing the pod on one candidate GPU set of one node, from 0 (worst) to 10
// (best). The engine asks it about many candidate sets per node, so Score() must be cheap;
// Explain() is asked once, for the chosen set. A preset weighs components into the node score.
//
// Thread safety: implementations are immutable and safe to call concurrently.
#ifndef GPUTOPO_POLICIES_ENGINE_SCORE_COMPONENT_H_
#define GPUTOPO_POLICIES_ENGINE_SCORE_COMPONENT_H_

#include <string>
#include <string_view>

#include "policies/engine/placement_context.h"

namespace gputopo::policies {

inline constexpr double kMaxComponentScore = 10.0;

class ScoreComponent {
 public:
  virtual ~ScoreComponent() = default;
  // Stable name, used in preset files and on /debug.
  virtual std::string_view Name() const = 0;
  // 0..10. `gpus` has ctx.pod.gpus GPUs, all eligible.
  virtual double Score(const PlacementContext& ctx, GpuMask gpus) const = 0;
  // Why Score() gave what it gave, in a few words.
  virtual std::string Explain(const PlacementContext& ctx, GpuMask gpus) const = 0;
};

}  // namespace gputopo::policies

#endif  // GPUTOPO_POLICIES_ENGINE_SCORE_COMPONENT_H_
