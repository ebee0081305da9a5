#include "model/model.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "kernels/grouped_blocks.h"

namespace llmpack {
namespace {

std::string shape_string(const std::vector<int64_t>& ne) {
  std::string s = "[";
  for (size_t i = 0; i < ne.size(); ++i) s += (i ? ", " : "") + std::to_string(ne[i]);
  return s + "]";
}

std::string layer_name(int64_t layer, const char* tensor) {
  return "blk." + std::to_string(layer) + "." + tensor;
}

// Each llama3 factor divides a rotary frequency: zero, negative or NaN ones
// would turn the attention's rotations, and every logit, into NaN.
Status check_rope_factors(const float* factors, int64_t n) {
  for (int64_t i = 0; factors && i < n; ++i)
    if (!std::isfinite(factors[i]) || factors[i] <= 0.0f) {
      char shown[32];
      std::snprintf(shown, sizeof shown, "%g", factors[i]);
      return error_status("tensor 'rope_freqs.weight' element " + std::to_string(i) + " is " + shown +
                          ", expected positive finite frequency factors");
    }
  return ok_status();
}

}  // namespace

Result<const float*> Model::bind_vector(const std::string& name, int64_t n, bool required) {
  const GgufTensorInfo* t = gguf_->find_tensor(name);
  if (!t) {
    if (required) return error_status("missing tensor '" + name + "'");
    return static_cast<const float*>(nullptr);
  }
  if (t->n_elements() != n)
    return error_status("tensor '" + name + "' has shape " + shape_string(t->ne) +
                        ", expected " + std::to_string(n) + " elements");
  weight_bytes_ += t->n_bytes;
  if (t->dtype == DType::kF32) return reinterpret_cast<const float*>(t->data);
  // Norms and biases in another type are converted once, at load.
  kernels::WeightMatrix m{t->dtype, 1, n, t->data};
  if (!kernels::matmul_supports(t->dtype) || n % dtype_info(t->dtype)->block_elems != 0)
    return error_status("tensor '" + name + "' has unsupported type " + std::string(dtype_name(t->dtype)));
  auto& out = converted_.emplace_back(static_cast<size_t>(n));
  kernels::dequantize_row(m, 0, out.data());
  return static_cast<const float*>(out.data());
}

Result<kernels::WeightMatrix> Model::bind_matrix(const std::string& name, int64_t rows,
                                                 int64_t cols, bool required) {
  const GgufTensorInfo* t = gguf_->find_tensor(name);
  if (!t) {
    if (required) return error_status("missing tensor '" + name + "'");
    return kernels::WeightMatrix{};
  }
  if (t->ne.size() != 2 || t->ne[0] != cols || t->ne[1] != rows)
    return error_status("tensor '" + name + "' has shape " + shape_string(t->ne) + ", expected [" +
                        std::to_string(cols) + ", " + std::to_string(rows) + "]");
  if (!kernels::matmul_supports(t->dtype))
    return error_status("tensor '" + name + "' " + shape_string(t->ne) + " has type " +
                        std::string(dtype_name(t->dtype)) +
                        ", which this build cannot multiply (it takes f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q2_k, "
                        "q3_k, q4_k, q5_k, q6_k, iq4_nl and iq4_xs)");
  weight_bytes_ += t->n_bytes;
  const DType layout = kernels::load_layout(t->dtype);
  if (layout != t->dtype) return regrouped(*t, layout, rows, cols);
  return kernels::WeightMatrix{t->dtype, rows, cols, t->data};
}

// A Q5_0 / Q5_1 matrix in the grouped layout the AVX2 decode reads fastest,
// regrouped row by row in place (GgufFile::rewrite_tensor: the file is never
// changed, and the rewritten pages replace the file's in this process, so the
// weights stay in memory once). Where the bytes cannot be made writable the
// matrix keeps the file's layout, which every kernel also takes.
kernels::WeightMatrix Model::regrouped(const GgufTensorInfo& t, DType layout, int64_t rows, int64_t cols) {
  const DType plain = t.dtype;
  const int64_t n_blocks = cols / kernels::kQK;
  const int64_t stride = row_bytes(*dtype_info(plain), cols);
  std::vector<uint8_t> row(static_cast<size_t>(stride));
  const auto regroup_rows = [&](uint8_t* bytes) {
    for (int64_t r = 0; r < rows; ++r) {
      std::memcpy(row.data(), bytes + r * stride, row.size());
      kernels::group_blocks(plain, row.data(), n_blocks, bytes + r * stride);
    }
  };
  if (!gguf_->rewrite_tensor(t.name, layout, regroup_rows)) return kernels::WeightMatrix{plain, rows, cols, t.data};
  return kernels::WeightMatrix{layout, rows, cols, t.data};
}

Status Model::bind_gguf_tensors() {
  const ModelConfig& c = config_;
  ModelWeights& w = weights_;
  LLMPACK_ASSIGN_OR_RETURN(w.token_embedding, bind_matrix("token_embd.weight", c.vocab_size, c.dim, true));
  LLMPACK_ASSIGN_OR_RETURN(w.output_norm, bind_vector("output_norm.weight", c.dim, true));
  LLMPACK_ASSIGN_OR_RETURN(w.output, bind_matrix("output.weight", c.vocab_size, c.dim, false));
  w.tied_output = w.output.data == nullptr;
  if (w.tied_output) w.output = w.token_embedding;
  LLMPACK_ASSIGN_OR_RETURN(w.rope_freq_factors, bind_vector("rope_freqs.weight", c.rope_dim / 2, false));
  LLMPACK_RETURN_IF_ERROR(check_rope_factors(w.rope_freq_factors, c.rope_dim / 2));
  w.layers.resize(c.n_layers);
  for (int64_t i = 0; i < c.n_layers; ++i) {
    LayerWeights& l = w.layers[i];
    auto name = [&](const char* t) { return layer_name(i, t); };
    LLMPACK_ASSIGN_OR_RETURN(l.attn_norm, bind_vector(name("attn_norm.weight"), c.dim, true));
    LLMPACK_ASSIGN_OR_RETURN(l.wq, bind_matrix(name("attn_q.weight"), c.q_dim(), c.dim, true));
    LLMPACK_ASSIGN_OR_RETURN(l.wk, bind_matrix(name("attn_k.weight"), c.kv_dim(), c.dim, true));
    LLMPACK_ASSIGN_OR_RETURN(l.wv, bind_matrix(name("attn_v.weight"), c.kv_dim(), c.dim, true));
    LLMPACK_ASSIGN_OR_RETURN(l.bq, bind_vector(name("attn_q.bias"), c.q_dim(), c.has_qkv_bias));
    LLMPACK_ASSIGN_OR_RETURN(l.bk, bind_vector(name("attn_k.bias"), c.kv_dim(), c.has_qkv_bias));
    LLMPACK_ASSIGN_OR_RETURN(l.bv, bind_vector(name("attn_v.bias"), c.kv_dim(), c.has_qkv_bias));
    LLMPACK_ASSIGN_OR_RETURN(l.q_norm, bind_vector(name("attn_q_norm.weight"), c.head_dim, c.has_qk_norm));
    LLMPACK_ASSIGN_OR_RETURN(l.k_norm, bind_vector(name("attn_k_norm.weight"), c.head_dim, c.has_qk_norm));
    LLMPACK_ASSIGN_OR_RETURN(l.wo, bind_matrix(name("attn_output.weight"), c.dim, c.q_dim(), true));
    LLMPACK_ASSIGN_OR_RETURN(l.ffn_norm, bind_vector(name("ffn_norm.weight"), c.dim, true));
    LLMPACK_ASSIGN_OR_RETURN(l.w_gate, bind_matrix(name("ffn_gate.weight"), c.hidden_dim, c.dim, true));
    LLMPACK_ASSIGN_OR_RETURN(l.w_up, bind_matrix(name("ffn_up.weight"), c.hidden_dim, c.dim, true));
    LLMPACK_ASSIGN_OR_RETURN(l.w_down, bind_matrix(name("ffn_down.weight"), c.dim, c.hidden_dim, true));
  }
  return ok_status();
}

Result<std::unique_ptr<Model>> Model::from_gguf(std::unique_ptr<GgufFile> gguf) {
  std::unique_ptr<Model> model(new Model());
  LLMPACK_ASSIGN_OR_RETURN(model->config_, config_from_gguf(*gguf));
  if (model->config_.vocab_size <= 0)
    return error_status("tensor 'token_embd.weight' is missing or not 2-dimensional");
  model->gguf_ = std::move(gguf);
  LLMPACK_RETURN_IF_ERROR(model->bind_gguf_tensors());
  return model;
}

Result<std::unique_ptr<Model>> Model::from_llama2c(Llama2cCheckpoint checkpoint) {
  std::unique_ptr<Model> model(new Model());
  const Llama2cConfig& h = checkpoint.config;
  ModelConfig& c = model->config_;
  c.arch = Architecture::kLlama;
  c.arch_name = "llama";
  c.name = "llama2.c checkpoint";
  c.dim = h.dim;
  c.hidden_dim = h.hidden_dim;
  c.n_layers = h.n_layers;
  c.n_heads = h.n_heads;
  c.n_kv_heads = h.n_kv_heads;
  c.head_dim = h.head_dim();
  c.vocab_size = h.vocab_size;
  c.context_length = h.seq_len;
  c.rope_dim = c.head_dim;
  c.rope_style = kernels::RopeStyle::kAdjacentPairs;  // llama2.c rotates adjacent pairs

  const Llama2cWeights& src = checkpoint.weights;
  ModelWeights& w = model->weights_;
  auto f32 = [](const float* data, int64_t rows, int64_t cols) {
    return kernels::WeightMatrix{DType::kF32, rows, cols, data};
  };
  const int64_t dim = c.dim, kv = c.kv_dim(), hid = c.hidden_dim;
  w.token_embedding = f32(src.token_embedding, c.vocab_size, dim);
  w.output_norm = src.rms_final;
  w.output = f32(src.wcls, c.vocab_size, dim);
  w.tied_output = h.shared_classifier;
  w.layers.resize(c.n_layers);
  for (int64_t i = 0; i < c.n_layers; ++i) {
    LayerWeights& l = w.layers[i];
    l.attn_norm = src.rms_att + i * dim;
    l.wq = f32(src.wq + i * dim * dim, dim, dim);
    l.wk = f32(src.wk + i * kv * dim, kv, dim);
    l.wv = f32(src.wv + i * kv * dim, kv, dim);
    l.wo = f32(src.wo + i * dim * dim, dim, dim);
    l.ffn_norm = src.rms_ffn + i * dim;
    l.w_gate = f32(src.w1 + i * hid * dim, hid, dim);
    l.w_down = f32(src.w2 + i * dim * hid, dim, hid);
    l.w_up = f32(src.w3 + i * hid * dim, hid, dim);
  }
  model->weight_bytes_ = checkpoint.file ? checkpoint.file->size() : 0;
  model->llama2c_ = std::make_unique<Llama2cCheckpoint>(std::move(checkpoint));
  return model;
}

}  // namespace llmpack
