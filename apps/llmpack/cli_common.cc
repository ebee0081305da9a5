#include "cli_common.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>

#include "chat/template/chat_template.h"
#include "core/cpu_topology.h"
#include "core/file_text.h"
#include "core/thread_pool.h"

namespace llmpack::cli {

namespace {

// "2-5": CPUs 2 to 5, as llama-cli's --cpu-range; an end left out is the
// first ("-3") or the last ("2-") CPU this process may run on.
std::vector<int> parse_cpu_range(const std::string& text) {
  const size_t dash = text.find('-');
  const auto bound = [&](const std::string& part, int if_empty) {
    if (part.empty()) return if_empty;
    size_t used = 0;
    int value = -1;
    try {
      value = std::stoi(part, &used);
    } catch (...) {
      return -1;
    }
    return used == part.size() ? value : -1;
  };
  int lo = -1, hi = -1;
  if (dash != std::string::npos && text.find('-', dash + 1) == std::string::npos) {
    const std::vector<int> usable = usable_cpu_list();
    lo = bound(text.substr(0, dash), usable.front());
    hi = bound(text.substr(dash + 1), usable.back());
  }
  if (lo < 0 || hi < lo || hi >= 4096)
    throw CLI::ValidationError("--cpu-range", "expected LO-HI with 0 <= LO <= HI < 4096 (\"0-3\"; \"-3\" or \"2-\" "
                                              "leave an end to the CPUs this process may run on), found '" + text +
                                                  "'");
  std::vector<int> cpus;
  for (int cpu = lo; cpu <= hi; ++cpu) cpus.push_back(cpu);
  return cpus;
}

// Adds `more` to the sorted set `cpus` (-C and --cpu-range together name the
// union of their CPUs, as llama-cli's do); CPUs this process may not run on
// are refused by `flag`.
void merge_cpus(std::vector<int>& cpus, const std::vector<int>& more, const std::string& flag) {
  if (auto status = check_cpus_within(more, usable_cpu_list()); !status.ok())
    throw CLI::ValidationError(flag, status.message());
  cpus.insert(cpus.end(), more.begin(), more.end());
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
}

void add_thread_placement_options(CLI::App& app, ModelOptions& o) {
  auto* mask = app.add_option_function<std::string>(
         "-C,--cpu-mask",
         [&o](const std::string& text) {
           auto cpus = parse_cpu_mask(text);
           if (!cpus.ok()) throw CLI::ValidationError("-C", cpus.status().message());
           merge_cpus(o.cpus, *cpus, "-C");
         },
         "The CPUs the threads run on, as a hexadecimal mask (0x3: CPUs 0 and 1; llama-cli's -C); default: wherever "
         "the OS puts them")
      ->type_name("MASK");
  auto* range = app.add_option_function<std::string>(
         "--cpu-range", [&o](const std::string& text) { merge_cpus(o.cpus, parse_cpu_range(text), "--cpu-range"); },
         "The CPUs LO to HI (\"0-3\"; \"2-\": from 2 to the last this process may run on), added to -C's")
      ->type_name("LO-HI");
  auto* strict = app.add_option("--cpu-strict", o.cpu_strict,
                 "1: thread i on the i-th CPU of -C's mask alone (round robin; the calling thread is thread 0; "
                 "without -C, of all the CPUs this process may run on); 0 (default): each on any CPU of the mask")
      ->check(CLI::Range(0, 1));
  app.add_option("--poll", o.poll,
                 "0-100: how long a waiting thread spins before it sleeps: 0 sleeps at once, 50 (default) spins "
                 "llmpack's default 2 ms, 100 twice that")
      ->check(CLI::Range(0, 100));
  add_priority_option(app, o.prio,
                      "-1|0|1|2: the threads' priority: low, normal (default), medium, high (nice 5, unchanged, -5, "
                      "-10; raising needs CAP_SYS_NICE)");
  add_numa_option(app, o.numa, o.numa_placement, {mask, range, strict});
}

// -C and --cpu-range's CPUs with --cpu-strict; a strict placement without a
// mask puts the threads on the CPUs this process may run on, one each.
ThreadPlacement placement_from(const ModelOptions& o) {
  if (o.numa) return o.numa_placement;
  ThreadPlacement placement{o.cpus, o.cpu_strict != 0, {}};
  if (placement.strict && placement.cpus.empty()) placement.cpus = usable_cpu_list();
  return placement;
}

}  // namespace

CLI::Option* add_priority_option(CLI::App& app, int& level_out, const std::string& help) {
  return app
      .add_option_function<int>(
          "--prio",
          [&level_out](int level) {
            if (level == 3)
              throw CLI::ValidationError("--prio", "3 (realtime) is refused: llmpack's waiting threads spin, and a "
                                                   "spinning realtime thread keeps ordinary ones off its CPU");
            if (level < -1 || level > 3)
              throw CLI::ValidationError("--prio", "expected -1 (low), 0 (normal), 1 (medium) or 2 (high), got " +
                                                       std::to_string(level));
            level_out = level;
          },
          help)
      ->type_name("LEVEL");
}

CLI::Option* add_numa_option(CLI::App& app, std::optional<NumaStrategy>& strategy, ThreadPlacement& placement,
                             const std::vector<CLI::Option*>& excluded) {
  auto* option = app.add_option_function<std::string>(
                        "--numa",
                        [&strategy, &placement](const std::string& text) {
                          auto parsed = parse_numa_strategy(text);
                          if (!parsed.ok()) throw CLI::ValidationError("--numa", parsed.status().message());
                          auto placed = this_machine_numa_placement(*parsed);
                          if (!placed.ok()) throw CLI::ValidationError("--numa", placed.status().message());
                          strategy = *parsed;
                          placement = std::move(*placed);
                        },
                        "distribute|isolate|numactl, as llama.cpp's --numa: thread i on the CPUs of NUMA node i mod "
                        "n; every thread on the node the command starts on; or on the CPUs the process was given "
                        "(numactl, taskset). The model's pages go to the node of the thread that first reads them")
                    ->type_name("STRATEGY");
  for (CLI::Option* other : excluded) option->excludes(other);
  return option;
}

std::chrono::microseconds spin_for_poll(int poll) {
  return std::chrono::microseconds(ThreadPool::kDefaultSpin.count() * std::clamp(poll, 0, 100) / 50);
}

std::string placement_flags_text(const std::optional<NumaStrategy>& numa, const ThreadPlacement& placement) {
  if (numa) return std::string("--numa ") + numa_strategy_name(*numa);
  return "-C " + cpu_mask_text(placement.cpus) + " --cpu-strict " + (placement.strict ? "1" : "0");
}

std::string thread_cpus_text(ThreadPool& pool) {
  std::string text;
  const std::vector<std::vector<int>> cpus = pool.thread_cpus_now();
  for (size_t i = 0; i < cpus.size(); ++i)
    text += std::string(i ? ", " : "") + "thread " + std::to_string(i) + " on CPU" +
            (cpus[i].size() == 1 ? " " : "s ") + cpu_list_text(cpus[i]);
  return text;
}

void note_thread_placement(LlamaProgram& program, const ModelOptions& flags, const ProgramOptions& options) {
  const ThreadPlacement& placement = options.placement;
  if (placement.empty()) return;
  std::fprintf(stderr, "llmpack: note: %s: %s\n", placement_flags_text(flags.numa, placement).c_str(),
               thread_cpus_text(program.thread_pool()).c_str());
}

void add_model_options(CLI::App& app, ModelOptions& o) {
  app.add_option("-m,--model_path", o.model_path, "Model: a .gguf package or a llama2.c .bin checkpoint")
      ->required();
  app.add_option("--tokenizer_path", o.tokenizer_path,
                 "Tokenizer file (llama2.c tokenizer.bin or GGUF); overrides the package's");
  app.add_option("-t,--cpu_threads", o.cpu_threads,
                 "Worker threads (default: one per performance core this process may run on)")
      ->check(CLI::Range(1, 1024));
  app.add_option("--max_seq_len", o.max_seq_len,
                 "For packages without llmpack.* keys: tokens per forward call S = B (default 512)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  app.add_option("--max_context_len", o.max_context_len,
                 "For packages without llmpack.* keys: cap on the context C (default 4096)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  add_thread_placement_options(app, o);
}

namespace {

CLI::Validator non_negative_number() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        try {
          if (std::stod(value) >= 0) return "";
        } catch (...) {
        }
        return "expected a number >= 0, found " + value;
      },
      "NUMBER >= 0");
}

}  // namespace

