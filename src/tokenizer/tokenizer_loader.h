// Reading tokenizers from files: llama2.c tokenizer.bin, GGUF vocabularies,
// and a front door that tells them apart by content.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "core/status.h"
#include "format/gguf.h"
#include "format/sentencepiece_model.h"
#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/spm_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace llmpack {

// llama2.c tokenizer.bin: int32 max_token_length, then per token float32
// score, int32 len, len bytes. Ids 0 <unk>, 1 <s> (BOS), 2 </s> (EOS);
// "<0xHH>" pieces are byte-fallback tokens. `vocab_size` is the model's
// (the file does not store it): the file must hold exactly that many tokens;
// vocab_size <= 0 accepts however many the file holds.
Result<std::unique_ptr<SpmTokenizer>> load_llama2c_tokenizer(const std::string& path, int32_t vocab_size);
Result<std::unique_ptr<SpmTokenizer>> parse_llama2c_tokenizer(std::span<const uint8_t> bytes, int32_t vocab_size);

// A SentencePiece vocabulary from GGUF metadata (tokenizer.ggml.model "llama").
Result<std::unique_ptr<SpmTokenizer>> load_spm_from_gguf(const GgufFile& gguf);

// A byte-level BPE vocabulary from GGUF metadata (tokenizer.ggml.model
// "gpt2"): tokens, token_type, merges ("a b"), pre (the pre-tokenizer kind;
// absent: "default"), bos/eos/eot/eom ids, add_bos_token (absent: false).
Result<std::unique_ptr<BpeTokenizer>> load_bpe_from_gguf(const GgufFile& gguf);

// Whichever of the two tokenizer.ggml.model says.
Result<std::unique_ptr<Tokenizer>> load_tokenizer_from_gguf(const GgufFile& gguf);

// A SentencePiece .model (BPE models only: a unigram model would need
// Viterbi segmentation, which SpmTokenizer does not do).
Result<std::unique_ptr<SpmTokenizer>> spm_from_sentencepiece_model(const SentencePieceModel& model);

// Any tokenizer file, told apart by content: GGUF (magic "GGUF"), HF
// tokenizer.json (gzip magic or '{'), tiktoken ("<base64> <rank>" lines),
// SentencePiece .model (protobuf: first byte 0x0A, a piece), else llama2.c
// tokenizer.bin (vocabulary size taken from the file).
Result<std::unique_ptr<Tokenizer>> load_tokenizer(const std::string& path);

}  // namespace llmpack
