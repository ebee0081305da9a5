// Counts heap allocations while armed, to prove forward allocates nothing (P6).
#include "unit/engine/alloc_counter.h"

#include <cstdlib>
#include <new>

namespace llmpack::testing {
std::atomic<bool> g_count_allocations{false};
std::atomic<int64_t> g_allocations{0};
}  // namespace llmpack::testing

namespace {
void* counted_alloc(std::size_t n) {
  if (llmpack::testing::g_count_allocations.load(std::memory_order_relaxed))
llmpack::testing::g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
}  // namespace

void* operator new(std::size_t n) { return counted_alloc(n); }
void* operator new[](std::size_t n) { return counted_alloc(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
