// Activation statistics (engine/activation_stats.h) collected by the forward
// pass: the sums equal sums recomputed from the weights, rows are counted as
// tokens, the output matrix only when asked, and the thread count changes nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <span>
#include <string>
#include <vector>

#include "common/tiny_model.h"
#include "engine/activation_stats.h"

namespace llmpack {
namespace {

const std::vector<int64_t> kTokens = {1, 17, 260, 299, 3, 128, 42, 42, 5, 270, 11, 64};

LoadedPackage load(int threads, testing::TinyModelSpec spec = {}) {
  ProgramOptions options;
  options.cpu_threads = threads;
  options.kv_dtype = KvDtype::kF32;  // attention reads v exactly (AttentionOutputInputOfTheFirstToken...)
  options.logits_rows = 16;
  auto pkg = testing::load_tiny_package(spec, options);
  EXPECT_TRUE(pkg.ok()) << pkg.status().message();
  return std::move(pkg).value();
}

// rmsnorm(row) * weight in double, the input of layer 0's q/k/v for an embedding row.
std::vector<double> normed(const std::vector<float>& row, const float* weight, float eps) {
  double ms = 0;
  for (float v : row) ms += static_cast<double>(v) * v;
  const double inv = 1.0 / std::sqrt(ms / static_cast<double>(row.size()) + eps);
  std::vector<double> out(row.size());
  for (size_t j = 0; j < row.size(); ++j) out[j] = row[j] * inv * weight[j];
  return out;
}

std::vector<float> embedding_row(const Model& model, int64_t token) {
  std::vector<float> row(static_cast<size_t>(model.config().dim));
  kernels::dequantize_row(model.weights().token_embedding, token, row.data());
  return row;
}

// |got - want| within `rel` of the largest |want|, column by column.
void expect_close(const std::vector<double>& got, const std::vector<double>& want, double rel,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double most = 0;
  for (double w : want) most = std::max(most, std::abs(w));
  ASSERT_GT(most, 0) << what;
  for (size_t j = 0; j < got.size(); ++j) EXPECT_NEAR(got[j], want[j], rel * most) << what << " column " << j;
}

const char* const kLayerWeights[] = {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"};

std::string weight(int64_t layer, const char* kind) {
  return "blk." + std::to_string(layer) + "." + kind + ".weight";
}

TEST(ActivationStats, LayerZeroQkvSumsAreTheNormedEmbeddingsSquared) {
  LoadedPackage pkg = load(2);
  ActivationStats stats;
  ASSERT_TRUE(pkg.program->bind_activation_stats(&stats).ok());
  ASSERT_TRUE(pkg.program->forward(kTokens, 0).ok());

  const Model& model = pkg.program->model();
  const ModelConfig& c = model.config();
  std::vector<double> want(static_cast<size_t>(c.dim), 0.0);
  for (int64_t token : kTokens) {
    const std::vector<double> x = normed(embedding_row(model, token), model.weights().layers[0].attn_norm, c.norm_eps);
    for (size_t j = 0; j < x.size(); ++j) want[j] += x[j] * x[j];
  }
  for (const char* kind : {"attn_q", "attn_k", "attn_v"}) {
    const ActivationSums* s = stats.find(weight(0, kind));
    ASSERT_NE(s, nullptr) << kind;
    EXPECT_EQ(s->count, static_cast<int64_t>(kTokens.size())) << kind;
    expect_close(s->sum_sq, want, 1e-5, kind);
  }
}

// Every layer's seven matrices, each with its input width and a row per
// token; no output matrix unless asked for.
TEST(ActivationStats, EveryLayerMatrixHasItsWidthAndATokenCount) {
  testing::TinyModelSpec spec;
  spec.n_layers = 3;
  LoadedPackage pkg = load(2, spec);
  ActivationStats stats;
  ASSERT_TRUE(pkg.program->bind_activation_stats(&stats).ok());
  ASSERT_TRUE(pkg.program->forward(std::span(kTokens).first(7), 0).ok());
  ASSERT_TRUE(pkg.program->forward(std::span(kTokens).subspan(7, 1), 7).ok());  // a decode step counts its row
  const ModelConfig& c = pkg.program->model().config();
  EXPECT_EQ(stats.weights().size(), static_cast<size_t>(7 * spec.n_layers));
  EXPECT_EQ(stats.find("output.weight"), nullptr);
  for (int64_t layer = 0; layer < spec.n_layers; ++layer) {
    for (const char* kind : kLayerWeights) {
      const ActivationSums* s = stats.find(weight(layer, kind));
      ASSERT_NE(s, nullptr) << weight(layer, kind);
      const std::string k = kind;
      const int64_t cols = k == "attn_output" ? c.q_dim() : k == "ffn_down" ? c.hidden_dim : c.dim;
      EXPECT_EQ(static_cast<int64_t>(s->sum_sq.size()), cols) << weight(layer, kind);
      EXPECT_EQ(s->count, 8) << weight(layer, kind);
      for (double v : s->sum_sq) ASSERT_TRUE(std::isfinite(v) && v >= 0) << weight(layer, kind);
      EXPECT_GT(*std::max_element(s->sum_sq.begin(), s->sum_sq.end()), 0) << weight(layer, kind);
    }
  }
}

// One token at position 0 attends to itself alone: each query head's output
// is its kv head's value, Wv · rmsnorm(embedding) (an f32 cache keeps it exact).
TEST(ActivationStats, AttentionOutputInputOfTheFirstTokenIsItsValue) {
  LoadedPackage pkg = load(1);
  ActivationStats stats;
  ASSERT_TRUE(pkg.program->bind_activation_stats(&stats).ok());
  const int64_t token = 17;
  ASSERT_TRUE(pkg.program->forward(std::vector<int64_t>{token}, 0).ok());

  const Model& model = pkg.program->model();
  const ModelConfig& c = model.config();
  const LayerWeights& l0 = model.weights().layers[0];
  const std::vector<double> x = normed(embedding_row(model, token), l0.attn_norm, c.norm_eps);
  std::vector<float> wv_row(static_cast<size_t>(c.dim));
  std::vector<double> v(static_cast<size_t>(c.kv_dim()));
  for (int64_t r = 0; r < c.kv_dim(); ++r) {
    kernels::dequantize_row(l0.wv, r, wv_row.data());
    for (int64_t j = 0; j < c.dim; ++j) v[r] += wv_row[j] * x[j];
  }
  const int64_t group = c.n_heads / c.n_kv_heads;
  std::vector<double> want(static_cast<size_t>(c.q_dim()));
  for (int64_t h = 0; h < c.n_heads; ++h)
    for (int64_t i = 0; i < c.head_dim; ++i) {
      const double value = v[(h / group) * c.head_dim + i];
      want[h * c.head_dim + i] = value * value;
    }
  const ActivationSums* s = stats.find("blk.0.attn_output.weight");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->count, 1);
  expect_close(s->sum_sq, want, 1e-4, "attn_output");
}

// The output matrix's input only when asked: under output.weight, or under
// token_embd.weight when the output is tied to the embedding (the matrix the
// product reads, and the name the exporter gives it); a row per logits row.
TEST(ActivationStats, OutputMatrixIsCollectedOnlyWhenAskedUnderItsOwnName) {
  for (const bool tied : {false, true}) {
    testing::TinyModelSpec spec;
    spec.tied_output = tied;
    LoadedPackage pkg = load(2, spec);
    ActivationStats stats(/*include_output=*/true);
    ASSERT_TRUE(pkg.program->bind_activation_stats(&stats).ok());
    ASSERT_TRUE(pkg.program->forward(std::span(kTokens).first(6), 0, /*all_logits=*/false).ok());
    const std::string name = tied ? "token_embd.weight" : "output.weight";
    const ActivationSums* out = stats.find(name);
    ASSERT_NE(out, nullptr) << name;
    EXPECT_EQ(stats.find(tied ? "output.weight" : "token_embd.weight"), nullptr);
    EXPECT_EQ(stats.weights().size(), 7u * 2 + 1);
    EXPECT_EQ(static_cast<int64_t>(out->sum_sq.size()), pkg.program->model().config().dim);
    EXPECT_EQ(out->count, 1) << "only the row whose logits were computed";
    ASSERT_TRUE(pkg.program->forward(std::span(kTokens).first(6), 0, /*all_logits=*/true).ok());
    EXPECT_EQ(out->count, 7);
    // The final norm's rows: each squared row sums to about dim x mean(norm weight^2).
    EXPECT_GT(*std::min_element(out->sum_sq.begin(), out->sum_sq.end()), 0) << name;
  }
}

// The sums are added on the calling thread in row order: 1 and 2 threads give
// the same bits, through a prefill and decode steps.
TEST(ActivationStats, SumsDoNotDependOnTheThreadCount) {
  std::vector<ActivationStats> runs;
  runs.reserve(2);
  for (const int threads : {1, 2}) {
    LoadedPackage pkg = load(threads);
    ActivationStats& stats = runs.emplace_back(true);
    ASSERT_TRUE(pkg.program->bind_activation_stats(&stats).ok());
    ASSERT_TRUE(pkg.program->forward(std::span(kTokens).first(10), 0, true).ok());
    for (int64_t p = 10; p < 12; ++p) ASSERT_TRUE(pkg.program->forward(std::span(kTokens).subspan(p, 1), p).ok());
  }
  ASSERT_EQ(runs[0].weights().size(), runs[1].weights().size());
  for (const auto& [name, one] : runs[0].weights()) {
    const ActivationSums* two = runs[1].find(name);
    ASSERT_NE(two, nullptr) << name;
    EXPECT_EQ(one.count, two->count) << name;
    EXPECT_EQ(one.sum_sq, two->sum_sq) << name;
  }
}

// A prefill of n tokens and n decode steps see the same rows: same counts,
// sums equal up to the kernels' rounding.
TEST(ActivationStats, PrefillAndTokenByTokenAgree) {
  LoadedPackage pkg = load(2);
  ActivationStats prefill, steps;
  ASSERT_TRUE(pkg.program->bind_activation_stats(&prefill).ok());
  ASSERT_TRUE(pkg.program->forward(kTokens, 0).ok());
  ASSERT_TRUE(pkg.program->bind_activation_stats(&steps).ok());
  for (size_t p = 0; p < kTokens.size(); ++p)
    ASSERT_TRUE(pkg.program->forward(std::span(kTokens).subspan(p, 1), static_cast<int64_t>(p)).ok());
  for (const auto& [name, a] : prefill.weights()) {
    const ActivationSums* b = steps.find(name);
    ASSERT_NE(b, nullptr) << name;
    EXPECT_EQ(a.count, b->count) << name;
    expect_close(b->sum_sq, a.sum_sq, 1e-4, name);
  }
}

TEST(ActivationStats, UnbindingStopsCollectingAndClearZeroes) {
  LoadedPackage pkg = load(2);
  ActivationStats stats;
  ASSERT_TRUE(pkg.program->bind_activation_stats(&stats).ok());
  ASSERT_TRUE(pkg.program->forward(std::span(kTokens).first(4), 0).ok());
  ASSERT_TRUE(pkg.program->bind_activation_stats(nullptr).ok());
  const std::vector<double> before = stats.find("blk.1.ffn_down.weight")->sum_sq;
  ASSERT_TRUE(pkg.program->forward(std::span(kTokens).first(4), 0).ok());
  EXPECT_EQ(stats.find("blk.1.ffn_down.weight")->sum_sq, before);
  EXPECT_EQ(stats.find("blk.1.ffn_down.weight")->count, 4);
  stats.clear();
  for (const auto& [name, s] : stats.weights()) {
    EXPECT_EQ(s.count, 0) << name;
    EXPECT_EQ(*std::max_element(s.sum_sq.begin(), s.sum_sq.end()), 0.0) << name;
  }
}

// Stats that hold a model's weights refuse a model of other widths by name,
// and bind nothing.
TEST(ActivationStats, StatsOfAnotherModelsWidthsAreRefused) {
  LoadedPackage a = load(1);
  testing::TinyModelSpec wider;
  wider.dim = 60;
  LoadedPackage b = load(1, wider);
  ActivationStats stats;
  ASSERT_TRUE(a.program->bind_activation_stats(&stats).ok());
  const Status s = b.program->bind_activation_stats(&stats);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("weight 'blk.0.attn_q.weight' has 60 input columns, but its sums so far have 48"),
            std::string::npos)
      << s.message();
  ASSERT_TRUE(b.program->forward(std::span(kTokens).first(2), 0).ok());
  EXPECT_EQ(stats.find("blk.0.attn_q.weight")->count, 0);
}

TEST(ActivationStats, ToImatrixKeepsNamesSumsAndCounts) {
  LoadedPackage pkg = load(2);
  ActivationStats stats;
  ASSERT_TRUE(pkg.program->bind_activation_stats(&stats).ok());
  ASSERT_TRUE(pkg.program->forward(kTokens, 0).ok());
  const ImportanceMatrix m = stats.to_imatrix({"text.txt"}, 1, 12);
  EXPECT_EQ(m.datasets, std::vector<std::string>{"text.txt"});
  EXPECT_EQ(m.chunk_count, 1);
  EXPECT_EQ(m.chunk_size, 12);
  ASSERT_EQ(m.entries.size(), stats.weights().size());
  for (const auto& [name, s] : stats.weights()) {
    const ImatrixEntry* e = m.find(name);
    ASSERT_NE(e, nullptr) << name;
    EXPECT_EQ(e->count, static_cast<double>(s.count));
    ASSERT_EQ(e->sum_sq.size(), s.sum_sq.size());
    for (size_t j = 0; j < s.sum_sq.size(); ++j) EXPECT_EQ(e->sum_sq[j], static_cast<float>(s.sum_sq[j])) << name;
  }
}

}  // namespace
}  // namespace llmpack
