// Prefill (CONTRACT R1-R6, R9): feeds a prompt through forward in chunks
// derived from what the package really accepts.
//   dynamic + KV cache: chunks of min(S, B); one warning, once, when S > B (R1, R2)
//   static [1, 1]:      one token per call (R3)
//   static [1, B]:      ceil(P / B) calls of B tokens, the last padded (R4)
//   no KV cache:        one call with the whole sequence; P > B refused (R5)
// Capacity pos + P > C - 1 is refused before any call (R6).
#pragma once

#include <atomic>
#include <cstdint>
#include <span>

#include "core/log.h"
#include "core/status.h"
#include "runner/forwarder.h"

namespace llmpack {

class TextPrefiller {
 public:
  TextPrefiller(Forwarder& forwarder, LogSink log) : forwarder_(forwarder), log_(std::move(log)) {}

  // R5 and R6 for `n_tokens` more tokens at the current position; no call made.
  Status check_fits(int64_t n_tokens) const;

  // Feeds `tokens` (checked with check_fits first) and returns the logits
  // after the last one. A `stop` seen between chunks ends early with an
  // error saying so; the chunks already fed stay in the sequence (R9).
  Result<LogitsView> prefill(std::span<const int64_t> tokens, const std::atomic<bool>& stop);

  // Tokens per call for this package (R1-R4); the whole prompt without a KV cache.
  int64_t chunk_size() const;

 private:
  void warn_once_if_bound_below_seq_len();

  Forwarder& forwarder_;
  LogSink log_;
  bool warned_ = false;
};

// The message of the error prefill() returns when stopped.
inline constexpr const char* kPrefillStoppedMessage = "prefill stopped by stop()";

}  // namespace llmpack
