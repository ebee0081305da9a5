#include "runner/perplexity.h"

#include <algorithm>
#include <cmath>

namespace llmpack {
namespace {

// log softmax(logits)[target]
double log_probability(std::span<const float> logits, int64_t target) {
  const float mx = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (float v : logits) sum += std::exp(static_cast<double>(v - mx));
  return static_cast<double>(logits[target] - mx) - std::log(sum);
}

struct Running {
  double sum = 0, sum_sq = 0;
  int64_t n = 0;
  void add(double nll) { sum += nll, sum_sq += nll * nll, ++n; }
  double mean() const { return sum / n; }
  double stderr_of_mean() const {
    if (n < 2) return 0;
    const double var = std::max(0.0, sum_sq / n - mean() * mean());
    return std::sqrt(var / (n - 1));
  }
};

}  // namespace

Result<PerplexityResult> compute_perplexity(Program& program, const Tokenizer& tokenizer, std::string_view text,
                                            int64_t context, const std::function<void(int64_t, double)>& on_window) {
  LLMPACK_ASSIGN_OR_RETURN(auto meta, program.method_meta("forward"));
  const int64_t bound = meta.inputs.at(0).sizes.at(1);
  LLMPACK_ASSIGN_OR_RETURN(const bool kv, get_bool_constant(program, "use_kv_cache"));
  LLMPACK_ASSIGN_OR_RETURN(const int64_t max_context, get_int_constant(program, "get_max_context_len"));
  if (!meta.inputs[0].dynamic_dim1) return error_status("perplexity needs a dynamic-shape package");
  if (context < 2 || context > max_context)
    return error_status("context " + std::to_string(context) + " must be in 2.." + std::to_string(max_context));
  if (!kv && context > bound)
    return error_status("a package without KV cache takes at most " + std::to_string(bound) +
                        " tokens per call, the context asks for " + std::to_string(context));
  LLMPACK_ASSIGN_OR_RETURN(auto ids, tokenizer.encode(text, 1, 0));
  const int64_t n_windows = static_cast<int64_t>(ids.size()) / context;
  if (n_windows == 0)
    return error_status("the text has " + std::to_string(ids.size()) + " tokens, at least " +
                        std::to_string(context) + " are needed for one window of -c " + std::to_string(context));
  PerplexityResult result;
  Running nll;
  std::vector<int64_t> window(static_cast<size_t>(context));
  for (int64_t w = 0; w < n_windows; ++w) {
    std::copy_n(ids.begin() + w * context, context, window.begin());
    window[0] = tokenizer.bos_id() >= 0 ? tokenizer.bos_id() : window[0];
    const int64_t first_scored = context / 2;
    for (int64_t pos = 0; pos < context; pos += bound) {
      const int64_t n = std::min(bound, context - pos);
      auto logits = program.forward(std::span<const int64_t>(window).subspan(pos, n), pos, /*all_logits=*/true);
      if (!logits.ok()) return logits.status().with_context("window " + std::to_string(w + 1));
      // Row i (position p = pos + i) predicts token p + 1; llama-perplexity
      // scores positions first_scored .. context - 2.
      for (int64_t i = 0; i < n; ++i) {
        const int64_t p = pos + i;
        if (p >= first_scored && p + 1 < context) nll.add(-log_probability(logits->row(i), window[p + 1]));
      }
    }
    result.running_ppl.push_back(std::exp(nll.mean()));
    if (on_window) on_window(w, result.running_ppl.back());
  }
  result.n_windows = n_windows;
  result.n_scored = nll.n;
  result.ppl = std::exp(nll.mean());
  result.ppl_error = result.ppl * nll.stderr_of_mean();
  return result;
}

}  // namespace llmpack
