#include "runner/scored_windows.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace llmpack {

std::vector<int64_t> ScoredWindows::window(int64_t w) const {
  std::vector<int64_t> tokens(ids.begin() + w * context, ids.begin() + (w + 1) * context);
  if (bos >= 0) tokens[0] = bos;
  return tokens;
}

Result<int64_t> window_bound(Program& program, int64_t context, int64_t min_context) {
  LLMPACK_ASSIGN_OR_RETURN(auto meta, program.method_meta("forward"));
  const int64_t bound = meta.inputs.at(0).sizes.at(1);
  LLMPACK_ASSIGN_OR_RETURN(const bool kv, get_bool_constant(program, "use_kv_cache"));
  LLMPACK_ASSIGN_OR_RETURN(const int64_t max_context, get_int_constant(program, "get_max_context_len"));
  if (!meta.inputs[0].dynamic_dim1) return error_status("windows of a text need a dynamic-shape package");
  if (context < min_context || context > max_context)
    return error_status("context " + std::to_string(context) + " must be in " + std::to_string(min_context) + ".." +
                        std::to_string(max_context));
  if (!kv && context > bound)
    return error_status("a package without KV cache takes at most " + std::to_string(bound) +
                        " tokens per call, the context asks for " + std::to_string(context));
  return bound;
}

Result<ScoredWindows> plan_scored_windows(Program& program, const Tokenizer& tokenizer, std::string_view text,
                                          int64_t context, int64_t min_context, int64_t max_windows) {
  ScoredWindows s;
  s.context = context;
  LLMPACK_ASSIGN_OR_RETURN(s.bound, window_bound(program, context, min_context));
  LLMPACK_ASSIGN_OR_RETURN(const auto ids, tokenizer.encode(text, 1, 0));
  s.ids.assign(ids.begin(), ids.end());
  s.n_windows = static_cast<int64_t>(s.ids.size()) / context;
  if (s.n_windows == 0)
    return error_status("the text has " + std::to_string(s.ids.size()) + " tokens, at least " +
                        std::to_string(context) + " are needed for one window of -c " + std::to_string(context));
  s.bos = tokenizer.bos_id();
  if (max_windows > 0) s.n_windows = std::min(s.n_windows, max_windows);
  return s;
}

Status score_window(Program& program, const ScoredWindows& s, int64_t w, RunningMean& nll) {
  const std::vector<int64_t> window = s.window(w);
  for (int64_t pos = 0; pos < s.context; pos += s.bound) {
    const int64_t n = std::min(s.bound, s.context - pos);
    auto logits = program.forward(std::span<const int64_t>(window).subspan(pos, n), pos, /*all_logits=*/true);
    if (!logits.ok()) return logits.status().with_context("window " + std::to_string(w + 1));
    for (int64_t i = 0; i < n; ++i) {
      const int64_t p = pos + i;
      if (s.scored(p)) nll.add(-log_probability(logits->row(i), window[p + 1]));
    }
  }
  return ok_status();
}

double log_probability(std::span<const float> logits, int64_t target) {
  const float mx = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (float v : logits) sum += std::exp(static_cast<double>(v - mx));
  return static_cast<double>(logits[target] - mx) - std::log(sum);
}

double RunningMean::stderr_of_mean() const {
  if (n < 2) return 0;
  const double var = std::max(0.0, sum_sq / n - mean() * mean());
  return std::sqrt(var / (n - 1));
}

}  // namespace llmpack
