// KL divergence of a model from a base model (perplexity --kl_divergence):
// zero against itself, equal to a direct token-by-token computation, and
// larger for a coarser quantization of the same weights.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include "common/fixtures.h"
#include "engine/llama_program.h"
#include "export/exporter.h"
#include "runner/kl_divergence.h"

namespace llmpack {
namespace {

std::string story_text() {
  std::ifstream in(testing::fixture_path("llama2c/stories260K_greedy_256.json"));
  return nlohmann::json::parse(in)["generated_text"];
}

Result<LoadedPackage> load_for_windows(const std::string& path, int64_t ctx, int64_t bound) {
  ProgramOptions options;
  options.logits_rows = ctx;
  options.defaults.max_seq_len = bound;
  return load_package(path, "", options);
}

TEST(KlDivergence, AgainstItselfIsZeroAndEveryTopTokenAgrees) {
  LLMPACK_REQUIRE_FIXTURE(model, "gguf/stories260K.gguf");
  LLMPACK_REQUIRE_FIXTURE(golden, "llama2c/stories260K_greedy_256.json");
  auto a = load_for_windows(model, 64, 16), b = load_for_windows(model, 64, 64);  // other chunkings
  ASSERT_TRUE(a.ok() && b.ok());
  auto r = compute_kl_divergence(*a->program, *b->program, *a->tokenizer, story_text(), 64);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_GT(r->n_scored, 100);
  EXPECT_LT(r->kld_mean, 1e-9);
  EXPECT_LT(r->kld_max, 1e-8);
  EXPECT_EQ(r->same_top, 1.0);
  EXPECT_NEAR(r->ppl_model, r->ppl_base, 1e-6 * r->ppl_base);
  EXPECT_LT(std::abs(r->delta_p_mean), 1e-7);
}

struct Direct {
  double kld_mean = 0, same_top = 0;
  int64_t n = 0;
};

// The statistics recomputed here: the same windows through `model` and `base`
// in chunks of 32 (so the kernels' results equal the compared run's bit for
// bit: this checks the statistics), log-softmax in double.
Direct direct_statistics(Program& model, Program& base, const std::vector<int32_t>& ids) {
  Direct d;
  for (int64_t w = 0; w < static_cast<int64_t>(ids.size()) / 64; ++w) {
    std::vector<int64_t> window(ids.begin() + w * 64, ids.begin() + (w + 1) * 64);
    window[0] = 1;  // BOS
    for (int64_t pos = 0; pos < 64; pos += 32) {
      const auto chunk = std::span<const int64_t>(window).subspan(pos, 32);
      auto lq = model.forward(chunk, pos, true);
      auto lb = base.forward(chunk, pos, true);
      EXPECT_TRUE(lq.ok() && lb.ok());
      if (!lq.ok() || !lb.ok()) return d;
      for (int64_t i = 0; i < 32; ++i) {
        if (pos + i < 32 || pos + i + 1 >= 64) continue;  // the scored half
        const auto q = lq->row(i), b = lb->row(i);
        double mq = -1e30, mb = -1e30, sq = 0, sb = 0;
        for (size_t t = 0; t < q.size(); ++t) mq = std::max(mq, double(q[t])), mb = std::max(mb, double(b[t]));
        for (size_t t = 0; t < q.size(); ++t) sq += std::exp(q[t] - mq), sb += std::exp(b[t] - mb);
        for (size_t t = 0; t < q.size(); ++t) {
          const double lpb = b[t] - mb - std::log(sb), lpq = q[t] - mq - std::log(sq);
          d.kld_mean += std::exp(lpb) * (lpb - lpq);
        }
        const auto top_q = std::max_element(q.begin(), q.end()) - q.begin();
        d.same_top += top_q == std::max_element(b.begin(), b.end()) - b.begin();
        ++d.n;
      }
    }
  }
  d.kld_mean /= static_cast<double>(d.n), d.same_top /= static_cast<double>(d.n);
  return d;
}

// A window of two tokens scores no position (the second half, less the last
// token, is empty): refused before any forward call, as perplexity refuses it.
TEST(KlDivergence, AWindowThatScoresNothingIsRefused) {
  LLMPACK_REQUIRE_FIXTURE(model, "gguf/stories260K.gguf");
  LLMPACK_REQUIRE_FIXTURE(golden, "llama2c/stories260K_greedy_256.json");
  auto a = load_for_windows(model, 64, 16), b = load_for_windows(model, 64, 16);
  ASSERT_TRUE(a.ok() && b.ok());
  auto r = compute_kl_divergence(*a->program, *b->program, *a->tokenizer, story_text(), 2);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("context 2 must be in 3.."), std::string::npos) << r.status().message();
}

// Q8_0 and Q4_0 exports against the f32 package: the statistics as recomputed
// directly, and a mean KLD that grows with the coarser type.
TEST(KlDivergence, MatchesADirectComputationAndGrowsWithCoarserTypes) {
  LLMPACK_REQUIRE_FIXTURE(model, "gguf/stories260K.gguf");
  LLMPACK_REQUIRE_FIXTURE(golden, "llama2c/stories260K_greedy_256.json");
  std::map<std::string, double> mean_kld;
  const std::string text = story_text();
  for (const char* dtype : {"q8_0", "q4_0"}) {
    ExportOptions o;
    o.checkpoint = model;
    o.output = ::testing::TempDir() + "/kld_" + dtype + "_" + std::to_string(getpid()) + ".gguf";
    o.dtype = dtype;
    ASSERT_TRUE(export_package(o).ok());
    auto quant = load_for_windows(o.output, 64, 32), base = load_for_windows(model, 64, 32);
    ASSERT_TRUE(quant.ok() && base.ok());
    auto r = compute_kl_divergence(*quant->program, *base->program, *base->tokenizer, text, 64);
    ASSERT_TRUE(r.ok()) << r.status().message();
    mean_kld[dtype] = r->kld_mean;
    auto q2 = load_for_windows(o.output, 64, 32), b2 = load_for_windows(model, 64, 32);
    ASSERT_TRUE(q2.ok() && b2.ok());
    const Direct d = direct_statistics(*q2->program, *b2->program, base->tokenizer->encode(text, 1, 0).value());
    EXPECT_EQ(r->n_scored, d.n) << dtype;
    EXPECT_NEAR(r->kld_mean, d.kld_mean, 1e-9) << dtype;
    EXPECT_DOUBLE_EQ(r->same_top, d.same_top) << dtype;
    EXPECT_GE(r->kld_max, r->kld_p99) << dtype;
    EXPECT_GE(r->kld_p99, r->kld_median) << dtype;
    std::remove(o.output.c_str());
  }
  EXPECT_GT(mean_kld["q8_0"], 0.0);
  EXPECT_GT(mean_kld["q4_0"], 10 * mean_kld["q8_0"]);  // 0.07 against 0.0005 on this text
}

}  // namespace
}  // namespace llmpack
