// Perplexity over a text, the way llama-perplexity measures it: the text is
// tokenized once, cut into non-overlapping windows of `context` tokens (each
// starting with BOS in place of its first token), and each window's second
// half is scored (every scored token has at least context/2 tokens of context).
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "engine/program.h"
#include "tokenizer/tokenizer.h"

namespace llmpack {

struct PerplexityResult {
  int64_t n_windows = 0;
  int64_t n_scored = 0;
  double ppl = 0;           // exp(mean negative log-likelihood)
  double ppl_error = 0;     // ppl x standard error of the mean NLL
  std::vector<double> running_ppl;  // after each window
};

// `on_window(index, running_ppl)` is called after each window. Needs a program
// whose forward can return `context` rows of logits (ProgramOptions::logits_rows).
// `max_windows` > 0: the first that many windows only (llama-perplexity's --chunks).
Result<PerplexityResult> compute_perplexity(Program& program, const Tokenizer& tokenizer, std::string_view text,
                                            int64_t context,
                                            const std::function<void(int64_t, double)>& on_window = nullptr,
                                            int64_t max_windows = -1);

}  // namespace llmpack
