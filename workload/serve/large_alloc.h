// An allocator for a served request's large buffers (its body, its tensors: serve.h, infer_protocol.h,
// batcher.h): a block of kMmapFrom bytes or more is mapped for it alone and unmapped when freed, so a large
// request's memory goes back to the system the moment it is done with. Smaller blocks come from malloc as usual.
// resize() does not zero what it adds: each of these buffers is written whole before it is read.
//
// Why not glibc's own M_MMAP_THRESHOLD: tsum-train keeps freed memory mapped for the model (main.cpp raises the
// threshold to 1 GiB), since a batch's activations mapped and unmapped each time page-fault in again every batch
// (ResNet-50 at batch 16 ran 2.8x slower). Those must stay in the heap; a request's buffers must not, or one 50 MB
// request keeps its memory for good (and malloc_trim would give back the activations' pages with it).
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdlib>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace tsum::workload {

inline constexpr std::size_t kMmapFrom = std::size_t{8} << 20;

template <class T>
struct LargeAllocator {
  using value_type = T;
  LargeAllocator() = default;
  template <class U>
  LargeAllocator(const LargeAllocator<U>&) noexcept {}

  T* allocate(std::size_t n) {
    if (n > static_cast<std::size_t>(-1) / sizeof(T)) throw std::bad_array_new_length();
    const std::size_t bytes = n * sizeof(T);
    void* p = nullptr;
    if (bytes >= kMmapFrom) {
      p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) throw std::bad_alloc();
    } else {
      p = std::malloc(bytes == 0 ? 1 : bytes);
      if (!p) throw std::bad_alloc();
    }
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t n) noexcept {
    const std::size_t bytes = n * sizeof(T);
    if (bytes >= kMmapFrom) {
      ::munmap(p, bytes);
    } else {
      std::free(p);
    }
  }
  // resize() leaves new elements uninitialized (no pass over a buffer about to be written whole); an element given a
  // value is constructed with it.
  template <class U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
  template <class U>
  bool operator==(const LargeAllocator<U>&) const noexcept {
    return true;
  }
};

// A request's floats (its tensor as read, its images as the model reads them).
using Floats = std::vector<float, LargeAllocator<float>>;

}  // namespace tsum::workload
