// Sums of resource amounts that saturate instead of wrapping.
//
// Pod requests are decoded from the network and summed per pod and per node: a sum that wrapped
// could come out small or negative, and a pod or a node would seem to need nothing.
//
// Thread safety: pure functions.
#ifndef GPUTOPO_SATURATING_H_
#define GPUTOPO_SATURATING_H_

#include <cstdint>
#include <limits>

namespace gputopo {

// a + b for amounts that are never negative, at most INT64_MAX.
inline int64_t SaturatingAdd(int64_t a, int64_t b) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  return b > 0 && a > kMax - b ? kMax : a + b;
}

}  // namespace gputopo

#endif  // GPUTOPO_SATURATING_H_