// CLI11 reads "-5" into an unsigned option as 2^64 - 5; a seed is a
// non-negative integer written as one.
CLI::Validator unsigned_integer() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        const bool digits = !value.empty() && value.find_first_not_of("0123456789") == std::string::npos;
        return digits ? "" : "expected a non-negative integer, found " + value;
      },
      "");  // the option's own type name (UINT) says it
}

namespace {
// "ID+BIAS" or "ID-BIAS" (llama.cpp's --logit-bias): BIAS a number, or inf to ban the token.
LogitBias parse_logit_bias(const std::string& text) {
  const size_t sign = text.find_first_of("+-", 1);
  const auto bad = [&](const std::string& why) {
    return CLI::ValidationError("--logit_bias", "'" + text + "': " + why + " (e.g. 15043+1.5, or 15043-inf to ban it)");
  };
  if (sign == std::string::npos) throw bad("expected TOKEN_ID+BIAS or TOKEN_ID-BIAS");
  const std::string id_text = text.substr(0, sign), bias_text = text.substr(sign);
  if (id_text.find_first_not_of("0123456789") != std::string::npos || id_text.size() > 9)
    throw bad("'" + id_text + "' is not a token id");
  LogitBias b;
  b.id = std::stoi(id_text);
  if (bias_text == "-inf") {
    b.bias = -std::numeric_limits<float>::infinity();
    return b;
  }
  char* end = nullptr;
  b.bias = std::strtof(bias_text.c_str(), &end);
  if (end == bias_text.c_str() || *end != '\0' || !(b.bias >= -100.0f && b.bias <= 100.0f))
    throw bad("the bias '" + bias_text + "' is not a number in [-100, 100] or -inf");
  return b;
}
}  // namespace

