#include "engine/transformer.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

namespace llmpack {

namespace {

size_t max_scratch(const Model& model, int64_t n_tokens) {
  size_t most = 0;
  auto consider = [&](const kernels::WeightMatrix& w) {
    most = std::max(most, kernels::matmul_scratch_bytes(w.dtype, w.cols, n_tokens));
  };
  const ModelWeights& w = model.weights();
  consider(w.output);
  for (const auto& l : w.layers)
    for (const auto* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) consider(*m);
  return most;
}

// YaRN's ramp over the pairs: 1 for pairs that turn more than beta_fast
// times in the original context (kept unscaled), 0 for those that turn
// fewer than beta_slow times (scaled), linear between. A pair that turns n
// times over L positions has i = d ln(L / (2 pi n)) / (2 ln base).
std::vector<double> yarn_ramp(const ModelConfig& c) {
  const ModelConfig::Yarn& y = c.rope_yarn;
  const double d = static_cast<double>(c.rope_dim), L = static_cast<double>(y.original_context);
  const auto pair_turning = [&](double turns) {
    return d * std::log(L / (turns * 2.0 * std::numbers::pi)) / (2.0 * std::log(static_cast<double>(c.rope_theta)));
  };
  const double low = std::max(0.0, std::floor(pair_turning(y.beta_fast)));
  const double high = std::min(d - 1.0, std::ceil(pair_turning(y.beta_slow)));
  std::vector<double> ramp(static_cast<size_t>(c.rope_dim / 2));
  for (size_t i = 0; i < ramp.size(); ++i) {
    const double t = (static_cast<double>(i) - low) / std::max(0.001, high - low);
    ramp[i] = (1.0 - std::clamp(t, 0.0, 1.0)) * y.ext_factor;
  }
  return ramp;
}

// inv[i] = base^(-2i/d) / llama3_factor[i] * (s (1 - r_i) + r_i): s the
// linear or YaRN scale, r_i YaRN's ramp (0 without YaRN).
std::vector<float> rope_inverse_frequencies(const ModelConfig& c, const float* freq_factors) {
  std::vector<float> inv(static_cast<size_t>(c.rope_dim / 2));
  const std::vector<double> ramp =
      c.rope_yarn.ext_factor != 0.0f ? yarn_ramp(c) : std::vector<double>(inv.size(), 0.0);
  for (int64_t i = 0; i < c.rope_dim / 2; ++i) {
    double f = std::pow(static_cast<double>(c.rope_theta), -2.0 * i / c.rope_dim);
    if (freq_factors) f /= freq_factors[i];  // llama3 scaling divides each frequency
    f *= c.rope_freq_scale * (1.0 - ramp[i]) + ramp[i];
    inv[i] = static_cast<float>(f);
  }
  return inv;
}

}  // namespace

// Each kv head's rows stored contiguously (kv_cache.h), unless a q8_0 head
// would split a block of 32.
int64_t kv_cache_heads(KvDtype dtype, const ModelConfig& c) {
  return dtype == KvDtype::kQ8_0 && c.head_dim % 32 != 0 ? 1 : c.n_kv_heads;
}

Transformer::Transformer(const Model& model, const ForwardPlan& plan, ThreadPool& pool)
    : model_(model), cfg_(model.config()), plan_(plan), pool_(pool),
      own_cache_(KvCache::create(cfg_.n_layers, cfg_.kv_dim(),
                                 {plan.cache_dtype,
                                  plan.initial_cache_rows > 0 ? plan.initial_cache_rows : plan.cache_rows,
                                  plan.cache_rows, kv_cache_heads(plan.cache_dtype, cfg_)})
                     .value()),
      cache_(own_cache_.get()) {
  const int64_t b = plan_.max_tokens;
  inv_freq_ = rope_inverse_frequencies(cfg_, model.weights().rope_freq_factors);
  x_.resize(b * cfg_.dim);
  xb_.resize(b * std::max(cfg_.dim, cfg_.q_dim()));
  q_.resize(b * cfg_.q_dim());
  k_.resize(b * cfg_.kv_dim());
  v_.resize(b * cfg_.kv_dim());
  att_.resize(b * cfg_.q_dim());
  hb_.resize(b * cfg_.hidden_dim);
  hb2_.resize(b * cfg_.hidden_dim);
  decode_attention_run_ = pick_decode_attention_run();
  // prefill tiles, or the scores of a decode run of query heads over every cache row
  attention_scratch_floats_ = std::max(kernels::attention_tokens_scratch_floats(cfg_.head_dim, plan_.cache_rows),
                                       static_cast<size_t>(decode_attention_run_ * plan_.cache_rows));
  scores_.resize(pool.n_threads() * attention_scratch_floats_);
  logits_.resize(plan_.logits_rows * cfg_.vocab_size);
  scratch_.resize(std::max<size_t>(max_scratch(model, b), 64));
}

uint64_t Transformer::activation_bytes() const {
  size_t floats = x_.size() + xb_.size() + q_.size() + k_.size() + v_.size() + att_.size() +
                  hb_.size() + hb2_.size() + scores_.size() + logits_.size();
  return floats * sizeof(float) + scratch_.size();
}

Status Transformer::bind_activation_stats(ActivationStats* stats) {
  stats_ = nullptr;
  layer_sums_.clear();
  output_sums_ = nullptr;
  if (!stats) return ok_status();
  const ModelWeights& w = model_.weights();
  std::vector<LayerSums> layers(w.layers.size());
  for (size_t i = 0; i < layers.size(); ++i) {
    const LayerWeights& m = w.layers[i];
    const std::string p = "blk." + std::to_string(i) + ".";
    LayerSums& l = layers[i];
    LLMPACK_ASSIGN_OR_RETURN(l.q, stats->entry(p + "attn_q.weight", m.wq.cols));
    LLMPACK_ASSIGN_OR_RETURN(l.k, stats->entry(p + "attn_k.weight", m.wk.cols));
    LLMPACK_ASSIGN_OR_RETURN(l.v, stats->entry(p + "attn_v.weight", m.wv.cols));
    LLMPACK_ASSIGN_OR_RETURN(l.o, stats->entry(p + "attn_output.weight", m.wo.cols));
    LLMPACK_ASSIGN_OR_RETURN(l.gate, stats->entry(p + "ffn_gate.weight", m.w_gate.cols));
    LLMPACK_ASSIGN_OR_RETURN(l.up, stats->entry(p + "ffn_up.weight", m.w_up.cols));
    LLMPACK_ASSIGN_OR_RETURN(l.down, stats->entry(p + "ffn_down.weight", m.w_down.cols));
  }
  ActivationSums* output = nullptr;
  if (stats->include_output()) {
    // A tied output multiplies by the embedding, which the exporter names so.
    const char* name = w.tied_output ? "token_embd.weight" : "output.weight";
    LLMPACK_ASSIGN_OR_RETURN(output, stats->entry(name, w.output.cols));
  }
  stats_ = stats;
  layer_sums_ = std::move(layers);
  output_sums_ = output;
  return ok_status();
}

// Adds the rows x[n, cols] to each of `sums` on the calling thread, so the
// sums do not depend on how many threads the matmuls ran on.
void Transformer::add_activations(std::initializer_list<ActivationSums*> sums, const float* x, int64_t n) {
  const StageTimer timer(profile_, ForwardStage::kOther);
  add_shared_rows(sums, x, n);
}

void Transformer::matmul(ForwardStage stage, const kernels::WeightMatrix& w, const float* x, int64_t n,
                         float* y) {
  const StageTimer timer(profile_, stage);
  kernels::matmul(w, x, n, y, scratch_.data(), pool_);
}

// The per-token steps below split their n rows over the pool (one token runs
// inline: parallel_for does not wake workers for n <= grain).
void Transformer::rmsnorm_rows(float* out, const float* in, const float* weight, int64_t n,
                               int64_t width) {
  const StageTimer timer(profile_, ForwardStage::kOther);
  pool_.parallel_for(n, [&](int, int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t)
      kernels::rmsnorm(out + t * width, in + t * width, weight, width, cfg_.norm_eps);
  });
}

