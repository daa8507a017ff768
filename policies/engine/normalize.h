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
// Thread safety: pure functions.
#ifndef GPUTOPO_POLICIES_ENGINE_NORMALIZE_H_
#define GPUTOPO_POLICIES_ENGINE_NORMALIZE_H_

#include <cstddef>
#include <cstdint>
#include <functional>
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

// --filter-decides: the one candidate a filter passes. `input_at(i)` is candidate i's
// NormalizationInput, nullopt where it does not fit; the highest wins, so the node is one that
// prioritize would give its top priority. Ties go to the smallest `tie_key(i)`, asked only for
// candidates tied at the top. nullopt when none of the `count` fits.
template <class InputAt, class TieKey>
std::optional<size_t> DecidedCandidate(size_t count, InputAt input_at, TieKey tie_key) {
  size_t best = count;  // none yet
  double best_input = 0;
  bool tie_known = false;  // best_tie holds tie_key(best), from best's first tie on
  size_t best_tie = 0;
  for (size_t i = 0; i < count; ++i) {
    const std::optional<double> input = input_at(i);
    if (!input.has_value() || (best < count && *input < best_input)) continue;
    if (best < count && *input == best_input) {
      if (!tie_known) best_tie = tie_key(best);
      tie_known = true;
      const size_t tie = tie_key(i);
      if (tie >= best_tie) continue;
      best_tie = tie;
    } else {
      tie_known = false;
    }
    best = i;
    best_input = *input;
  }
  return best < count ? std::optional<size_t>(best) : std::nullopt;
}

// The tie key --filter-decides uses: a hash of the pod's uid and the node's name, so that pods
// spread over equal nodes as kube-scheduler's random choice among equal scores spreads them,
// and a pod's choice does not depend on the order of the candidates.
inline size_t FilterDecidesTieKey(std::string_view pod_uid, std::string_view node_name) {
  const std::hash<std::string_view> hash;
  return hash(node_name) ^ (hash(pod_uid) * 0x9e3779b97f4a7c15ULL);
}

// One priority per score; nullopt scores (nodes that do not fit) get 0 and do not count for
// min and max.
std::vector<int> NormalizeScores(const std::vector<std::optional<double>>& weighted,
                                 ScoreNormalization mode);

}  // namespace gputopo::policies

#endif  // GPUTOPO_POLICIES_ENGINE_NORMALIZE_H_
