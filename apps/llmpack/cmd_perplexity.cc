// `llmpack perplexity -m MODEL -f TEXT_FILE -c CTX`: strided, non-overlapping
// windows scored on their second half, with a running estimate, ending with
// the line llama-perplexity prints. With `--kl_divergence BASE`, the model's
// distributions against the base model's over the same windows instead.
#include <cstdio>
#include <functional>

#include "cli_common.h"
#include "commands.h"
#include "core/file_text.h"
#include "runner/kl_divergence.h"
#include "runner/perplexity.h"

namespace llmpack::cli {
namespace {

struct PerplexityOptions {
  ModelOptions model;
  std::string text_file;
  int64_t context = 512;
  std::string kv_dtype{kv_dtype_name(kDefaultKvDtype)};
  bool kv_dtype_given = false;
  std::string kl_base;  // --kl_divergence: the base model's package
  int64_t chunks = -1;  // --chunks: windows to score at most (-1: all)
};

void print_kl_divergence(const KlDivergenceResult& r) {
  std::printf("\n====== Perplexity statistics ======\n");
  std::printf("Mean PPL(model)  : %10.6f +/- %10.6f\n", r.ppl_model, r.ppl_model_error);
  std::printf("Mean PPL(base)   : %10.6f +/- %10.6f\n", r.ppl_base, r.ppl_base_error);
  std::printf("PPL ratio        : %10.6f\n", r.ppl_model / r.ppl_base);
  std::printf("\n====== KL divergence statistics (%lld positions) ======\n", static_cast<long long>(r.n_scored));
  std::printf("Mean    KLD: %10.6f +/- %10.6f\n", r.kld_mean, r.kld_mean_error);
  std::printf("Maximum KLD: %10.6f\n", r.kld_max);
  std::printf("99.0%%   KLD: %10.6f\n", r.kld_p99);
  std::printf("Median  KLD: %10.6f\n", r.kld_median);
  std::printf("\n====== Token probability statistics ======\n");
  std::printf("Mean    dp: %8.4f %%\n", 100.0 * r.delta_p_mean);
  std::printf("RMS     dp: %8.4f %%\n", 100.0 * r.delta_p_rms);
  std::printf("Same top p: %8.4f +/- %.4f %%\n", 100.0 * r.same_top, 100.0 * r.same_top_error);
}

// Both packages loaded with the same options; the base must split the text into the same tokens.
int execute_kl_divergence(const PerplexityOptions& o, const ProgramOptions& options, LoadedPackage& model,
                          const std::string& text) {
  auto base = load_package(o.kl_base, o.model.tokenizer_path, options);
  if (!base.ok()) return fail(base.status().with_context("--kl_divergence"));
  auto ids = model.tokenizer->encode(text, 1, 0);
  auto base_ids = base->tokenizer->encode(text, 1, 0);
  if (ids.ok() && base_ids.ok() && *ids != *base_ids)
    return fail("--kl_divergence: the base model's tokenizer splits the text into other tokens (" +
                std::to_string(base_ids->size()) + " against " + std::to_string(ids->size()) +
                "): the two models must share a vocabulary");
  std::fprintf(stderr, "kl divergence: windows of %lld tokens against %s, the second half of each\n",
               static_cast<long long>(o.context), o.kl_base.c_str());
  auto result =
      compute_kl_divergence(*model.program, *base->program, *model.tokenizer, text, o.context, running_line(6),
                            o.chunks);
  if (!result.ok()) return fail_after_running_line(result.status());
  print_kl_divergence(*result);
  return 0;
}

int execute(PerplexityOptions& o) {
  auto text = read_file_text(o.text_file);
  if (!text.ok()) return fail(text.status().with_context("-f"));
  ProgramOptions options;
  auto loaded = load_for_windows(o.model, o.context, o.kv_dtype, o.kv_dtype_given, &options);
  if (!loaded.ok()) return fail(loaded.status());
  if (!o.kl_base.empty()) return execute_kl_divergence(o, options, *loaded, *text);
  std::fprintf(stderr, "perplexity: windows of %lld tokens, scoring the second half of each\n",
               static_cast<long long>(o.context));
  auto result =
      compute_perplexity(*loaded->program, *loaded->tokenizer, *text, o.context, running_line(4), o.chunks);
  if (!result.ok()) return fail_after_running_line(result.status());
  std::printf("\nFinal estimate: PPL = %.4f +/- %.5f\n", result->ppl, result->ppl_error);
  return 0;
}

}  // namespace

void register_perplexity(CLI::App& app, std::function<int()>& action) {
  auto* cmd = app.add_subcommand("perplexity", "Perplexity of a model over a text file");
  auto o = std::make_shared<PerplexityOptions>();
  add_model_options(*cmd, o->model);
  cmd->add_option("-f,--file", o->text_file, "Text file to score")->required();
  cmd->add_option("-c,--ctx_size", o->context, "Window size in tokens")->default_val(512)->check(CLI::Range(3, 1 << 20));
  cmd->add_option("--chunks", o->chunks, "Windows to score at most, the first ones (-1: every whole window; "
                  "llama-perplexity's --chunks)")
      ->default_val(-1)
      ->check(CLI::Range(int64_t{-1}, int64_t{1} << 30))
      ->check(CLI::Validator(
          [](const std::string& v) {
            return v == "0" ? std::string("0 windows score nothing (-1: every window)") : std::string();
          },
          "", "not 0"));
  CLI::Option* kv_dtype = add_kv_dtype_option(*cmd, o->kv_dtype);
  cmd->add_option("--kl_divergence", o->kl_base,
                  "A base package (the unquantized model): report the KL divergence of -m's next-token "
                  "distributions from its, both perplexities and how often their top tokens agree");
  cmd->callback([&action, o, kv_dtype] {
    o->kv_dtype_given = kv_dtype->count() > 0;
    action = [o] { return execute(*o); };
  });
}

}  // namespace llmpack::cli
