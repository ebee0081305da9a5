// Memory read bandwidth, the ceiling of decode speed: generating a token
// reads every weight once, so tg tokens/s <= bandwidth / weight bytes.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace llmpack::cli {

// Sums a `bytes`-long array (touched first) with `threads` threads, each its
// own slice; returns the best of `passes` in bytes per second.
double measure_read_bandwidth(uint64_t bytes, int threads, int passes);

// A byte range read in full for every generated token (one weight matrix).
struct ReadRange {
  const void* data;
  uint64_t bytes;
};

// Reads every range in turn with `threads` threads (each its share of every
// range, like decode's row split, but with no barrier between ranges), as
// many times over as it takes to read at least `bytes_per_pass` in a pass,
// and returns the best of `passes` in bytes per second. Over a model's own
// weights this is the read rate decode streams them at, at best: the same
// bytes, through the same page mappings (2 MiB or 4 KiB; on this project's VM
// that alone moved the rate by about a tenth, docs/PERFORMANCE.md section 15).
// `thread_cpus` (optional): thread t runs on thread_cpus[t % size], as the
// placed threads of the tests it is a bound for (bench -C); else the threads
// run where the calling thread may.
double measure_ranges_read_rate(std::span<const ReadRange> ranges, int threads, int passes,
                                uint64_t bytes_per_pass, const std::vector<std::vector<int>>* thread_cpus = nullptr);

}  // namespace llmpack::cli
