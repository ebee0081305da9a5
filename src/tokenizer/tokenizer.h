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

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Token ids for `text`, with n_bos BOS ids before and n_eos EOS ids after.
  // Text that cannot be tokenized (invalid UTF-8 where no byte fallback
  // exists) is an error naming the byte offset.
  virtual Result<std::vector<int32_t>> encode(std::string_view text, int n_bos, int n_eos) const = 0;

  // The raw bytes token `id` stands for when it follows `prev_id` (SentencePiece
  // drops the leading space of the first piece after BOS; byte pieces
  // "<0x0A>" give their single byte). May be part of a UTF-8 character:
  // StreamingDecoder reassembles characters. Unknown ids give an error.
  virtual Result<std::string> decode(int32_t prev_id, int32_t id) const = 0;

  virtual int32_t vocab_size() const = 0;
  virtual int32_t bos_id() const = 0;  // -1 when the vocabulary has none
  virtual int32_t eos_id() const = 0;  // -1 when the vocabulary has none
  // Further ids that end a turn (<|eot_id|>, <|im_end|>); may be empty.
  virtual std::vector<int32_t> end_of_turn_ids() const { return {}; }
  // How many BOS the model's own rule adds to a prompt (GGUF
  // tokenizer.ggml.add_bos_token; 1 for SentencePiece and llama2.c vocabularies).
  virtual int default_num_bos() const { return 1; }
  // The text of a token as stored in the vocabulary ("▁Once", "<0x0A>").
  virtual std::string piece(int32_t id) const = 0;
};

}  // namespace llmpack
