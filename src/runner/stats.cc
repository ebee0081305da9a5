#include "runner/stats.h"

#include <cstdio>
#include <string>

namespace llmpack {
namespace {

double rate(double tokens, int64_t span_ms) {
  if (span_ms <= 0) return 0.0;
  return tokens * Stats::kScalingFactorUnitsPerSecond / static_cast<double>(span_ms);
}

double seconds(int64_t ms) { return static_cast<double>(ms) / Stats::kScalingFactorUnitsPerSecond; }

std::string format(const char* fmt, double a, double b = 0.0) {
  char buf[160];
  std::snprintf(buf, sizeof(buf), fmt, a, b);
  return buf;
}

// Shortest round-trip text for a JSON number (finite by construction).
std::string json_number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  return buf;
}

}  // namespace

double Stats::prefill_tokens_per_second() const {
  return rate(static_cast<double>(num_prompt_tokens), prompt_eval_end_ms - inference_start_ms);
}

double Stats::decode_tokens_per_second() const {
  if (num_generated_tokens <= 1) return 0.0;
  return rate(static_cast<double>(num_generated_tokens - 1), inference_end_ms - first_token_ms);
}

void Stats::reset_inference() {
  const int64_t load_start = model_load_start_ms;
  const int64_t load_end = model_load_end_ms;
  *this = Stats();
  model_load_start_ms = load_start;
  model_load_end_ms = load_end;
}

std::string Stats::to_json_string() const {
  std::string s = "{";
  auto add = [&s](const char* key, const std::string& value) {
    if (s.size() > 1) s += ",";
    s += "\"";
    s += key;
    s += "\":";
    s += value;
  };
  auto i = [](int64_t v) { return std::to_string(v); };
  add("prefill_token_per_sec", json_number(prefill_tokens_per_second()));
  add("decode_token_per_sec", json_number(decode_tokens_per_second()));
  add("prompt_tokens", i(num_prompt_tokens));
  add("generated_tokens", i(num_generated_tokens));
  add("model_load_start_ms", i(model_load_start_ms));
  add("model_load_end_ms", i(model_load_end_ms));
  add("inference_start_ms", i(inference_start_ms));
  add("inference_end_ms", i(inference_end_ms));
  add("model_execution_start_ms", i(model_execution_start_ms));
  add("model_execution_end_ms", i(model_execution_end_ms));
  add("prompt_eval_end_ms", i(prompt_eval_end_ms));
  add("first_token_ms", i(first_token_ms));
  add("aggregate_sampling_time_ms", i(aggregate_sampling_time_ms));
  add("aggregate_model_execution_time_ms", i(aggregate_model_execution_time_ms));
  add("SCALING_FACTOR_UNITS_PER_SECOND", i(kScalingFactorUnitsPerSecond));
  return s + "}";
}

std::string Stats::report() const {
  const int64_t total_ms = inference_end_ms - inference_start_ms;
  const int64_t prompt_ms = prompt_eval_end_ms - inference_start_ms;
  const int64_t decode_ms = inference_end_ms - first_token_ms;
  std::string r;
  r += "Prompt tokens: " + std::to_string(num_prompt_tokens) + "\n";
  r += "Generated tokens: " + std::to_string(num_generated_tokens) + "\n";
  r += format("Model load time: %.3f s\n", seconds(model_load_end_ms - model_load_start_ms));
  r += format("Total inference time: %.3f s (%.2f tokens/s)\n", seconds(total_ms),
              rate(static_cast<double>(num_generated_tokens), total_ms));
  r += format("Prompt evaluation: %.3f s (%.2f tokens/s)\n", seconds(prompt_ms), prefill_tokens_per_second());
  r += format("Generation: %.3f s (%.2f tokens/s, first token excluded)\n", seconds(decode_ms),
              decode_tokens_per_second());
  r += format("Time to first token: %.3f s\n", seconds(first_token_ms - inference_start_ms));
  r += format("Sampling time: %.3f s (%.2f%% of total)\n", seconds(aggregate_sampling_time_ms),
              total_ms > 0 ? 100.0 * aggregate_sampling_time_ms / total_ms : 0.0);
  return r;
}

}  // namespace llmpack
