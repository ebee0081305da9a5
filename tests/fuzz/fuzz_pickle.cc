// libFuzzer target: the restricted pickle VM and the PyTorch checkpoint
// reader on arbitrary bytes. Any input must give a value or an error, never
// a crash, a hang or unbounded memory.
#include <cstddef>
#include <cstdint>
#include <span>

#include "format/pickle_reader.h"
#include "format/pytorch_checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace llmpack;
  const std::span<const uint8_t> bytes(data, size);
  PickleLimits limits;
  limits.max_values = 1 << 16;
  limits.max_stack = 1 << 12;
  auto doc = PickleDocument::parse(bytes, limits);
  if (doc.ok()) {
    // Walk what was built, as the checkpoint reader does.
    size_t n = 0;
    for (uint32_t i : doc->root().items) n += doc->value(i).items.size();
    (void)doc->dict_get(doc->root(), "model");
    (void)n;
  }
  // The same bytes as a zip archive holding a checkpoint.
  auto zip = ZipArchive::from_file(MappedFile::from_bytes(bytes));
  if (zip.ok()) (void)parse_torch_checkpoint(std::move(zip).value());
  return 0;
}
