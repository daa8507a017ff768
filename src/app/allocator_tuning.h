// glibc malloc settings for gputopo's processes, and for the benchmarks that serve in process
// (so that they measure the allocator that runs).
//
// - Large buffers stay on the heap: glibc's default mmap threshold would turn the request path's
//   few large buffers (node lists, replies: hundreds of KiB at thousands of nodes) into an mmap,
//   page faults and a munmap per request.
// - One arena. A glibc thread arena grows its heap page by page as allocations need it, with an
//   mprotect system call per growth: in one latency_extender run at 5000 nodes, 15,700 of them,
//   about 150 per new pod shape on the request thread alone, more on the evaluation helpers and
//   the background refresh. The main arena grows with brk, kTopPad at a time. With glibc's
//   arenas (4, as before, or its default of 8 per core), the first steady cycles after new pod
//   shapes (while the background refresh fills their tables) took 2-5 ms instead of under 1, and
//   the slow tail of the rest grew too. The price: one lock for every thread's allocations. In
//   one series (settings switched by GLIBC_TUNABLES) a steady cycle's median was 3-14% slower in
//   three of four paired runs and a new pod shape's 14-38%; built binaries side by side showed
//   neither (bench/HISTORY.md, 2026-12-07).
// - Freed memory goes back only past kTrimThreshold on its own; after a burst of large bodies the
//   server calls malloc_trim (ServerOptions::release_memory), which returns the pad as well.
//
// Call once, in main, before any thread starts.
#ifndef GPUTOPO_SRC_APP_ALLOCATOR_TUNING_H_
#define GPUTOPO_SRC_APP_ALLOCATOR_TUNING_H_

#include <cstddef>

namespace gputopo::app {

inline constexpr size_t kMmapThreshold = size_t{64} << 20;
inline constexpr size_t kTrimThreshold = size_t{128} << 20;
inline constexpr size_t kTopPad = size_t{64} << 20;  // address space; pages count once touched

void TuneAllocator();

}  // namespace gputopo::app

#endif  // GPUTOPO_SRC_APP_ALLOCATOR_TUNING_H_
