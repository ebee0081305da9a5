// E2: quantized exports load and stay close to f32; matrices whose rows do
// not fit the type's blocks fall back, with a notice.
#include <gtest/gtest.h>

#include <tuple>

#include "export_test_util.h"
#include "format/gguf.h"

namespace llmpack {
namespace {

using testing::ScratchDir;

struct QuantCase {
  const char* dtype;
  float max_diff;         // max |logit - f32 logit| after BOS (logits span about +-20)
  DType matrix_type;      // the type of 64-wide matrices (attn_q)
  DType wide_type;        // the type of the 172-wide ffn_down rows
};

class ExportQuant : public ::testing::TestWithParam<QuantCase> {};

TEST_P(ExportQuant, E2_QuantizedPackageIsCloseToF32) {
  LLMPACK_REQUIRE_FIXTURE(model, "llama2c/stories260K.bin");
  const QuantCase& q = GetParam();
  ScratchDir dir;
  ExportOptions o;
  o.checkpoint = model;
  o.tokenizer_path = testing::fixture_path("llama2c/tok512.bin");
  o.output = dir.file("f32.gguf");
  ASSERT_TRUE(export_package(o).ok());
  o.output = dir.file("q.gguf");
  o.dtype = q.dtype;
  std::vector<std::string> logged;
  auto report = export_package(o, nullptr, [&](LogLevel, std::string_view m) { logged.emplace_back(m); });
  ASSERT_TRUE(report.ok()) << report.status().message();
  // stories260K's 172-wide ffn_down rows fit no 32- or 256-element block.
  ASSERT_FALSE(logged.empty());
  const std::string& f16_notice = logged[0];  // notices come in type order: f16 first
  EXPECT_NE(f16_notice.find("rows of 172) written as f16"), std::string::npos) << f16_notice;
  EXPECT_NE(f16_notice.find(q.dtype), std::string::npos) << f16_notice;
  EXPECT_EQ(report->notices, logged);

  auto gguf = GgufFile::open(o.output);
  ASSERT_TRUE(gguf.ok());
  EXPECT_EQ((*gguf)->find_tensor("blk.0.attn_q.weight")->dtype, q.matrix_type);
  EXPECT_EQ((*gguf)->find_tensor("blk.0.ffn_down.weight")->dtype, q.wide_type);
  EXPECT_EQ((*gguf)->find_tensor("blk.0.attn_norm.weight")->dtype, DType::kF32);

  auto f32 = testing::load(dir.file("f32.gguf"));
  auto quant = testing::load(o.output);
  ASSERT_TRUE(f32.ok() && quant.ok());
  const auto a = testing::first_logits(*f32->program);
  const auto b = testing::first_logits(*quant->program);
  EXPECT_LT(testing::max_abs_diff(a, b), q.max_diff);
  EXPECT_GT(testing::max_abs_diff(a, b), 0.0f);  // it really is quantized
  EXPECT_EQ(testing::argmax(b), 403);
}

INSTANTIATE_TEST_SUITE_P(Types, ExportQuant,
                         ::testing::Values(QuantCase{"q8_0", 0.25f, DType::kQ8_0, DType::kF16},
                                           QuantCase{"q4_0", 2.5f, DType::kQ4_0, DType::kF16},
                                           QuantCase{"q5_0", 2.0f, DType::kQ5_0, DType::kF16},
                                           QuantCase{"q5_1", 1.1f, DType::kQ5_1, DType::kF16},
                                           QuantCase{"q4_k_m", 2.0f, DType::kQ5_0, DType::kF16}),
                         [](const auto& info) { return std::string(info.param.dtype); });

// Options exporting stories260K (llama2.c, with its tok512 tokenizer) to `output` as `dtype`.
ExportOptions stories260k_export(const std::string& model, const std::string& output, const std::string& dtype) {
  ExportOptions o;
  o.checkpoint = model;
  o.tokenizer_path = testing::fixture_path("llama2c/tok512.bin");
  o.output = output;
  o.dtype = dtype;
  return o;
}

// Q4_K_M (and Q5_K_M) of a model whose rows are not whole 256-element super-blocks (64
// wide): llama.cpp's quantizer writes its Q4_K matrices as Q5_0 (Q5_K: Q5_1) and its Q6_K
// ones (attn_v of layers 2 and 4 of 5, and the output matrix, which llama2.c's
// stories260K shares with the embedding; ffn_down's 172-wide rows fit no block)
// as Q8_0, and so does the exporter, with a notice for each.
TEST(ExportQuantTypes, Q4_K_MFallsBackAsLlamaCppDoes) {
  LLMPACK_REQUIRE_FIXTURE(model, "llama2c/stories260K.bin");
  // q5_k_m: the same with Q5_1 for the Q5_K matrices
  for (const auto& [dtype, fallback, file_type] :
       {std::tuple{"q4_k_m", DType::kQ5_0, 15}, std::tuple{"q5_k_m", DType::kQ5_1, 17}}) {
    ScratchDir dir;
    const ExportOptions o = stories260k_export(model, dir.file("q.gguf"), dtype);
    auto report = export_package(o);
    ASSERT_TRUE(report.ok()) << report.status().message();
    auto gguf = GgufFile::open(o.output);
    ASSERT_TRUE(gguf.ok());
    const auto type_of = [&](const char* name) {
      const auto* t = (*gguf)->find_tensor(name);
      EXPECT_NE(t, nullptr) << name;
      return t ? t->dtype : DType::kF32;
    };
    for (const char* name : {"blk.0.attn_q.weight", "blk.1.attn_v.weight", "blk.2.ffn_up.weight"})
      EXPECT_EQ(type_of(name), fallback) << dtype << " " << name;
    for (const char* name : {"blk.2.attn_v.weight", "blk.4.attn_v.weight", "token_embd.weight"})
      EXPECT_EQ(type_of(name), DType::kQ8_0) << dtype << " " << name;
    const std::string fallback_name(dtype_name(fallback));
    EXPECT_EQ(report->dtype_counts[fallback_name], 28) << dtype;  // 6 matrices x 5 layers - 2 attn_v
    EXPECT_EQ(report->dtype_counts["q8_0"], 3) << dtype;          // 2 attn_v + the tied embedding
    std::string notices;
    for (const auto& n : report->notices) notices += n + "\n";
    EXPECT_NE(notices.find(fallback_name), std::string::npos) << notices;
    EXPECT_NE(notices.find("q8_0"), std::string::npos) << notices;
    EXPECT_EQ((*gguf)->get_int("general.file_type"), file_type) << dtype;
  }
}

// Q3_K_M of the same 64-wide model: its Q3_K matrices become Q4_0, its Q4_K
// ones (attn_output, attn_v of layers 2-4) Q5_0, its Q5_K ones (attn_v of
// layers 0-1) Q5_1 and its Q6_K one (the output matrix, here the shared
// embedding) Q8_0, as llama.cpp writes them; ffn_down (172 wide) fits no
// block and stays f16.
TEST(ExportQuantTypes, Q3_K_MFallsBackAsLlamaCppDoes) {
  LLMPACK_REQUIRE_FIXTURE(model, "llama2c/stories260K.bin");
  ScratchDir dir;
  const ExportOptions o = stories260k_export(model, dir.file("q.gguf"), "q3_k_m");
  auto report = export_package(o);
  ASSERT_TRUE(report.ok()) << report.status().message();
  auto gguf = GgufFile::open(o.output);
  ASSERT_TRUE(gguf.ok());
  const auto type_of = [&](const std::string& name) {
    const auto* t = (*gguf)->find_tensor(name);
    EXPECT_NE(t, nullptr) << name;
    return t ? t->dtype : DType::kF32;
  };
  for (const char* name : {"blk.0.attn_q.weight", "blk.3.ffn_up.weight", "blk.4.ffn_gate.weight"})
    EXPECT_EQ(type_of(name), DType::kQ4_0) << name;
  EXPECT_EQ(type_of("token_embd.weight"), DType::kQ8_0);
  for (int layer = 0; layer < 5; ++layer) {
    const std::string blk = "blk." + std::to_string(layer) + ".";
    EXPECT_EQ(type_of(blk + "attn_output.weight"), DType::kQ5_0) << layer;
    EXPECT_EQ(type_of(blk + "attn_v.weight"), layer < 2 ? DType::kQ5_1 : DType::kQ5_0) << layer;
    EXPECT_EQ(type_of(blk + "ffn_down.weight"), DType::kF16) << layer;
  }
  EXPECT_EQ((*gguf)->get_int("general.file_type"), 12);
  auto loaded = testing::load(o.output);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  const std::vector<int64_t> tokens = {1, 403, 407};
  EXPECT_TRUE(loaded->program->forward(tokens, 0).ok());
}

// Issue 4: greedy text of stories260K exported to Q8_0 equals the f32 text
// (llama2.c's reference ids) for the first 64 tokens.
TEST(ExportQuantTypes, Q8_0GreedyEqualsF32ForFirst64Tokens) {
  LLMPACK_REQUIRE_FIXTURE(model, "llama2c/stories260K.bin");
  ScratchDir dir;
  const ExportOptions o = stories260k_export(model, dir.file("q8.gguf"), "q8_0");
  ASSERT_TRUE(export_package(o).ok());
  auto pkg = testing::load(o.output);
  ASSERT_TRUE(pkg.ok()) << pkg.status().message();
  const auto ids = testing::greedy(*pkg->program, 64);
  EXPECT_EQ(ids, testing::golden_ids(64));
}

TEST(ExportQuantTypes, FloatTypesKeepEveryMatrixAndGreedyIds) {
  LLMPACK_REQUIRE_FIXTURE(model, "llama2c/stories260K.bin");
  for (const char* dtype : {"f16", "bf16"}) {
    ScratchDir dir;
    const ExportOptions o = stories260k_export(model, dir.file("out.gguf"), dtype);
    auto report = export_package(o);
    ASSERT_TRUE(report.ok()) << report.status().message();
    EXPECT_TRUE(report->notices.empty()) << dtype;
    EXPECT_EQ(report->dtype_counts[dtype], 36) << dtype;  // 1 embedding + 5 x 7 matrices
    auto gguf = GgufFile::open(o.output);
    ASSERT_TRUE(gguf.ok());
    EXPECT_EQ((*gguf)->get_int("general.file_type"), std::string(dtype) == "f16" ? 1 : 32);
    auto pkg = testing::load(o.output);
    ASSERT_TRUE(pkg.ok());
    EXPECT_EQ(testing::argmax(testing::first_logits(*pkg->program)), 403);
  }
}

}  // namespace
}  // namespace llmpack
