// `llmpack bench`'s flags: llama-bench's, spelled as it spells them
// (with_bench_long_names turns its one-dash names into these), and
// llmpack's own measurements.
#include <memory>

#include "bench_flags.h"
#include "cli_common.h"
#include "bench_options.h"
#include "commands.h"
#include "core/thread_placement.h"

namespace llmpack::cli {
namespace {

// What to measure: models, tests, thread counts, repetitions, output.
void add_test_flags(CLI::App* cmd, BenchOptions* o) {
  cmd->add_option("-m,--model", o->models, "Model file (.gguf or llama2.c .bin); repeatable");
  cmd->add_option("--synthetic", o->synthetic,
                  "Random-weight model NAME:TYPE built in memory; repeatable. NAME: stories110m, smollm2-135m, "
                  "qwen2.5-0.5b, qwen3-0.6b, llama-3.2-1b; TYPE: f32, f16, bf16, q8_0, q4_0, q4_k_m, q5_k_m, q3_k_m, "
                  "iq4_xs, iq3_xxs, iq3_s, iq2_xxs, iq2_xs, iq1_m");
  add_list_option(*cmd, "-p,--n-prompt", "-p", o->prompts, 0,
                  "Prompt sizes, comma-separated, each a number or a range (64-512*2, 32-128+32); 0 skips (default "
                  "512)");
  add_list_option(*cmd, "-n,--n-gen", "-n", o->gens, 0, "Generation lengths, comma-separated; 0 skips (default 128)");
  add_list_option(*cmd, "-d,--n-depth", "-d", o->depths, 0,
                  "Tokens of context in the KV cache before each test, comma-separated (default 0); a test at "
                  "depth D is named as llama-bench names it (tg128 @ d4096); the deepest plus the longest test must "
                  "fit the model's context, checked before any test runs");
  add_list_option(*cmd, "-t,--threads", "-t", o->threads, 1,
                  "Thread counts, comma-separated (default: one per performance core)", 1024);
  add_parsed_option(*cmd, "--pg", "-pg", o->prompt_gens, parse_prompt_gen_pair,
                    "-pg PP,TG: a prompt of PP tokens then TG generated ones, timed as one test named ppPP+tgTG "
                    "(llama-bench's -pg; t/s counts both); repeatable")
      ->type_name("PP,TG");
  add_list_option(*cmd, "-b,--batch-size", "-b", o->batches, 1,
                  "Tokens handed over at once, comma-separated (llama-bench's -b): a pp or -pg test sends its prompt "
                  "in pieces of this many tokens, each in calls of -ub tokens (at most -b); each test runs at each "
                  "(default: the whole prompt at once)");
  add_list_option(*cmd, "--ubatch-size", "-ub", o->ubatches, 1,
                  "-ub N: tokens per prefill call, comma-separated (llama-bench's -ub); each pp and -pg test runs at "
                  "each, capped at the model's token bound (default: the whole prompt in one call, up to the bound)");
  cmd->add_option("-r,--repetitions", o->repetitions, "Repetitions of each test (default 5)")
      ->check(CLI::Range(1, 10000));
  cmd->add_option("-o,--output", o->output,
                  "Output format: md, csv, json, jsonl (a JSON record a line, as each test ends) or sql (a table "
                  "`test` and an INSERT a test, for sqlite3) (default md)")
      ->check(CLI::IsMember({"md", "csv", "json", "jsonl", "sql"}));
  cmd->add_option("--output-err", o->output_err,
                  "-oe FORMAT: the records also in this format (md, csv, json, jsonl, sql or none) on stderr, as "
                  "llama-bench's -oe")
      ->check(CLI::IsMember({"md", "csv", "json", "jsonl", "sql", "none"}));
}

// llmpack's own: time to first token, the bounds, profiles, kernel choices.
void add_measurement_flags(CLI::App* cmd, BenchOptions* o) {
  cmd->add_option("--ttft", o->ttft,
                  "Also time the first token of an N-token prompt, batched and token by token")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 20));
  cmd->add_flag("--bandwidth", o->bandwidth,
                "Also measure memory read bandwidth and each model's decode bound (the rate a plain sum reads "
                "its per-token weights at / their bytes), and each tg test as a share of the bound read again just "
                "before each repetition");
  cmd->add_option("--save", o->save_path,
                  "Write the --synthetic model to this GGUF file (to time loading it with -m) and exit");
  cmd->add_flag("--peak", o->peak,
                "Also measure the CPU's fp32 and int8 compute peaks and give prefill's share of the fp32 peak");
  cmd->add_flag("--profile", o->profile,
                "Also give each pp and tg test's time per forward stage (projections, attention, other)");
  cmd->add_option("--kernel_path", o->kernel_path,
                  "Kernel path: scalar, avx2, avx_vnni, avx512, neon, neon_dotprod or neon_i8mm (default: the best "
                  "this CPU supports)");
  cmd->add_option("--avx512_decode", o->avx512_decode,
                  "Decode kernels on the avx512 path: auto (the AVX2 ones for the block types where the CPU "
                  "runs 512-bit vectors as two halves, as Zen 4 does; the codebook types on VBMI wherever the "
                  "CPU has it), on (the AVX-512 ones) or off (the AVX2 ones)");
  cmd->add_option("--float_decode_prefetch", o->float_decode_prefetch,
                  "Bytes ahead that one-token decode of long F16/BF16/F32 rows prefetches each row: auto "
                  "(this CPU's default: 1024 on Zen 5, none elsewhere) or 0 to 65536");
  cmd->add_option("--regroup", o->regroup,
                  "Regroup Q5_0 / Q5_1 matrices at load for the x86 decode kernels: on (default) or off "
                  "(the file's layout)");
  cmd->add_option("--kv_dtype", o->kv_dtype,
                  "KV cache element type: f16 (default, as llama-bench's -ctk f16 -ctv f16), f32 or q8_0");
}

