// llama2.c checkpoints (.bin): a header of seven int32 (dim, hidden_dim,
// n_layers, n_heads, n_kv_heads, vocab_size, seq_len; a negative vocab_size
// means the classifier is separate) followed by float32 weights in a fixed
// order. Weights are views into the mapping (zero-copy).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/status.h"
#include "format/mapped_file.h"

namespace llmpack {

struct Llama2cConfig {
  int32_t dim = 0;
  int32_t hidden_dim = 0;
  int32_t n_layers = 0;
  int32_t n_heads = 0;
  int32_t n_kv_heads = 0;
  int32_t vocab_size = 0;
  int32_t seq_len = 0;
  bool shared_classifier = true;
  int32_t head_dim() const { return dim / n_heads; }
  int32_t kv_dim() const { return head_dim() * n_kv_heads; }
};

// Pointers into the file, each with its row-major shape.
struct Llama2cWeights {
  const float* token_embedding = nullptr;  // [vocab_size, dim]
  const float* rms_att = nullptr;          // [n_layers, dim]
  const float* wq = nullptr;               // [n_layers, dim, dim]
  const float* wk = nullptr;               // [n_layers, kv_dim, dim]
  const float* wv = nullptr;               // [n_layers, kv_dim, dim]
  const float* wo = nullptr;               // [n_layers, dim, dim]
  const float* rms_ffn = nullptr;          // [n_layers, dim]
  const float* w1 = nullptr;               // [n_layers, hidden_dim, dim] (gate)
  const float* w2 = nullptr;               // [n_layers, dim, hidden_dim] (down)
  const float* w3 = nullptr;               // [n_layers, hidden_dim, dim] (up)
  const float* rms_final = nullptr;        // [dim]
  const float* wcls = nullptr;             // [vocab_size, dim]; == token_embedding when shared
};

struct Llama2cCheckpoint {
  Llama2cConfig config;
  Llama2cWeights weights;
  std::unique_ptr<MappedFile> file;
};

Result<Llama2cCheckpoint> read_llama2c_checkpoint(const std::string& path);
// Parses an in-memory checkpoint (tests, fuzzing).
Result<Llama2cCheckpoint> parse_llama2c_checkpoint(std::unique_ptr<MappedFile> file);

}  // namespace llmpack
