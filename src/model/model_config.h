// Hyperparameters of a Llama-family model, read from GGUF metadata
// ("<arch>.embedding_length", ...) or from a llama2.c header.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "kernels/kernels.h"

namespace llmpack {

class GgufFile;

enum class Architecture { kLlama, kQwen2, kQwen3 };

struct ModelConfig {
  Architecture arch = Architecture::kLlama;
  std::string arch_name = "llama";
  std::string name;             // general.name when present
  int64_t dim = 0;              // d_model
  int64_t hidden_dim = 0;       // feed-forward width
  int64_t n_layers = 0;
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t vocab_size = 0;
  int64_t context_length = 0;   // positions the model was trained for
  float norm_eps = 1e-5f;
  float rope_theta = 10000.0f;
  float rope_freq_scale = 1.0f; // linear RoPE scaling: every frequency times 1 / the factor
  int64_t rope_dim = 0;         // dims of each head that rotate
  kernels::RopeStyle rope_style = kernels::RopeStyle::kAdjacentPairs;
  bool has_qkv_bias = false;    // qwen2
  bool has_qk_norm = false;     // qwen3

  int64_t q_dim() const { return n_heads * head_dim; }
  int64_t kv_dim() const { return n_kv_heads * head_dim; }
};

// Names accepted by config_from_gguf, for error messages.
std::string supported_architectures();

// Reads the hyperparameters; unknown architectures and contradictory values
// (dim not divisible by heads, zero sizes) are errors naming the keys.
Result<ModelConfig> config_from_gguf(const GgufFile& gguf);

}  // namespace llmpack
