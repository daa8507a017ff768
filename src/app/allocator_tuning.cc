#include "src/app/allocator_tuning.h"

#include <malloc.h>

namespace gputopo::app {

void TuneAllocator() {
  mallopt(M_MMAP_THRESHOLD, static_cast<int>(kMmapThreshold));
  mallopt(M_TRIM_THRESHOLD, static_cast<int>(kTrimThreshold));
  mallopt(M_TOP_PAD, static_cast<int>(kTopPad));
  mallopt(M_ARENA_MAX, 1);
}

}  // namespace gputopo::app
