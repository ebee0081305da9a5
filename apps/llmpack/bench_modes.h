// The flags whose every value llama-bench runs each test at, besides the
// test sizes and thread counts: -fa, -lm, -C, --cpu-strict and --poll. Each
// combination is a mode; the tests of a model run once a mode. --numa (one
// strategy, as llama-bench takes it) stands in for -C and --cpu-strict.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "bench_options.h"
#include "core/status.h"
#include "core/thread_pool.h"

namespace llmpack::cli {

struct BenchMode {
  int flash_attn = -1;            // 1 on, -1 auto (llama-bench's numbers; the attention is the same)
  std::string load_mode = "auto";
  ThreadPlacement placement;      // -C's CPUs (empty: the OS places the threads) and --cpu-strict, or --numa's
  std::optional<NumaStrategy> numa;  // --numa, when it placed them
  int poll = 50;                  // --poll, 0-100
};

// Every combination of the values given (a flag not given counts as its
// default), in the order the flags are listed above.
std::vector<BenchMode> bench_modes(const BenchOptions& o);

// Places the pool's threads and sets their spin for a mode (the calling
// thread is the pool's thread 0 and is placed too).
Status apply_mode(const BenchMode& mode, ThreadPool& pool);

// "-C 0x3 --cpu-strict 1: thread 0 on CPU 0, thread 1 on CPU 1" (or "--numa
// distribute: ..."): where the pool's threads are, read back from the kernel
// after apply_mode.
std::string placement_note(const BenchMode& mode, ThreadPool& pool);

// Every -C mask lies within the CPUs this process may run on: checked before
// any test runs; the error names the mask and the CPUs outside it.
Status check_cpu_masks(const BenchOptions& o);

}  // namespace llmpack::cli
