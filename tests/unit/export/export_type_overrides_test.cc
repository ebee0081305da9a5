// Export's per-tensor types (--output_dtype, --embedding_dtype,
// --tensor_dtype PATTERN=TYPE): which tensor each names, and which wins when
// several name one tensor. The expectations are what llama-quantize (llama.cpp
// 0.7.0) wrote for its --output-tensor-type, --token-embedding-type and
// --tensor-type on a tied and an untied model (docs/PERFORMANCE.md section 71).
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "common/tiny_model.h"
#include "export_test_util.h"
#include "format/gguf.h"

namespace llmpack {
namespace {

using testing::ScratchDir;

// A random f32 model 64 wide (Q4_0, Q5_x, Q8_0 blocks fit; K-quants do not).
std::string write_model(const ScratchDir& dir, bool tied, int64_t dim = 64) {
  testing::TinyModelSpec spec;
  spec.dim = dim, spec.hidden_dim = 2 * dim, spec.n_heads = 4, spec.n_kv_heads = 2;
  spec.n_layers = 2, spec.vocab_size = 320, spec.tied_output = tied, spec.seed = 11;
  const std::string path = dir.file(tied ? "tied.gguf" : "untied.gguf");
  testing::write_file(path, testing::make_tiny_gguf(spec));
  return path;
}

// Exports `model` with `edit` applied and returns every tensor's type name.
std::map<std::string, std::string> exported_types(const ScratchDir& dir, const std::string& model,
                                                  void (*edit)(ExportOptions&),
                                                  std::vector<std::string>* notices = nullptr) {
  ExportOptions o;
  o.checkpoint = model;
  o.output = dir.file("out.gguf");
  edit(o);
  auto report = export_package(o);
  EXPECT_TRUE(report.ok()) << report.status().message();
  if (!report.ok()) return {};
  if (notices != nullptr) *notices = report->notices;
  auto gguf = GgufFile::open(o.output);
  EXPECT_TRUE(gguf.ok());
  std::map<std::string, std::string> types;
  for (const auto& t : (*gguf)->tensors()) types[t.name] = std::string(dtype_name(t.dtype));
  return types;
}

TEST(ExportTypeOverrides, OutputAndEmbeddingFlagsNameTheirMatrixAloneInAPlainType) {
  ScratchDir dir;
  auto t = exported_types(dir, write_model(dir, false), [](ExportOptions& o) {
    o.dtype = "q4_0", o.output_dtype = "q8_0", o.embedding_dtype = "q5_1";
  });
  EXPECT_EQ(t["output.weight"], "q8_0");
  EXPECT_EQ(t["token_embd.weight"], "q5_1");
  EXPECT_EQ(t["blk.0.attn_q.weight"], "q4_0");
  EXPECT_EQ(t["blk.1.ffn_down.weight"], "q4_0");
  EXPECT_EQ(t["output_norm.weight"], "f32");  // vectors stay f32 whatever is asked
  // Without the flags the plain type is pure, as llama-quantize --pure.
  t = exported_types(dir, write_model(dir, false), [](ExportOptions& o) { o.dtype = "q4_0"; });
  EXPECT_EQ(t["output.weight"], "q4_0");
  EXPECT_EQ(t["token_embd.weight"], "q4_0");
}

TEST(ExportTypeOverrides, ATiedEmbeddingTakesTheOutputsTypeUnlessNamedItself) {
  ScratchDir dir;
  const std::string tied = write_model(dir, true);
  auto t = exported_types(dir, tied, [](ExportOptions& o) { o.dtype = "q4_0", o.output_dtype = "q5_1"; });
  EXPECT_EQ(t["token_embd.weight"], "q5_1");
  EXPECT_EQ(t.count("output.weight"), 0u);
  // llama-quantize: its --token-embedding-type and a --tensor-type matching
  // token_embd both beat the output's type on a tied embedding.
  t = exported_types(dir, tied, [](ExportOptions& o) {
    o.dtype = "q4_0", o.output_dtype = "q8_0", o.embedding_dtype = "q5_0";
  });
  EXPECT_EQ(t["token_embd.weight"], "q5_0");
  t = exported_types(dir, tied, [](ExportOptions& o) {
    o.dtype = "q4_0", o.output_dtype = "q8_0", o.tensor_dtypes = {"token_embd=q5_1"};
  });
  EXPECT_EQ(t["token_embd.weight"], "q5_1");
}

TEST(ExportTypeOverrides, TheMatrixsOwnFlagBeatsAPatternThatMatchesIt) {
  ScratchDir dir;
  auto t = exported_types(dir, write_model(dir, false), [](ExportOptions& o) {
    o.dtype = "q4_0", o.output_dtype = "q8_0", o.embedding_dtype = "q5_0";
    o.tensor_dtypes = {"^output=q5_1", "token_embd=q4_1"};
  });
  EXPECT_EQ(t["output.weight"], "q8_0");
  EXPECT_EQ(t["token_embd.weight"], "q5_0");
  EXPECT_EQ(t["output_norm.weight"], "f32");  // "^output" finds it, but it is a vector
}

TEST(ExportTypeOverrides, PatternsAreRegularExpressionsAndTheFirstMatchWins) {
  ScratchDir dir;
  const std::string model = write_model(dir, false);
  auto t = exported_types(dir, model, [](ExportOptions& o) {
    o.dtype = "q4_0", o.tensor_dtypes = {"blk.0.attn_q=q5_1", "attn_q=q8_0"};
  });
  EXPECT_EQ(t["blk.0.attn_q.weight"], "q5_1");
  EXPECT_EQ(t["blk.1.attn_q.weight"], "q8_0");
  t = exported_types(dir, model, [](ExportOptions& o) {
    o.dtype = "q4_0", o.tensor_dtypes = {"attn_q=q8_0", "blk.0.attn_q=q5_1"};
  });
  EXPECT_EQ(t["blk.0.attn_q.weight"], "q8_0");
  EXPECT_EQ(t["blk.1.attn_q.weight"], "q8_0");
  t = exported_types(dir, model, [](ExportOptions& o) {
    o.dtype = "q4_0", o.tensor_dtypes = {"blk\\.[1]\\.FFN_(UP|GATE)=q8_0"};  // case does not matter
  });
  EXPECT_EQ(t["blk.1.ffn_up.weight"], "q8_0");
  EXPECT_EQ(t["blk.1.ffn_gate.weight"], "q8_0");
  EXPECT_EQ(t["blk.1.ffn_down.weight"], "q4_0");
  EXPECT_EQ(t["blk.0.ffn_up.weight"], "q4_0");
  // A pattern searches the name; it need not match all of it, and "$" ends the name.
  t = exported_types(dir, model, [](ExportOptions& o) { o.dtype = "q4_0", o.tensor_dtypes = {"ffn_up$=q8_0"}; });
  EXPECT_EQ(t["blk.0.ffn_up.weight"], "q4_0");
}

TEST(ExportTypeOverrides, WithoutDtypeOnlyTheNamedTensorsConvert) {
  ScratchDir dir;
  auto t = exported_types(dir, write_model(dir, false), [](ExportOptions& o) {
    o.output_dtype = "q8_0", o.tensor_dtypes = {"attn_v=q5_0"};
  });
  EXPECT_EQ(t["output.weight"], "q8_0");
  EXPECT_EQ(t["blk.0.attn_v.weight"], "q5_0");
  EXPECT_EQ(t["blk.1.attn_v.weight"], "q5_0");
  EXPECT_EQ(t["token_embd.weight"], "f32");  // the source's type
  EXPECT_EQ(t["blk.0.attn_q.weight"], "f32");
}

// A named type whose blocks the rows do not fit falls back as a mix's would
// (llama-quantize fails the whole run for its --token-embedding-type here),
// and the notice names the flag that asked for it.
TEST(ExportTypeOverrides, ATypeTheRowsDoNotFitFallsBackNamingTheFlag) {
  ScratchDir dir;
  std::vector<std::string> notices;
  auto t = exported_types(
      dir, write_model(dir, false),
      [](ExportOptions& o) { o.dtype = "q4_0", o.embedding_dtype = "q6_k", o.tensor_dtypes = {"attn_k=q4_k"}; },
      &notices);
  EXPECT_EQ(t["token_embd.weight"], "q8_0");
  EXPECT_EQ(t["blk.0.attn_k.weight"], "q5_0");
  ASSERT_EQ(notices.size(), 2u);
  EXPECT_EQ(notices[0], "1 matrix with rows that do not fit --embedding_dtype q6_k blocks (e.g. rows of 64) "
                        "written as q8_0");
  EXPECT_EQ(notices[1], "2 matrices with rows that do not fit --tensor_dtype attn_k=q4_k blocks (e.g. rows of 64) "
                        "written as q5_0");
}

// The package runs, and the matrices kept in more bits bring its logits closer
// to the f32 model's than the plain type's.
TEST(ExportTypeOverrides, MoreBitsForTheOutputBringTheLogitsCloser) {
  ScratchDir dir;
  const std::string model = write_model(dir, false, 256);
  auto logits_with = [&](const std::string& name, void (*edit)(ExportOptions&)) {
    ExportOptions o;
    o.checkpoint = model;
    o.output = dir.file(name);
    edit(o);
    EXPECT_TRUE(export_package(o).ok());
    auto loaded = testing::load(o.output);
    EXPECT_TRUE(loaded.ok()) << loaded.status().message();
    return loaded.ok() ? testing::first_logits(*loaded->program) : std::vector<float>{};
  };
  const auto f32 = logits_with("f32.gguf", [](ExportOptions&) {});
  const auto plain = logits_with("q4_0.gguf", [](ExportOptions& o) { o.dtype = "q4_0"; });
  const auto better = logits_with("q4_0_q6k.gguf", [](ExportOptions& o) {
    o.dtype = "q4_0", o.output_dtype = "q6_k", o.embedding_dtype = "q8_0";
  });
  ASSERT_EQ(f32.size(), plain.size());
  ASSERT_EQ(f32.size(), better.size());
  EXPECT_LT(testing::max_abs_diff(f32, better), testing::max_abs_diff(f32, plain));
  EXPECT_GT(testing::max_abs_diff(f32, better), 0.0f);
}

// A source already quantized converts through f32 (each block dequantized,
// then quantized again), which llama-quantize refuses without
// --allow-requantize; the export goes on and says what it did.
TEST(ExportTypeOverrides, RequantizingAQuantizedSourceIsNoticed) {
  ScratchDir dir;
  testing::TinyModelSpec spec;
  spec.dim = 64, spec.hidden_dim = 128, spec.n_heads = 4, spec.n_kv_heads = 2;
  spec.n_layers = 2, spec.vocab_size = 320, spec.dtype = DType::kQ8_0;
  const std::string model = dir.file("q8_0.gguf");
  testing::write_file(model, testing::make_tiny_gguf(spec));
  const auto notices_of = [&](void (*edit)(ExportOptions&)) {
    std::vector<std::string> notices;
    exported_types(dir, model, edit, &notices);
    return notices;
  };
  const auto q4 = notices_of([](ExportOptions& o) { o.dtype = "q4_0"; });
  ASSERT_EQ(q4.size(), 1u);
  EXPECT_EQ(q4[0].rfind("16 matrices requantized from q8_0: ", 0), 0u) << q4[0];
  const auto one = notices_of([](ExportOptions& o) { o.output_dtype = "q4_0"; });
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].rfind("1 matrix requantized from q8_0: ", 0), 0u) << one[0];
  EXPECT_TRUE(notices_of([](ExportOptions&) {}).empty());                              // kept as it is
  EXPECT_TRUE(notices_of([](ExportOptions& o) { o.dtype = "q8_0"; }).empty());         // the same type
}