void add_sampling_options(CLI::App& app, GenerationConfig& c) {
  app.add_option("--temperature", c.temperature, "Sampling temperature (0 = greedy)")
      ->default_val(0.8f)->check(non_negative_number());
  app.add_option("--seed", c.seed, "Random seed (default: from the clock)")->check(unsigned_integer());
  app.add_option("--top_k", c.top_k, "Keep the k most likely tokens (0: off)")->default_val(0)->check(CLI::Range(0, 1 << 24));
  app.add_option("--top_p", c.top_p, "Nucleus sampling threshold in (0, 1]")->default_val(1.0f)
      ->check(CLI::Range(1e-6f, 1.0f));
  app.add_option("--min_p", c.min_p, "Drop tokens below min_p x the top probability")->default_val(0.0f)
      ->check(CLI::Range(0.0f, 1.0f));
  app.add_option("--top_n_sigma", c.top_n_sigma,
                 "Keep tokens within N standard deviations of the top logit, before the other filters (0: off)")
      ->default_val(0.0f)->check(CLI::Range(0.0f, 1000.0f));
  app.add_option("--repeat_penalty", c.repeat_penalty, "Penalty on recently generated tokens (1: off)")
      ->default_val(1.0f)->check(CLI::Range(0.01f, 100.0f));
  app.add_option("--repeat_last_n", c.repeat_last_n, "Recent tokens the penalties look back over")
      ->default_val(64)->check(CLI::Range(0, 1 << 24));
  app.add_option("--presence_penalty", c.presence_penalty,
                 "Subtracted from the logit of every token in that window (OpenAI's; 0: off)")
      ->default_val(0.0f)->check(CLI::Range(-2.0f, 2.0f));
  app.add_option("--frequency_penalty", c.frequency_penalty,
                 "Subtracted once for each time a token occurs in that window (OpenAI's; 0: off)")
      ->default_val(0.0f)->check(CLI::Range(-2.0f, 2.0f));
  app.add_option_function<std::vector<std::string>>(
         "--logit_bias",
         [&c](const std::vector<std::string>& given) {
           for (const std::string& g : given) c.logit_bias.push_back(parse_logit_bias(g));
         },
         "TOKEN_ID+BIAS or TOKEN_ID-BIAS added to that token's logit (repeatable; -inf bans it)")
      ->allow_extra_args(false);
}

ProgramOptions program_options(const ModelOptions& o) {
  ProgramOptions p;
  p.cpu_threads = o.cpu_threads.value_or(default_threads());
  note_threads_beyond_cpus(p.cpu_threads);
  p.defaults.max_seq_len = o.max_seq_len;
  p.defaults.max_context_len = o.max_context_len;
  p.placement = placement_from(o);
  if (o.poll) p.spin = spin_for_poll(*o.poll);
  p.priority = o.prio;
  p.log = stderr_log_sink();
  return p;
}

