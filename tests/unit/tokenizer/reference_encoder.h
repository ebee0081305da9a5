// The SentencePiece BPE rule that llama2.c's tokenizer applies, in its
// plainest, quadratic form: the oracle the fast tokenizer is compared with.
// Spaces become the vocabulary's space piece (U+2581 or ' '), a dummy prefix
// space leads non-empty text when the vocabulary asks for one, each character
// (a lead byte and up to 3 continuation bytes) becomes its piece or, lacking
// one, a byte piece <0xNN> per byte; then, while some adjacent pair joins into
// a piece, the pair whose joined piece scores highest (the leftmost of equal
// ones) becomes that piece. Valid UTF-8 input only: invalid bytes are grouped
// by rules this form does not model.
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
  ReferenceEncoder(const SpmVocab& vocab, bool meta_space)
      : vocab_(vocab), space_(meta_space ? "\xE2\x96\x81" : " ") {
    for (size_t i = 0; i < vocab.pieces.size(); ++i) ids_.emplace(vocab.pieces[i], static_cast<int32_t>(i));
  }
  std::vector<int32_t> encode(std::string_view text) const {
    std::vector<int32_t> ids = initial_pieces(text);
    while (join_best_pair(ids)) {
    }
    return ids;
  }

 private:
  int32_t id_of(const std::string& piece) const {
    auto it = ids_.find(piece);
    return it == ids_.end() ? -1 : it->second;
  }

  // One piece per character (its bytes' pieces where the vocabulary lacks it).
  std::vector<int32_t> initial_pieces(std::string_view text) const {
    std::vector<int32_t> ids;
    if (text.empty()) return ids;
    if (vocab_.add_dummy_prefix) ids.push_back(id_of(space_));
    for (size_t i = 0; i < text.size();) {
      size_t n = 1;
      while (n < 4 && i + n < text.size() && (static_cast<uint8_t>(text[i + n]) & 0xC0) == 0x80) ++n;
      const std::string ch = text[i] == ' ' ? space_ : std::string(text.substr(i, n));
      if (const int32_t id = id_of(ch); id >= 0) {
        ids.push_back(id);
      } else {
        for (size_t k = 0; k < n; ++k) {
          char name[8];
          std::snprintf(name, sizeof(name), "<0x%02X>", static_cast<uint8_t>(text[i + k]));
          ids.push_back(id_of(name));
        }
      }
      i += n;
    }
    return ids;
  }

  // Pieces scoring this or less (or NaN) never join, as in llama2.c.
  static constexpr float kFloor = -1e10f;

  // Joins the best-scoring adjacent pair; false when no pair joins.
  bool join_best_pair(std::vector<int32_t>& ids) const {
    size_t at = ids.size();
    int32_t joined = -1;
    for (size_t i = 0; i + 1 < ids.size(); ++i) {
      const int32_t id = id_of(vocab_.pieces[ids[i]] + vocab_.pieces[ids[i + 1]]);
      if (id < 0 || !(vocab_.scores[id] > kFloor)) continue;
      if (joined < 0 || vocab_.scores[id] > vocab_.scores[joined]) at = i, joined = id;
    }
    if (joined < 0) return false;
    ids[at] = joined;
    ids.erase(ids.begin() + static_cast<std::ptrdiff_t>(at) + 1);
    return true;
  }

  const SpmVocab& vocab_;
  std::string space_;
  std::unordered_map<std::string, int32_t> ids_;
};

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
