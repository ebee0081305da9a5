// Unicode NFC normalization (canonical decomposition, canonical ordering,
// canonical composition) for tokenizers whose tokenizer.json asks for it
// (Qwen2/3). Tables come from the Unicode Character Database
// (pretokenizer_nfc_tables.cc). Bytes that are not valid UTF-8 pass through
// unchanged and block composition across them.
#pragma once

#include <string>
#include <string_view>

namespace llmpack {

std::string nfc_normalize(std::string_view text);

}  // namespace llmpack