void note_threads_beyond_cpus(int threads) {
  if (const int cpus = usable_cpus(); threads > cpus)
    std::fprintf(stderr, "llmpack: note: --cpu_threads %d exceeds the %d CPU%s this process may run on\n", threads,
                 cpus, cpus == 1 ? "" : "s");
  else if (const int quota = this_process_cpu_quota(); quota > 0 && threads > quota)
    std::fprintf(stderr, "llmpack: note: --cpu_threads %d exceeds this process's cgroup CPU quota (%d CPU%s)\n",
                 threads, quota, quota == 1 ? "" : "s");
}

Result<std::string> chat_template_from_option(const std::string& name_or_path) {
  auto builtin = builtin_chat_template(name_or_path);
  if (builtin.ok()) return builtin;
  std::error_code ec;
  if (!std::filesystem::exists(name_or_path, ec))
    return builtin.status().with_context("--chat_template (neither a built-in name nor a file)");
  return read_file_text(name_or_path).with_context("--chat_template");
}

int fail(const Status& status) { return fail(status.message()); }

int fail(const std::string& message) {
  std::fprintf(stderr, "llmpack: %s\n", message.c_str());
  return 1;
}

std::function<void(int64_t, double)> running_line(int decimals) {
  return [decimals](int64_t w, double value) {
    std::printf("[%lld]%.*f,", static_cast<long long>(w + 1), decimals, value);
    std::fflush(stdout);
  };
}

int fail_after_running_line(const Status& status) {
  std::printf("\n");
  return fail(status);
}

CLI::Option* add_kv_dtype_option(CLI::App& app, std::string& kv_dtype) {
  return app
      .add_option("--kv_dtype", kv_dtype,
                  "KV cache element type: f16 (default, as llama.cpp's), f32 (twice the memory) or q8_0 (about "
                  "half of f16's)")
      ->default_val(std::string(kv_dtype_name(kDefaultKvDtype)));
}

Status set_kv_dtype(const std::string& kv_dtype, ProgramOptions& options) {
  auto dtype = parse_kv_dtype(kv_dtype);
  if (!dtype.ok()) return dtype.status().with_context("--kv_dtype");
  options.kv_dtype = *dtype;
  return ok_status();
}

Result<LoadedPackage> load_for_windows(ModelOptions& model, int64_t context, const std::string& kv_dtype,
                                       bool kv_dtype_given, ProgramOptions* options) {
  model.max_seq_len = std::max(model.max_seq_len, context);
  model.max_context_len = std::max(model.max_context_len, context);
  *options = program_options(model);
  options->logits_rows = context;
  LLMPACK_RETURN_IF_ERROR(set_kv_dtype(kv_dtype, *options));
  auto loaded = load_package(model.model_path, model.tokenizer_path, *options);
  if (!loaded.ok()) return loaded.status();
  if (kv_dtype_given) note_kv_cache(*loaded->program);
  note_thread_placement(*loaded->program, model, *options);
  return loaded;
}

void note_kv_cache(const LlamaProgram& program) {
  const KvCache& c = program.transformer().cache();
  const double mib = 1024.0 * 1024.0;
  const double size = static_cast<double>(c.bytes_per_row()) * c.capacity_rows() / mib;
  const double as_f32 = 8.0 * c.n_layers() * c.kv_dim() * c.capacity_rows() / mib;
  std::fprintf(stderr, "llmpack: note: KV cache in %s: %.1f MiB at its %lld positions (f32: %.1f MiB)\n",
               std::string(kv_dtype_name(c.dtype())).c_str(), size, static_cast<long long>(c.capacity_rows()), as_f32);
}

LogSink stderr_log_sink() {
  return [](LogLevel level, std::string_view message) {
    if (level == LogLevel::kDebug || level == LogLevel::kInfo) return;  // warnings and errors only
    std::fprintf(stderr, "llmpack: %.*s: %.*s\n", static_cast<int>(log_level_name(level).size()),
                 log_level_name(level).data(), static_cast<int>(message.size()), message.data());
  };
}

}  // namespace llmpack::cli
