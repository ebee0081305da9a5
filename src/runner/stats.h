// Generation statistics (CONTRACT S1, S2). Timestamps are wall-clock
// milliseconds since the Unix epoch; aggregates are milliseconds.
//
// Rates (all per second; 0 when the time span is 0 ms, where a rate is undefined):
//   prefill_token_per_sec = prompt_tokens / (prompt_eval_end_ms - inference_start_ms)
//   decode_token_per_sec  = (generated_tokens - 1) / (inference_end_ms - first_token_ms)
// generated_tokens counts every generated token the callback emitted (the echo
// excluded), the token predicted by prefill included; decode steps made the
// other generated_tokens - 1, between the first token and the end.
#pragma once

#include <cstdint>
#include <string>

namespace llmpack {

struct Stats {
  static constexpr int64_t kScalingFactorUnitsPerSecond = 1000;

  int64_t model_load_start_ms = 0;
  int64_t model_load_end_ms = 0;
  int64_t inference_start_ms = 0;        // generate() entered
  int64_t model_execution_start_ms = 0;  // first forward call began
  int64_t model_execution_end_ms = 0;    // last forward call ended
  int64_t prompt_eval_end_ms = 0;        // prefill done (its logits available)
  int64_t first_token_ms = 0;            // first generated token sampled
  int64_t inference_end_ms = 0;          // generate() done
  int64_t aggregate_sampling_time_ms = 0;
  int64_t aggregate_model_execution_time_ms = 0;
  int64_t num_prompt_tokens = 0;
  int64_t num_generated_tokens = 0;

  double prefill_tokens_per_second() const;
  double decode_tokens_per_second() const;

  // `{"prefill_token_per_sec":...,...}` with the S1 keys in the S1 order.
  std::string to_json_string() const;
  // A multi-line human report (S1): counts, load, total, prompt evaluation,
  // generation, time to first token, sampling.
  std::string report() const;

  // Clears the per-generate fields; keeps the load times.
  void reset_inference();
};

}  // namespace llmpack
