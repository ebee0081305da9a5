// E2/E3: option checks (refused before any file exists) and the contract keys
// each combination writes, read back through the engine.
#include <gtest/gtest.h>

#include "export_test_util.h"
#include "format/gguf.h"

namespace llmpack {
namespace {

using testing::ScratchDir;

ExportOptions base(const ScratchDir& dir) {
  ExportOptions o;
  o.checkpoint = testing::fixture_path("llama2c/stories260K.bin");
  o.tokenizer_path = testing::fixture_path("llama2c/tok512.bin");
  o.output = dir.file("out.gguf");
  return o;
}

TEST(ExportOptions, E3_DefaultsGiveBEqualS) {
  ExportOptions o;
  o.checkpoint = "x";
  o.output = "y";
  auto p = resolve_export_options(o);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->max_seq_len, 128);
  EXPECT_EQ(p->max_context_len, 128);
  EXPECT_EQ(p->token_bound, 128);
  EXPECT_TRUE(p->dynamic_shape);
  EXPECT_EQ(p->kv_cache, KvCacheKind::kOffGraph);
  EXPECT_TRUE(p->dtype.keep);
}

TEST(ExportOptions, E3_StaticShapeGivesBEqualChunk) {
  ExportOptions o;
  o.checkpoint = "x";
  o.output = "y";
  o.static_shape = true;
  EXPECT_EQ(resolve_export_options(o)->token_bound, 1);
  o.static_chunk = 16;
  EXPECT_EQ(resolve_export_options(o)->token_bound, 16);
  EXPECT_FALSE(resolve_export_options(o)->dynamic_shape);
}

TEST(ExportOptions, E2_BadCombinationsAreRefusedNamingTheOption) {
  struct Case {
    void (*edit)(ExportOptions&);
    const char* mentions;
  };
  const Case cases[] = {
      {[](ExportOptions& o) { o.max_context_len = 64; }, "--max_context_length 64 is below --max_seq_length 128"},
      {[](ExportOptions& o) { o.static_chunk = 4; }, "--static_chunk 4 needs --static_shape"},
      {[](ExportOptions& o) { o.static_shape = true; o.static_chunk = 129; }, "--static_chunk 129"},
      {[](ExportOptions& o) { o.dtype = "q8_k"; }, "--dtype 'q8_k'"},
      {[](ExportOptions& o) { o.dtype = "iq3_k_m"; }, "is not one of f32, f16, bf16, q8_0"},
      {[](ExportOptions& o) { o.dtype = "iq3_k_m"; }, "q2_k_s, q3_k_s, q3_k_m, q3_k_l, q4_k_s"},
      {[](ExportOptions& o) { o.llama_mix = true; }, "--llama_mix needs --dtype"},
      {[](ExportOptions& o) { o.kv_cache = "both"; }, "--kv_cache 'both'"},
      {[](ExportOptions& o) { o.max_seq_len = 0; }, "--max_seq_length 0"},
      {[](ExportOptions& o) { o.token_bound = 500; }, "--token_bound 500"},
      {[](ExportOptions& o) { o.kv_cache = "none"; o.static_shape = true; }, "--static_shape needs a KV cache"},
      {[](ExportOptions& o) { o.kv_cache = "none"; o.max_context_len = 256; }, "--kv_cache none"},
      {[](ExportOptions& o) { o.output_dtype = "q4_k_m"; }, "--output_dtype 'q4_k_m': 'q4_k_m' is not one of f32"},
      {[](ExportOptions& o) { o.embedding_dtype = "q9"; }, "--embedding_dtype 'q9'"},
      {[](ExportOptions& o) { o.tensor_dtypes = {"attn_v"}; }, "--tensor_dtype 'attn_v' is not PATTERN=TYPE"},
      {[](ExportOptions& o) { o.tensor_dtypes = {"attn_v="}; }, "--tensor_dtype 'attn_v=' is not PATTERN=TYPE"},
      {[](ExportOptions& o) { o.tensor_dtypes = {"attn_v=q3"}; }, "--tensor_dtype 'attn_v=q3': 'q3' is not one of"},
      {[](ExportOptions& o) { o.tensor_dtypes = {"ffn_(up=q8_0"}; }, "'ffn_(up' is not a regular expression"},
  };
  for (const Case& c : cases) {
    ScratchDir dir;
    ExportOptions o = base(dir);
    c.edit(o);
    auto report = export_package(o);
    ASSERT_FALSE(report.ok()) << c.mentions;
    EXPECT_NE(report.status().message().find(c.mentions), std::string::npos) << report.status().message();
    EXPECT_FALSE(std::filesystem::exists(o.output)) << c.mentions;
    EXPECT_EQ(dir.n_files(), 0u) << c.mentions;
  }
}

TEST(ExportOptions, FailedExportLeavesNoFile) {
  LLMPACK_REQUIRE_FIXTURE(model, "llama2c/stories260K.bin");
  LLMPACK_REQUIRE_FIXTURE(tok, "llama2c/tokenizer.bin");  // 32000 tokens: too many for the model
  ScratchDir dir;
  ExportOptions o = base(dir);
  o.tokenizer_path = tok;
  auto report = export_package(o);
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.status().message().find("32000"), std::string::npos) << report.status().message();
  EXPECT_EQ(dir.n_files(), 0u);
  // Writing into a folder that does not exist fails without leaving a temporary.
  o.tokenizer_path = testing::fixture_path("llama2c/tok512.bin");
  o.output = dir.file("missing/out.gguf");
  EXPECT_FALSE(export_package(o).ok());
  EXPECT_EQ(dir.n_files(), 0u);
}

