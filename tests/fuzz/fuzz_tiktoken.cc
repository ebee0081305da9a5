// libFuzzer target: the tiktoken reader, then building the tokenizer (merges
// derived from ranks) and encoding / decoding a fixed text.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tokenizer/tiktoken.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)llmpack::looks_like_tiktoken({data, size});
  auto vocab = llmpack::parse_tiktoken(text);
  if (!vocab.ok()) return 0;
  auto tok = llmpack::BpeTokenizer::create(std::move(*vocab));
  if (!tok.ok()) return 0;
  static const char kText[] = "Hello world's 12345 \n\n\xE4\xB8\xAD\xF0\x9F\x99\x82 \xFF\xC3(";
  auto ids = (*tok)->encode(std::string_view(kText, sizeof(kText) - 1), 0, 0);
  if (!ids.ok()) return 0;
  for (int32_t id : *ids) {
    if (!(*tok)->decode(-1, id).ok()) __builtin_trap();
  }
  return 0;
}
