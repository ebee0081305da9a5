// Byte-level BPE in its plainest, quadratic form: the oracle BpeTokenizer (a
// priority queue over a linked list of symbols, merges looked up by id pair)
// is compared with. Each word of the pre-tokenizer starts as one symbol per
// byte; while some adjacent pair is a merge, the pair of lowest rank (the
// leftmost of equal ones) becomes one symbol; each symbol is then a token.
// Text holding an added token's text is the caller's to leave out (the
// tokenizer cuts those out before pre-tokenizing).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/pretokenizer_nfc.h"
#include "unit/tokenizer/code_points.h"

namespace llmpack::testing {

class ReferenceBpe {
 public:
  // `vocab` as BpeTokenizer::vocab() keeps it: merges as pairs of texts (or
  // merges_from_ranks). It must outlive this object.
  static Result<std::unique_ptr<ReferenceBpe>> create(const BpeVocab& vocab) {
    auto pre = Pretokenizer::create(vocab.pretokenizer_regexes);
    if (!pre.ok()) return pre.status();
    std::unique_ptr<ReferenceBpe> ref(new ReferenceBpe(vocab));
    ref->pre_ = std::move(*pre);
    return ref;
  }

  // The ids of `text`; -1 stands for a final symbol that is no token (which
  // a vocabulary holding every byte never gives).
  Result<std::vector<int32_t>> encode(std::string_view text) const {
    const std::string normalized = vocab_.nfc ? nfc_normalize(text) : std::string(text);
    auto words = pre_->split(normalized);
    if (!words.ok()) return words.status();
    std::vector<int32_t> ids;
    for (std::string_view word : *words) {
      for (int32_t id : encode_word(word)) ids.push_back(id);
    }
    return ids;
  }

 private:
  explicit ReferenceBpe(const BpeVocab& vocab) : vocab_(vocab) {
    for (size_t i = 0; i < vocab.tokens.size(); ++i) {
      ids_.emplace(std::string(vocab.tokens[i]), static_cast<int32_t>(i));
    }
    for (int b = 0; b < 256; ++b) {
      byte_symbols_[b] = vocab.byte_level_pieces ? utf8_of(byte_to_unicode(static_cast<uint8_t>(b)))
                                                 : std::string(1, static_cast<char>(b));
    }
    // A merge counts only when both parts and the result are tokens; of a
    // pair listed twice the better (earlier) rank counts.
    for (size_t r = 0; r < vocab.merges.size(); ++r) {
      const auto& [left, right] = vocab.merges[r];
      if (ids_.count(left) && ids_.count(right) && ids_.count(left + right)) ranks_.emplace(pair_key(left, right), r);
    }
  }

  // Byte-level pieces never hold a NUL byte (byte 0 is spelled U+0100).
  static std::string pair_key(const std::string& left, const std::string& right) { return left + '\0' + right; }

  // Rank of merging `left` and `right`, or SIZE_MAX when they do not merge.
  size_t rank_of(const std::string& left, const std::string& right) const {
    if (vocab_.merges_from_ranks) {
      auto it = ids_.find(left + right);
      return it == ids_.end() ? SIZE_MAX : static_cast<size_t>(it->second);
    }
    auto it = ranks_.find(pair_key(left, right));
    return it == ranks_.end() ? SIZE_MAX : it->second;
  }

  std::vector<int32_t> encode_word(std::string_view word) const {
    std::vector<std::string> symbols;
    for (char c : word) symbols.push_back(byte_symbols_[static_cast<uint8_t>(c)]);
    if (vocab_.ignore_merges) {
      std::string whole;
      for (const auto& s : symbols) whole += s;
      if (auto it = ids_.find(whole); it != ids_.end()) return {it->second};
    }
    while (symbols.size() > 1) {
      size_t best = SIZE_MAX, at = 0;
      for (size_t i = 0; i + 1 < symbols.size(); ++i) {
        const size_t rank = rank_of(symbols[i], symbols[i + 1]);
        if (rank < best) best = rank, at = i;
      }
      if (best == SIZE_MAX) break;
      symbols[at] += symbols[at + 1];
      symbols.erase(symbols.begin() + static_cast<std::ptrdiff_t>(at) + 1);
    }
    std::vector<int32_t> ids;
    for (const auto& s : symbols) {
      auto it = ids_.find(s);
      ids.push_back(it == ids_.end() ? -1 : it->second);
    }
    return ids;
  }

  const BpeVocab& vocab_;
  std::unique_ptr<Pretokenizer> pre_;
  std::unordered_map<std::string, int32_t> ids_;
  std::unordered_map<std::string, size_t> ranks_;  // pair_key(left, right) -> rank
  std::array<std::string, 256> byte_symbols_;
};

}  // namespace llmpack::testing
