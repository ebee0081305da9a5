// `llmpack perplexity -m MODEL -f TEXT_FILE -c CTX`: strided, non-overlapping
// windows scored on their second half, with a running estimate, ending with
// the line llama-perplexity prints.
#include <cstdio>

#include "cli_common.h"
#include "commands.h"
#include "core/file_text.h"
#include "runner/perplexity.h"

namespace llmpack::cli {
namespace {

struct PerplexityOptions {
  ModelOptions model;
  std::string text_file;
  int64_t context = 512;
  std::string kv_dtype{kv_dtype_name(kDefaultKvDtype)};
  bool kv_dtype_given = false;
};

int execute(PerplexityOptions& o) {
  auto text = read_file_text(o.text_file);
  if (!text.ok()) return fail(text.status().with_context("-f"));
  // Plain GGUFs: forward takes a whole window and returns every row of logits.
  o.model.max_seq_len = std::max(o.model.max_seq_len, o.context);
  o.model.max_context_len = std::max(o.model.max_context_len, o.context);
  ProgramOptions options = program_options(o.model);
  options.logits_rows = o.context;
  if (auto status = set_kv_dtype(o.kv_dtype, options); !status.ok()) return fail(status);
  auto loaded = load_package(o.model.model_path, o.model.tokenizer_path, options);
  if (!loaded.ok()) return fail(loaded.status());
  if (o.kv_dtype_given) note_kv_cache(*loaded->program);
  note_thread_placement(*loaded->program, o.model, options);
  std::fprintf(stderr, "perplexity: windows of %lld tokens, scoring the second half of each\n",
               static_cast<long long>(o.context));
  auto result = compute_perplexity(*loaded->program, *loaded->tokenizer, *text, o.context,
                                   [](int64_t w, double ppl) {
                                     std::printf("[%lld]%.4f,", static_cast<long long>(w + 1), ppl);
                                     std::fflush(stdout);
                                   });
  if (!result.ok()) {
    std::printf("\n");
    return fail(result.status());
  }
  std::printf("\nFinal estimate: PPL = %.4f +/- %.5f\n", result->ppl, result->ppl_error);
  return 0;
}

}  // namespace

void register_perplexity(CLI::App& app, std::function<int()>& action) {
  auto* cmd = app.add_subcommand("perplexity", "Perplexity of a model over a text file");
  auto o = std::make_shared<PerplexityOptions>();
  add_model_options(*cmd, o->model);
  cmd->add_option("-f,--file", o->text_file, "Text file to score")->required();
  cmd->add_option("-c,--ctx_size", o->context, "Window size in tokens")->default_val(512)->check(CLI::Range(2, 1 << 20));
  CLI::Option* kv_dtype = add_kv_dtype_option(*cmd, o->kv_dtype);
  cmd->callback([&action, o, kv_dtype] {
    o->kv_dtype_given = kv_dtype->count() > 0;
    action = [o] { return execute(*o); };
  });
}

}  // namespace llmpack::cli
