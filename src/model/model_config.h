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
  // YaRN (rope.scaling.type "yarn"): pair i's frequency blends the scaled one
  // (x rope_freq_scale) and the unscaled one by a ramp over the pairs that
  // turn between beta_fast and beta_slow times in the original context:
  // f_i * (s * (1 - r_i) + r_i), r_i = ramp_i * ext_factor. ext_factor 0: off.
  struct Yarn {
    float ext_factor = 0.0f;
    int64_t original_context = 0; // rope.scaling.original_context_length (else context_length)
    float beta_fast = 32.0f;
    float beta_slow = 1.0f;
  } rope_yarn;
  // Multiplies the rotated dims of every q and k head after RoPE: YaRN's
  // 1 + 0.1 ln(factor) times rope.scaling.attn_factor (1 when absent).
  float rope_attn_scale = 1.0f;
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
