// Pieces shared by the llmpack subcommands: model-loading options declared
// once, and the one-line error convention (stderr, non-zero exit).
#pragma once

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/numa.h"
#include "core/status.h"
#include "core/thread_placement.h"
#include "engine/llama_program.h"
#include "runner/generation_config.h"

namespace llmpack::cli {

// Options every subcommand that loads a model shares.
struct ModelOptions {
  std::string model_path;
  std::string tokenizer_path;
  std::optional<int> cpu_threads;       // unset: default_threads() (core/cpu_topology.h)
  int64_t max_seq_len = 0;              // plain GGUFs: S = B (0: 512)
  int64_t max_context_len = 4096;       // plain GGUFs: cap on C
  // Thread placement, as llama-cli's flags (ProgramOptions::placement):
  std::vector<int> cpus;                // -C and --cpu-range together; empty: the OS places the threads
  int cpu_strict = 0;                   // --cpu-strict: thread i on the i-th CPU alone
  std::optional<int> poll;              // --poll 0-100 (unset: the pool's default spin, level 50)
  int prio = 0;                         // --prio -1..2
  std::optional<NumaStrategy> numa;     // --numa (instead of -C, --cpu-range, --cpu-strict)
  ThreadPlacement numa_placement;       // its placement on this machine, found when the flag is read
};

void add_model_options(CLI::App& app, ModelOptions& options);

// A check for unsigned options: digits only ("-5" is refused, not wrapped).
CLI::Validator unsigned_integer();

// The sampler chain's flags (--temperature, --seed, --top_k, --top_p, --min_p,
// --repeat_penalty), shared by run and chat. An unset seed means one from the clock.
void add_sampling_options(CLI::App& app, GenerationConfig& config);

// ProgramOptions from the flags; logs a notice when threads exceed the cores.
ProgramOptions program_options(const ModelOptions& options);

// --prio as llama.cpp's tools take it: -1 low, 0 normal, 1 medium, 2 high
// (set_this_thread_priority); 3 (realtime) is refused with the reason.
CLI::Option* add_priority_option(CLI::App& app, int& level, const std::string& help);

// --numa distribute|isolate|numactl, as llama.cpp's tools take it (core/numa.h):
// sets `strategy` and its placement on this machine as the flag is read (an
// error there is the flag's). Excludes the given placement flags.
CLI::Option* add_numa_option(CLI::App& app, std::optional<NumaStrategy>& strategy, ThreadPlacement& placement,
                             const std::vector<CLI::Option*>& excluded);

// --poll's level as the pool's spin before a waiting thread blocks: 0 blocks
// at once, 50 (llama.cpp's default) is llmpack's default spin
// (ThreadPool::kDefaultSpin), 100 twice that; in proportion between.
std::chrono::microseconds spin_for_poll(int poll);

// The flags a placement came from, for notes: "--numa distribute", or
// "-C 0x3 --cpu-strict 1" (the mask's CPUs, whichever flags named them).
std::string placement_flags_text(const std::optional<NumaStrategy>& numa, const ThreadPlacement& placement);

// "thread 0 on CPU 0, thread 1 on CPUs 0-1": where each of the pool's
// threads may run, read back from the kernel.
std::string thread_cpus_text(ThreadPool& pool);

// A note on stderr with where the program's threads run, when `options`
// (from program_options(flags)) placed them, so a user sees what -C,
// --cpu-strict or --numa did. (After placement the calling thread's own CPUs
// are the placed ones: usable_cpu_list() no longer names the process's.)
void note_thread_placement(LlamaProgram& program, const ModelOptions& flags, const ProgramOptions& options);

// The notice for a --cpu_threads above the CPUs this process may run on, or
// above its cgroup's CPU quota (accepted: the user may know better).
void note_threads_beyond_cpus(int threads);

// --chat_template for chat and chat-template: a built-in template's source
// for a built-in name, else the text of the file it names; an error when it
// is neither.
Result<std::string> chat_template_from_option(const std::string& name_or_path);

// Prints "llmpack: <message>" on stderr and returns the exit code 1.
int fail(const Status& status);
int fail(const std::string& message);

// The running line llama-perplexity and llama-imatrix print, "[1]x,[2]y,...",
// a value after each window (on stdout, flushed).
std::function<void(int64_t, double)> running_line(int decimals);
// A failure after the running line started: the line ends first.
int fail_after_running_line(const Status& status);

// Logs from the library go to stderr, prefixed with their level.
LogSink stderr_log_sink();

// --kv_dtype for run and perplexity: the element type of the program's own
// KV cache (ProgramOptions::kv_dtype; f16 unless the flag says otherwise).
// Returns the option, so a command can tell whether the user gave it.
CLI::Option* add_kv_dtype_option(CLI::App& app, std::string& kv_dtype);
// Parses --kv_dtype into `options`; an unknown name is an error naming the flag.
Status set_kv_dtype(const std::string& kv_dtype, ProgramOptions& options);
// A note on stderr with the cache's type and its size at full context (for
// a --kv_dtype the user gave).
void note_kv_cache(const LlamaProgram& program);

// The package of -m loaded to run text in windows of `context` tokens
// (perplexity, imatrix): a plain GGUF gets S and C of at least `context`, so
// forward takes a whole window, and every row of logits; --kv_dtype applied
// (noted when `kv_dtype_given`), the thread placement noted. `*options` gets
// the options it was loaded with (a second package loads alike).
Result<LoadedPackage> load_for_windows(ModelOptions& model, int64_t context, const std::string& kv_dtype,
                                       bool kv_dtype_given, ProgramOptions* options);

}  // namespace llmpack::cli
