// Copying many short strings (node names, a few dozen bytes each) without a call per string.
//
// A request names up to every node, and some steps copy every name once (a reply's hosts, the
// names a filter keeps for its pod's prioritize): thousands of calls to memcpy, each costing more
// than the copy, add up to tens of microseconds a request.
//
// Thread safety: pure functions.
#ifndef GPUTOPO_SHORT_COPY_H_
#define GPUTOPO_SHORT_COPY_H_

#include <cstddef>
#include <cstring>
#include <string_view>

namespace gputopo {

// Copies `text` to `to` (room for text.size() bytes) and returns the end of the copy. Up to 32
// bytes are copied as two overlapping fixed-size moves, inline; longer texts through memcpy.
[[gnu::always_inline]] inline char* CopyShort(char* to, std::string_view text) {
  const char* from = text.data();
  const size_t n = text.size();
  if (n >= 16 && n <= 32) {
    std::memcpy(to, from, 16);
    std::memcpy(to + n - 16, from + n - 16, 16);
  } else if (n >= 8 && n < 16) {
    std::memcpy(to, from, 8);
    std::memcpy(to + n - 8, from + n - 8, 8);
  } else if (n > 32) {
    std::memcpy(to, from, n);
  } else {
    for (size_t i = 0; i < n; ++i) to[i] = from[i];
  }
  return to + n;
}

}  // namespace gputopo

#endif  // GPUTOPO_SHORT_COPY_H_
