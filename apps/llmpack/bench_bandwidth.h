// Memory read bandwidth, the ceiling of decode speed: generating a token
// reads every weight once, so tg tokens/s <= bandwidth / weight bytes.
#pragma once

#include <cstdint>

namespace llmpack::cli {

// Sums a `bytes`-long array (touched first) with `threads` threads, each its
// own slice; returns the best of `passes` in bytes per second.
double measure_read_bandwidth(uint64_t bytes, int threads, int passes);

}  // namespace llmpack::cli