struct ContractCase {
  const char* label;
  void (*edit)(ExportOptions&);
  int64_t s, c, b;
  bool dynamic;
  KvCacheKind kind;
};

class ExportContract : public ::testing::TestWithParam<ContractCase> {};

TEST_P(ExportContract, P1_ContractKeysReadBackAsWritten) {
  LLMPACK_REQUIRE_FIXTURE(model, "llama2c/stories260K.bin");
  const ContractCase& k = GetParam();
  ScratchDir dir;
  ExportOptions o = base(dir);
  k.edit(o);
  auto report = export_package(o);
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_NE(report->summary().find("S " + std::to_string(k.s) + ", C " + std::to_string(k.c) + ", B " +
                                   std::to_string(k.b)),
            std::string::npos)
      << report->summary();
  auto gguf = GgufFile::open(o.output);
  ASSERT_TRUE(gguf.ok());
  EXPECT_EQ((*gguf)->get_int("llmpack.version"), 1);
  EXPECT_EQ((*gguf)->get_int("llama.context_length"), k.c);
  EXPECT_EQ((*gguf)->get_string("llmpack.position_input"), "start_pos");
  EXPECT_EQ((*gguf)->get_int_array("llmpack.eos_ids"), std::vector<int64_t>{2});
  EXPECT_EQ((*gguf)->get_string("tokenizer.ggml.model"), "llama");
  EXPECT_EQ((*gguf)->get_bool("tokenizer.ggml.add_bos_token"), true);
  auto pkg = testing::load(o.output);
  ASSERT_TRUE(pkg.ok()) << pkg.status().message();
  const PackageContract& c = pkg->program->contract();
  EXPECT_EQ(c.max_seq_len, k.s);
  EXPECT_EQ(c.max_context_len, k.c);
  EXPECT_EQ(c.token_bound, k.b);
  EXPECT_EQ(c.dynamic_shape, k.dynamic);
  EXPECT_EQ(c.kv_cache, k.kind);
  EXPECT_EQ(c.use_kv_cache, k.kind != KvCacheKind::kNone);
  auto meta = pkg->program->method_meta("forward");
  ASSERT_TRUE(meta.ok());
}

INSTANTIATE_TEST_SUITE_P(
    Combinations, ExportContract,
    ::testing::Values(
        ContractCase{"defaults", [](ExportOptions&) {}, 128, 128, 128, true, KvCacheKind::kOffGraph},
        ContractCase{"legacy_token_bound", [](ExportOptions& o) { o.token_bound = 127; }, 128, 128, 127, true,
                     KvCacheKind::kOffGraph},
        ContractCase{"longer_context", [](ExportOptions& o) { o.max_seq_len = 32; o.max_context_len = 256; }, 32, 256,
                     32, true, KvCacheKind::kOffGraph},
        ContractCase{"in_graph", [](ExportOptions& o) { o.kv_cache = "in_graph"; }, 128, 128, 128, true,
                     KvCacheKind::kInGraph},
        ContractCase{"no_cache", [](ExportOptions& o) { o.kv_cache = "none"; o.max_seq_len = 64; }, 64, 64, 64, true,
                     KvCacheKind::kNone},
        ContractCase{"static_one", [](ExportOptions& o) { o.static_shape = true; }, 128, 128, 1, false,
                     KvCacheKind::kOffGraph},
        ContractCase{"static_chunk", [](ExportOptions& o) { o.static_shape = true; o.static_chunk = 8; }, 128, 128, 8,
                     false, KvCacheKind::kOffGraph}),
    [](const auto& info) { return std::string(info.param.label); });

// Re-packaging a package replaces its contract keys instead of duplicating them.
TEST(ExportContractRepackage, GgufSourceGetsNewContractKeys) {
  LLMPACK_REQUIRE_FIXTURE(model, "llama2c/stories260K.bin");
  ScratchDir dir;
  ExportOptions o = base(dir);
  o.token_bound = 127;
  ASSERT_TRUE(export_package(o).ok());
  ExportOptions again;
  again.checkpoint = o.output;
  again.output = dir.file("again.gguf");
  again.max_seq_len = 64;
  again.max_context_len = 96;
  auto report = export_package(again);
  ASSERT_TRUE(report.ok()) << report.status().message();
  auto pkg = testing::load(again.output);
  ASSERT_TRUE(pkg.ok()) << pkg.status().message();
  EXPECT_EQ(pkg->program->contract().max_seq_len, 64);
  EXPECT_EQ(pkg->program->contract().max_context_len, 96);
  EXPECT_EQ(pkg->program->contract().token_bound, 64);
  EXPECT_EQ(testing::greedy(*pkg->program, 32), testing::golden_ids(32));
}

}  // namespace
}  // namespace llmpack