// llama-bench's flags for what llmpack does one way only (its cache type,
// no GPU, its attention, its loading), accepted where they name that way.
void add_llama_bench_flags(CLI::App* cmd, BenchOptions* o) {
  cmd->add_option("--cache-type-k", o->cache_type_k,
                  "-ctk TYPE: llama-bench's name for the keys' type; llmpack's cache has one type for keys and "
                  "values, so -ctk, -ctv and --kv_dtype must agree");
  cmd->add_option("--cache-type-v", o->cache_type_v, "-ctv TYPE: llama-bench's name for the values' type (as -ctk)");
  add_list_option(*cmd, "--n-gpu-layers", "-ngl", o->gpu_layers, 0,
                  "-ngl N: accepted from llama-bench's commands with a notice: llmpack runs every layer on the CPU",
                  1 << 20);
  add_fixed_choice_option(*cmd, "--flash-attn", "-fa", o->flash_attn, {"1", "on", "auto"},
                          "llmpack's attention is always one fused kernel over the KV cache (prefill: blocks of "
                          "keys with a running softmax, as flash attention) and has no other path: give 1, on or auto",
                          "-fa 1|on|auto, comma-separated: accepted from llama-bench's commands: llmpack's attention "
                          "is always one fused kernel (flash attention in prefill); each test runs once a value, "
                          "recorded as flash_attn 1 (1, on) or -1 (auto); 0 or off is refused");
  add_fixed_choice_option(*cmd, "--mmap", "-mmp", o->mmap_values, {"1"},
                          "llmpack always maps the model file (weights are not copied): give 1",
                          "-mmp 1: accepted from llama-bench's commands (llmpack always maps the model file); 0 is "
                          "refused");
  add_fixed_choice_option(*cmd, "--load-mode", "-lm", o->load_modes, {"auto", "mmap"},
                          "llmpack always maps the model file (weights are not copied): give auto or mmap",
                          "-lm auto|mmap, comma-separated: accepted from llama-bench's commands (llmpack always maps "
                          "the model file); each test runs once a value, recorded as load_mode; other modes are "
                          "refused");
}

// llama-bench's thread placement flags (thread_placement.h): lists of masks,
// strictness and poll levels (every test runs at each), and one priority.
void add_placement_flags(CLI::App* cmd, BenchOptions* o) {
  auto* masks = add_parsed_option(*cmd, "-C,--cpu-mask", "-C", o->cpu_masks, parse_cpu_mask,
                    "-C MASK, comma-separated: the CPUs the threads run on, as hexadecimal masks (0x3: CPUs 0 and 1; "
                    "llama-bench's -C); each test runs at each; 0x0 (default): wherever the OS puts them")
      ->delimiter(',')
      ->type_name("MASKS");
  auto* strict = add_list_option(*cmd, "--cpu-strict", "--cpu-strict", o->cpu_strict, 0,
                  "0|1, comma-separated: 1 puts thread i on the i-th CPU of -C's mask alone (round robin; the "
                  "calling thread is thread 0), 0 (default) lets each run on any CPU of the mask",
                  1);
  add_list_option(*cmd, "--poll", "--poll", o->polls, 0,
                  "0-100, comma-separated: how long a waiting thread spins before it sleeps, as llama-bench's "
                  "polling level: 0 sleeps at once, 50 (default) spins llmpack's default 2 ms, 100 twice that",
                  100);
  add_priority_option(*cmd, o->prio,
                      "-1|0|1|2: the threads' priority, as llama-bench's --prio: low, normal (default), medium, high "
                      "(nice 5, unchanged, -5, -10; raising needs CAP_SYS_NICE)");
  add_numa_option(*cmd, o->numa, o->numa_placement, {masks, strict});
}

// How the tests run: progress, warmup, delays, seeds, tests' model sizes.
void add_run_flags(CLI::App* cmd, BenchOptions* o) {
  cmd->add_flag("--progress", o->progress, "Say on stderr what runs next (each test's repetitions)");
  cmd->add_flag("--no-warmup", o->no_warmup,
                "Skip the untimed prefill and decode step before a model's tests (its first repetitions then pay "
                "the page faults of the weights and buffers)");
  cmd->add_option("--delay", o->delay_s, "Seconds to sleep before each test (llama-bench's --delay), to let the "
                                         "CPU cool down")
      ->check(CLI::Range(0.0, 3600.0));
  cmd->add_option("--seed", o->seed, "Seed of the synthetic weights and the random tokens")->check(unsigned_integer());
  cmd->add_option("--synthetic_layers", o->synthetic_layers, "Layers of synthetic models (tests)")
      ->check(CLI::Range(int64_t{0}, int64_t{4096}))
      ->group("");
  cmd->add_option("--bandwidth_mib", o->bandwidth_mib, "MiB of each --bandwidth sum (tests; default 1024)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20))
      ->group("");
  cmd->add_option("--synthetic_vocab", o->synthetic_vocab, "Vocabulary of synthetic models (tests)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 24))
      ->group("");
}

}  // namespace

void register_bench(CLI::App& app, std::function<int()>& action) {
  auto* cmd = app.add_subcommand("bench", "Measure prompt processing and generation speed (llama-bench's flags)");
  auto o = std::make_shared<BenchOptions>();
  add_test_flags(cmd, o.get());
  add_measurement_flags(cmd, o.get());
  add_llama_bench_flags(cmd, o.get());
  add_placement_flags(cmd, o.get());
  add_run_flags(cmd, o.get());
  cmd->callback([&action, o] { action = [o] { return run_bench(*o); }; });
}

}  // namespace llmpack::cli
