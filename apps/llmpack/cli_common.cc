#include "cli_common.h"

#include <cstdio>
#include <thread>

namespace llmpack::cli {

void add_model_options(CLI::App& app, ModelOptions& o) {
  app.add_option("-m,--model_path", o.model_path, "Model: a .gguf package or a llama2.c .bin checkpoint")
      ->required();
  app.add_option("--tokenizer_path", o.tokenizer_path,
                 "Tokenizer file (llama2.c tokenizer.bin or GGUF); overrides the package's");
  app.add_option("-t,--cpu_threads", o.cpu_threads, "Worker threads (default: all cores)")
      ->check(CLI::Range(1, 1024));
  app.add_option("--max_seq_len", o.max_seq_len,
                 "For packages without llmpack.* keys: tokens per forward call S = B (default 512)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  app.add_option("--max_context_len", o.max_context_len,
                 "For packages without llmpack.* keys: cap on the context C (default 4096)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
}

ProgramOptions program_options(const ModelOptions& o) {
  ProgramOptions p;
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  p.cpu_threads = o.cpu_threads.value_or(cores);
  if (p.cpu_threads > cores)
    std::fprintf(stderr, "llmpack: note: --cpu_threads %d exceeds the %d cores of this machine\n", p.cpu_threads,
                 cores);
  p.defaults.max_seq_len = o.max_seq_len;
  p.defaults.max_context_len = o.max_context_len;
  p.log = stderr_log_sink();
  return p;
}

int fail(const Status& status) { return fail(status.message()); }

int fail(const std::string& message) {
  std::fprintf(stderr, "llmpack: %s\n", message.c_str());
  return 1;
}

LogSink stderr_log_sink() {
  return [](LogLevel level, std::string_view message) {
    if (level == LogLevel::kDebug || level == LogLevel::kInfo) return;  // warnings and errors only
    std::fprintf(stderr, "llmpack: %.*s: %.*s\n", static_cast<int>(log_level_name(level).size()),
                 log_level_name(level).data(), static_cast<int>(message.size()), message.data());
  };
}

}  // namespace llmpack::cli