// --dry_run: every tensor's type and size as the export would write them,
// the notices too, and no file (an output path is not needed).
TEST(ExportTypeOverrides, DryRunPlansWhatTheExportWrites) {
  ScratchDir dir;
  const std::string model = write_model(dir, true);
  ExportOptions o;
  o.checkpoint = model;
  o.dtype = "q4_0", o.embedding_dtype = "q6_k";  // 64-wide rows: Q6_K falls back, with a notice
  o.dry_run = true;
  auto plan = export_package(o);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_TRUE(plan->dry_run);
  EXPECT_EQ(dir.n_files(), 1u);  // the model alone
  ASSERT_EQ(plan->notices.size(), 1u);
  EXPECT_NE(plan->summary().find("; nothing written"), std::string::npos) << plan->summary();
  o.dry_run = false;
  o.output = dir.file("out.gguf");
  auto real = export_package(o);
  ASSERT_TRUE(real.ok()) << real.status().message();
  EXPECT_EQ(plan->notices, real->notices);
  auto gguf = GgufFile::open(o.output);
  ASSERT_TRUE(gguf.ok());
  ASSERT_EQ(plan->tensors.size(), (*gguf)->tensors().size());
  uint64_t total = 0;
  for (size_t i = 0; i < plan->tensors.size(); ++i) {
    const auto& written = (*gguf)->tensors()[i];
    EXPECT_EQ(plan->tensors[i].name, written.name);
    EXPECT_EQ(plan->tensors[i].to, std::string(dtype_name(written.dtype))) << written.name;
    EXPECT_EQ(plan->tensors[i].from, "f32") << written.name;
    EXPECT_EQ(plan->tensors[i].bytes, written.n_bytes) << written.name;
    EXPECT_EQ(plan->tensors[i].shape, written.ne) << written.name;
    total += written.n_bytes;
  }
  EXPECT_EQ(plan->tensor_bytes, total);
  EXPECT_EQ(plan->dtype_counts, real->dtype_counts);
  o.output.clear();
  EXPECT_NE(export_package(o).status().message().find("--output is required"), std::string::npos);
}

}  // namespace
}  // namespace llmpack
