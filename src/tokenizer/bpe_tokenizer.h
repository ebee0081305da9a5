// Byte-level BPE tokenizer (GPT-2, Llama 3, Qwen2/3, DeepSeek, Falcon,
// StarCoder, ...): GGUF tokenizer.ggml.model "gpt2", HF tokenizer.json with
// a BPE model and ByteLevel pre-tokenizer, tiktoken files.
//
// Encoding:
//   1. added / special tokens are cut out of the text first (special ones only
//      with parse_special; non-special added tokens always, as HF does);
//   2. the optional NFC normalizer runs on the remaining text;
//   3. the pre-tokenizer (regexes, pretokenizer.h) cuts it into words;
//   4. each word's bytes become one symbol per byte (the token spelled by the
//      byte's GPT-2 bytes_to_unicode character); with ignore_merges a word that
//      is itself a token maps straight to it (Llama 3, tiktoken);
//   5. adjacent symbols merge by rank, lowest first (leftmost on ties), with a
//      priority queue over pairs and a linked list of symbols, as in
//      SpmTokenizer; merges are looked up by (left id, right id).
// Decoding maps each character of a piece back to its byte.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "core/string_table.h"
#include "core/zero_pages.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/special_tokens.h"
#include "tokenizer/spm_tokenizer.h"  // TokenType
#include "tokenizer/tokenizer.h"

namespace llmpack {

struct BpeVocab {
  // [n_vocab] token text as stored: GPT-2 byte-level characters ("Ġthe") when
  // byte_level_pieces, else raw bytes (tiktoken). Control / user-defined
  // tokens are plain text ("<|eot_id|>") either way.
  StringTable tokens;
  std::vector<TokenType> types;  // [n_vocab]; empty: all normal
  // Merges in priority order (rank = index), each a pair of token texts.
  std::vector<std::pair<std::string, std::string>> merges;
  // No merge list: the pair (a, b) merges with the rank of the token a+b
  // (tiktoken's rule; ranks are ids).
  bool merges_from_ranks = false;
  bool byte_level_pieces = true;
  bool ignore_merges = false;
  bool nfc = false;  // NFC-normalize text before pre-tokenizing (Qwen2/3)
  std::vector<std::string> pretokenizer_regexes;
  int32_t bos_id = -1;  // -1: none
  int32_t eos_id = -1;
  std::vector<int32_t> eot_ids;  // extra end-of-turn ids (GGUF eot/eom); more are found by name
  bool add_bos = false;
};

// GPT-2's bytes_to_unicode: the code point standing for byte `b` (printable
// Latin-1 bytes stand for themselves, the rest for U+0100 onwards).
uint32_t byte_to_unicode(uint8_t b);

class BpeTokenizer final : public Tokenizer {
 public:
  // Validates the vocabulary (sizes, ids in range) and compiles the
  // pre-tokenizer.
  static Result<std::unique_ptr<BpeTokenizer>> create(BpeVocab vocab);
  // The merges as GGUF stores them, "left right" with rank = index, instead
  // of vocab.merges (which must be empty). They go straight into the merge
  // table and are not kept: vocab().merges stays empty. Splitting Llama 3's
  // 280k merges into pairs of strings first took 18 MB of fresh pages.
  static Result<std::unique_ptr<BpeTokenizer>> create(BpeVocab vocab,
                                                      const StringTable& joined_merges);
  BpeTokenizer(const BpeTokenizer&) = delete;  // the token indexes point at members
  BpeTokenizer& operator=(const BpeTokenizer&) = delete;

  using Tokenizer::encode;
  Result<std::vector<int32_t>> encode(std::string_view text, int n_bos, int n_eos) const override;
  Result<std::vector<int32_t>> encode(std::string_view text, const EncodeOptions& options) const override;
  Result<std::string> decode(int32_t prev_id, int32_t id) const override;
  int32_t vocab_size() const override { return static_cast<int32_t>(vocab_.tokens.size()); }
  int32_t bos_id() const override { return vocab_.bos_id; }
  int32_t eos_id() const override { return vocab_.eos_id; }
  std::vector<int32_t> end_of_turn_ids() const override;
  int default_num_bos() const override { return vocab_.add_bos ? 1 : 0; }
  std::string piece(int32_t id) const override;
  std::vector<int32_t> special_token_ids() const override;

  const BpeVocab& vocab() const { return vocab_; }
  size_t num_merges() const { return merge_rank_.size(); }
  // Merges dropped because a part or the result is not a token.
  size_t skipped_merges() const { return skipped_merges_; }

