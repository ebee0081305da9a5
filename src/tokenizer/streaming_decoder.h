// Turns a stream of token ids into text that never splits a UTF-8 character
// (CONTRACT G4): bytes of an incomplete character are held until it completes.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "tokenizer/tokenizer.h"

namespace llmpack {

class StreamingDecoder {
 public:
  explicit StreamingDecoder(const Tokenizer& tokenizer) : tokenizer_(tokenizer) {}

  // Decodes `id` (following `prev_id`) and returns the text that is now
  // complete: zero or more whole UTF-8 characters. Bytes that can never
  // start or continue a valid character come out as U+FFFD.
  Result<std::string> push(int32_t prev_id, int32_t id);
  // Whatever is still held (an unfinished character) as U+FFFD; then empty.
  std::string flush();
  void reset() { pending_.clear(); }

 private:
  const Tokenizer& tokenizer_;
  std::string pending_;
};

}  // namespace llmpack
