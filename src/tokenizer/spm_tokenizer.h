// SentencePiece-style BPE tokenizer (llama2.c tokenizer.bin, GGUF
// tokenizer.ggml.model "llama", SentencePiece BPE models).
//
// Encoding, as llama2.c run.c `encode` and llama.cpp's SPM tokenizer do it:
//   1. text -> normalized text: a dummy-prefix space in front (when the
//      vocabulary asks for one and the text is not empty); for vocabularies
//      whose pieces use U+2581 '▁' for a space, every ' ' becomes '▁'
//      (llama2.c tokenizer.bin files store a plain ' ' instead, detected from
//      the pieces);
//   2. one symbol per UTF-8 character; a character that is not a piece goes
//      through byte fallback ("<0xHH>" tokens), else the unknown token;
//   3. repeatedly merge the adjacent pair of symbols whose concatenation is a
//      piece with the highest score (the leftmost pair on ties; like llama2.c,
//      only pieces scoring above -1e10 are merge candidates).
// Step 3 runs with a priority queue over adjacent pairs and a linked list of
// symbols: O(n log n) instead of the O(n^2) rescans of the plain loop, with
// identical results (a test compares both on random text). The text is first
// cut where no piece can span (see pair_keys_), so queues stay small.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/status.h"
#include "tokenizer/tokenizer.h"

namespace llmpack {

// SentencePiece piece types (the values GGUF tokenizer.ggml.token_type uses).
enum class TokenType : int32_t {
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

struct SpmVocab {
  std::vector<std::string> pieces;  // [n_vocab] piece text
  std::vector<float> scores;        // [n_vocab] merge priority (higher merges first)
  std::vector<TokenType> types;     // [n_vocab]
  int32_t bos_id = -1;              // -1: none
  int32_t eos_id = -1;
  int32_t unk_id = -1;
  bool add_bos = true;              // the model's own rule: one BOS before a prompt
  bool add_dummy_prefix = true;     // a space in front of non-empty text
  // SentencePiece's remove_extra_whitespaces (a .model's NormalizerSpec, GGUF
  // tokenizer.ggml.remove_extra_whitespaces): leading spaces dropped, each
  // run of spaces made one, trailing spaces and U+2581 dropped.
  bool remove_extra_whitespaces = false;
};

// Byte value of a "<0xHH>" piece, or -1 when `piece` is not of that form.
int byte_piece_value(std::string_view piece);

class SpmTokenizer final : public Tokenizer {
 public:
  // Validates the vocabulary (sizes agree, special ids in range) and builds
  // the lookup tables.
  static Result<std::unique_ptr<SpmTokenizer>> create(SpmVocab vocab);

  using Tokenizer::encode;  // the EncodeOptions form (special_tokens.cc)
  Result<std::vector<int32_t>> encode(std::string_view text, int n_bos, int n_eos) const override;
  // Control and user-defined pieces (what parse_special recognizes).
  std::vector<int32_t> special_token_ids() const override {
    std::vector<int32_t> ids;
    for (size_t i = 0; i < vocab_.types.size(); ++i) {
      if (vocab_.types[i] == TokenType::kControl || vocab_.types[i] == TokenType::kUserDefined) {
        ids.push_back(static_cast<int32_t>(i));
      }
    }
    return ids;
  }
  Result<std::string> decode(int32_t prev_id, int32_t id) const override;
  int32_t vocab_size() const override { return static_cast<int32_t>(vocab_.pieces.size()); }
  int32_t bos_id() const override { return vocab_.bos_id; }
  int32_t eos_id() const override { return vocab_.eos_id; }
  int default_num_bos() const override { return vocab_.add_bos ? 1 : 0; }
  std::string piece(int32_t id) const override;

  const SpmVocab& vocab() const { return vocab_; }
  // True when pieces spell a space as U+2581 '▁' (SentencePiece, GGUF);
  // false when they use a plain ' ' (llama2.c tokenizer.bin).
  bool uses_meta_space() const { return meta_space_; }
  // Id of the piece spelled exactly `text`, or -1.
  int32_t find_piece(std::string_view text) const;
  // The text encode() tokenizes: extra spaces removed where the vocabulary
  // asks for it, dummy prefix added, spaces replaced.
  std::string normalize(std::string_view text) const;

 private:
  struct Symbol;
  explicit SpmTokenizer(SpmVocab vocab) : vocab_(std::move(vocab)) {}
  Status build();
  // Appends the ids for `text` (no BOS/EOS).
  Status encode_text(std::string_view text, std::vector<int32_t>* out) const;
  Status initial_symbols(std::string_view text, std::string* norm, std::vector<Symbol>* symbols) const;
  // Merges symbols [begin, end) of the list (one segment, see pair_keys_).
  void merge_symbols(std::string_view normalized, std::vector<Symbol>* symbols, size_t begin, size_t end) const;

  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };

  SpmVocab vocab_;
  bool meta_space_ = true;
  std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> piece_to_id_;
  std::array<int32_t, 256> byte_to_id_{};  // -1 where the vocabulary lacks "<0xHH>"
  // Every pair of adjacent characters inside some piece. A merge across the
  // boundary of two characters whose pair is not here can never happen, so
  // the text splits there into segments merged independently: same result,
  // but small cache-friendly queues for long texts.
  std::unordered_set<uint64_t> pair_keys_;
};

}  // namespace llmpack