 private:
  struct Symbol;
  struct Merge {
    int32_t rank;
    int32_t result;
  };
  // Open-addressing hash table from (left id, right id) to its merge: no node
  // allocations, key and merge in one 16-byte slot, so a probe touches one
  // cache line (std::unordered_map made loading Llama 3's 280k merges several
  // times slower). At most 60% full.
  class MergeTable {
   public:
    void reserve(size_t n);
    // Keeps the first merge inserted for a key (the best rank).
    void insert(uint64_t key, Merge merge);
    const Merge* find(uint64_t key) const;
    size_t size() const { return size_; }
    void prefetch(uint64_t key) const {
      if (!slots_.empty()) __builtin_prefetch(&slots_[slot(key)]);
    }

   private:
    // Holds ~key, so that a zero page reads as empty slots (ids are < 2^31,
    // so no key is ~0 and no inverted key is 0).
    struct Slot {
      uint64_t inverted_key;
      Merge merge;
    };
    size_t slot(uint64_t key) const { return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_); }
    ZeroedVector<Slot> slots_;  // zeros without a memset; pages populated when sized (filled next)
    size_t size_ = 0;
    int shift_ = 64;
  };
  explicit BpeTokenizer(BpeVocab vocab) : vocab_(std::move(vocab)) {}
  Status build(const StringTable& joined_merges);
  Status build_merges(const StringTable& joined_merges);
  // Merges named by text, looked up a batch at a time (TokenIndex::find_batch).
  struct MergeBatch {
    static constexpr size_t kMerges = 32;  // 3 lookups each: TokenIndex::kBatch
    std::array<std::string, kMerges> joined;  // a + b, reused
    std::array<std::string_view, 3 * kMerges> keys;  // a, b, a + b of each
    size_t count = 0;
    void add(std::string_view a, std::string_view b);
    bool full() const { return count == kMerges; }
  };
  // Adds the batch's merges, ranked up to end_rank (exclusive), whose two
  // tokens (stored text) and their concatenation are tokens; counts the
  // others as skipped. Empties the batch.
  void add_merges_by_text(MergeBatch& batch, int32_t end_rank);
  void add_merge(int32_t left, int32_t right, int32_t result, int32_t rank);
  // Appends the ids of plain text (no added tokens inside).
  Status encode_plain(std::string_view text, std::vector<int32_t>* out) const;
  void encode_word(std::string_view word, std::vector<int32_t>* out) const;
  // Raw bytes spelled as the vocabulary stores them (byte-level characters).
  std::string stored_form(std::string_view raw) const;
  // The bytes token `id` stands for (its text read back through the
  // byte-level mapping). Computed per call rather than kept for every token:
  // a table of them cost Llama 3 2 MB of fresh pages and its index 2 MB more.
  std::string raw_bytes(int32_t id) const;
  Result<std::vector<int32_t>> encode_impl(std::string_view text, const EncodeOptions& options) const;
  static uint64_t pair_key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }

  BpeVocab vocab_;
  std::unique_ptr<Pretokenizer> pretokenizer_;
  // Open-addressing map from token text to id over a [n_vocab] list of
  // strings (vocab_.tokens, which never changes after build()): a slot
  // holds a hash tag and an id, 8 bytes, and a probe whose tag matches
  // compares the id's string. std::unordered_map chased three pointers (it
  // dominated loading time); string_view keys made the slots 3x larger.
  class TokenIndex {
   public:
    explicit TokenIndex(const StringTable* keys) : keys_(keys) {}
    void reserve(size_t n);
    void insert(int32_t id);                    // key: (*keys)[id]; the first id wins
    int32_t find(std::string_view key) const;  // -1 when absent
    // The same for ids [first, last) and for keys[0, n), kBatch at a time:
    // a batch's slots are all prefetched first, so that its cache misses
    // overlap (a 150k vocabulary's table is 4 MB, past L2: one miss per
    // probe dominated loading).
    static constexpr size_t kBatch = 96;
    void insert_range(int32_t first, int32_t last);
    void find_batch(const std::string_view* keys, size_t n, int32_t* ids) const;
   private:
    struct Slot {
      uint32_t tag;  // high hash bits; 0 marks an empty slot
      int32_t id;
    };
    void insert_hashed(size_t hash, int32_t id);
    int32_t find_hashed(std::string_view key, size_t hash) const;
    void prefetch_slot(size_t hash) const { __builtin_prefetch(&slots_[hash & (slots_.size() - 1)]); }
    const StringTable* keys_;
    ZeroedVector<Slot> slots_;  // zeros without a memset; pages populated when sized (filled next)
    size_t size_ = 0;
  };
  // Stored token text -> id, every type (how llama.cpp looks tokens up).
  TokenIndex text_to_id_{&vocab_.tokens};
  std::array<int32_t, 256> byte_to_id_{};  // token of each single byte; -1: none
  size_t skipped_merges_ = 0;
  MergeTable merge_rank_;
  SpecialTokenMatcher all_added_;     // control + user-defined (parse_special)
  SpecialTokenMatcher always_added_;  // user-defined only (matched even without parse_special)
};

}  // namespace llmpack
