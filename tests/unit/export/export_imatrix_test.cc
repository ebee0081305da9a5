// `export --imatrix FILE`: the importances reach the matrices the file names
// (each row quantized as kernels::quantize_row quantizes it with them), the
// package records where they came from under llama-quantize's keys, and a
// file of another model is refused.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "common/tiny_model.h"
#include "export_test_util.h"
#include "engine/package_inspection.h"
#include "format/gguf.h"
#include "format/imatrix_file.h"
#include "kernels/quantize.h"

namespace llmpack {
namespace {

using testing::ScratchDir;

// A random f32 model 256 wide: the K-quants' blocks fit its rows.
std::string write_model(const ScratchDir& dir) {
  testing::TinyModelSpec spec;
  spec.dim = 256, spec.hidden_dim = 512, spec.n_heads = 4, spec.n_kv_heads = 2;
  spec.n_layers = 2, spec.vocab_size = 320, spec.seed = 21;
  const std::string path = dir.file("model.gguf");
  testing::write_file(path, testing::make_tiny_gguf(spec));
  return path;
}

// An importance matrix with an entry for every layer matrix of `model` (the
// output and embedding left out, as llama-imatrix leaves them), its column
// j's sum of squares 1 + (j * 37 % 101) over 10 rows.
ImportanceMatrix imatrix_for(const std::string& model) {
  ImportanceMatrix m;
  auto gguf = GgufFile::open(model);
  EXPECT_TRUE(gguf.ok());
  for (const auto& t : (*gguf)->tensors()) {
    if (t.ne.size() < 2 || t.name.rfind("blk.", 0) != 0) continue;
    ImatrixEntry& e = m.entries[t.name];
    e.count = 10;
    for (int64_t j = 0; j < t.ne[0]; ++j) e.sum_sq.push_back(static_cast<float>(1 + j * 37 % 101));
  }
  m.datasets = {"calibration.txt"};
  m.chunk_count = 3, m.chunk_size = 64;
  return m;
}

Result<ExportReport> export_with(const ScratchDir& dir, const std::string& model, const std::string& imatrix,
                                 const std::string& out, const std::string& dtype = "q4_k") {
  ExportOptions o;
  o.checkpoint = model, o.output = dir.file(out), o.dtype = dtype, o.imatrix = imatrix;
  return export_package(o);
}

std::vector<uint8_t> tensor_bytes(const std::string& path, const std::string& name) {
  auto gguf = GgufFile::open(path);
  EXPECT_TRUE(gguf.ok());
  const GgufTensorInfo* t = (*gguf)->find_tensor(name);
  EXPECT_NE(t, nullptr) << name;
  return t ? std::vector<uint8_t>(t->data, t->data + t->n_bytes) : std::vector<uint8_t>{};
}

TEST(ExportImatrix, EachCoveredMatrixIsQuantizedWithItsImportances) {
  ScratchDir dir;
  const std::string model = write_model(dir), imatrix = dir.file("imatrix.gguf");
  const ImportanceMatrix m = imatrix_for(model);
  ASSERT_TRUE(write_imatrix(imatrix, m).ok());
  for (const std::string dtype : {"q4_k", "q4_0", "iq4_xs"}) {
    auto with = export_with(dir, model, imatrix, "with.gguf", dtype);
    ASSERT_TRUE(with.ok()) << with.status().message();
    auto without = export_with(dir, model, "", "without.gguf", dtype);
    ASSERT_TRUE(without.ok()) << without.status().message();
    bool noticed = false;
    for (const auto& n : with->notices) noticed |= n.find("importances for 14 of the 16 matrices") != std::string::npos;
    EXPECT_TRUE(noticed) << dtype << ": 7 matrices a layer, 2 layers; the output and embedding have no entry";

    // blk.1.ffn_down.weight, row by row as quantize_row writes it with the importances (sum / count).
    const std::string name = "blk.1.ffn_down.weight";
    auto source = GgufFile::open(model);
    ASSERT_TRUE(source.ok());
    const GgufTensorInfo* t = (*source)->find_tensor(name);
    ASSERT_NE(t, nullptr);
    const std::vector<float> imp = m.find(name)->mean_sq();
    const DType type = *dtype_from_name(dtype);
    const int64_t cols = t->ne[0], rows = t->ne[1], rb = row_bytes(*dtype_info(type), cols);
    std::vector<uint8_t> expected(static_cast<size_t>(rb * rows));
    std::vector<float> row(static_cast<size_t>(cols));
    for (int64_t r = 0; r < rows; ++r) {
      std::memcpy(row.data(), t->data + r * cols * 4, static_cast<size_t>(cols) * 4);
      kernels::quantize_row(type, row.data(), cols, expected.data() + r * rb, imp.data());
    }
    EXPECT_EQ(tensor_bytes(dir.file("with.gguf"), name), expected) << dtype;
    EXPECT_NE(tensor_bytes(dir.file("without.gguf"), name), expected) << dtype;
    // Not covered: the same bytes as without an imatrix.
    EXPECT_EQ(tensor_bytes(dir.file("with.gguf"), "output.weight"),
              tensor_bytes(dir.file("without.gguf"), "output.weight"));
  }
}

TEST(ExportImatrix, ThePackageSaysWhichImatrixItWasQuantizedWith) {
  ScratchDir dir;
  const std::string model = write_model(dir), imatrix = dir.file("imatrix.gguf");
  ASSERT_TRUE(write_imatrix(imatrix, imatrix_for(model)).ok());
  ASSERT_TRUE(export_with(dir, model, imatrix, "out.gguf").ok());
  auto gguf = GgufFile::open(dir.file("out.gguf"));
  ASSERT_TRUE(gguf.ok());
  EXPECT_EQ((*gguf)->get_string("quantize.imatrix.file"), imatrix);
  EXPECT_EQ((*gguf)->get_string("quantize.imatrix.dataset"), "calibration.txt");
  EXPECT_EQ((*gguf)->get_int("quantize.imatrix.entries_count"), 14);
  EXPECT_EQ((*gguf)->get_int("quantize.imatrix.chunks_count"), 3);
  // inspect reports them (llama-quantize writes the same keys).
  auto report = inspect_package(dir.file("out.gguf"), "", ContractDefaults{});
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_EQ(report->imatrix.file, imatrix);
  EXPECT_EQ(report->imatrix.entries, 14);
  EXPECT_NE(report_to_text(*report).find("imatrix:   quantized with " + imatrix + ", 14 entries, 3 chunks of "
                                          "calibration.txt"),
            std::string::npos)
      << report_to_text(*report);
  EXPECT_EQ(report_to_json(*report)["tensors"]["imatrix"]["chunks"], 3);
  // A package quantized without one says nothing of it.
  ASSERT_TRUE(export_with(dir, model, "", "plain.gguf").ok());
  auto plain = inspect_package(dir.file("plain.gguf"), "", ContractDefaults{});
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(report_to_text(*plain).find("imatrix:"), std::string::npos);
}

TEST(ExportImatrix, AnImatrixOfAnotherModelIsRefused) {
  ScratchDir dir;
  const std::string model = write_model(dir);
  // Columns that do not match the tensor's rows.
  ImportanceMatrix m = imatrix_for(model);
  m.entries["blk.0.attn_k.weight"].sum_sq.resize(128, 1.0f);
  ASSERT_TRUE(write_imatrix(dir.file("short.gguf"), m).ok());
  auto r = export_with(dir, model, dir.file("short.gguf"), "out.gguf");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("'blk.0.attn_k.weight' has 128 columns in the importance matrix but 256"),
            std::string::npos)
      << r.status().message();
  // Names that match no matrix.
  ImportanceMatrix other;
  other.entries["model.layers.0.mlp.down_proj.weight"] = ImatrixEntry{std::vector<float>(256, 1.0f), 1};
  ASSERT_TRUE(write_imatrix(dir.file("other.gguf"), other).ok());
  r = export_with(dir, model, dir.file("other.gguf"), "out.gguf");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no entry for any matrix"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("model.layers.0.mlp.down_proj.weight"), std::string::npos);
  // A file that is not there.
  r = export_with(dir, model, dir.file("missing.gguf"), "out.gguf");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("--imatrix"), std::string::npos) << r.status().message();
  EXPECT_FALSE(std::filesystem::exists(dir.file("out.gguf")));
}

