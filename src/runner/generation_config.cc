#include "runner/generation_config.h"

#include <algorithm>
#include <string>

namespace llmpack {

SamplerParams GenerationConfig::sampler_params() const {
  SamplerParams p;
  p.temperature = temperature;
  p.top_k = top_k;
  p.top_p = top_p;
  p.min_p = min_p;
  p.top_n_sigma = top_n_sigma;
  p.repeat_penalty = repeat_penalty;
  p.repeat_last_n = repeat_last_n;
  p.presence_penalty = presence_penalty;
  p.frequency_penalty = frequency_penalty;
  p.logit_bias = logit_bias;
  return p;
}

Status GenerationConfig::validate() const {
  LLMPACK_RETURN_IF_ERROR(validate_sampler_params(sampler_params()));
  if (max_new_tokens < -1) {
    return error_status("max_new_tokens must be -1 (no limit) or >= 0, got " +
                        std::to_string(max_new_tokens));
  }
  if (seq_len < -1) {
    return error_status("seq_len must be -1 (no limit) or >= 0, got " + std::to_string(seq_len));
  }
  if (num_bos < -1) {
    return error_status("num_bos must be -1 (the model's rule) or >= 0, got " + std::to_string(num_bos));
  }
  if (num_eos < 0) return error_status("num_eos must be >= 0, got " + std::to_string(num_eos));
  for (size_t i = 0; i < stop.size(); ++i) {
    if (stop[i].empty()) return error_status("stop string " + std::to_string(i) + " is empty");
  }
  return ok_status();
}

Result<int64_t> GenerationConfig::resolve_max_new_tokens(int64_t context_len, int64_t occupied) const {
  int64_t budget = 0;
  if (max_new_tokens == -1 && seq_len == -1) {
    budget = context_len - occupied;
  } else if (seq_len == -1) {
    budget = std::min<int64_t>(max_new_tokens, context_len - occupied);
  } else if (max_new_tokens == -1) {
    budget = std::min<int64_t>(seq_len, context_len) - occupied;
  } else {
    budget = std::min<int64_t>(max_new_tokens, std::min<int64_t>(seq_len, context_len) - occupied);
  }
  if (budget <= 0) {
    return error_status("no tokens left to generate: budget " + std::to_string(budget) +
                        " from context length " + std::to_string(context_len) + ", " +
                        std::to_string(occupied) + " positions taken by the prompt, max_new_tokens " +
                        std::to_string(max_new_tokens) + ", seq_len " + std::to_string(seq_len));
  }
  return budget;
}

}  // namespace llmpack
