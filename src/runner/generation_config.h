// GenerationConfig (CONTRACT G1): what one generate() call should do.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "sampling/sampler.h"

namespace llmpack {

struct GenerationConfig {
  bool echo = true;              // emit the prompt text first, as one piece
  int32_t max_new_tokens = -1;   // -1: as many as the context allows
  int32_t seq_len = -1;          // -1: none; else a total prompt + output budget
  float temperature = 0.8f;      // 0 = greedy; negative is an error
  int32_t top_k = 0;             // 0 = off
  float top_p = 1.0f;            // (0, 1]; 1 = off
  float min_p = 0.0f;            // [0, 1]; 0 = off
  float top_n_sigma = 0.0f;      // >= 0; 0 = off (SamplerParams)
  float repeat_penalty = 1.0f;   // > 0; 1 = off
  int32_t repeat_last_n = 64;    // tokens the penalties look back over
  float presence_penalty = 0.0f;   // [-2, 2]; 0 = off (SamplerParams)
  float frequency_penalty = 0.0f;  // [-2, 2]; 0 = off
  std::vector<LogitBias> logit_bias;  // per-token logit offsets (SamplerParams)
  std::optional<uint64_t> seed;  // unset: a seed drawn from the clock
  bool ignore_eos = false;       // run the whole budget even past EOS
  bool warming = false;          // no callbacks (warmup runs)
  // BOS ids before the prompt; -1 = the model's rule (Tokenizer::default_num_bos())
  // at position 0 and none when continuing a sequence. ExecuTorch's default is 0.
  int32_t num_bos = -1;
  int32_t num_eos = 0;           // EOS ids after the prompt
  // Special-token text in the prompt ("<|eot_id|>") becomes its id only when asked.
  bool parse_special = false;
  std::vector<std::string> stop; // generation ends before any of these; not emitted

  // Range checks with messages naming the field, the range and the value.
  Status validate() const;

  // The number of new tokens one generate may produce (G1), given the
  // positions the model can hold (`context_len`, C) and those already taken
  // (`occupied`: the position after the prompt):
  //   both -1              -> C - occupied
  //   only max_new_tokens  -> min(max_new_tokens, C - occupied)
  //   only seq_len         -> min(seq_len, C) - occupied
  //   both                 -> the smaller of the two above
  // A budget <= 0 is an error naming every number involved.
  Result<int64_t> resolve_max_new_tokens(int64_t context_len, int64_t occupied) const;

  SamplerParams sampler_params() const;
};

}  // namespace llmpack
