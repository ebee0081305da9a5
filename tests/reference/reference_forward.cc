#include "reference/reference_forward.h"

#include <algorithm>
#include <cmath>

namespace llmpack::reference {
namespace {

using Vec = std::vector<double>;
using Mat = std::vector<Vec>;  // rows

Mat to_rows(const kernels::WeightMatrix& w) {
  Mat m(w.rows, Vec(w.cols));
  std::vector<float> row(w.cols);
  for (int64_t r = 0; r < w.rows; ++r) {
    kernels::dequantize_row(w, r, row.data());
    std::copy(row.begin(), row.end(), m[r].begin());
  }
  return m;
}

Vec to_vec(const float* p, int64_t n) { return p ? Vec(p, p + n) : Vec(); }

Vec matvec(const Mat& w, const Vec& x) {
  Vec y(w.size(), 0.0);
  for (size_t r = 0; r < w.size(); ++r)
    for (size_t c = 0; c < x.size(); ++c) y[r] += w[r][c] * x[c];
  return y;
}

Vec rmsnorm(const Vec& x, const Vec& weight, double eps) {
  double ss = 0;
  for (double v : x) ss += v * v;
  const double inv = 1.0 / std::sqrt(ss / x.size() + eps);
  Vec out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = x[i] * inv * weight[i];
  return out;
}

// YaRN as the paper and HF's _compute_yarn_parameters state it: the weight
// of the unscaled ("extrapolated") inverse frequency of pair i is
// 1 - clamp((i - low) / (high - low), 0, 1), where low and high are the
// (floored, ceiled) pairs whose wavelength fits beta_fast and beta_slow
// times into the original context.
double yarn_extrapolation_weight(const ModelConfig& c, int64_t i) {
  const ModelConfig::Yarn& y = c.rope_yarn;
  const auto correction_dim = [&](double rotations) {
    const double wavelength_budget = static_cast<double>(y.original_context) / (rotations * 2.0 * M_PI);
    return c.rope_dim * std::log(wavelength_budget) / (2.0 * std::log(static_cast<double>(c.rope_theta)));
  };
  double low = std::floor(correction_dim(y.beta_fast)), high = std::ceil(correction_dim(y.beta_slow));
  low = std::max(low, 0.0);
  high = std::min(high, static_cast<double>(c.rope_dim - 1));
  if (low == high) high += 0.001;
  const double linear = std::clamp((static_cast<double>(i) - low) / (high - low), 0.0, 1.0);
  return (1.0 - linear) * y.ext_factor;
}

// Rotates one head in place: pairs (2i, 2i+1) or halves (i, i + rot/2), and
// scales the rotated dims by YaRN's attention factor (cos and sin times it).
void rope(double* head, const ModelConfig& c, int64_t pos, const float* factors) {
  const int64_t half = c.rope_dim / 2;
  for (int64_t i = 0; i < half; ++i) {
    double extrapolated = std::pow(static_cast<double>(c.rope_theta), -2.0 * i / c.rope_dim);
    if (factors) extrapolated /= factors[i];
    // linear scaling (and YaRN's interpolated part): position p rotates as p * scale
    const double interpolated = extrapolated * c.rope_freq_scale;
    const double w = c.rope_yarn.ext_factor != 0.0f ? yarn_extrapolation_weight(c, i) : 0.0;
    const double angle = pos * (interpolated * (1.0 - w) + extrapolated * w);
    const bool pairs = c.rope_style == kernels::RopeStyle::kAdjacentPairs;
    const int64_t a = pairs ? 2 * i : i, b = pairs ? 2 * i + 1 : i + half;
    const double x0 = head[a], x1 = head[b], m = c.rope_attn_scale;
    head[a] = (x0 * std::cos(angle) - x1 * std::sin(angle)) * m;
    head[b] = (x0 * std::sin(angle) + x1 * std::cos(angle)) * m;
  }
}

struct Layer {
  Vec attn_norm, ffn_norm, bq, bk, bv, q_norm, k_norm;
  Mat wq, wk, wv, wo, gate, up, down;
};

Layer load_layer(const LayerWeights& w, const ModelConfig& c) {
  Layer l;
  l.attn_norm = to_vec(w.attn_norm, c.dim);
  l.ffn_norm = to_vec(w.ffn_norm, c.dim);
  l.bq = to_vec(w.bq, c.q_dim());
  l.bk = to_vec(w.bk, c.kv_dim());
  l.bv = to_vec(w.bv, c.kv_dim());
  l.q_norm = to_vec(w.q_norm, c.head_dim);
  l.k_norm = to_vec(w.k_norm, c.head_dim);
  l.wq = to_rows(w.wq); l.wk = to_rows(w.wk); l.wv = to_rows(w.wv); l.wo = to_rows(w.wo);
  l.gate = to_rows(w.w_gate); l.up = to_rows(w.w_up); l.down = to_rows(w.w_down);
  return l;
}

void add(Vec& a, const Vec& b) {
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) a[i] += b[i];
}

// Per-head RMSNorm (qwen3) then RoPE on a [n_heads * head_dim] vector.
void norm_and_rotate(Vec& v, int64_t n_heads, const Vec& norm, const ModelConfig& c, int64_t pos,
                     const float* factors) {
  for (int64_t h = 0; h < n_heads; ++h) {
    double* head = v.data() + h * c.head_dim;
    if (!norm.empty()) {
      Vec tmp = rmsnorm(Vec(head, head + c.head_dim), norm, c.norm_eps);
      std::copy(tmp.begin(), tmp.end(), head);
    }
    rope(head, c, pos, factors);
  }
}

}  // namespace

