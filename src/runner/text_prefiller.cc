#include "runner/text_prefiller.h"

#include <algorithm>
#include <string>

namespace llmpack {

int64_t TextPrefiller::chunk_size() const {
  const ModelLimits& limits = forwarder_.limits();
  if (!limits.use_kv_cache) return limits.token_bound;
  return limits.prefill_chunk();
}

Status TextPrefiller::check_fits(int64_t n_tokens) const {
  const ModelLimits& limits = forwarder_.limits();
  const int64_t pos = forwarder_.sequence().pos;
  if (n_tokens < 1) return error_status("prefill: expected at least one token, got none");
  if (pos + n_tokens > limits.max_context_len - 1) {
    return error_status("prompt does not fit the context: position " + std::to_string(pos) + " + prompt of " +
                        std::to_string(n_tokens) + " tokens exceeds the context length " +
                        std::to_string(limits.max_context_len) + " - 1");
  }
  if (!limits.use_kv_cache && pos + n_tokens > limits.token_bound) {
    return error_status("prompt of " + std::to_string(n_tokens) + " tokens" +
                        (pos > 0 ? " after " + std::to_string(pos) + " earlier tokens" : std::string()) +
                        " exceeds forward's token bound " + std::to_string(limits.token_bound) +
                        " of a package without KV cache (each call takes the whole sequence)");
  }
  return ok_status();
}

void TextPrefiller::warn_once_if_bound_below_seq_len() {
  const ModelLimits& limits = forwarder_.limits();
  if (warned_ || !limits.use_kv_cache || !limits.dynamic_shape) return;
  if (limits.max_seq_len <= limits.token_bound) return;
  warned_ = true;
  log_(LogLevel::kWarning, "get_max_seq_len " + std::to_string(limits.max_seq_len) +
                               " exceeds forward's token bound " + std::to_string(limits.token_bound) +
                               ": prompts are prefilled in chunks of " + std::to_string(limits.prefill_chunk()));
}

Result<LogitsView> TextPrefiller::prefill(std::span<const int64_t> tokens, const std::atomic<bool>& stop) {
  LLMPACK_RETURN_IF_ERROR(check_fits(static_cast<int64_t>(tokens.size())));
  warn_once_if_bound_below_seq_len();
  const auto chunk = static_cast<size_t>(chunk_size());
  LogitsView logits;
  for (size_t begin = 0; begin < tokens.size(); begin += chunk) {
    if (stop.load(std::memory_order_acquire)) return error_status(kPrefillStoppedMessage);
    const size_t n = std::min(chunk, tokens.size() - begin);
    auto step = forwarder_.step(tokens.subspan(begin, n));
    if (!step.ok()) {
      return step.status().with_context("prefill at position " + std::to_string(forwarder_.sequence().pos));
    }
    logits = *step;
  }
  return logits;
}

}  // namespace llmpack
