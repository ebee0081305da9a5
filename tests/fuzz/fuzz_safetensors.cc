// libFuzzer target: the safetensors reader on arbitrary bytes; a tensor it
// accepts must lie inside the input.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "format/safetensors_file.h"
#include "format/sentencepiece_model.h"

namespace {
volatile uint64_t g_sink = 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace llmpack;
  const std::span<const uint8_t> bytes(data, size);
  auto file = MappedFile::from_bytes(bytes);
  const uint8_t* begin = file->data();
  const uint8_t* end = begin + file->size();
  auto st = SafetensorsFile::from_file(std::move(file));
  if (st.ok()) {
    for (const auto& t : (*st)->tensors()) {
      if (t.bytes.empty()) continue;
      if (t.bytes.data() < begin || t.bytes.data() + t.bytes.size() > end) std::abort();
      g_sink = g_sink + t.bytes.front() + t.bytes.back();  // ASan checks both ends
    }
  }
  // The SentencePiece protobuf reader shares the "validate every length" rule.
  (void)parse_sentencepiece_model(bytes);
  return 0;
}
