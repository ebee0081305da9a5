// A byte-level BPE tokenizer (HF tokenizer.json, tiktoken) -> the tokenizer.*
// GGUF keys llama.cpp spells for tokenizer.ggml.model "gpt2", so that
// load_bpe_from_gguf on the package rebuilds the same tokenizer.
#pragma once

#include <optional>
#include <string>

#include "core/status.h"
#include "export/model_source.h"
#include "tokenizer/bpe_tokenizer.h"

namespace llmpack {

// The GGUF tokenizer.ggml.pre name ("llama-bpe", "qwen2", "gpt-2", ...) whose
// regexes split text as `vocab`'s do: the first kind with the same regexes,
// else the first that splits a set of probe texts the same way. An error
// when no kind matches (the package could not rebuild the tokenizer).
Result<std::string> gguf_pre_kind(const BpeVocab& vocab);

// Tokens (byte-level text), token types, merges ("a b", rank order; derived
// from the ranks for tiktoken), pre, bos/eos/eot/eom ids, add_bos_token and
// the chat template when given; tokenizer.llmpack.nfc when the tokenizer
// NFC-normalizes its input (no llama.cpp key says so).
Result<TokenizerMetadata> bpe_tokenizer_metadata(const BpeTokenizer& tok,
                                                 const std::optional<std::string>& chat_template);

// Byte-level vocabularies shorter than the model's embedding (Qwen2/3: 151669
// tokens, 151936 rows) grow to `model_vocab` with unused "[PAD<id>]" tokens,
// as llama.cpp's converter does, since a package's tokenizer must cover every
// id the model can produce. Other vocabularies are left alone; returns
// whether it padded.
bool pad_bpe_tokenizer_metadata(TokenizerMetadata* m, int64_t model_vocab);

}  // namespace llmpack
