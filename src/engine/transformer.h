// The Llama-family forward pass over a batch of tokens, with every buffer
// planned for at most `max_tokens` tokens at construction (P6): a forward
// call allocates nothing.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <vector>

#include "core/status.h"
#include "core/thread_pool.h"
#include "core/zero_pages.h"
#include "engine/activation_stats.h"
#include "engine/forward_profile.h"
#include "engine/kv_cache.h"
#include "model/model.h"

namespace llmpack {

struct ForwardPlan {
  int64_t max_tokens = 1;   // B: tokens one call may carry
  int64_t cache_rows = 1;   // positions the cache holds (C)
  // Rows the program's own cache starts with (0: all cache_rows, fixed, as an
  // in-graph cache); it grows up to cache_rows as positions are written.
  int64_t initial_cache_rows = 0;
  int64_t logits_rows = 1;  // rows of logits one call may return
  // Element type of the program's own cache (an off-graph cache bound with
  // bind_cache keeps its own type).
  KvDtype cache_dtype = KvDtype::kF32;
};

// Parts a cache row of kv_dim is stored in for this model (KvCacheOptions::heads).
int64_t kv_cache_heads(KvDtype dtype, const ModelConfig& c);

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
  uint64_t cache_bytes() const { return cache_->bytes(); }

  // Off-graph caches (CONTRACT C1, C7): forward reads and writes `cache`
  // (not owned; shaped n_layers x kv_dim, capacity <= cache_rows) instead of
  // the program's own; nullptr returns to the own cache.
  void bind_cache(KvCache* cache) { cache_ = cache ? cache : own_cache_.get(); }
  const KvCache& cache() const { return *cache_; }
  // Grows the cache so positions [0, end_pos) can be written; call before
  // forward (the only place a forward pass may allocate, amortized).
  Status prepare_cache(int64_t end_pos) { return cache_->reserve(end_pos); }

  // Forward passes add their time per stage to `profile` (not owned) until
  // it is unbound with nullptr.
  void bind_profile(ForwardProfile* profile) { profile_ = profile; }

  // Forward passes add each matmul's input rows to `stats` (not owned) until
  // it is unbound with nullptr (`llmpack imatrix`). Binding creates the
  // entries of this model's weights in `stats`; an error (and nothing bound)
  // where `stats` already holds one of them with another width.
  Status bind_activation_stats(ActivationStats* stats);

 private:
  void embed(std::span<const int64_t> tokens);
  void attention_block(int64_t layer, int64_t n, int64_t start_pos);
  void feed_forward_block(int64_t layer, int64_t n);
  void project_qkv(const LayerWeights& w, int64_t n);
  void project_gate_up(const LayerWeights& w, int64_t n);
  void rotate_and_cache(const LayerWeights& w, int64_t layer, int64_t n, int64_t start_pos);
  void rotate_heads(float* heads, int64_t n_heads, const float* norm, int64_t pos);
  void attend(int64_t layer, int64_t n, int64_t start_pos);
  int64_t pick_decode_attention_run() const;
  void attend_tokens(int64_t layer, int64_t n, int64_t start_pos);
  kernels::KvHead kv_head(int64_t layer, int64_t g) const;
  void rmsnorm_rows(float* out, const float* in, const float* weight, int64_t n, int64_t width);
  void add_residual(const float* y, int64_t n);
  void swiglu_rows(int64_t n);
  void matmul(ForwardStage stage, const kernels::WeightMatrix& w, const float* x, int64_t n, float* y);
  void output_logits(int64_t n, int64_t n_logits);
  void add_activations(std::initializer_list<ActivationSums*> sums, const float* x, int64_t n);

  const Model& model_;
  const ModelConfig& cfg_;
  ForwardPlan plan_;
  ThreadPool& pool_;
  std::unique_ptr<KvCache> own_cache_;
  KvCache* cache_ = nullptr;     // own_cache_ or a bound off-graph cache
  std::vector<float> inv_freq_;  // [rope_dim / 2]
  // Activations, each [max_tokens, width]. Sized once, for the largest chunk,
  // without writing them (ZeroedVector): a page is faulted in when a forward
  // first uses it, so loading does not touch them and a short prompt or a
  // decode step adds only the rows it uses to RSS.
  ZeroedVector<float> x_, xb_, q_, k_, v_, att_, hb_, hb2_;
  int64_t decode_attention_run_ = 1;  // query heads per decode attention unit (pick_decode_attention_run)
  size_t attention_scratch_floats_ = 0;  // per thread: scores of a decode run over cache_rows positions, or prefill tiles
  ZeroedVector<float> scores_;    // [n_threads, attention_scratch_floats_]
  ZeroedVector<float> logits_;    // [logits_rows, vocab_size]
  ZeroedVector<uint8_t> scratch_; // matmul scratch
  ForwardProfile* profile_ = nullptr;
  // Bound activation statistics: each layer's entries, by the matmul they
  // feed (pointers into stats_, whose map keeps them in place).
  struct LayerSums {
    ActivationSums *q, *k, *v, *o, *gate, *up, *down;
  };
  ActivationStats* stats_ = nullptr;
  std::vector<LayerSums> layer_sums_;   // [n_layers]
  ActivationSums* output_sums_ = nullptr;  // when stats_ includes the output matrix
};

}  // namespace llmpack