// A type that does not search (q8_0) has no use for it: no notice, the same file.
TEST(ExportImatrix, ATypeWithoutASearchIsWrittenAsWithout) {
  ScratchDir dir;
  const std::string model = write_model(dir), imatrix = dir.file("imatrix.gguf");
  ASSERT_TRUE(write_imatrix(imatrix, imatrix_for(model)).ok());
  auto with = export_with(dir, model, imatrix, "with.gguf", "q8_0");
  ASSERT_TRUE(with.ok()) << with.status().message();
  ASSERT_TRUE(export_with(dir, model, "", "without.gguf", "q8_0").ok());
  for (const auto& n : with->notices) EXPECT_EQ(n.find("--imatrix"), std::string::npos) << n;
  EXPECT_EQ(tensor_bytes(dir.file("with.gguf"), "blk.0.attn_q.weight"),
            tensor_bytes(dir.file("without.gguf"), "blk.0.attn_q.weight"));
}

// The 1- and 2-bit codebook types are written only with importances, as
// llama-quantize writes them: without --imatrix, or for a matrix the file has
// no entry for, the export stops and names the tensor and the way out.
TEST(ExportImatrix, TwoBitCodebookTypesNeedImportances) {
  ScratchDir dir;
  const std::string model = write_model(dir), imatrix = dir.file("imatrix.gguf");
  ASSERT_TRUE(write_imatrix(imatrix, imatrix_for(model)).ok());
  for (const std::string dtype : {"iq2_xxs", "iq2_xs", "iq2_s", "iq1_s", "iq1_m"}) {
    std::filesystem::remove(dir.file("out.gguf"));
    auto r = export_with(dir, model, "", "out.gguf", dtype);
    ASSERT_FALSE(r.ok()) << dtype;
    EXPECT_NE(r.status().message().find("as " + dtype + ", which needs an importance matrix"), std::string::npos)
        << r.status().message();
    EXPECT_NE(r.status().message().find("llmpack imatrix"), std::string::npos) << r.status().message();
    EXPECT_FALSE(std::filesystem::exists(dir.file("out.gguf")));
  }  // (with the imatrix each is written: the next test)
  // The output matrix asked for in one, and the file has no entry for it.
  ExportOptions o;
  o.checkpoint = model, o.output = dir.file("out2.gguf"), o.dtype = "iq3_s", o.imatrix = imatrix;
  o.tensor_dtypes = {"output=iq2_xs"};
  auto r = export_package(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("'output.weight' is to be written as iq2_xs"), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("--process_output"), std::string::npos) << r.status().message();
  // The 3-bit ones need none.
  for (const std::string dtype : {"iq3_xxs", "iq3_s"})
    EXPECT_TRUE(export_with(dir, model, "", "out3.gguf", dtype).ok()) << dtype;
}

