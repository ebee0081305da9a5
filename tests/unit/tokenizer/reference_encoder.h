// A literal transcription of llama2.c run.c `encode` (the simple O(n^2)
// merge loop) over an SpmVocab: the oracle the fast tokenizer is compared
// with. Valid UTF-8 input only (run.c groups invalid bytes differently).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/spm_tokenizer.h"

namespace llmpack::testing {

class ReferenceEncoder {
 public:
  ReferenceEncoder(const SpmVocab& vocab, bool meta_space) : vocab_(vocab), meta_space_(meta_space) {
    for (size_t i = 0; i < vocab.pieces.size(); ++i) lookup_.emplace(vocab.pieces[i], static_cast<int32_t>(i));
  }
  std::vector<int32_t> encode(std::string_view text) const;

 private:
  const SpmVocab& vocab_;
  bool meta_space_;
  std::unordered_map<std::string, int32_t> lookup_;
};

inline std::vector<int32_t> ReferenceEncoder::encode(std::string_view text) const {
  const SpmVocab& vocab = vocab_;
  const bool meta_space = meta_space_;
  const auto& lookup = lookup_;
  const auto find = [&](const std::string& s) {
    auto it = lookup.find(s);
    return it == lookup.end() ? -1 : it->second;
  };
  const std::string space = meta_space ? "\xE2\x96\x81" : " ";
  std::string t;
  for (char c : text) t += c == ' ' ? space : std::string(1, c);
  std::vector<int32_t> tokens;
  if (!text.empty() && vocab.add_dummy_prefix) tokens.push_back(find(space));
  std::string buf;
  for (size_t i = 0; i < t.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(t[i]);
    if ((c & 0xC0) != 0x80) buf.clear();
    buf += static_cast<char>(c);
    if (i + 1 < t.size() && (static_cast<unsigned char>(t[i + 1]) & 0xC0) == 0x80 && buf.size() < 4) continue;
    const int32_t id = find(buf);
    if (id >= 0) {
      tokens.push_back(id);
    } else {
      for (unsigned char b : buf) {
        char name[8];
        std::snprintf(name, sizeof(name), "<0x%02X>", b);
        tokens.push_back(find(name));
      }
    }
    buf.clear();
  }
  while (true) {
    float best_score = -1e10f;
    int32_t best_id = -1;
    int best_idx = -1;
    for (size_t i = 0; i + 1 < tokens.size(); ++i) {
      const int32_t id = find(vocab.pieces[tokens[i]] + vocab.pieces[tokens[i + 1]]);
      if (id != -1 && vocab.scores[id] > best_score) {
        best_score = vocab.scores[id];
        best_id = id;
        best_idx = static_cast<int>(i);
      }
    }
    if (best_idx == -1) break;
    tokens[best_idx] = best_id;
    tokens.erase(tokens.begin() + best_idx + 1);
  }
  return tokens;
}

inline std::vector<int32_t> reference_encode(const SpmVocab& vocab, bool meta_space, std::string_view text) {
  return ReferenceEncoder(vocab, meta_space).encode(text);
}

// Random valid UTF-8 text mixing words, spaces runs, punctuation, newlines,
// accented letters, CJK and emoji (deterministic for a seed).
inline std::string random_text(uint32_t seed, size_t n_parts) {
  static const char* kParts[] = {
      "a", "e", "t", "the", "Once", " upon", "time", "girl", "s", "ing", " ", "  ", "   ", "\n", "\t", ",", ".",
      "!", "'", "0", "42", "x", "Q", "Z", "é", "ü", "ß", "ñ", "Ω", "ж", "中", "文", "日本", "한", "🙂", "🚀", "👍🏽",
      "ﬁ", "\xE2\x96\x81", "<s>", "<0x41>", "  \n ", "lly", "was", "there", "little"};
  constexpr size_t kCount = sizeof(kParts) / sizeof(kParts[0]);
  std::string out;
  uint32_t state = seed * 2654435761u + 12345u;
  for (size_t i = 0; i < n_parts; ++i) {
    state = state * 1664525u + 1013904223u;
    out += kParts[(state >> 8) % kCount];
  }
  return out;
}

}  // namespace llmpack::testing
