// Builds small random Llama-family packages in memory (GGUF bytes), so tests
// need no downloaded model. Shapes are free: odd widths, GQA or MHA, tied or
// separate output, llama / qwen2 / qwen3, optional llmpack.* contract keys.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <stdexcept>
#include <random>
#include <string>
#include <vector>

#include "core/half.h"
#include "engine/llama_program.h"
#include "format/gguf.h"
#include "kernels/quantize.h"

namespace llmpack::testing {

struct TinyContract {
  int64_t max_seq_len = 16;       // S
  int64_t max_context_len = 64;   // C
  int64_t token_bound = 16;       // B
  bool dynamic_shape = true;
  std::string kv_cache = "off_graph";  // in_graph | off_graph | none
};

struct TinyModelSpec {
  std::string arch = "llama";
  int64_t dim = 48;
  int64_t hidden_dim = 52;
  int64_t n_layers = 2;
  int64_t n_heads = 6;
  int64_t n_kv_heads = 2;
  int64_t vocab_size = 300;       // >= 259: 3 specials + 256 byte pieces + extra pieces
  int64_t context_length = 128;
  bool tied_output = false;
  DType dtype = DType::kF32;      // F32, F16 or a block type for matrices (norms stay F32)
  uint32_t seed = 1;
  float weight_scale = 0.15f;
  std::optional<TinyContract> contract;  // llmpack.* keys, or a plain GGUF
  bool rope_freq_factors = false;  // a rope_freqs.weight tensor (llama3 frequency scaling)
  // When set, the tokenizer.* keys are copied from this GGUF (vocab_size must match).
  std::string tokenizer_gguf;
  // Matrices written as zero bytes of another type (for load-time refusals).
  std::map<std::string, DType> raw_types;
  // Metadata set after the builder's own keys, replacing them (hostile values).
  std::map<std::string, GgufValue> metadata;
  // rope_freqs.weight's values (rope_freq_factors must be set; default: random, about 4).
  std::vector<float> rope_freq_values;
};

// Keeps tensor bytes alive while the writer borrows them.
class TinyModelBuilder {
 public:
  explicit TinyModelBuilder(const TinyModelSpec& spec) : spec_(spec), rng_(spec.seed) {}

  std::vector<uint8_t> build() {
    GgufWriter w;
    write_metadata(w);
    write_tokenizer(w);
    const int64_t hd = spec_.dim / spec_.n_heads, q = spec_.n_heads * hd, kv = spec_.n_kv_heads * hd;
    matrix(w, "token_embd.weight", spec_.vocab_size, spec_.dim);
    for (int64_t i = 0; i < spec_.n_layers; ++i) {
      const std::string p = "blk." + std::to_string(i) + ".";
      norm(w, p + "attn_norm.weight", spec_.dim);
      matrix(w, p + "attn_q.weight", q, spec_.dim);
      matrix(w, p + "attn_k.weight", kv, spec_.dim);
      matrix(w, p + "attn_v.weight", kv, spec_.dim);
      if (spec_.arch == "qwen2") {
        vector(w, p + "attn_q.bias", q, 0.0f, 0.3f);
        vector(w, p + "attn_k.bias", kv, 0.0f, 0.3f);
        vector(w, p + "attn_v.bias", kv, 0.0f, 0.3f);
      }
      if (spec_.arch == "qwen3") {
        norm(w, p + "attn_q_norm.weight", hd);
        norm(w, p + "attn_k_norm.weight", hd);
      }
      matrix(w, p + "attn_output.weight", spec_.dim, q);
      norm(w, p + "ffn_norm.weight", spec_.dim);
      matrix(w, p + "ffn_gate.weight", spec_.hidden_dim, spec_.dim);
      matrix(w, p + "ffn_up.weight", spec_.hidden_dim, spec_.dim);
      matrix(w, p + "ffn_down.weight", spec_.dim, spec_.hidden_dim);
    }
    norm(w, "output_norm.weight", spec_.dim);
    if (spec_.rope_freq_factors && !spec_.rope_freq_values.empty()) {
      std::vector<uint8_t> bytes(spec_.rope_freq_values.size() * 4);
      std::memcpy(bytes.data(), spec_.rope_freq_values.data(), bytes.size());
      const auto n = static_cast<int64_t>(spec_.rope_freq_values.size());
      store(w, "rope_freqs.weight", DType::kF32, {n}, std::move(bytes));
    } else if (spec_.rope_freq_factors) {
      vector(w, "rope_freqs.weight", hd / 2, 4.0f, 1.5f);
    }
    if (!spec_.tied_output) matrix(w, "output.weight", spec_.vocab_size, spec_.dim);
    return w.to_bytes();
  }