// The codebook types' output matrix and embedding take the types
// llama-quantize gives them in its files of those types; the layers' matrices
// take the asked type, each row quantized with its importances.
TEST(ExportImatrix, CodebookTypesGiveTheOutputAndEmbeddingLlamaQuantizesTypes) {
  ScratchDir dir;
  const std::string model = write_model(dir), imatrix = dir.file("imatrix.gguf");
  const ImportanceMatrix m = imatrix_for(model);
  ASSERT_TRUE(write_imatrix(imatrix, m).ok());
  const struct {
    const char* dtype;
    DType matrix, output, embedding;
  } kCases[] = {{"iq2_xxs", DType::kIQ2_XXS, DType::kQ5_K, DType::kQ2_K},
                {"iq2_xs", DType::kIQ2_XS, DType::kQ5_K, DType::kQ2_K},
                {"iq2_s", DType::kIQ2_S, DType::kQ5_K, DType::kIQ3_S},
                {"iq3_xxs", DType::kIQ3_XXS, DType::kQ5_K, DType::kIQ3_S},
                {"iq3_s", DType::kIQ3_S, DType::kQ6_K, DType::kIQ3_S},
                {"iq1_s", DType::kIQ1_S, DType::kQ5_K, DType::kQ2_K},
                {"iq1_m", DType::kIQ1_M, DType::kQ5_K, DType::kQ2_K}};
  for (const auto& c : kCases) {
    auto r = export_with(dir, model, imatrix, "out.gguf", c.dtype);
    ASSERT_TRUE(r.ok()) << c.dtype << ": " << r.status().message();
    auto gguf = GgufFile::open(dir.file("out.gguf"));
    ASSERT_TRUE(gguf.ok());
    EXPECT_EQ((*gguf)->find_tensor("output.weight")->dtype, c.output) << c.dtype;
    EXPECT_EQ((*gguf)->find_tensor("token_embd.weight")->dtype, c.embedding) << c.dtype;
    const std::string name = "blk.0.ffn_gate.weight";
    const GgufTensorInfo* t = (*gguf)->find_tensor(name);
    ASSERT_EQ(t->dtype, c.matrix) << c.dtype;
    auto source = GgufFile::open(model);
    ASSERT_TRUE(source.ok());
    const GgufTensorInfo* s = (*source)->find_tensor(name);
    const std::vector<float> imp = m.find(name)->mean_sq();
    const int64_t cols = s->ne[0], rb = row_bytes(*dtype_info(c.matrix), cols);
    std::vector<uint8_t> row0(static_cast<size_t>(rb));
    std::vector<float> x(static_cast<size_t>(cols));
    std::memcpy(x.data(), s->data, static_cast<size_t>(cols) * 4);
    kernels::quantize_row(c.matrix, x.data(), cols, row0.data(), imp.data());
    EXPECT_EQ(std::vector<uint8_t>(t->data, t->data + rb), row0) << c.dtype;
  }
}

