#include "runner/kl_divergence.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "runner/scored_windows.h"

namespace llmpack {
namespace {

// ln softmax of a row of logits, in double: [vocab].
void log_softmax(std::span<const float> logits, std::vector<double>* out) {
  const float mx = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (float v : logits) sum += std::exp(static_cast<double>(v - mx));
  const double log_sum = std::log(sum);
  out->resize(logits.size());
  for (size_t t = 0; t < logits.size(); ++t) (*out)[t] = static_cast<double>(logits[t] - mx) - log_sum;
}

// Everything compared at one scored position.
struct PositionStats {
  double kld = 0, nll_model = 0, nll_base = 0, delta_p = 0;
  bool same_top = false;
};

// The two distributions at one position, `next` the token that follows.
PositionStats compare_rows(std::span<const float> model_row, std::span<const float> base_row, int64_t next,
                           std::vector<double>* lp_model, std::vector<double>* lp_base) {
  log_softmax(model_row, lp_model);
  log_softmax(base_row, lp_base);
  PositionStats s;
  for (size_t t = 0; t < lp_base->size(); ++t) {
    const double lb = (*lp_base)[t];
    if (std::isfinite(lb)) s.kld += std::exp(lb) * (lb - (*lp_model)[t]);  // a token base rules out adds nothing
  }
  s.kld = std::max(0.0, s.kld);  // rounding may leave a tiny negative sum for equal rows
  s.nll_model = -(*lp_model)[next];
  s.nll_base = -(*lp_base)[next];
  s.delta_p = std::exp((*lp_model)[next]) - std::exp((*lp_base)[next]);
  s.same_top = std::max_element(model_row.begin(), model_row.end()) - model_row.begin() ==
               std::max_element(base_row.begin(), base_row.end()) - base_row.begin();
  return s;
}

// The q-quantile of `v` (sorted in place), by the nearest rank.
double quantile(std::vector<double>& v, double q) {
  std::sort(v.begin(), v.end());
  const size_t i = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size()))) - 1;
  return v[std::min(i, v.size() - 1)];
}

}  // namespace

Result<KlDivergenceResult> compute_kl_divergence(Program& model, Program& base, const Tokenizer& tokenizer,
                                                 std::string_view text, int64_t context,
                                                 const std::function<void(int64_t, double)>& on_window,
                                                 int64_t max_windows) {
  LLMPACK_ASSIGN_OR_RETURN(ScoredWindows s, plan_scored_windows(model, tokenizer, text, context, 3, max_windows));
  LLMPACK_ASSIGN_OR_RETURN(const int64_t base_bound, window_bound(base, context));
  s.bound = std::min(s.bound, base_bound);  // chunks both take
  RunningMean kld, nll_model, nll_base, delta_p, same_top;
  std::vector<double> klds, lp_model, lp_base;
  for (int64_t w = 0; w < s.n_windows; ++w) {
    const std::vector<int64_t> window = s.window(w);
    for (int64_t pos = 0; pos < context; pos += s.bound) {
      const int64_t n = std::min(s.bound, context - pos);
      const auto chunk = std::span<const int64_t>(window).subspan(pos, n);
      auto m = model.forward(chunk, pos, /*all_logits=*/true);
      if (!m.ok()) return m.status().with_context("window " + std::to_string(w + 1));
      auto b = base.forward(chunk, pos, /*all_logits=*/true);
      if (!b.ok()) return b.status().with_context("the base model, window " + std::to_string(w + 1));
      if (m->row(0).size() != b->row(0).size())
        return error_status("the model's vocabulary has " + std::to_string(m->row(0).size()) +
                            " tokens, the base model's " + std::to_string(b->row(0).size()));
      for (int64_t i = 0; i < n; ++i) {
        if (!s.scored(pos + i)) continue;
        const PositionStats p = compare_rows(m->row(i), b->row(i), window[pos + i + 1], &lp_model, &lp_base);
        kld.add(p.kld), nll_model.add(p.nll_model), nll_base.add(p.nll_base), delta_p.add(p.delta_p);
        same_top.add(p.same_top ? 1.0 : 0.0);
        klds.push_back(p.kld);
      }
    }
    if (on_window) on_window(w, kld.mean());
  }
  KlDivergenceResult r;
  r.n_windows = s.n_windows;
  r.n_scored = kld.n;
  r.ppl_model = std::exp(nll_model.mean());
  r.ppl_model_error = r.ppl_model * nll_model.stderr_of_mean();
  r.ppl_base = std::exp(nll_base.mean());
  r.ppl_base_error = r.ppl_base * nll_base.stderr_of_mean();
  r.kld_mean = kld.mean();
  r.kld_mean_error = kld.stderr_of_mean();
  r.delta_p_mean = delta_p.mean();
  r.delta_p_rms = std::sqrt(delta_p.sum_sq / static_cast<double>(delta_p.n));
  r.same_top = same_top.mean();
  r.same_top_error = same_top.stderr_of_mean();
  r.kld_max = *std::max_element(klds.begin(), klds.end());
  r.kld_p99 = quantile(klds, 0.99);
  r.kld_median = quantile(klds, 0.5);
  return r;
}

}  // namespace llmpack
