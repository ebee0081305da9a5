// Perplexity: the windowed, second-half scoring agrees with a direct
// token-by-token computation, and stories260K finds its own story likely.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/fixtures.h"
#include "engine/llama_program.h"
#include "runner/perplexity.h"

namespace llmpack {
namespace {

TEST(Perplexity, WindowsMatchDirectTokenByTokenComputation) {
  LLMPACK_REQUIRE_FIXTURE(model, "gguf/stories260K.gguf");
  LLMPACK_REQUIRE_FIXTURE(golden, "llama2c/stories260K_greedy_256.json");
  std::ifstream in(golden);
  const std::string text = nlohmann::json::parse(in)["generated_text"];
  const int64_t ctx = 64;
  ProgramOptions options;
  options.logits_rows = ctx;
  options.defaults.max_seq_len = 16;  // windows go in 4 chunks of 16
  auto pkg = load_package(model, "", options);
  ASSERT_TRUE(pkg.ok()) << pkg.status().message();
  auto result = compute_perplexity(*pkg->program, *pkg->tokenizer, text, ctx);
  ASSERT_TRUE(result.ok()) << result.status().message();

  // The same windows, one token per call, log-softmax in double.
  auto ids = pkg->tokenizer->encode(text, 1, 0).value();
  const int64_t windows = static_cast<int64_t>(ids.size()) / ctx;
  double nll = 0;
  int64_t n = 0;
  for (int64_t w = 0; w < windows; ++w) {
    for (int64_t p = 0; p + 1 < ctx; ++p) {
      int64_t token = p == 0 ? 1 : ids[w * ctx + p];
      auto logits = pkg->program->forward(std::span<const int64_t>(&token, 1), p);
      ASSERT_TRUE(logits.ok());
      if (p < ctx / 2) continue;
      double mx = -1e30, sum = 0;
      for (float v : logits->last()) mx = std::max(mx, static_cast<double>(v));
      for (float v : logits->last()) sum += std::exp(v - mx);
      nll -= logits->last()[ids[w * ctx + p + 1]] - mx - std::log(sum);
      ++n;
    }
  }
  EXPECT_EQ(result->n_windows, windows);
  EXPECT_EQ(result->n_scored, n);
  EXPECT_NEAR(result->ppl, std::exp(nll / n), 1e-3 * result->ppl);
  EXPECT_GT(result->ppl_error, 0);
  EXPECT_LT(result->ppl, 4.0) << "the model's own greedy story should be very likely";
  EXPECT_EQ(result->running_ppl.size(), static_cast<size_t>(windows));
}

// max_windows (--chunks): the first windows only, each with the running
// value the whole run has after it; more than the text holds is all of them.
TEST(Perplexity, MaxWindowsScoresTheFirstWindowsOnly) {
  LLMPACK_REQUIRE_FIXTURE(model, "gguf/stories260K.gguf");
  LLMPACK_REQUIRE_FIXTURE(golden, "llama2c/stories260K_greedy_256.json");
  std::ifstream in(golden);
  const std::string text = nlohmann::json::parse(in)["generated_text"];
  ProgramOptions options;
  options.logits_rows = 32;
  auto pkg = load_package(model, "", options);
  ASSERT_TRUE(pkg.ok()) << pkg.status().message();
  auto all = compute_perplexity(*pkg->program, *pkg->tokenizer, text, 32);
  auto two = compute_perplexity(*pkg->program, *pkg->tokenizer, text, 32, nullptr, 2);
  auto many = compute_perplexity(*pkg->program, *pkg->tokenizer, text, 32, nullptr, 1000);
  ASSERT_TRUE(all.ok() && two.ok() && many.ok());
  ASSERT_GT(all->n_windows, 2);
  EXPECT_EQ(two->n_windows, 2);
  EXPECT_EQ(two->n_scored, 2 * all->n_scored / all->n_windows);
  ASSERT_EQ(two->running_ppl.size(), 2u);
  EXPECT_DOUBLE_EQ(two->running_ppl[1], all->running_ppl[1]);
  EXPECT_DOUBLE_EQ(two->ppl, all->running_ppl[1]);
  EXPECT_EQ(many->n_windows, all->n_windows);
  EXPECT_DOUBLE_EQ(many->ppl, all->ppl);
}

TEST(Perplexity, RefusesTextShorterThanOneWindow) {
  LLMPACK_REQUIRE_FIXTURE(model, "gguf/stories260K.gguf");
  ProgramOptions options;
  options.logits_rows = 128;
  auto pkg = load_package(model, "", options);
  ASSERT_TRUE(pkg.ok());
  auto result = compute_perplexity(*pkg->program, *pkg->tokenizer, "Once upon a time", 128);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("at least 128"), std::string::npos) << result.status().message();
}

}  // namespace
}  // namespace llmpack