 private:
  void write_metadata(GgufWriter& w) {
    const std::string a = spec_.arch + ".";
    w.set_string("general.architecture", spec_.arch);
    w.set_string("general.name", "tiny-random-" + spec_.arch);
    w.set_u32(a + "context_length", static_cast<uint32_t>(spec_.context_length));
    w.set_u32(a + "embedding_length", static_cast<uint32_t>(spec_.dim));
    w.set_u32(a + "block_count", static_cast<uint32_t>(spec_.n_layers));
    w.set_u32(a + "feed_forward_length", static_cast<uint32_t>(spec_.hidden_dim));
    w.set_u32(a + "attention.head_count", static_cast<uint32_t>(spec_.n_heads));
    w.set_u32(a + "attention.head_count_kv", static_cast<uint32_t>(spec_.n_kv_heads));
    w.set_f32(a + "attention.layer_norm_rms_epsilon", 1e-5f);
    w.set_f32(a + "rope.freq_base", 10000.0f);
    if (spec_.contract) {
      const TinyContract& c = *spec_.contract;
      w.set_u32("llmpack.version", 1);
      w.set_u32("llmpack.max_seq_len", static_cast<uint32_t>(c.max_seq_len));
      w.set_u32("llmpack.max_context_len", static_cast<uint32_t>(c.max_context_len));
      w.set_u32("llmpack.forward.token_bound", static_cast<uint32_t>(c.token_bound));
      w.set_bool("llmpack.enable_dynamic_shape", c.dynamic_shape);
      w.set_bool("llmpack.use_kv_cache", c.kv_cache != "none");
      w.set_string("llmpack.kv_cache", c.kv_cache);
      w.set_i32_array("llmpack.eos_ids", {2});
      w.set_string("llmpack.position_input", "start_pos");
    }
    for (const auto& [key, value] : spec_.metadata) w.set(key, value);
  }

  // <unk> <s> </s>, the 256 byte pieces, then "▁" and plain letters/pairs.
  void write_tokenizer(GgufWriter& w) {
    if (!spec_.tokenizer_gguf.empty()) {
      auto source = GgufFile::open(spec_.tokenizer_gguf);
      if (!source.ok()) throw std::runtime_error(source.status().message());
      for (const auto& [key, value] : (*source)->metadata())
        if (key.rfind("tokenizer.", 0) == 0) w.set(key, value);
      return;
    }
    std::vector<std::string> pieces = {"<unk>", "<s>", "</s>"};
    std::vector<float> scores = {0, 0, 0};
    std::vector<int32_t> types = {2, 3, 3};
    char buf[8];
    for (int b = 0; b < 256; ++b) {
      std::snprintf(buf, sizeof(buf), "<0x%02X>", b);
      pieces.emplace_back(buf);
      scores.push_back(0);
      types.push_back(6);
    }
    const std::string letters = "abcdefghijklmnopqrstuvwxyz";
    for (int64_t i = 0; static_cast<int64_t>(pieces.size()) < spec_.vocab_size; ++i) {
      std::string p;
      if (i == 0) p = "\xE2\x96\x81";
      else if (i <= 26) p = std::string(1, letters[i - 1]);
      else p = "\xE2\x96\x81" + std::string(1, letters[(i - 27) % 26]) + std::string(1, letters[(i - 27) / 26 % 26]);
      pieces.push_back(p);
      scores.push_back(-static_cast<float>(i));
      types.push_back(1);
    }
    w.set_string("tokenizer.ggml.model", "llama");
    w.set_string_array("tokenizer.ggml.tokens", pieces);
    w.set_f32_array("tokenizer.ggml.scores", scores);
    w.set_i32_array("tokenizer.ggml.token_type", types);
    w.set_u32("tokenizer.ggml.bos_token_id", 1);
    w.set_u32("tokenizer.ggml.eos_token_id", 2);
    w.set_u32("tokenizer.ggml.unknown_token_id", 0);
  }

