// The Llama-family forward pass over a batch of tokens, with every buffer
// planned for at most `max_tokens` tokens at construction (P6): a forward
// call allocates nothing.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"
#include "core/thread_pool.h"
#include "model/model.h"

namespace llmpack {

// Key and value rows of every layer: [n_layers][n_rows][kv_dim] f32.
class KvCache {
 public:
  KvCache(int64_t n_layers, int64_t n_rows, int64_t kv_dim);
  float* keys(int64_t layer, int64_t row) { return k_.data() + (layer * n_rows_ + row) * kv_dim_; }
  float* values(int64_t layer, int64_t row) { return v_.data() + (layer * n_rows_ + row) * kv_dim_; }
  int64_t n_rows() const { return n_rows_; }
  int64_t kv_dim() const { return kv_dim_; }
  uint64_t bytes() const { return (k_.size() + v_.size()) * sizeof(float); }

 private:
  int64_t n_layers_, n_rows_, kv_dim_;
  std::vector<float> k_, v_;
};

struct ForwardPlan {
  int64_t max_tokens = 1;   // B: tokens one call may carry
  int64_t cache_rows = 1;   // positions the cache holds
  int64_t logits_rows = 1;  // rows of logits one call may return
};

class Transformer {
 public:
  Transformer(const Model& model, const ForwardPlan& plan, ThreadPool& pool);

  // Runs tokens[0..n) at positions start_pos.., writing their keys and values
  // into the cache, and returns the logits of the last `n_logits` tokens
  // ([n_logits, vocab_size]). Preconditions are checked by the caller
  // (Program): 1 <= n <= max_tokens, start_pos + n <= cache_rows, ids in range.
  std::span<const float> forward(std::span<const int64_t> tokens, int64_t start_pos, int64_t n_logits);

  const ForwardPlan& plan() const { return plan_; }
  uint64_t activation_bytes() const;
  uint64_t cache_bytes() const { return cache_.bytes(); }

 private:
  void embed(std::span<const int64_t> tokens);
  void attention_block(int64_t layer, int64_t n, int64_t start_pos);
  void feed_forward_block(int64_t layer, int64_t n);
  void project_qkv(const LayerWeights& w, int64_t n);
  void rotate_and_cache(const LayerWeights& w, int64_t layer, int64_t n, int64_t start_pos);
  void attend(int64_t layer, int64_t n, int64_t start_pos);
  void rmsnorm_rows(float* out, const float* in, const float* weight, int64_t n, int64_t width);
  void matmul(const kernels::WeightMatrix& w, const float* x, int64_t n, float* y);

  const Model& model_;
  const ModelConfig& cfg_;
  ForwardPlan plan_;
  ThreadPool& pool_;
  KvCache cache_;
  std::vector<float> inv_freq_;  // [rope_dim / 2]
  // Activations, each [max_tokens, width].
  std::vector<float> x_, xb_, q_, k_, v_, att_, hb_, hb2_;
  std::vector<float> scores_;    // [n_threads, cache_rows]
  std::vector<float> logits_;    // [logits_rows, vocab_size]
  std::vector<uint8_t> scratch_; // matmul scratch
};

}  // namespace llmpack
