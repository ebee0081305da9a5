#include "runner/perplexity.h"

#include <algorithm>
#include <cmath>

#include "runner/scored_windows.h"

namespace llmpack {

Result<PerplexityResult> compute_perplexity(Program& program, const Tokenizer& tokenizer, std::string_view text,
                                            int64_t context, const std::function<void(int64_t, double)>& on_window) {
  LLMPACK_ASSIGN_OR_RETURN(const ScoredWindows s, plan_scored_windows(program, tokenizer, text, context));
  PerplexityResult result;
  RunningMean nll;
  for (int64_t w = 0; w < s.n_windows; ++w) {
    const std::vector<int64_t> window = s.window(w);
    for (int64_t pos = 0; pos < context; pos += s.bound) {
      const int64_t n = std::min(s.bound, context - pos);
      auto logits = program.forward(std::span<const int64_t>(window).subspan(pos, n), pos, /*all_logits=*/true);
      if (!logits.ok()) return logits.status().with_context("window " + std::to_string(w + 1));
      for (int64_t i = 0; i < n; ++i) {
        const int64_t p = pos + i;
        if (s.scored(p)) nll.add(-log_probability(logits->row(i), window[p + 1]));
      }
    }
    result.running_ppl.push_back(std::exp(nll.mean()));
    if (on_window) on_window(w, result.running_ppl.back());
  }
  result.n_windows = s.n_windows;
  result.n_scored = nll.n;
  result.ppl = std::exp(nll.mean());
  result.ppl_error = result.ppl * nll.stderr_of_mean();
  return result;
}

}  // namespace llmpack
