// llama2.c legacy checkpoints: a 28-byte header of seven int32, then float32
// weights in a fixed order (see llama2c.h), freq_cis_real/imag
// [seq_len, head_dim/2] each (unused), and wcls [vocab, dim] when unshared.
#include "format/llama2c.h"

#include <cstring>
#include <string>

namespace llmpack {
namespace {

constexpr uint64_t kLlama2cHeaderBytes = 7 * sizeof(int32_t);
// The newer llama2.c export format starts with this magic ("ak42" as a u32).
constexpr uint32_t kVersionedMagic = 0x616b3432;
// Far beyond any model: keeps every size product well inside 64 bits.
constexpr int64_t kMaxDim = int64_t{1} << 20;
constexpr int64_t kMaxLayers = 4096;

Status bad(const std::string& msg) { return Status::error("llama2.c checkpoint: " + msg); }

Status check_range(const char* name, int64_t v, int64_t max) {
  if (v <= 0) return bad(std::string(name) + " is " + std::to_string(v) + " (expected > 0)");
  if (v > max)
    return bad(std::string(name) + " is " + std::to_string(v) + " (expected at most " +
               std::to_string(max) + ")");
  return ok_status();
}

Status validate(const Llama2cConfig& c, int64_t vocab) {
  LLMPACK_RETURN_IF_ERROR(check_range("dim", c.dim, kMaxDim));
  LLMPACK_RETURN_IF_ERROR(check_range("hidden_dim", c.hidden_dim, kMaxDim * 4));
  LLMPACK_RETURN_IF_ERROR(check_range("n_layers", c.n_layers, kMaxLayers));
  LLMPACK_RETURN_IF_ERROR(check_range("n_heads", c.n_heads, c.dim));
  LLMPACK_RETURN_IF_ERROR(check_range("n_kv_heads", c.n_kv_heads, c.n_heads));
  LLMPACK_RETURN_IF_ERROR(check_range("vocab_size (absolute value)", vocab, kMaxDim * 4));
  LLMPACK_RETURN_IF_ERROR(check_range("seq_len", c.seq_len, kMaxDim * 4));
  if (c.dim % c.n_heads != 0)
    return bad("dim " + std::to_string(c.dim) + " is not divisible by n_heads " +
               std::to_string(c.n_heads));
  if (c.n_heads % c.n_kv_heads != 0)
    return bad("n_heads " + std::to_string(c.n_heads) + " is not divisible by n_kv_heads " +
               std::to_string(c.n_kv_heads));
  if (c.head_dim() % 2 != 0)
    return bad("head_dim " + std::to_string(c.head_dim()) + " is odd (RoPE needs pairs)");
  return ok_status();
}

}  // namespace

Result<Llama2cCheckpoint> read_llama2c_checkpoint(const std::string& path) {
  auto file = MappedFile::open(path);
  if (!file.ok()) return file.status();
  return parse_llama2c_checkpoint(std::move(file).value())
      .with_context("reading '" + path + "'");
}

Result<Llama2cCheckpoint> parse_llama2c_checkpoint(std::unique_ptr<MappedFile> file) {
  if (!file) return bad("no file");
  const uint64_t size = file->size();
  if (size < kLlama2cHeaderBytes)
    return bad("file is " + std::to_string(size) + " bytes, smaller than the 28-byte header");
  int32_t h[7];
  std::memcpy(h, file->data(), sizeof(h));
  if (static_cast<uint32_t>(h[0]) == kVersionedMagic)
    return bad("this is the versioned llama2.c export format (magic \"ak42\"); only the legacy "
               "format (version 0, a bare 7-int header) is supported");

  Llama2cCheckpoint ck;
  Llama2cConfig& c = ck.config;
  c.dim = h[0];
  c.hidden_dim = h[1];
  c.n_layers = h[2];
  c.n_heads = h[3];
  c.n_kv_heads = h[4];
  c.vocab_size = h[5];
  c.seq_len = h[6];
  // A negative vocab_size flags a separate classifier; widen before abs (INT32_MIN).
  const int64_t vocab = c.vocab_size < 0 ? -int64_t{c.vocab_size} : int64_t{c.vocab_size};
  c.shared_classifier = c.vocab_size > 0;
  LLMPACK_RETURN_IF_ERROR(validate(c, vocab));
  c.vocab_size = static_cast<int32_t>(vocab);

  // Float counts, in file order. With the limits above each stays < 2^62.
  const int64_t dim = c.dim, hidden = c.hidden_dim, layers = c.n_layers;
  const int64_t kv_dim = c.kv_dim(), half_head = c.head_dim() / 2;
  const int64_t counts[] = {
      vocab * dim,              // token_embedding
      layers * dim,             // rms_att
      layers * dim * dim,       // wq
      layers * kv_dim * dim,    // wk
      layers * kv_dim * dim,    // wv
      layers * dim * dim,       // wo
      layers * dim,             // rms_ffn
      layers * hidden * dim,    // w1
      layers * dim * hidden,    // w2
      layers * hidden * dim,    // w3
      dim,                      // rms_final
      int64_t{c.seq_len} * half_head,  // freq_cis_real
      int64_t{c.seq_len} * half_head,  // freq_cis_imag
      c.shared_classifier ? 0 : vocab * dim,  // wcls
  };
  uint64_t n_floats = 0;
  for (int64_t n : counts) n_floats += static_cast<uint64_t>(n);
  const uint64_t expected = kLlama2cHeaderBytes + n_floats * sizeof(float);
  if (size != expected)
    return bad("file is " + std::to_string(size) + " bytes but the header (dim " +
               std::to_string(c.dim) + ", hidden " + std::to_string(c.hidden_dim) + ", " +
               std::to_string(c.n_layers) + " layers, " + std::to_string(c.n_heads) + " heads, " +
               std::to_string(c.n_kv_heads) + " kv heads, vocab " + std::to_string(vocab) +
               (c.shared_classifier ? " shared" : " unshared") + ", seq_len " +
               std::to_string(c.seq_len) + ") needs exactly " + std::to_string(expected) +
               (size < expected ? " (file too short)" : " (trailing bytes)"));

  // The floats start at byte 28: 4-byte aligned since mappings and heap
  // buffers are at least 16-byte aligned.
  const float* p = reinterpret_cast<const float*>(file->data() + kLlama2cHeaderBytes);
  const float* at[14];
  for (int i = 0; i < 14; ++i) {
    at[i] = p;
    p += counts[i];
  }
  Llama2cWeights& w = ck.weights;
  w.token_embedding = at[0];
  w.rms_att = at[1];
  w.wq = at[2];
  w.wk = at[3];
  w.wv = at[4];
  w.wo = at[5];
  w.rms_ffn = at[6];
  w.w1 = at[7];
  w.w2 = at[8];
  w.w3 = at[9];
  w.rms_final = at[10];
  w.wcls = c.shared_classifier ? w.token_embedding : at[13];
  ck.file = std::move(file);
  return ck;
}

}  // namespace llmpack
