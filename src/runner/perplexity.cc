#include "runner/perplexity.h"

#include <algorithm>
#include <cmath>

#include "runner/scored_windows.h"

namespace llmpack {

Result<PerplexityResult> compute_perplexity(Program& program, const Tokenizer& tokenizer, std::string_view text,
                                            int64_t context, const std::function<void(int64_t, double)>& on_window,
                                            int64_t max_windows) {
  LLMPACK_ASSIGN_OR_RETURN(const ScoredWindows s,
                           plan_scored_windows(program, tokenizer, text, context, 3, max_windows));
  PerplexityResult result;
  RunningMean nll;
  for (int64_t w = 0; w < s.n_windows; ++w) {
    LLMPACK_RETURN_IF_ERROR(score_window(program, s, w, nll));
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