  std::vector<float> random_values(int64_t n, float mean, float stddev) {
    std::normal_distribution<float> dist(mean, stddev);
    std::vector<float> v(static_cast<size_t>(n));
    for (auto& x : v) x = dist(rng_);
    return v;
  }

  void store(GgufWriter& w, const std::string& name, DType dtype, std::vector<int64_t> ne,
             std::vector<uint8_t> bytes) {
    storage_.push_back(std::move(bytes));
    auto status = w.add_tensor(name, dtype, std::move(ne), storage_.back());
    if (!status.ok()) throw std::runtime_error(status.message());
  }

  void vector(GgufWriter& w, const std::string& name, int64_t n, float mean, float stddev) {
    auto v = random_values(n, mean, stddev);
    std::vector<uint8_t> bytes(v.size() * 4);
    std::memcpy(bytes.data(), v.data(), bytes.size());
    store(w, name, DType::kF32, {n}, std::move(bytes));
  }
  void norm(GgufWriter& w, const std::string& name, int64_t n) { vector(w, name, n, 1.0f, 0.1f); }

  // A [rows, cols] matrix (GGUF ne = {cols, rows}) in the spec's dtype.
  void matrix(GgufWriter& w, const std::string& name, int64_t rows, int64_t cols) {
    if (auto raw = spec_.raw_types.find(name); raw != spec_.raw_types.end()) {
      const auto info = dtype_info(raw->second);
      store(w, name, raw->second, {cols, rows}, std::vector<uint8_t>(static_cast<size_t>(rows * row_bytes(*info, cols))));
      return;
    }
    auto v = random_values(rows * cols, 0.0f, spec_.weight_scale);
    std::vector<uint8_t> bytes;
    if (const auto info = dtype_info(spec_.dtype); info && info->block_elems > 1) {
      bytes.resize(static_cast<size_t>(rows * row_bytes(*info, cols)));
      for (int64_t r = 0; r < rows; ++r)
        kernels::quantize_row(spec_.dtype, v.data() + r * cols, cols, bytes.data() + r * row_bytes(*info, cols));
      store(w, name, spec_.dtype, {cols, rows}, std::move(bytes));
      return;
    }
    if (spec_.dtype == DType::kF16) {
      bytes.resize(v.size() * 2);
      for (size_t i = 0; i < v.size(); ++i) {
        uint16_t h = f32_to_f16(v[i]);
        std::memcpy(bytes.data() + 2 * i, &h, 2);
      }
    } else {
      bytes.resize(v.size() * 4);
      std::memcpy(bytes.data(), v.data(), bytes.size());
    }
    store(w, name, spec_.dtype == DType::kF16 ? DType::kF16 : DType::kF32, {cols, rows}, std::move(bytes));
  }

  TinyModelSpec spec_;
  std::mt19937 rng_;
  std::vector<std::vector<uint8_t>> storage_;
};

inline std::vector<uint8_t> make_tiny_gguf(const TinyModelSpec& spec) { return TinyModelBuilder(spec).build(); }

// Loads a tiny random package from memory.
inline Result<LoadedPackage> load_tiny_package(const TinyModelSpec& spec, ProgramOptions options = {}) {
  auto bytes = make_tiny_gguf(spec);
  auto gguf = GgufFile::from_bytes(bytes);
  if (!gguf.ok()) return gguf.status();
  return load_gguf_package(std::move(gguf).value(), "", options);
}

}  // namespace llmpack::testing
