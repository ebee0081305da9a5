// libFuzzer target: the HF tokenizer.json reader (and the tokenizer_config /
// generation_config readers), then building the tokenizer and encoding /
// decoding a fixed text with whatever vocabulary loaded.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tokenizer/hf_tokenizer_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  llmpack::HfTokenizerConfig config;
  (void)llmpack::parse_hf_tokenizer_config(text, &config);
  (void)llmpack::parse_hf_generation_config(text, &config);
  (void)llmpack::gunzip({data, size});
  auto vocab = llmpack::parse_hf_tokenizer_json(text, config);
  if (!vocab.ok()) return 0;
  auto tok = llmpack::BpeTokenizer::create(std::move(*vocab));
  if (!tok.ok()) return 0;
  static const char kText[] = "Hello world <|end|> 123  \n\xE4\xB8\xAD\xF0\x9F\x99\x82 \xFF\xC3( e\xCC\x81";
  llmpack::EncodeOptions options;
  options.parse_special = size % 2 == 0;
  auto ids = (*tok)->encode(std::string_view(kText, sizeof(kText) - 1), options);
  if (!ids.ok()) return 0;
  for (int32_t id : *ids) {
    if (!(*tok)->decode(-1, id).ok()) __builtin_trap();  // every id encode gives must decode
  }
  return 0;
}
