// Buffers that read as zeros without being written at allocation.
//
// A std::vector<float>(n) writes n zeros, so every page of it is faulted in
// (and counted in RSS) when it is sized. The forward pass's activation buffers
// are sized for its largest chunk (B tokens) at load, but a decode step or a
// short prompt uses a few rows of them. ZeroPageAllocator takes its memory
// from calloc, which hands large blocks over as fresh zero pages from the
// kernel without touching them, and its construct() leaves a new element
// default-initialised (for float and uint8_t: unwritten), so resize() costs no
// page faults: a page is faulted in when first used. The contents are the
// same zeros either way.
//
// populate_for_writing() is for the opposite case, a buffer that is about to
// be written all over: its pages are mapped in by one system call instead of
// one fault each.
#pragma once

#include <sys/mman.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace llmpack {

// How many blocks ZeroPageAllocator has taken from calloc, process-wide: the
// tests that forward allocates nothing (P6) count these with operator new's.
inline std::atomic<int64_t> g_zero_page_allocations{0};

template <class T>
struct ZeroPageAllocator {
  static_assert(std::is_trivially_default_constructible_v<T>, "zero pages are only a valid T when T is trivial");
  using value_type = T;
  ZeroPageAllocator() = default;
  template <class U>
  explicit ZeroPageAllocator(const ZeroPageAllocator<U>&) noexcept {}

  T* allocate(std::size_t n) {
    void* p = std::calloc(n == 0 ? 1 : n, sizeof(T));
    if (p == nullptr) throw std::bad_alloc();
    g_zero_page_allocations.fetch_add(1, std::memory_order_relaxed);
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t) noexcept { std::free(p); }
  // resize(): the element is already zero (calloc), so nothing is written.
  template <class U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
  template <class U>
  bool operator==(const ZeroPageAllocator<U>&) const noexcept {
    return true;
  }
};

// Maps in, in one system call, the pages of [p, p + bytes) that lie wholly
// inside it, for a buffer about to be written all over (a hash table being
// filled, a string table being copied). A page that is first written takes a
// fault each; on the VMs of docs/PERFORMANCE.md section 21 that is about
// 10 us a page, against about 4 us populated (MADV_POPULATE_WRITE, Linux
// 5.14). Does nothing where the kernel lacks it or the range is under a page;
// the pages stay in RSS either way, as the writes would have put them there.
inline void populate_for_writing(void* p, std::size_t bytes) {
#ifdef MADV_POPULATE_WRITE
  constexpr std::uintptr_t kPage = 4096;
  const auto begin = (reinterpret_cast<std::uintptr_t>(p) + kPage - 1) & ~(kPage - 1);
  const auto end = (reinterpret_cast<std::uintptr_t>(p) + bytes) & ~(kPage - 1);
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_WRITE);
#else
  (void)p, (void)bytes;
#endif
}

// A vector whose elements read as zero after its one resize (sizing it
// down and up again would keep the old values: size these once).
template <class T>
using ZeroedVector = std::vector<T, ZeroPageAllocator<T>>;

}  // namespace llmpack
