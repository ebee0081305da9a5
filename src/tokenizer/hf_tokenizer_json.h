// Hugging Face tokenizer.json files for byte-level BPE models (Llama 3,
// Qwen2/3, GPT-2 style), plain or gzip-compressed, with the
// tokenizer_config.json / generation_config.json found beside them.
//
// Supported: model.type "BPE" (merges as "a b" strings or ["a", "b"] pairs,
// ignore_merges), added_tokens, normalizer null / NFC, pre_tokenizer
// ByteLevel / Split (Regex or String pattern, behavior Isolated) / Sequence
// of those, decoder ByteLevel. Anything else is refused by name.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "core/status.h"
#include "tokenizer/bpe_tokenizer.h"

namespace llmpack {

// Special-token settings that live outside tokenizer.json.
struct HfTokenizerConfig {
  std::string bos_token;  // tokenizer_config.json bos_token ("" = not given)
  std::string eos_token;
  int add_bos = -1;       // add_bos_token: -1 not given, 0 false, 1 true
  std::vector<int64_t> generation_eos_ids;  // generation_config.json eos_token_id (first = EOS)
  int64_t generation_bos_id = -1;
};

// The tokenizer from tokenizer.json text (not compressed).
Result<BpeVocab> parse_hf_tokenizer_json(std::string_view json, const HfTokenizerConfig& config = {});

// tokenizer_config.json / generation_config.json text into `config`.
Status parse_hf_tokenizer_config(std::string_view json, HfTokenizerConfig* config);
Status parse_hf_generation_config(std::string_view json, HfTokenizerConfig* config);

// The file's bytes, gunzipped when they start with the gzip magic (1f 8b).
Result<std::string> read_maybe_gzip(const std::string& path);
Result<std::string> gunzip(std::span<const uint8_t> bytes);

// tokenizer.json(.gz) at `path`, plus tokenizer_config.json and
// generation_config.json from the same folder when present.
Result<std::unique_ptr<BpeTokenizer>> load_hf_tokenizer_json(const std::string& path);

}  // namespace llmpack