// x[n, dim] += y[n, dim]
void Transformer::add_residual(const float* y, int64_t n) {
  const StageTimer timer(profile_, ForwardStage::kOther);
  const int64_t d = cfg_.dim;
  pool_.parallel_for(n, [&](int, int64_t begin, int64_t end) {
    float* x = x_.data();
    for (int64_t i = begin * d; i < end * d; ++i) x[i] += y[i];
  });
}

// hb[n, hidden] = silu(hb) * hb2, row by row.
void Transformer::swiglu_rows(int64_t n) {
  const StageTimer timer(profile_, ForwardStage::kOther);
  const int64_t h = cfg_.hidden_dim;
  pool_.parallel_for(n, [&](int, int64_t begin, int64_t end) {
    kernels::swiglu(hb_.data() + begin * h, hb_.data() + begin * h, hb2_.data() + begin * h,
                    (end - begin) * h);
  });
}

void Transformer::embed(std::span<const int64_t> tokens) {
  const StageTimer timer(profile_, ForwardStage::kOther);
  for (size_t t = 0; t < tokens.size(); ++t)
    kernels::dequantize_row(model_.weights().token_embedding, tokens[t], x_.data() + t * cfg_.dim);
}

std::span<const float> Transformer::forward(std::span<const int64_t> tokens, int64_t start_pos,
                                            int64_t n_logits) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  if (profile_) ++profile_->forward_calls;
  embed(tokens);
  for (int64_t layer = 0; layer < cfg_.n_layers; ++layer) {
    attention_block(layer, n, start_pos);
    feed_forward_block(layer, n);
  }
  output_logits(n, n_logits);
  return {logits_.data(), static_cast<size_t>(n_logits * cfg_.vocab_size)};
}

