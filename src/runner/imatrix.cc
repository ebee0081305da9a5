#include "runner/imatrix.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/activation_stats.h"
#include "runner/scored_windows.h"

namespace llmpack {
namespace {

// Unbinds the statistics however the run ends: they live on this function's stack.
class StatsBinding {
 public:
  explicit StatsBinding(LlamaProgram& program) : program_(program) {}
  ~StatsBinding() { (void)program_.bind_activation_stats(nullptr); }
  StatsBinding(const StatsBinding&) = delete;
  StatsBinding& operator=(const StatsBinding&) = delete;

 private:
  LlamaProgram& program_;
};

}  // namespace

Result<ImatrixResult> compute_imatrix(LlamaProgram& program, const Tokenizer& tokenizer, std::string_view text,
                                      const ImatrixOptions& options,
                                      const std::function<void(int64_t, double)>& on_window,
                                      const ImatrixSaving& saving) {
  if (options.max_chunks == 0 || options.max_chunks < -1)
    return error_status("imatrix: " + std::to_string(options.max_chunks) +
                        " chunks asked for, expected -1 (all) or at least 1");
  // Windows of 2 tokens are fine here: every row feeds the statistics, only the running perplexity scores none.
  LLMPACK_ASSIGN_OR_RETURN(const ScoredWindows s,
                           plan_scored_windows(program, tokenizer, text, options.context, /*min_context=*/2));
  const int64_t windows = options.max_chunks > 0 ? std::min(options.max_chunks, s.n_windows) : s.n_windows;
  ActivationStats stats(options.process_output);
  LLMPACK_RETURN_IF_ERROR(program.bind_activation_stats(&stats));
  const StatsBinding unbind(program);
  std::vector<std::string> datasets;
  if (!options.dataset.empty()) datasets.push_back(options.dataset);
  RunningMean nll;
  for (int64_t w = 0; w < windows; ++w) {
    LLMPACK_RETURN_IF_ERROR(score_window(program, s, w, nll));
    if (on_window) on_window(w, std::exp(nll.mean()));
    const int64_t done = w + 1;
    if (saving.every > 0 && saving.on_save && done % saving.every == 0 && done < windows)
      LLMPACK_RETURN_IF_ERROR(saving.on_save(stats.to_imatrix(datasets, done, options.context)));
  }
  ImatrixResult result;
  result.imatrix = stats.to_imatrix(std::move(datasets), windows, options.context);
  result.n_windows = windows;
  result.n_scored = nll.n;
  result.ppl = std::exp(nll.mean());
  result.ppl_error = result.ppl * nll.stderr_of_mean();
  return result;
}

}  // namespace llmpack
