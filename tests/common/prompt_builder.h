// Builds prompts of an exact token count (BOS included), for tests that must
// hit S - 1, S, S + 1, ... tokens exactly.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "tokenizer/tokenizer.h"

namespace llmpack::testing {

// Words are appended while the count stays <= n, trying shorter ones near the end.
inline std::string prompt_of_length(const Tokenizer& tok, int64_t n) {
  static const char* words[] = {"Lily", "saw", "a", "big", "red", "ball", "and", "the", "dog", "ran", "."};
  constexpr int kWords = 11;
  std::string text;
  int64_t count = 1;
  for (int i = 0; count < n; ++i) {
    bool grown = false;
    for (int k = 0; k < kWords && !grown; ++k) {
      std::string next = text + (text.empty() ? "" : " ") + words[(i + k) % kWords];
      const int64_t c = static_cast<int64_t>(tok.encode(next, 1, 0)->size());
      if (c <= n) {
        text = next;
        count = c;
        grown = true;
      }
    }
    if (!grown) break;
  }
  EXPECT_EQ(count, n) << "could not build a prompt of " << n << " tokens";
  return text;
}

}  // namespace llmpack::testing
