// How far a model's next-token distributions lie from a base model's over a
// text (llama-perplexity's --kl-divergence statistics, without its saved-logits
// file: both models run side by side): the text is cut into the windows of
// compute_perplexity, and at every scored position the two distributions are
// compared. The way to measure what a quantization costs.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>

#include "core/status.h"
#include "engine/program.h"
#include "tokenizer/tokenizer.h"

namespace llmpack {

struct KlDivergenceResult {
  int64_t n_windows = 0;
  int64_t n_scored = 0;
  double ppl_model = 0, ppl_model_error = 0;  // as PerplexityResult
  double ppl_base = 0, ppl_base_error = 0;
  // KL(base || model) = sum_t p_base(t) (ln p_base(t) - ln p_model(t)), in nats, per position
  double kld_mean = 0, kld_mean_error = 0;    // mean and standard error of the mean
  double kld_median = 0, kld_p99 = 0, kld_max = 0;
  // p_model(next token) - p_base(next token), per position
  double delta_p_mean = 0, delta_p_rms = 0;
  double same_top = 0, same_top_error = 0;    // share of positions whose most likely token agrees
};

// `model` and `base` must take the same token ids (the text is tokenized by
// `tokenizer`) and return `context` rows of logits (ProgramOptions::logits_rows).
// `on_window(index, running mean KLD)` is called after each window.
Result<KlDivergenceResult> compute_kl_divergence(Program& model, Program& base, const Tokenizer& tokenizer,
                                                 std::string_view text, int64_t context,
                                                 const std::function<void(int64_t, double)>& on_window = nullptr,
                                                 int64_t max_windows = -1);

}  // namespace llmpack
