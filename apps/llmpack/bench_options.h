// The options of `llmpack bench` (bench_cli.cc declares them as flags) and
// the command that runs them (cmd_bench.cc).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench_lists.h"
#include "core/numa.h"
#include "core/thread_placement.h"

namespace llmpack::cli {

struct BenchOptions {
  std::vector<std::string> models;
  std::vector<std::string> synthetic;
  std::vector<int64_t> prompts = {512};
  std::vector<int64_t> gens = {128};
  std::vector<int64_t> depths = {0};
  std::vector<PromptGenPair> prompt_gens;  // -pg
  std::vector<int64_t> batches;            // -b; empty: the whole prompt handed over at once
  std::vector<int64_t> ubatches;           // -ub; empty: one chunk of up to B tokens
  std::vector<int64_t> threads;
  int repetitions = 5;
  std::string output = "md";
  std::string output_err;  // -oe: the records again, in this format, on stderr
  int64_t ttft = 0;
  int64_t synthetic_layers = 0;
  int64_t synthetic_vocab = 0;
  uint64_t seed = 1;
  bool bandwidth = false;
  int64_t bandwidth_mib = 1024;  // --bandwidth's sums (tests make them smaller)
  std::string save_path;
  std::string kernel_path;  // empty: the best the CPU supports
  std::string avx512_decode = "auto";
  std::string float_decode_prefetch = "auto";
  std::string regroup = "on";
  std::string kv_dtype;           // --kv_dtype; empty: -ctk / -ctv, else f16
  std::string cache_type_k, cache_type_v;  // -ctk, -ctv
  std::vector<int64_t> gpu_layers;         // -ngl: accepted with a notice
  std::vector<std::string> flash_attn;     // -fa 1|on|auto; empty: auto
  std::vector<std::string> load_modes;     // -lm auto|mmap; empty: auto
  std::vector<std::string> mmap_values;    // -mmp 1 (older llama-bench's; no field of its own here)
  std::vector<std::vector<int>> cpu_masks;  // -C: each mask's CPUs; empty: 0x0, the OS places threads
  std::vector<int64_t> cpu_strict;          // --cpu-strict 0|1; empty: 0
  std::vector<int64_t> polls;               // --poll 0-100; empty: 50
  int prio = 0;                             // --prio -1..2 (3, realtime, is refused)
  std::optional<NumaStrategy> numa;         // --numa (instead of -C and --cpu-strict)
  ThreadPlacement numa_placement;           // its placement on this machine
  bool peak = false;
  bool profile = false;
  bool progress = false;
  bool no_warmup = false;
  double delay_s = 0;  // --delay: seconds of sleep before each test
};

// Measures what `o` asks for and prints the records; the exit status.
int run_bench(const BenchOptions& o);

}  // namespace llmpack::cli
