// Synthetic models (llmpack bench): the named shapes, the type mixes, and a
// forward pass that runs on them. Layer counts and vocabularies are cut so
// the tests stay fast under ASan; widths are the real ones.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>

#include "engine/llama_program.h"
#include "engine/synthetic_model.h"
#include "kernels/grouped_blocks.h"
#include "kernels/kernels.h"
#include "format/gguf.h"

namespace llmpack {
namespace {

std::unique_ptr<Model> build(const std::string& name, SyntheticType type, int64_t layers, int64_t vocab,
                             uint64_t seed = 1) {
  ThreadPool pool(2);
  auto shape = find_synthetic_shape(name);
  EXPECT_TRUE(shape.ok()) << shape.status().message();
  SyntheticOptions o;
  o.n_layers = layers;
  o.vocab_size = vocab;
  o.seed = seed;
  auto model = build_synthetic_model(*shape, type, o, pool);
  EXPECT_TRUE(model.ok()) << model.status().message();
  return model.ok() ? std::move(model).value() : nullptr;
}

std::map<std::string, DType> tensor_types(const Model& m) {
  std::map<std::string, DType> out;
  for (const auto& t : m.gguf()->tensors()) out[t.name] = t.dtype;
  return out;
}

TEST(SyntheticModel, NamedShapesMatchTheRealModels) {
  struct Expect { const char* name; int64_t dim, hidden, layers, heads, kv, head_dim, vocab; bool tied; };
  const Expect expected[] = {
      {"stories110m", 768, 2048, 12, 12, 12, 64, 32000, true},
      {"smollm2-135m", 576, 1536, 30, 9, 3, 64, 49152, true},
      {"qwen2.5-0.5b", 896, 4864, 24, 14, 2, 64, 151936, true},
      {"qwen3-0.6b", 1024, 3072, 28, 16, 8, 128, 151936, true},
      {"llama-3.2-1b", 2048, 8192, 16, 32, 8, 64, 128256, true},
  };
  for (const auto& e : expected) {
    auto s = find_synthetic_shape(e.name);
    ASSERT_TRUE(s.ok()) << e.name;
    EXPECT_EQ(s->dim, e.dim) << e.name;
    EXPECT_EQ(s->hidden_dim, e.hidden) << e.name;
    EXPECT_EQ(s->n_layers, e.layers) << e.name;
    EXPECT_EQ(s->n_heads, e.heads) << e.name;
    EXPECT_EQ(s->n_kv_heads, e.kv) << e.name;
    EXPECT_EQ(s->head_dim, e.head_dim) << e.name;
    EXPECT_EQ(s->vocab_size, e.vocab) << e.name;
    EXPECT_EQ(s->tied_output, e.tied) << e.name;
  }
  EXPECT_EQ(find_synthetic_shape("qwen3-0.6b")->arch, "qwen3");
  EXPECT_EQ(find_synthetic_shape("qwen2.5-0.5b")->arch, "qwen2");
  EXPECT_TRUE(find_synthetic_shape("LLAMA-3.2-1B").ok());
  auto bad = find_synthetic_shape("gpt-5");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("stories110m"), std::string::npos) << bad.status().message();
}

TEST(SyntheticModel, TypeNamesParseAndUnknownOnesAreRefused) {
  for (const char* n : {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_k_m", "q5_k_m", "q3_k_m", "iq4_xs"}) {
    auto t = parse_synthetic_type(n);
    ASSERT_TRUE(t.ok()) << n;
    EXPECT_EQ(synthetic_type_name(*t), n);
  }
  EXPECT_EQ(synthetic_type_name(*parse_synthetic_type("Q4_K_M")), "q4_k_m");
  EXPECT_EQ(synthetic_file_type(*parse_synthetic_type("q4_k_m")), 15u);  // llama.cpp's MOSTLY_Q4_K_M
  EXPECT_EQ(synthetic_file_type(*parse_synthetic_type("iq2_xxs")), 19u);
  EXPECT_EQ(synthetic_file_type(*parse_synthetic_type("iq2_xs")), 20u);
  EXPECT_EQ(synthetic_file_type(*parse_synthetic_type("iq3_s")), 26u);
  EXPECT_EQ(synthetic_file_type(*parse_synthetic_type("iq3_m")), 27u);
  EXPECT_EQ(synthetic_file_type(*parse_synthetic_type("q2_k_s")), 21u);
  auto bad = parse_synthetic_type("q8_k");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("q4_k_m"), std::string::npos);
}

TEST(SyntheticModel, Q4KMixGivesMoreBitsToOutputAndHalfOfVAndDown) {
  // 16 layers: llama.cpp's use_more_bits picks 0, 1, 4, 7, 10, 13, 14, 15.
  int more = 0;
  for (int64_t i = 0; i < 16; ++i) {
    const DType v = synthetic_matrix_type(SyntheticType::kQ4_K_M, "attn_v", i, 16, 2048, true);
    EXPECT_EQ(v, synthetic_matrix_type(SyntheticType::kQ4_K_M, "ffn_down", i, 16, 8192, true));
    EXPECT_EQ(synthetic_matrix_type(SyntheticType::kQ4_K_M, "attn_q", i, 16, 2048, true), DType::kQ4_K);
    more += v == DType::kQ6_K;
  }
  EXPECT_EQ(more, 8);
  EXPECT_EQ(synthetic_matrix_type(SyntheticType::kQ4_K_M, "attn_v", 0, 16, 2048, true), DType::kQ6_K);
  EXPECT_EQ(synthetic_matrix_type(SyntheticType::kQ4_K_M, "attn_v", 2, 16, 2048, true), DType::kQ4_K);
  EXPECT_EQ(synthetic_matrix_type(SyntheticType::kQ4_K_M, "token_embd", -1, 16, 2048, true), DType::kQ6_K);
  EXPECT_EQ(synthetic_matrix_type(SyntheticType::kQ4_K_M, "token_embd", -1, 16, 2048, false), DType::kQ4_K);
  EXPECT_EQ(synthetic_matrix_type(SyntheticType::kQ4_0, "output", -1, 16, 2048, false), DType::kQ6_K);
  EXPECT_EQ(synthetic_matrix_type(SyntheticType::kQ4_0, "ffn_up", 3, 16, 2048, false), DType::kQ4_0);
  // Rows of 576 cannot hold 256-element super-blocks: llama.cpp's fallbacks.
  EXPECT_EQ(synthetic_matrix_type(SyntheticType::kQ4_K_M, "attn_q", 3, 30, 576, true), DType::kQ5_0);
  EXPECT_EQ(synthetic_matrix_type(SyntheticType::kQ4_K_M, "attn_v", 0, 30, 576, true), DType::kQ8_0);
  EXPECT_EQ(synthetic_matrix_type(SyntheticType::kQ5_K_M, "attn_q", 3, 30, 576, true), DType::kQ5_1);
  EXPECT_EQ(synthetic_matrix_type(SyntheticType::kQ5_K_M, "attn_q", 3, 16, 2048, true), DType::kQ5_K);
  EXPECT_EQ(synthetic_matrix_type(SyntheticType::kQ5_K_M, "attn_v", 0, 16, 2048, true), DType::kQ6_K);
  EXPECT_EQ(synthetic_matrix_type(SyntheticType::kQ4_0, "token_embd", -1, 30, 576, true), DType::kQ8_0);
}

// llama.cpp's Q3_K_M: Q3_K, Q6_K output, Q4_K attn_output, attn_v Q5_K in
// layers 0-1 and Q4_K after, ffn_down Q5_K in the first n / 16 layers and Q4_K
// after; IQ4_XS with a Q6_K output. Rows of 576 or 960 fall back to IQ4_NL.
TEST(SyntheticModel, Q3KMAndIQ4XSMixes) {
  const SyntheticType m = SyntheticType::kQ3_K_M;
  EXPECT_EQ(synthetic_matrix_type(m, "attn_q", 5, 32, 2048, true), DType::kQ3_K);
  EXPECT_EQ(synthetic_matrix_type(m, "ffn_up", 5, 32, 2048, true), DType::kQ3_K);
  EXPECT_EQ(synthetic_matrix_type(m, "token_embd", -1, 32, 2048, true), DType::kQ6_K);
  EXPECT_EQ(synthetic_matrix_type(m, "token_embd", -1, 32, 2048, false), DType::kQ3_K);
  EXPECT_EQ(synthetic_matrix_type(m, "attn_output", 5, 32, 2048, true), DType::kQ4_K);
  EXPECT_EQ(synthetic_matrix_type(m, "attn_v", 1, 32, 2048, true), DType::kQ5_K);
  EXPECT_EQ(synthetic_matrix_type(m, "attn_v", 2, 32, 2048, true), DType::kQ4_K);
  EXPECT_EQ(synthetic_matrix_type(m, "ffn_down", 1, 32, 8192, true), DType::kQ5_K);
  EXPECT_EQ(synthetic_matrix_type(m, "ffn_down", 2, 32, 8192, true), DType::kQ4_K);
  EXPECT_EQ(synthetic_matrix_type(m, "attn_q", 5, 30, 576, true), DType::kQ4_0);  // llama.cpp's Q3_K fallback
  EXPECT_EQ(synthetic_matrix_type(SyntheticType::kIQ4_XS, "attn_q", 5, 30, 2048, true), DType::kIQ4_XS);
  EXPECT_EQ(synthetic_matrix_type(SyntheticType::kIQ4_XS, "attn_q", 5, 30, 576, true), DType::kIQ4_NL);
  EXPECT_EQ(synthetic_matrix_type(SyntheticType::kIQ4_XS, "output", -1, 30, 2048, false), DType::kQ6_K);
}

TEST(SyntheticModel, BuildsTheNamedShapeWithTheMixAndRuns) {
  auto model = build("llama-3.2-1b", SyntheticType::kQ4_K_M, 2, 512);
  ASSERT_NE(model, nullptr);
  const ModelConfig& c = model->config();
  EXPECT_EQ(c.dim, 2048);
  EXPECT_EQ(c.hidden_dim, 8192);
  EXPECT_EQ(c.n_layers, 2);
  EXPECT_EQ(c.n_heads, 32);
  EXPECT_EQ(c.n_kv_heads, 8);
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_EQ(c.vocab_size, 512);
  EXPECT_TRUE(model->weights().tied_output);
  auto types = tensor_types(*model);
  EXPECT_EQ(types.at("token_embd.weight"), DType::kQ6_K);
  EXPECT_EQ(types.at("blk.0.attn_q.weight"), DType::kQ4_K);
  // Of 2 layers, use_more_bits picks only the last (7 * 2 / 8 = 1).
  EXPECT_EQ(types.at("blk.0.attn_v.weight"), DType::kQ4_K);
  EXPECT_EQ(types.at("blk.1.attn_v.weight"), DType::kQ6_K);
  EXPECT_EQ(types.at("blk.1.ffn_down.weight"), DType::kQ6_K);
  EXPECT_EQ(types.at("blk.0.attn_norm.weight"), DType::kF32);
  EXPECT_EQ(types.count("output.weight"), 0u);

  const PackageContract contract = default_contract(c, ContractDefaults{8, 16}, {});
  EXPECT_EQ(contract.token_bound, 8);
  ProgramOptions options;
  options.cpu_threads = 2;
  auto program = LlamaProgram::create(std::move(model), contract, options);
  ASSERT_TRUE(program.ok()) << program.status().message();
  const std::vector<int64_t> tokens = {1, 7, 300, 511};
  auto logits = (*program)->forward(tokens, 0);
  ASSERT_TRUE(logits.ok()) << logits.status().message();
  ASSERT_EQ(logits->vocab_size, 512);
  float spread = 0;
  for (float v : logits->last()) {
    ASSERT_TRUE(std::isfinite(v));
    spread = std::max(spread, std::fabs(v - logits->last()[0]));
  }
  EXPECT_GT(spread, 0.0f);  // random weights give distinct logits
}

TEST(SyntheticModel, Qwen3ShapeHasQkNormAndWiderHeads) {
  auto model = build("qwen3-0.6b", SyntheticType::kF16, 1, 256);
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(model->config().arch, Architecture::kQwen3);
  EXPECT_EQ(model->config().head_dim, 128);
  EXPECT_EQ(model->config().q_dim(), 2048);  // 16 heads x 128, wider than dim 1024
  ASSERT_NE(model->weights().layers[0].q_norm, nullptr);
  EXPECT_EQ(tensor_types(*model).at("blk.0.attn_output.weight"), DType::kF16);
  const GgufTensorInfo* wo = model->gguf()->find_tensor("blk.0.attn_output.weight");
  ASSERT_NE(wo, nullptr);
  EXPECT_EQ(wo->ne, (std::vector<int64_t>{2048, 1024}));
}

// Qwen2.5-0.5B: q, k and v biases, and 896-column rows that are not whole
// super-blocks, so its Q4_K_M matrices are Q5_0 as in llama.cpp's file but
// ffn_down's (4864 columns, 19 super-blocks); where decode runs the AVX2
// kernels they load regrouped.
TEST(SyntheticModel, Qwen25ShapeHasBiasesAndQ5_0Fallbacks) {
  auto model = build("qwen2.5-0.5b", SyntheticType::kQ4_K_M, 1, 256);
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(model->config().arch, Architecture::kQwen2);
  ASSERT_NE(model->weights().layers[0].bq, nullptr);
  ASSERT_NE(model->weights().layers[0].bv, nullptr);
  EXPECT_NE(model->weights().layers[0].bk[0], model->weights().layers[0].bk[1]);  // random, not zeros
  const auto types = tensor_types(*model);
  EXPECT_EQ(kernels::plain_type(types.at("blk.0.attn_q.weight")), DType::kQ5_0);
  EXPECT_EQ(kernels::plain_type(types.at("blk.0.ffn_up.weight")), DType::kQ5_0);
  EXPECT_NE(kernels::plain_type(types.at("blk.0.ffn_down.weight")), DType::kQ5_0);
  EXPECT_EQ(model->weights().layers[0].w_up.dtype, kernels::load_layout(DType::kQ5_0));
}

TEST(SyntheticModel, WeightsAreRandomSeededAndSized) {
  auto a = build("stories110m", SyntheticType::kQ8_0, 1, 320, 1);
  auto b = build("stories110m", SyntheticType::kQ8_0, 1, 320, 1);
  auto c = build("stories110m", SyntheticType::kQ8_0, 1, 320, 2);
  ASSERT_TRUE(a && b && c);
  const GgufTensorInfo* ta = a->gguf()->find_tensor("blk.0.ffn_up.weight");
  const GgufTensorInfo* tb = b->gguf()->find_tensor("blk.0.ffn_up.weight");
  const GgufTensorInfo* tc = c->gguf()->find_tensor("blk.0.ffn_up.weight");
  ASSERT_TRUE(ta && tb && tc);
  EXPECT_EQ(ta->n_bytes, 2048u * 768 / 32 * 34);  // Q8_0: 34 bytes per 32 weights
  EXPECT_EQ(std::memcmp(ta->data, tb->data, ta->n_bytes), 0);  // same seed, same weights
  EXPECT_NE(std::memcmp(ta->data, tc->data, ta->n_bytes), 0);
  // Rows differ from each other (each row seeds its own generator).
  EXPECT_NE(std::memcmp(ta->data, ta->data + 768 / 32 * 34, 768 / 32 * 34), 0);
  // 1 layer: 4 x 768^2 + 3 x 768 x 2048 weights, plus the tied embedding.
  const uint64_t matrices = 4ull * 768 * 768 + 3ull * 768 * 2048 + 320ull * 768;
  EXPECT_GE(a->weight_bytes(), matrices / 32 * 34);
}

TEST(SyntheticModel, ShapesThatCannotBeBuiltAreRefused) {
  ThreadPool pool(1);
  SyntheticShape s = *find_synthetic_shape("stories110m");
  s.dim = 770;  // not a multiple of 32
  auto m = build_synthetic_model(s, SyntheticType::kQ4_0, SyntheticOptions{1, 64, 1}, pool);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("770"), std::string::npos) << m.status().message();
  s = *find_synthetic_shape("stories110m");
  s.n_kv_heads = 5;
  EXPECT_FALSE(build_synthetic_model(s, SyntheticType::kF32, SyntheticOptions{1, 64, 1}, pool).ok());
}

}  // namespace
}  // namespace llmpack

