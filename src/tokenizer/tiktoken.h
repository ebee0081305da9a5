// tiktoken BPE files (Llama 3's original tokenizer.model): one
// "<base64 token bytes> <rank>" per line, ranks 0..n-1. There is no merge
// list: the pair (a, b) merges with the rank of the token a+b, lowest first,
// and a pre-token that is itself a token maps straight to it. Llama 3's 256
// special tokens (<|begin_of_text|> 128000, <|end_of_text|> 128001,
// <|start_header_id|> 128006, <|end_header_id|> 128007, <|eot_id|> 128009,
// reserved ones) follow a 128000-token file, with Llama 3's split regex.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "core/status.h"
#include "tokenizer/bpe_tokenizer.h"

namespace llmpack {

// The ranked tokens of a tiktoken file, as raw bytes (index = rank).
Result<std::vector<std::string>> parse_tiktoken_ranks(std::string_view text);

// A BpeVocab from tiktoken text; 128000-token files get Llama 3's specials,
// BOS/EOS/end-of-turn ids and regex.
Result<BpeVocab> parse_tiktoken(std::string_view text);
Result<std::unique_ptr<BpeTokenizer>> load_tiktoken(const std::string& path);

// Whether `bytes` starts like a tiktoken file ("<base64> <digits>\n").
bool looks_like_tiktoken(std::span<const uint8_t> bytes);

// Llama 3's special-token names in id order (256 of them, from 128000).
std::vector<std::string> llama3_special_tokens();

}  // namespace llmpack
