// libFuzzer target: parse_llama2c_checkpoint on arbitrary bytes. On success
// every weight array is read in full at its documented shape, so a view that
// runs past the buffer shows up as an ASan report.
#include <cstddef>
#include <cstdint>
#include <span>

#include "format/llama2c.h"

namespace {

volatile float g_sink = 0;

void touch(const float* p, int64_t n) {
  float s = 0;
  for (int64_t i = 0; i < n; ++i) s += p[i];
  g_sink = g_sink + s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto file = llmpack::MappedFile::from_bytes(std::span<const uint8_t>(data, size));
  auto ck = llmpack::parse_llama2c_checkpoint(std::move(file));
  if (!ck.ok()) {
    g_sink = g_sink + static_cast<float>(ck.status().message().size());
    return 0;
  }
  const llmpack::Llama2cConfig& c = ck->config;
  const llmpack::Llama2cWeights& w = ck->weights;
  const int64_t d = c.dim, hd = c.hidden_dim, L = c.n_layers, kv = c.kv_dim(), v = c.vocab_size;
  if (d <= 0 || hd <= 0 || L <= 0 || v <= 0 || c.seq_len <= 0 || c.n_heads <= 0 ||
      c.n_kv_heads <= 0 || d % c.n_heads != 0 || c.n_heads % c.n_kv_heads != 0)
    __builtin_trap();  // accepted a config the reader promises to refuse
  touch(w.token_embedding, v * d);
  touch(w.rms_att, L * d);
  touch(w.wq, L * d * d);
  touch(w.wk, L * kv * d);
  touch(w.wv, L * kv * d);
  touch(w.wo, L * d * d);
  touch(w.rms_ffn, L * d);
  touch(w.w1, L * hd * d);
  touch(w.w2, L * d * hd);
  touch(w.w3, L * hd * d);
  touch(w.rms_final, d);
  touch(w.wcls, v * d);
  return 0;
}
