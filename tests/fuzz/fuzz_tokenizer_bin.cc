// libFuzzer target: the llama2.c tokenizer.bin loader, then encoding and
// (streaming) decoding of a fixed text with whatever vocabulary loaded.
#include <cstddef>
#include <cstdint>
#include <span>

#include "tokenizer/streaming_decoder.h"
#include "tokenizer/tokenizer_loader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto tok = llmpack::parse_llama2c_tokenizer(std::span<const uint8_t>(data, size), -1);
  if (!tok.ok()) return 0;
  const llmpack::SpmTokenizer& t = **tok;
  static const char kText[] = "Once upon a time,  there was\ta little girl. \xE4\xB8\xAD\xF0\x9F\x99\x82 \xFF\xC3(";
  auto ids = t.encode(std::string_view(kText, sizeof(kText) - 1), 1, 1);
  if (!ids.ok()) return 0;
  llmpack::StreamingDecoder decoder(t);
  int32_t prev = -1;
  for (int32_t id : *ids) {
    auto piece = decoder.push(prev, id);
    if (!piece.ok()) __builtin_trap();  // every id encode gives must decode
    prev = id;
  }
  (void)decoder.flush();
  return 0;
}