// logits[n_logits, vocab] = W_out · norm(x) of the last n_logits rows: only
// the rows whose logits are wanted go through the output projection.
void Transformer::output_logits(int64_t n, int64_t n_logits) {
  const float* last_rows = x_.data() + (n - n_logits) * cfg_.dim;
  rmsnorm_rows(xb_.data(), last_rows, model_.weights().output_norm, n_logits, cfg_.dim);
  if (output_sums_) add_activations({output_sums_}, xb_.data(), n_logits);
  matmul(ForwardStage::kLogits, model_.weights().output, xb_.data(), n_logits, logits_.data());
}

// x += Wo · attention(rope(Wq·norm(x)), cache(rope(Wk·norm(x)), Wv·norm(x)))
void Transformer::attention_block(int64_t layer, int64_t n, int64_t start_pos) {
  const LayerWeights& w = model_.weights().layers[layer];
  const LayerSums* sums = stats_ ? &layer_sums_[layer] : nullptr;
  rmsnorm_rows(xb_.data(), x_.data(), w.attn_norm, n, cfg_.dim);
  if (sums) add_activations({sums->q, sums->k, sums->v}, xb_.data(), n);
  project_qkv(w, n);
  rotate_and_cache(w, layer, n, start_pos);
  attend(layer, n, start_pos);
  if (sums) add_activations({sums->o}, att_.data(), n);
  matmul(ForwardStage::kAttnOutput, w.wo, att_.data(), n, xb_.data());
  add_residual(xb_.data(), n);
}

// x += W_down · (silu(W_gate · norm(x)) * (W_up · norm(x)))
void Transformer::feed_forward_block(int64_t layer, int64_t n) {
  const LayerWeights& w = model_.weights().layers[layer];
  const LayerSums* sums = stats_ ? &layer_sums_[layer] : nullptr;
  rmsnorm_rows(xb_.data(), x_.data(), w.ffn_norm, n, cfg_.dim);
  if (sums) add_activations({sums->gate, sums->up}, xb_.data(), n);
  project_gate_up(w, n);
  swiglu_rows(n);
  if (sums) add_activations({sums->down}, hb_.data(), n);
  matmul(ForwardStage::kFfnDown, w.w_down, hb_.data(), n, xb_.data());
  add_residual(xb_.data(), n);
}

void Transformer::project_qkv(const LayerWeights& w, int64_t n) {
  const StageTimer timer(profile_, ForwardStage::kQkv);
  const kernels::MatmulOutput qkv[] = {{w.wq, q_.data()}, {w.wk, k_.data()}, {w.wv, v_.data()}};
  kernels::matmul_group(qkv, xb_.data(), n, scratch_.data(), pool_);
  if (w.bq) {  // qwen2: biases on q, k and v
    const int64_t qd = cfg_.q_dim(), kd = cfg_.kv_dim();
    for (int64_t t = 0; t < n; ++t) {
      for (int64_t i = 0; i < qd; ++i) q_[t * qd + i] += w.bq[i];
      for (int64_t i = 0; i < kd; ++i) k_[t * kd + i] += w.bk[i];
      for (int64_t i = 0; i < kd; ++i) v_[t * kd + i] += w.bv[i];
    }
  }
}

// hb[n, hidden] = W_gate · xb, hb2[n, hidden] = W_up · xb
void Transformer::project_gate_up(const LayerWeights& w, int64_t n) {
  const StageTimer timer(profile_, ForwardStage::kFfnGateUp);
  const kernels::MatmulOutput gate_up[] = {{w.w_gate, hb_.data()}, {w.w_up, hb2_.data()}};
  kernels::matmul_group(gate_up, xb_.data(), n, scratch_.data(), pool_);
}

// Per token: qk-norm (qwen3) and rope on each q and k head, then k and v into
// the cache (store writes only its own row, so tokens run in parallel).
void Transformer::rotate_and_cache(const LayerWeights& w, int64_t layer, int64_t n, int64_t start_pos) {
  const StageTimer timer(profile_, ForwardStage::kOther);
  pool_.parallel_for(n, [&](int, int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t pos = start_pos + t;
      rotate_heads(q_.data() + t * cfg_.q_dim(), cfg_.n_heads, w.q_norm, pos);
      rotate_heads(k_.data() + t * cfg_.kv_dim(), cfg_.n_kv_heads, w.k_norm, pos);
      cache_->store(layer, pos, k_.data() + t * cfg_.kv_dim(), v_.data() + t * cfg_.kv_dim());
    }
  });
}

