#include "policies/engine/normalize.h"

#include <algorithm>
#include <cmath>
#include <functional>

namespace gputopo::policies {

std::vector<int> NormalizeScores(const std::vector<std::optional<double>>& weighted,
                                 ScoreNormalization mode) {
  std::vector<int> out(weighted.size(), 0);
  if (mode == ScoreNormalization::kRank) {
    // The 11 best distinct scores, best first.
    std::vector<double> levels;
    for (const auto& w : weighted) {
      if (!w || std::isnan(*w)) continue;
      if (levels.size() == 11 && *w < levels.back()) continue;  // below every level kept
      auto at = std::lower_bound(levels.begin(), levels.end(), *w, std::greater<>());
      if (at != levels.end() && *at == *w) continue;
      levels.insert(at, *w);
      if (levels.size() > 11) levels.pop_back();
    }
    for (size_t i = 0; i < weighted.size(); ++i) {
      if (!weighted[i] || std::isnan(*weighted[i])) continue;
      const auto at =
          std::lower_bound(levels.begin(), levels.end(), *weighted[i], std::greater<>());
      out[i] = 10 - static_cast<int>(std::min<ptrdiff_t>(at - levels.begin(), 10));
    }
    return out;
  }
  double lo = 0.0;
  double hi = 0.0;
  bool any = false;
  for (const auto& w : weighted) {
    if (!w) continue;
    lo = any ? std::min(lo, *w) : *w;
    hi = any ? std::max(hi, *w) : *w;
    any = true;
  }
  for (size_t i = 0; i < weighted.size(); ++i) {
    if (!weighted[i]) continue;
    double v = *weighted[i];
    if (mode == ScoreNormalization::kMinMax) v = hi > lo ? 10.0 * (v - lo) / (hi - lo) : 10.0;
    out[i] = static_cast<int>(std::clamp(std::lround(v), 0L, 10L));
  }
  return out;
}

}  // namespace gputopo::policies
