#include "cli_common.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include "chat/template/chat_template.h"
#include "core/cpu_topology.h"
#include "core/thread_pool.h"

namespace llmpack::cli {

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

void add_sampling_options(CLI::App& app, GenerationConfig& c) {
  app.add_option("--temperature", c.temperature, "Sampling temperature (0 = greedy)")
      ->default_val(0.8f)->check(non_negative_number());
  app.add_option("--seed", c.seed, "Random seed (default: from the clock)");
  app.add_option("--top_k", c.top_k, "Keep the k most likely tokens (0: off)")->default_val(0)->check(CLI::Range(0, 1 << 24));
  app.add_option("--top_p", c.top_p, "Nucleus sampling threshold in (0, 1]")->default_val(1.0f)
      ->check(CLI::Range(1e-6f, 1.0f));
  app.add_option("--min_p", c.min_p, "Drop tokens below min_p x the top probability")->default_val(0.0f)
      ->check(CLI::Range(0.0f, 1.0f));
  app.add_option("--repeat_penalty", c.repeat_penalty, "Penalty on recently generated tokens (1: off)")
      ->default_val(1.0f)->check(CLI::Range(0.01f, 100.0f));
}

ProgramOptions program_options(const ModelOptions& o) {
  ProgramOptions p;
  p.cpu_threads = o.cpu_threads.value_or(default_threads());
  note_threads_beyond_cpus(p.cpu_threads);
  p.defaults.max_seq_len = o.max_seq_len;
  p.defaults.max_context_len = o.max_context_len;
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
  std::ifstream in(name_or_path, std::ios::binary);
  if (!in) return builtin.status().with_context("--chat_template (neither a built-in name nor a readable file)");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

int fail(const Status& status) { return fail(status.message()); }

int fail(const std::string& message) {
  std::fprintf(stderr, "llmpack: %s\n", message.c_str());
  return 1;
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
