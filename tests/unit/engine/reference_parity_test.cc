// The engine's logits agree with the fp64 reference (tests/reference) to 1e-4
// of the logits' largest magnitude, on random models of several shapes.
#include <gtest/gtest.h>

#include <algorithm>

#include "common/tiny_model.h"
#include "reference/reference_forward.h"

namespace llmpack {
namespace {

struct Shape {
  const char* label;
  testing::TinyModelSpec spec;
};

testing::TinyModelSpec make(std::string arch, int64_t dim, int64_t hidden, int64_t heads, int64_t kv, bool tied,
                            DType dtype = DType::kF32) {
  testing::TinyModelSpec s;
  s.arch = std::move(arch);
  s.dim = dim;
  s.hidden_dim = hidden;
  s.n_heads = heads;
  s.n_kv_heads = kv;
  s.tied_output = tied;
  s.dtype = dtype;
  s.contract = testing::TinyContract{32, 64, 32, true, "off_graph"};
  return s;
}

class ReferenceParity : public ::testing::TestWithParam<Shape> {};

// The forward's math against the fp64 reference, with an f32 cache (the
// default f16 one rounds k and v: D17_DefaultF16CacheStaysNearFp64Reference).
TEST_P(ReferenceParity, AllPositionsMatchFp64Reference) {
  ProgramOptions options;
  options.cpu_threads = 2;
  options.logits_rows = 32;
  options.kv_dtype = KvDtype::kF32;
  auto pkg = testing::load_tiny_package(GetParam().spec, options);
  ASSERT_TRUE(pkg.ok()) << pkg.status().message();
  std::vector<int64_t> tokens = {1, 17, 260, 299, 3, 128, 42, 42, 5, 270, 11};
  auto logits = pkg->program->forward(tokens, 0, /*all_logits=*/true);
  ASSERT_TRUE(logits.ok()) << logits.status().message();
  auto expected = reference::forward_all(pkg->program->model(), tokens);
  for (size_t p = 0; p < tokens.size(); ++p) {
    auto row = logits->row(static_cast<int64_t>(p));
    std::vector<float> got(row.begin(), row.end());
    EXPECT_LT(reference::relative_max_diff(got, expected[p]), 1e-4) << "position " << p;
  }
}

// The default cache is f16 (ProgramOptions::kv_dtype): its rounding of k and
// v (a relative 2^-11) moves the logits by a few 1e-4 of their largest (at
// most 5.6e-4 over these shapes when it was introduced), well inside 2e-3.
TEST_P(ReferenceParity, D17_DefaultF16CacheStaysNearFp64Reference) {
  ProgramOptions options;
  ASSERT_EQ(options.kv_dtype, KvDtype::kF16);
  options.cpu_threads = 2;
  options.logits_rows = 32;
  auto pkg = testing::load_tiny_package(GetParam().spec, options);
  ASSERT_TRUE(pkg.ok()) << pkg.status().message();
  EXPECT_EQ(pkg->program->transformer().cache().dtype(), KvDtype::kF16);
  std::vector<int64_t> tokens = {1, 17, 260, 299, 3, 128, 42, 42, 5, 270, 11};
  auto logits = pkg->program->forward(tokens, 0, /*all_logits=*/true);
  ASSERT_TRUE(logits.ok()) << logits.status().message();
  auto expected = reference::forward_all(pkg->program->model(), tokens);
  double worst = 0;
  for (size_t p = 0; p < tokens.size(); ++p) {
    auto row = logits->row(static_cast<int64_t>(p));
    std::vector<float> got(row.begin(), row.end());
    worst = std::max(worst, reference::relative_max_diff(got, expected[p]));
  }
  EXPECT_LT(worst, 2e-3);
  EXPECT_GT(worst, 0.0);  // the rounding is there: this is not the f32 cache
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, ReferenceParity,
    ::testing::Values(Shape{"gqa_untied", make("llama", 48, 52, 6, 2, false)},
                      Shape{"mha_tied", make("llama", 40, 72, 4, 4, true)},
                      Shape{"odd_widths", make("llama", 30, 37, 3, 1, false)},
                      Shape{"f16_weights", make("llama", 64, 96, 8, 4, false, DType::kF16)},
                      Shape{"qwen2_bias", make("qwen2", 48, 52, 6, 2, true)},
                      Shape{"qwen3_qknorm", make("qwen3", 48, 52, 6, 3, false)},
                      Shape{"llama3_rope_factors", [] {
                              auto s = make("llama", 48, 52, 6, 2, true);
                              s.rope_freq_factors = true;
                              return s;
                            }()},
                      Shape{"linear_rope_scaling", [] {
                              auto s = make("qwen2", 48, 52, 6, 2, true);
                              s.metadata["qwen2.rope.scaling.type"] =
                                  GgufValue{GgufValueType::kString, {}, std::string("linear")};
                              s.metadata["qwen2.rope.scaling.factor"] = {GgufValueType::kF32, {}, 4.0};
                              return s;
                            }()},
                      // head_dim 32 over 64 original positions: pairs 0-4 on YaRN's ramp, 5-15 scaled
                      Shape{"yarn_rope_scaling", [] {
                              auto s = make("qwen2", 64, 52, 2, 1, true);
                              s.metadata["qwen2.rope.scaling.type"] =
                                  GgufValue{GgufValueType::kString, {}, std::string("yarn")};
                              s.metadata["qwen2.rope.scaling.factor"] = {GgufValueType::kF32, {}, 4.0};
                              s.metadata["qwen2.rope.scaling.original_context_length"] =
                                  GgufValue{GgufValueType::kU32, {}, uint64_t{64}};
                              return s;
                            }()},
                      // every YaRN key away from its default, in the llama (adjacent pairs) layout
                      Shape{"yarn_tuned", [] {
                              auto s = make("llama", 64, 52, 2, 2, false);
                              const auto f32 = [](double v) { return GgufValue{GgufValueType::kF32, {}, v}; };
                              s.metadata["llama.rope.scaling.type"] =
                                  GgufValue{GgufValueType::kString, {}, std::string("yarn")};
                              s.metadata["llama.rope.scaling.factor"] = f32(8.0);
                              s.metadata["llama.rope.scaling.original_context_length"] =
                                  GgufValue{GgufValueType::kU32, {}, uint64_t{256}};
                              s.metadata["llama.rope.scaling.attn_factor"] = f32(0.8);
                              s.metadata["llama.rope.scaling.yarn_ext_factor"] = f32(0.5);
                              s.metadata["llama.rope.scaling.yarn_beta_fast"] = f32(8.0);
                              s.metadata["llama.rope.scaling.yarn_beta_slow"] = f32(2.0);
                              return s;
                            }()}),
    [](const ::testing::TestParamInfo<Shape>& info) { return info.param.label; });

// R8 at the engine: one chunk, several chunks and token by token give the same logits.
TEST(ChunkInvariance, R8_EngineLogitsDoNotDependOnChunking) {
  auto spec = make("llama", 48, 52, 6, 2, false);
  std::vector<int64_t> tokens = {1, 17, 260, 299, 3, 128, 42, 42, 5, 270, 11, 12, 13};
  std::vector<std::vector<float>> finals;
  for (int64_t chunk : {13, 5, 1}) {
    auto pkg = testing::load_tiny_package(spec, {});
    ASSERT_TRUE(pkg.ok());
    LogitsView last;
    for (int64_t pos = 0; pos < static_cast<int64_t>(tokens.size()); pos += chunk) {
      const int64_t n = std::min<int64_t>(chunk, tokens.size() - pos);
      auto r = pkg->program->forward(std::span(tokens).subspan(pos, n), pos);
      ASSERT_TRUE(r.ok());
      last = *r;
    }
    finals.emplace_back(last.last().begin(), last.last().end());
  }
  for (size_t k = 1; k < finals.size(); ++k) {
    float scale = 0, diff = 0;
    for (size_t i = 0; i < finals[0].size(); ++i) {
      scale = std::max(scale, std::abs(finals[0][i]));
      diff = std::max(diff, std::abs(finals[k][i] - finals[0][i]));
    }
    EXPECT_LT(diff, 1e-3f * scale);
  }
}

}  // namespace
}  // namespace llmpack
