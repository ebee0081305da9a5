// A loaded Llama-family model: its config and weights bound by name. Weights
// are views into the mapped file (zero-copy) except small tensors that had to
// be converted to f32 (norms stored as f16, for example). On x86, Q5_0 and
// Q5_1 matrices are regrouped at load (kernels::load_layout), in place: the
// process's view of those bytes changes (their pages become private copies),
// never the file, and gguf() then reports them with the memory-only type.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "format/gguf.h"
#include "format/llama2c.h"
#include "kernels/kernels.h"
#include "model/model_config.h"

namespace llmpack {

struct LayerWeights {
  const float* attn_norm = nullptr;  // [dim]
  kernels::WeightMatrix wq;          // [n_heads * head_dim, dim]
  kernels::WeightMatrix wk;          // [n_kv_heads * head_dim, dim]
  kernels::WeightMatrix wv;          // [n_kv_heads * head_dim, dim]
  const float* bq = nullptr;         // [n_heads * head_dim] (qwen2 only)
  const float* bk = nullptr;         // [n_kv_heads * head_dim] (qwen2 only)
  const float* bv = nullptr;         // [n_kv_heads * head_dim] (qwen2 only)
  const float* q_norm = nullptr;     // [head_dim] (qwen3 only)
  const float* k_norm = nullptr;     // [head_dim] (qwen3 only)
  kernels::WeightMatrix wo;          // [dim, n_heads * head_dim]
  const float* ffn_norm = nullptr;   // [dim]
  kernels::WeightMatrix w_gate;      // [hidden_dim, dim]
  kernels::WeightMatrix w_up;        // [hidden_dim, dim]
  kernels::WeightMatrix w_down;      // [dim, hidden_dim]
};

struct ModelWeights {
  kernels::WeightMatrix token_embedding;  // [vocab_size, dim]
  std::vector<LayerWeights> layers;
  const float* output_norm = nullptr;     // [dim]
  kernels::WeightMatrix output;           // [vocab_size, dim]; the embedding when tied
  const float* rope_freq_factors = nullptr;  // [rope_dim / 2] (llama3 scaling) or null
  bool tied_output = false;
};

class Model {
 public:
  // Binds every tensor by its GGUF name, checking shapes and types; errors name
  // the tensor, its shape and the expected one.
  static Result<std::unique_ptr<Model>> from_gguf(std::unique_ptr<GgufFile> gguf);
  static Result<std::unique_ptr<Model>> from_llama2c(Llama2cCheckpoint checkpoint);

  const ModelConfig& config() const { return config_; }
  const ModelWeights& weights() const { return weights_; }
  // The GGUF the model came from (null for llama2.c checkpoints).
  const GgufFile* gguf() const { return gguf_.get(); }
  // Bytes of all weights.
  uint64_t weight_bytes() const { return weight_bytes_; }

 private:
  Model() = default;
  Status bind_gguf_tensors();
  Result<const float*> bind_vector(const std::string& name, int64_t n, bool required);
  Result<kernels::WeightMatrix> bind_matrix(const std::string& name, int64_t rows, int64_t cols,
                                            bool required);
  kernels::WeightMatrix regrouped(const GgufTensorInfo& t, DType layout, int64_t rows, int64_t cols);

  ModelConfig config_;
  ModelWeights weights_;
  std::unique_ptr<GgufFile> gguf_;
  std::unique_ptr<Llama2cCheckpoint> llama2c_;
  std::vector<std::vector<float>> converted_;  // small tensors converted to f32
  uint64_t weight_bytes_ = 0;
};

}  // namespace llmpack
