// `llmpack run`: one prompt in, a streamed completion and the statistics
// report out. Flags follow ExecuTorch's llama_main.
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <span>

#include "cli_common.h"
#include "commands.h"
#include "core/clock.h"
#include "core/file_text.h"
#include "runner/text_llm_runner.h"

namespace llmpack::cli {
namespace {

struct RunOptions {
  ModelOptions model;
  std::string prompt;
  std::string prompt_file;
  GenerationConfig config;
  int warmup = 0;
  bool no_echo = false;
  std::string kv_dtype{kv_dtype_name(kDefaultKvDtype)};
  bool kv_dtype_given = false;
  std::string dump_first_logits;  // file for the first new token's logits (f32, little-endian)
};

// `--dump_first_logits FILE`: the logits the first new token is sampled from,
// vocab_size little-endian float32 values, as a logits dump for comparing
// runtimes (numpy.fromfile(FILE, "<f4")). Opened before the model loads so a
// bad path fails at once.
class LogitsDump {
 public:
  Status open(const std::string& path) {
    if (path.empty()) return ok_status();
    file_ = std::fopen(path.c_str(), "wb");
    if (!file_) return error_status("--dump_first_logits: cannot write '" + path + "': " + std::strerror(errno));
    path_ = path;
    return ok_status();
  }
  ~LogitsDump() {
    if (file_) std::fclose(file_);
  }
  void write(std::span<const float> logits) {
    if (!file_ || written_) return;
    written_ = true;
    ok_ = std::fwrite(logits.data(), sizeof(float), logits.size(), file_) == logits.size();
  }
  // After the run: whether the logits reached the file.
  Status close() {
    if (!file_) return ok_status();
    const bool closed = std::fclose(file_) == 0;
    file_ = nullptr;
    if (!written_) return error_status("--dump_first_logits: no token was generated, '" + path_ + "' is empty");
    if (!ok_ || !closed) return error_status("--dump_first_logits: writing '" + path_ + "' failed");
    return ok_status();
  }

 private:
  std::FILE* file_ = nullptr;
  std::string path_;
  bool written_ = false, ok_ = false;
};

Result<std::string> read_prompt(const RunOptions& o) {
  if (o.prompt_file.empty()) return o.prompt;
  return read_file_text(o.prompt_file).with_context("--prompt_file");
}

int execute(RunOptions& o) {
  auto prompt = read_prompt(o);
  if (!prompt.ok()) return fail(prompt.status());
  o.config.echo = !o.no_echo;
  if (auto status = o.config.validate(); !status.ok()) return fail(status);

  static_assert(std::endian::native == std::endian::little, "the dump is little-endian");
  LogitsDump dump;
  if (auto status = dump.open(o.dump_first_logits); !status.ok()) return fail(status);
  const int64_t load_start = time_in_ms();
  ProgramOptions options = program_options(o.model);
  if (auto status = set_kv_dtype(o.kv_dtype, options); !status.ok()) return fail(status);
  auto loaded = load_package(o.model.model_path, o.model.tokenizer_path, options);
  if (!loaded.ok()) return fail(loaded.status());
  if (o.kv_dtype_given) note_kv_cache(*loaded->program);
  note_thread_placement(*loaded->program, o.model, options);
  TextLLMRunner runner(std::move(loaded->program), std::move(loaded->tokenizer), stderr_log_sink());
  if (auto status = runner.load(); !status.ok()) return fail(status);
  const int64_t load_end = time_in_ms();

  if (o.warmup > 0) {
    if (auto status = runner.warmup(*prompt, o.warmup); !status.ok()) return fail(status.with_context("warmup"));
  }
  runner.set_prefill_logits_observer([&dump](std::span<const float> logits) { dump.write(logits); });
  Stats final_stats;
  auto on_piece = [](const std::string& piece) {
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::fflush(stdout);
  };
  auto on_stats = [&](const Stats& s) { final_stats = s; };
  if (auto status = runner.generate(*prompt, o.config, on_piece, on_stats); !status.ok()) {
    std::fputc('\n', stdout);
    return fail(status);
  }
  if (auto status = dump.close(); !status.ok()) return fail(status);
  final_stats.model_load_start_ms = load_start;
  final_stats.model_load_end_ms = load_end;
  // Text, then the human report, then the machine-readable line tools parse (S1).
  std::printf("\n");
  std::fflush(stdout);
  std::fprintf(stderr, "%s", final_stats.report().c_str());
  std::printf("PyTorchObserver %s\n", final_stats.to_json_string().c_str());
  return 0;
}


}  // namespace

void register_run(CLI::App& app, std::function<int()>& action) {
  auto* cmd = app.add_subcommand("run", "Generate text from one prompt");
  auto o = std::make_shared<RunOptions>();
  add_model_options(*cmd, o->model);
  GenerationConfig& c = o->config;
  cmd->add_option("-p,--prompt", o->prompt, "Prompt text")->default_val("Once upon a time");
  cmd->add_option("--prompt_file", o->prompt_file, "Read the prompt from this file")->excludes("--prompt");
  cmd->add_option("-n,--max_new_tokens", c.max_new_tokens, "Tokens to generate (-1: until the context is full)")
      ->default_val(-1)->check(CLI::Range(-1, 1 << 24));
  cmd->add_option("--seq_len", c.seq_len, "Total budget of prompt + generated tokens (-1: none)")
      ->default_val(-1)->check(CLI::Range(-1, 1 << 24));
  cmd->add_option("--num_bos", c.num_bos, "BOS tokens before the prompt (default: the model's rule)")
      ->check(CLI::Range(0, 16));
  cmd->add_option("--num_eos", c.num_eos, "EOS tokens after the prompt")->default_val(0)->check(CLI::Range(0, 16));
  cmd->add_option("--warmup", o->warmup, "Generate this many tokens once before the measured run")
      ->default_val(0)->check(CLI::Range(0, 1 << 20));
  cmd->add_flag("--ignore_eos", c.ignore_eos, "Keep generating past EOS");
  cmd->add_flag("--parse_special", c.parse_special, "Turn special-token text in the prompt (<|eot_id|>) into its id");
  cmd->add_flag("--no_echo", o->no_echo, "Do not print the prompt before the completion");
  cmd->add_option("--dump_first_logits", o->dump_first_logits,
                  "Write the logits the first new token is sampled from to FILE (vocab_size little-endian float32)");
  CLI::Option* kv_dtype = add_kv_dtype_option(*cmd, o->kv_dtype);
  add_sampling_options(*cmd, c);
  cmd->add_option("--stop", c.stop, "Stop before this string (repeatable)");
  cmd->callback([&action, o, kv_dtype] {
    o->kv_dtype_given = kv_dtype->count() > 0;
    action = [o] { return execute(*o); };
  });
}

}  // namespace llmpack::cli