// heads[n_heads, head_dim] of one token: optional rmsnorm per head, then rope.
void Transformer::rotate_heads(float* heads, int64_t n_heads, const float* norm, int64_t pos) {
  const int64_t hd = cfg_.head_dim;
  for (int64_t h = 0; h < n_heads; ++h) {
    float* x = heads + h * hd;
    if (norm) kernels::rmsnorm(x, x, norm, hd, cfg_.norm_eps);
    kernels::rope(x, hd, cfg_.rope_dim, pos, inv_freq_.data(), cfg_.rope_style);
    if (cfg_.rope_attn_scale != 1.0f)  // YaRN: the rotated dims' magnitude, as cos and sin times it
      for (int64_t i = 0; i < cfg_.rope_dim; ++i) x[i] *= cfg_.rope_attn_scale;
  }
}

// The cache rows of kv head g in this layer, read in their stored type
// (f16 and q8_0 rows are never converted in bulk).
kernels::KvHead Transformer::kv_head(int64_t layer, int64_t g) const {
  const KvCache::HeadView kv = cache_->head_view(layer, g, cfg_.n_kv_heads);
  const kernels::CacheElem elem = kv.dtype == KvDtype::kF32   ? kernels::CacheElem::kF32
                                  : kv.dtype == KvDtype::kF16 ? kernels::CacheElem::kF16
                                                              : kernels::CacheElem::kQ8_0;
  return {elem, kv.k, kv.v, kv.row_stride_bytes, kv.first};
}

// Query heads per decode attention unit: the whole group of a kv head (its
// rows then come from memory once for the group) unless that leaves fewer
// than two units a thread, where the group is split into smaller runs (to
// one head a unit) so the threads finish together.
int64_t Transformer::pick_decode_attention_run() const {
  const int64_t group = cfg_.n_heads / cfg_.n_kv_heads;
  for (int64_t run = group; run > 1; --run)
    if (group % run == 0 && cfg_.n_kv_heads * (group / run) >= 2 * pool_.n_threads()) return run;
  return 1;
}

// att[n, n_heads, head_dim]: each query head of each token attends causally
// to positions 0..start_pos + t. Decode (one token) splits runs of query
// heads that share a kv head (decode_attention_run_) over the pool; prefill
// goes to attend_tokens.
void Transformer::attend(int64_t layer, int64_t n, int64_t start_pos) {
  const StageTimer timer(profile_, ForwardStage::kAttention);
  if (n > 1) return attend_tokens(layer, n, start_pos);
  const int64_t hd = cfg_.head_dim, group = cfg_.n_heads / cfg_.n_kv_heads, run = decode_attention_run_;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  pool_.parallel_for(cfg_.n_heads / run, [&](int thread, int64_t begin, int64_t end) {
    float* scores = scores_.data() + thread * attention_scratch_floats_;
    for (int64_t u = begin; u < end; ++u) {
      const int64_t h = u * run;  // the run's first query head
      kernels::attention_query_group(q_.data() + h * hd, run, kv_head(layer, h / group), start_pos + 1, hd, scale,
                                     scores, att_.data() + h * hd);
    }
  });
}

// Prefill: the query heads of a kv head go through its cache rows together,
// a tile of consecutive tokens at a time (kernels::attention_tokens reads
// each row once per 32 queries). Work units are (kv head, token tile), handed
// out one at a time to whichever thread is free (parallel_for_dynamic); within
// a kv head the tiles go longest context first, so the last units handed out
// are the shortest and the threads finish together.
void Transformer::attend_tokens(int64_t layer, int64_t n, int64_t start_pos) {
  constexpr int64_t kQueriesPerUnit = 32;
  const int64_t hd = cfg_.head_dim, group = cfg_.n_heads / cfg_.n_kv_heads;
  const int64_t tile = std::max<int64_t>(1, kQueriesPerUnit / group);
  const int64_t n_tiles = (n + tile - 1) / tile;
  const int64_t row = cfg_.n_heads * hd;  // floats between tokens in q_ and att_
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  pool_.parallel_for_dynamic(cfg_.n_kv_heads * n_tiles, [&](int thread, int64_t begin, int64_t end) {
    float* scratch = scores_.data() + thread * attention_scratch_floats_;
    for (int64_t i = begin; i < end; ++i) {
      const int64_t g = i / n_tiles, k = i % n_tiles;
      const int64_t t0 = (n_tiles - 1 - k) * tile;
      const int64_t first_query = t0 * row + g * group * hd;
      kernels::attention_tokens(q_.data() + first_query, row, std::min(tile, n - t0), group, start_pos + t0,
                                kv_head(layer, g), hd, scale, scratch, att_.data() + first_query, row);
    }
  }, 1);
}

}  // namespace llmpack
