// llama-bench's list syntax for the numeric flags of `llmpack bench` (-p, -n,
// -d, -t, -ub): comma-separated items, each a number or a range, so scripts
// written for llama-bench pass unchanged:
//   512            one value
//   128-512        every integer from 128 to 512
//   128-512+128    128, 256, 384, 512 (a step added)
//   1-512*2        1, 2, 4, ..., 512 (a factor multiplied)
// Also the aliases llama-bench spells with one dash and several letters
// (-pg, -ub, -ctk, -ctv, -ngl), which the command-line parser reads only in
// their long forms.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace llmpack::cli {

// Expands one comma-separated list; every value must lie in [min, max] and
// the list may hold at most kMaxBenchListValues values (a range such as
// 1-1000000 is refused rather than run for days).
inline constexpr size_t kMaxBenchListValues = 1000;
Result<std::vector<int64_t>> parse_bench_list(const std::string& text, int64_t min, int64_t max);

// -pg PP,TG: a prompt of PP tokens then TG generated ones, timed as one test.
struct PromptGenPair {
  int64_t prompt = 0;
  int64_t gen = 0;
};
Result<PromptGenPair> parse_prompt_gen_pair(const std::string& text);

// The arguments with llama-bench's one-dash names of several letters turned
// into the long names llmpack declares (-pg -> --pg, -ub -> --ubatch-size,
// -ctk -> --cache-type-k, -ctv -> --cache-type-v, -ngl -> --n-gpu-layers,
// -fa -> --flash-attn, -mmp -> --mmap, -lm -> --load-mode, -oe -> --output-err,
// each also in its -name=value form); only when the subcommand (the first
// argument that is not an option) is `bench`, and only whole arguments.
std::vector<std::string> with_bench_long_names(const std::vector<std::string>& args);

// For a `bench` command line holding a llama-bench flag that llmpack does not
// take (-sm, -hf, ...): one line that names it and says
// why; "" when there is none.
std::string llama_bench_flag_not_taken(const std::vector<std::string>& args);

}  // namespace llmpack::cli
