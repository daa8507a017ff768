// PlainEvaluations: every node evaluated afresh on every call (policies::EvaluateNode); no
// reuse of any kind. The definition of an EvaluationSource's answer; CachedEvaluations is
// tested against it.
//
// Thread safety: thread-safe (stateless).
#ifndef GPUTOPO_EVALUATION_PLAIN_EVALUATIONS_H_
#define GPUTOPO_EVALUATION_PLAIN_EVALUATIONS_H_

#include <memory>

#include "evaluation/evaluation_source.h"

namespace gputopo::evaluation {

class PlainEvaluations final : public EvaluationSource {
 public:
  Evaluations Evaluate(const EvaluationQuery& query) override;
  uint64_t Refresh(const std::shared_ptr<const policies::ClusterSnapshot>& /*snapshot*/) override {
    return 0;
  }
};

}  // namespace gputopo::evaluation

#endif  // GPUTOPO_EVALUATION_PLAIN_EVALUATIONS_H_
