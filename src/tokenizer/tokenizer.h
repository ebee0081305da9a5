// The tokenizer interface the runner and the CLI use. Concrete tokenizers
// (SentencePiece-style BPE now; byte-level BPE later) implement it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace llmpack {

// Options of Tokenizer::encode beyond the text.
struct EncodeOptions {
  int n_bos = 0;  // BOS ids before the text
  int n_eos = 0;  // EOS ids after the text
  // Whether special-token text in the input ("<|eot_id|>") becomes the single
  // special id. Off, it is tokenized as plain text, so user text cannot
  // forge control tokens. (Non-special added tokens, such as Qwen's
  // "<think>", always match, as in HF tokenizers and llama.cpp.)
  bool parse_special = false;
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Token ids for `text`, with n_bos BOS ids before and n_eos EOS ids after.
  // Text that cannot be tokenized (invalid UTF-8 where no byte fallback
  // exists) is an error naming the byte offset.
  virtual Result<std::vector<int32_t>> encode(std::string_view text, int n_bos, int n_eos) const = 0;

  // encode() with options; encode(text, {n_bos, n_eos}) equals the 3-argument
  // form. The default implementation cuts the text at special_token_ids()
  // pieces when options.parse_special and encodes the rest piecewise
  // (special_tokens.cc). A subclass that overrides only the 3-argument form
  // should add `using Tokenizer::encode;` to keep this one visible.
  virtual Result<std::vector<int32_t>> encode(std::string_view text, const EncodeOptions& options) const;

  // Ids of control / added tokens whose text parse_special recognizes.
  virtual std::vector<int32_t> special_token_ids() const { return {}; }

  // The raw bytes token `id` stands for when it follows `prev_id` (SentencePiece
  // drops the leading space of the first piece after BOS; byte pieces
  // "<0x0A>" give their single byte). May be part of a UTF-8 character:
  // StreamingDecoder reassembles characters. Unknown ids give an error.
  virtual Result<std::string> decode(int32_t prev_id, int32_t id) const = 0;

  virtual int32_t vocab_size() const = 0;
  virtual int32_t bos_id() const = 0;  // -1 when the vocabulary has none
  virtual int32_t eos_id() const = 0;  // -1 when the vocabulary has none
  // Further ids that end a turn (<|eot_id|>, <|im_end|>); may be empty. The
  // default picks, among special_token_ids(), the pieces that chat models
  // use to end a turn (special_tokens.cc, kEndOfTurnPieces).
  virtual std::vector<int32_t> end_of_turn_ids() const;
  // How many BOS the model's own rule adds to a prompt (GGUF
  // tokenizer.ggml.add_bos_token; 1 for SentencePiece and llama2.c vocabularies).
  virtual int default_num_bos() const { return 1; }
  // The text of a token as stored in the vocabulary ("▁Once", "<0x0A>").
  virtual std::string piece(int32_t id) const = 0;
};

}  // namespace llmpack
