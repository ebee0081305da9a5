#pragma once

#include <atomic>
#include <cstdint>

#include "core/zero_pages.h"

namespace llmpack::testing {
extern std::atomic<bool> g_count_allocations;
extern std::atomic<int64_t> g_allocations;

// Counts operator new calls (on every thread) and ZeroPageAllocator's
// callocs while alive.
class AllocationCounter {
 public:
  AllocationCounter() : zero_pages_at_start_(g_zero_page_allocations.load()) {
    g_allocations = 0;
    g_count_allocations = true;
  }
  ~AllocationCounter() { g_count_allocations = false; }
  int64_t count() const { return g_allocations.load() + g_zero_page_allocations.load() - zero_pages_at_start_; }

 private:
  int64_t zero_pages_at_start_;
};
}  // namespace llmpack::testing
