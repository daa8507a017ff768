#include "topology/combinations.h"

#include <limits>

namespace gputopo::topology {

uint64_t Binomial(int m, int n) {
  if (n < 0 || n > m) return 0;
  if (n > m - n) n = m - n;
  // 128-bit intermediates: result * factor can exceed 64 bits while C(m, n) itself does not.
  __extension__ using Wide = unsigned __int128;
  constexpr Wide kMax = std::numeric_limits<uint64_t>::max();
  Wide result = 1;
  for (int i = 1; i <= n; ++i) {
    result = result * static_cast<Wide>(m - n + i) / static_cast<Wide>(i);  // exact: C(m-n+i, i)
    if (result > kMax) return std::numeric_limits<uint64_t>::max();         // saturate
  }
  return static_cast<uint64_t>(result);
}

}  // namespace gputopo::topology
