// What perplexity and KL divergence share: the text cut into windows as
// llama-perplexity cuts it (non-overlapping windows of `context` tokens, BOS in
// place of each one's first token, the second half of each scored), and the
// running statistics they report.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "engine/program.h"
#include "tokenizer/tokenizer.h"

namespace llmpack {

struct ScoredWindows {
  std::vector<int64_t> ids;  // the whole text's tokens (one BOS first)
  int64_t context = 0;
  int64_t n_windows = 0;
  int64_t bound = 0;         // tokens a forward call takes
  int64_t bos = -1;

  // Window w's tokens: ids [w context, (w + 1) context) with BOS first (when the vocabulary has one).
  std::vector<int64_t> window(int64_t w) const;
  // Row p of a window's logits predicts token p + 1; llama-perplexity scores
  // positions context / 2 .. context - 2.
  bool scored(int64_t p) const { return p >= context / 2 && p + 1 < context; }
};

// The tokens one forward call of `program` takes, once checked that it can
// score windows of `context` tokens (dynamic shape; context within the cache
// and at least `min_context`: 3 for scoring, as a window of 2 scores no
// position; without a KV cache, a window in one call). Errors name the numbers.
Result<int64_t> window_bound(Program& program, int64_t context, int64_t min_context = 3);

// window_bound's checks, then `text` tokenized and cut into windows: the
// first `max_windows` (llama-perplexity's --chunks) when it is positive, else all.
Result<ScoredWindows> plan_scored_windows(Program& program, const Tokenizer& tokenizer, std::string_view text,
                                          int64_t context, int64_t min_context = 3, int64_t max_windows = -1);

// ln softmax(logits)[target], in double.
double log_probability(std::span<const float> logits, int64_t target);

// A running mean with its standard error.
struct RunningMean {
  double sum = 0, sum_sq = 0;
  int64_t n = 0;
  void add(double v) { sum += v, sum_sq += v * v, ++n; }
  double mean() const { return n > 0 ? sum / n : 0.0; }
  double stderr_of_mean() const;
};

// Runs window w of `s` through `program` from position 0, in calls of at most
// s.bound tokens asking for every row's logits, and adds the negative
// log-likelihood of each scored position to `nll`.
Status score_window(Program& program, const ScoredWindows& s, int64_t w, RunningMean& nll);

}  // namespace llmpack
