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

Result<int64_t> window_bound(Program& program, int64_t context) {
  LLMPACK_ASSIGN_OR_RETURN(auto meta, program.method_meta("forward"));
  const int64_t bound = meta.inputs.at(0).sizes.at(1);
  LLMPACK_ASSIGN_OR_RETURN(const bool kv, get_bool_constant(program, "use_kv_cache"));
  LLMPACK_ASSIGN_OR_RETURN(const int64_t max_context, get_int_constant(program, "get_max_context_len"));
  if (!meta.inputs[0].dynamic_dim1) return error_status("perplexity needs a dynamic-shape package");
  if (context < 3 || context > max_context)  // a window of 2 scores no position (its second half, less its last)
    return error_status("context " + std::to_string(context) + " must be in 3.." + std::to_string(max_context));
  if (!kv && context > bound)
    return error_status("a package without KV cache takes at most " + std::to_string(bound) +
                        " tokens per call, the context asks for " + std::to_string(context));
  return bound;
}

Result<ScoredWindows> plan_scored_windows(Program& program, const Tokenizer& tokenizer, std::string_view text,
                                          int64_t context) {
  ScoredWindows s;
  s.context = context;
  LLMPACK_ASSIGN_OR_RETURN(s.bound, window_bound(program, context));
  LLMPACK_ASSIGN_OR_RETURN(const auto ids, tokenizer.encode(text, 1, 0));
  s.ids.assign(ids.begin(), ids.end());
  s.n_windows = static_cast<int64_t>(s.ids.size()) / context;
  if (s.n_windows == 0)
    return error_status("the text has " + std::to_string(s.ids.size()) + " tokens, at least " +
                        std::to_string(context) + " are needed for one window of -c " + std::to_string(context));
  s.bos = tokenizer.bos_id();
  return s;
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
