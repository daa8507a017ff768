#include "policies/engine/normalize.h"

#include <algorithm>
#include <cmath>
#include <functional>

namespace gputopo::policies {
namespace {

// std::clamp(std::lround(v), 0, 10), inline: a prioritize at 5000 nodes called lround 5000
// times. Exact for every finite v whose lround exists: below 0.5 (negatives included) it is 0,
// from 9.5 on 10, and in between v + 0.5 is either exact or rounds without reaching the next
// integer, so truncating it rounds halves away from zero as lround does. NaN gives 0; so did
// lround's out-of-range result after the clamp, which for +infinity and values beyond LONG_MAX
// gave 0 where this gives 10 (no score component produces them).
int RoundToPriority(double v) {
  if (!(v >= 0.5)) return 0;
  if (v >= 9.5) return 10;
  return static_cast<int>(v + 0.5);
}

}  // namespace

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
    out[i] = RoundToPriority(v);
  }
  return out;
}

}  // namespace gputopo::policies
