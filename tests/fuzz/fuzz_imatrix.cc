// libFuzzer target: read_imatrix_bytes on arbitrary bytes (both forms: the
// GGUF one when the bytes start with its magic, else llama-imatrix's older
// .dat). Every value of an accepted file is touched, so that an accepted but
// inconsistent file shows up as an ASan report.
#include <cstddef>
#include <cstdint>
#include <span>

#include "format/imatrix_file.h"

namespace {
volatile double g_sink = 0;
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto m = llmpack::read_imatrix_bytes(std::span<const uint8_t>(data, size));
  if (!m.ok()) {
    g_sink = g_sink + static_cast<double>(m.status().message().size());
    return 0;
  }
  double h = static_cast<double>(m->chunk_count + m->chunk_size);
  for (const auto& d : m->datasets) h += static_cast<double>(d.size());
  for (const auto& [name, e] : m->entries) {
    h += static_cast<double>(name.size()) + e.count;
    for (float v : e.sum_sq) h += v;
    for (float v : e.mean_sq()) h += v;
  }
  g_sink = g_sink + h;
  return 0;
}
