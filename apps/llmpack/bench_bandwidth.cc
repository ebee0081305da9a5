#include "bench_bandwidth.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <thread>

#include "core/thread_placement.h"
#include <vector>

namespace llmpack::cli {
namespace {

// Eight independent accumulators keep the adds off the critical path, so the
// loop waits on memory, not on itself.
uint64_t sum_slice(const uint64_t* p, uint64_t n) {
  uint64_t s[8] = {};
  uint64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) s[k] += p[i + k];
  for (; i < n; ++i) s[0] += p[i];
  uint64_t total = 0;
  for (uint64_t v : s) total += v;
  return total;
}

// Sums the 8-byte words of [p, p + bytes) that lie wholly inside it (a
// range may start at any byte: llama2.c weights follow a 28-byte header).
uint64_t sum_bytes(const uint8_t* p, uint64_t bytes) {
  const uint64_t skip = (8 - reinterpret_cast<uintptr_t>(p) % 8) % 8;
  if (bytes <= skip) return 0;
  return sum_slice(reinterpret_cast<const uint64_t*>(p + skip), (bytes - skip) / 8);
}

}  // namespace

double measure_ranges_read_rate(std::span<const ReadRange> ranges, int threads, int passes,
                                uint64_t bytes_per_pass, const std::vector<std::vector<int>>* thread_cpus) {
  threads = std::max(1, threads);
  uint64_t once = 0;
  for (const auto& r : ranges) once += r.bytes;
  if (once == 0) return 0;
  const uint64_t times = std::max<uint64_t>(1, (bytes_per_pass + once - 1) / once);
  const uint64_t total = once * times;
  double best = 0;
  std::vector<uint64_t> sums(static_cast<size_t>(threads));
  for (int pass = 0; pass < passes; ++pass) {
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
      workers.emplace_back([&, t] {
        if (thread_cpus && !thread_cpus->empty())
          (void)set_thread_cpus(this_thread_id(), (*thread_cpus)[static_cast<size_t>(t) % thread_cpus->size()]);
        uint64_t sum = 0;
        for (uint64_t k = 0; k < times; ++k)
          for (const auto& r : ranges) {
            // this thread's share, split at 64-byte lines as decode splits rows
            const uint64_t lines = (r.bytes + 63) / 64, per = (lines + threads - 1) / threads;
            const uint64_t begin = std::min(r.bytes, per * 64 * static_cast<uint64_t>(t));
            const uint64_t end = std::min(r.bytes, begin + per * 64);
            sum += sum_bytes(static_cast<const uint8_t*>(r.data) + begin, end - begin);
          }
        sums[t] = sum;
      });
    }
    for (auto& w : workers) w.join();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    volatile uint64_t sink = 0;  // the sums are used, so the loads stay
    for (uint64_t v : sums) sink = sink + v;
    best = std::max(best, static_cast<double>(total) / s);
  }
  return best;
}

double measure_read_bandwidth(uint64_t bytes, int threads, int passes) {
  const uint64_t n = bytes / sizeof(uint64_t);
  std::unique_ptr<uint64_t[]> data(new uint64_t[n]);
  for (uint64_t i = 0; i < n; ++i) data[i] = i;  // touch every page before timing
  const ReadRange all{data.get(), n * sizeof(uint64_t)};
  return measure_ranges_read_rate({&all, 1}, threads, passes, all.bytes);
}

}  // namespace llmpack::cli
