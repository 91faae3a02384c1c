// Giving freed memory back to the system after a request that needed much of it for a moment.
//
// A plan reads up to 1,000 samples of each config and predicts every offer: tens of megabytes at 100,000 runs, all
// freed when it is answered. glibc keeps what was freed for the next allocation, so without this the daemon's RSS
// stays at the largest plan it ever made (20 MB at start, 49 MB after one plan at 100,000 runs; bench/scale.sh).
// malloc_trim(0) returns the free pages, wherever they are in the heap, in a millisecond or two.
#pragma once

#include <malloc.h>

namespace tsum {

// Declared first in a scope, so that it is destroyed last: trims once everything else there has been freed.
struct GiveBackMemory {
  GiveBackMemory() = default;
  GiveBackMemory(const GiveBackMemory&) = delete;
  GiveBackMemory& operator=(const GiveBackMemory&) = delete;
  ~GiveBackMemory() { malloc_trim(0); }
};

}  // namespace tsum