std::vector<std::vector<double>> forward_all(const Model& model, const std::vector<int64_t>& tokens) {
  const ModelConfig& c = model.config();
  const ModelWeights& mw = model.weights();
  std::vector<Layer> layers;
  for (const auto& lw : mw.layers) layers.push_back(load_layer(lw, c));
  const Mat embedding = to_rows(mw.token_embedding);
  const Mat output = to_rows(mw.output);
  const Vec out_norm = to_vec(mw.output_norm, c.dim);
  const int64_t n = static_cast<int64_t>(tokens.size());
  const int64_t group = c.n_heads / c.n_kv_heads;

  std::vector<Vec> x(n);
  for (int64_t t = 0; t < n; ++t) x[t] = embedding[tokens[t]];
  for (const Layer& l : layers) {
    std::vector<Vec> q(n), k(n), v(n);
    for (int64_t t = 0; t < n; ++t) {
      const Vec h = rmsnorm(x[t], l.attn_norm, c.norm_eps);
      q[t] = matvec(l.wq, h); add(q[t], l.bq);
      k[t] = matvec(l.wk, h); add(k[t], l.bk);
      v[t] = matvec(l.wv, h); add(v[t], l.bv);
      norm_and_rotate(q[t], c.n_heads, l.q_norm, c, t, mw.rope_freq_factors);
      norm_and_rotate(k[t], c.n_kv_heads, l.k_norm, c, t, mw.rope_freq_factors);
    }
    for (int64_t t = 0; t < n; ++t) {
      Vec att(c.q_dim(), 0.0);
      for (int64_t h = 0; h < c.n_heads; ++h) {
        const int64_t kvh = h / group;
        Vec scores(t + 1);
        for (int64_t j = 0; j <= t; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < c.head_dim; ++d) dot += q[t][h * c.head_dim + d] * k[j][kvh * c.head_dim + d];
          scores[j] = dot / std::sqrt(static_cast<double>(c.head_dim));
        }
        const double mx = *std::max_element(scores.begin(), scores.end());
        double sum = 0;
        for (double& s : scores) sum += (s = std::exp(s - mx));
        for (int64_t j = 0; j <= t; ++j)
          for (int64_t d = 0; d < c.head_dim; ++d)
            att[h * c.head_dim + d] += scores[j] / sum * v[j][kvh * c.head_dim + d];
      }
      add(x[t], matvec(l.wo, att));
      const Vec h2 = rmsnorm(x[t], l.ffn_norm, c.norm_eps);
      const Vec g = matvec(l.gate, h2), u = matvec(l.up, h2);
      Vec act(g.size());
      for (size_t i = 0; i < g.size(); ++i) act[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
      add(x[t], matvec(l.down, act));
    }
  }
  std::vector<Vec> logits(n);
  for (int64_t t = 0; t < n; ++t) logits[t] = matvec(output, rmsnorm(x[t], out_norm, c.norm_eps));
  return logits;
}

double relative_max_diff(const std::vector<float>& a, const std::vector<double>& b) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    diff = std::max(diff, std::abs(a[i] - b[i]));
    scale = std::max(scale, std::abs(b[i]));
  }
  return scale > 0 ? diff / scale : diff;
}

}  // namespace llmpack::reference