namespace llmpack {
namespace {

// The K-quant and low-bit matrices are written as random blocks (the
// quantizers' searches would take minutes on the 1B shape); their scales are
// set so the weights spread like the other types' (standard deviation about
// 0.02 around zero).
TEST(SyntheticModel, RandomBlockWeightsSpreadLikeTheOthers) {
  for (SyntheticType type : {SyntheticType::kQ4_K_M, SyntheticType::kQ3_K_M, SyntheticType::kIQ4_XS,
                             SyntheticType::kIQ3_XXS, SyntheticType::kIQ2_XXS, SyntheticType::kIQ2_XS,
                             SyntheticType::kIQ3_S, SyntheticType::kIQ1_M, SyntheticType::kIQ2_M,
                             SyntheticType::kIQ1_S}) {
    auto model = build("llama-3.2-1b", type, 1, 256, 3);
    ASSERT_TRUE(model);
    for (const char* name : {"blk.0.ffn_up.weight", "blk.0.attn_v.weight"}) {
      const GgufTensorInfo* t = model->gguf()->find_tensor(name);
      ASSERT_NE(t, nullptr);
      const int64_t cols = t->ne[0], rows = 64;
      std::vector<float> w(static_cast<size_t>(rows * cols));
      for (int64_t r = 0; r < rows; ++r)
        kernels::dequantize_row(kernels::WeightMatrix{t->dtype, t->ne[1], cols, t->data}, r, w.data() + r * cols);
      double sum = 0, sq = 0;
      for (float v : w) sum += v, sq += double(v) * v;
      const double mean = sum / w.size(), sd = std::sqrt(sq / w.size() - mean * mean);
      EXPECT_NEAR(sd, 0.02, 0.006) << synthetic_type_name(type) << " " << name << " " << dtype_name(t->dtype);
      EXPECT_LT(std::fabs(mean), 0.006) << synthetic_type_name(type) << " " << name;
    }
  }
}

}  // namespace
}  // namespace llmpack
