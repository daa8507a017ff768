// Turning weighted node scores (0..10, doubles) into extender priorities (integers 0..10).
//
// kube-scheduler adds the extender's integer score, times its weight, to its own plugins'
// scores; rounding alone would erase differences smaller than half a point between nodes. Like
// kube-scheduler's own NormalizeScore step, min-max normalization stretches the candidates of one
// request over the whole range: the best node gets 10, the worst 0, the rest in proportion.
// Rank normalization keeps only the order, so that the 11 integer levels go where the choice is
// made: the best score gets 10, the next distinct one 9, and so on down to 0. With kube-scheduler's
// own score plugins off (manifests/variants/all-pods), the node kube-scheduler picks is then
// always one of gputopo's best, however close the runners-up are.
//
// Thread safety: pure function.
#ifndef GPUTOPO_POLICIES_ENGINE_NORMALIZE_H_
#define GPUTOPO_POLICIES_ENGINE_NORMALIZE_H_

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "gputopo/enum_names.h"

namespace gputopo::policies {

enum class ScoreNormalization : uint8_t {
  kNone,    // round(weighted)
  kMinMax,  // round(10 * (weighted - min) / (max - min)); 10 for all when max == min
  kRank,    // 10 - (number of distinct better scores), at least 0
};

// A preset's "normalization" values (enum_names.h).
inline constexpr EnumNames<ScoreNormalization, 3> kScoreNormalizationNames = {{
    {ScoreNormalization::kNone, "none"},
    {ScoreNormalization::kMinMax, "minmax"},
    {ScoreNormalization::kRank, "rank"},
}};
inline std::optional<ScoreNormalization> ParseScoreNormalization(std::string_view name) {
  return ValueOf(kScoreNormalizationNames, name);
}
inline std::string_view ScoreNormalizationName(ScoreNormalization mode) {
  return NameOf(kScoreNormalizationNames, mode);
}

// What NormalizeScores orders a fitting node by. Under rank normalization, a node that missed
// the pod's preferred locality target (NodeEvaluation::locality_missed) ranks below every node
// that met it: its score moves below the 0..10 range, keeping its order among such nodes. The
// other modes keep the weighted score: their priorities are added to kube-scheduler's own
// scores, where locality can only ever be a weight.
inline double NormalizationInput(double weighted_score, bool locality_missed,
                                 ScoreNormalization mode) {
  return locality_missed && mode == ScoreNormalization::kRank ? weighted_score - 20.0
                                                              : weighted_score;
}

// One priority per score; nullopt scores (nodes that do not fit) get 0 and do not count for
// min and max.
std::vector<int> NormalizeScores(const std::vector<std::optional<double>>& weighted,
                                 ScoreNormalization mode);

}  // namespace gputopo::policies

#endif  // GPUTOPO_POLICIES_ENGINE_NORMALIZE_H_
