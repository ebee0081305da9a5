#pragma once

#include <atomic>
#include <cstdint>

namespace llmpack::testing {
extern std::atomic<bool> g_count_allocations;
extern std::atomic<int64_t> g_allocations;

// Counts operator new calls (on every thread) while alive.
class AllocationCounter {
 public:
  AllocationCounter() {
    g_allocations = 0;
    g_count_allocations = true;
  }
  ~AllocationCounter() { g_count_allocations = false; }
  int64_t count() const { return g_allocations.load(); }
};
}  // namespace llmpack::testing