// llama-quantize's mixes ask for importances where its files do: q2_k_s's
// Q2_K matrices (not the embedding, which no imatrix covers) and iq2_m's
// IQ2_S; with them each is written, in llama.cpp's file type.
TEST(ExportImatrix, LlamaQuantizeMixesNeedImportancesWhereItsFilesDo) {
  ScratchDir dir;
  const std::string model = write_model(dir), imatrix = dir.file("imatrix.gguf");
  ASSERT_TRUE(write_imatrix(imatrix, imatrix_for(model)).ok());
  for (const auto& [dtype, first_layer_type] : {std::pair{"q2_k_s", "q2_k"}, std::pair{"iq2_m", "iq2_s"}}) {
    auto refused = export_with(dir, model, "", "out.gguf", dtype);
    ASSERT_FALSE(refused.ok()) << dtype;
    EXPECT_NE(refused.status().message().find("'blk.0.attn_q.weight' is to be written as " +
                                              std::string(first_layer_type) + ", which needs an importance matrix"),
              std::string::npos)
        << refused.status().message();
    auto written = export_with(dir, model, imatrix, "out.gguf", dtype);
    ASSERT_TRUE(written.ok()) << dtype << ": " << written.status().message();
    auto gguf = GgufFile::open(dir.file("out.gguf"));
    ASSERT_TRUE(gguf.ok());
    EXPECT_EQ((*gguf)->get_int("general.file_type"), std::string(dtype) == "q2_k_s" ? 21 : 29);
    EXPECT_EQ(dtype_name((*gguf)->find_tensor("blk.0.attn_q.weight")->dtype), first_layer_type) << dtype;
    EXPECT_EQ((*gguf)->find_tensor("token_embd.weight")->dtype,
              std::string(dtype) == "q2_k_s" ? DType::kQ2_K : DType::kIQ3_S);
  }
}

// An imatrix of this model that covers none of the matrices this export
// searches (q8_0 with a Q6_K output searches only the output, which imatrices
// leave out) is a notice, not the refusal an imatrix of another model gets
// (AnImatrixOfAnotherModelIsRefused).
TEST(ExportImatrix, AFileOfThisModelCoveringNoSearchedMatrixIsANotice) {
  ScratchDir dir;
  const std::string model = write_model(dir), imatrix = dir.file("imatrix.gguf");
  ASSERT_TRUE(write_imatrix(imatrix, imatrix_for(model)).ok());
  ExportOptions o;
  o.checkpoint = model, o.output = dir.file("out.gguf"), o.dtype = "q8_0", o.output_dtype = "q6_k";
  o.imatrix = imatrix;
  auto r = export_package(o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  bool noticed = false;
  for (const auto& n : r->notices)
    noticed |= n.find("importances for 0 of the 1 matrices whose types search their scales; the others (e.g. "
                      "output.weight) quantized without") != std::string::npos;
  EXPECT_TRUE(noticed);
}

}  // namespace
}  // namespace llmpack
