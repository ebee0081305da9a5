// libFuzzer target: a SentencePiece vocabulary read from GGUF metadata, then
// encoding and decoding of a fixed text with it.
#include <cstddef>
#include <cstdint>
#include <span>

#include "format/gguf.h"
#include "tokenizer/streaming_decoder.h"
#include "tokenizer/tokenizer_loader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto gguf = llmpack::GgufFile::from_bytes(std::span<const uint8_t>(data, size));
  if (!gguf.ok()) return 0;
  auto tok = llmpack::load_spm_from_gguf(**gguf);
  if (!tok.ok()) return 0;
  const llmpack::SpmTokenizer& t = **tok;
  static const char kText[] = "Once upon a time,  there was\ta little girl. \xE4\xB8\xAD\xF0\x9F\x99\x82 \xFF\xC3(";
  for (int n_bos : {0, 1}) {
    auto ids = t.encode(std::string_view(kText, sizeof(kText) - 1), n_bos, 0);
    if (!ids.ok()) continue;
    llmpack::StreamingDecoder decoder(t);
    int32_t prev = -1;
    for (int32_t id : *ids) {
      auto piece = decoder.push(prev, id);
      if (!piece.ok()) __builtin_trap();  // every id encode gives must decode
      prev = id;
    }
    (void)decoder.flush();
  }
  return 0;
}
