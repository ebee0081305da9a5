// E1: stories260K exported from every kind of source loads as a package and
// reproduces the golden greedy ids (../shared/fixtures/llama2c/stories260K_greedy_256.json).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "export_test_util.h"
#include "export/model_source.h"
#include "format/gguf.h"

namespace llmpack {
namespace {

using testing::ScratchDir;

struct SourceCase {
  const char* label;
  const char* checkpoint;   // relative to the fixtures
  const char* tokenizer;    // "" : none
  const char* params;       // "" : none
  bool exact;               // bf16 weights: compare logits loosely instead
};

class ExportSource : public ::testing::TestWithParam<SourceCase> {};

TEST_P(ExportSource, E1_PackageReproducesGoldenGreedyIds) {
  const SourceCase& c = GetParam();
  LLMPACK_REQUIRE_FIXTURE(checkpoint, c.checkpoint);
  LLMPACK_REQUIRE_FIXTURE(golden, "llama2c/stories260K_greedy_256.json");
  ScratchDir dir;
  ExportOptions o;
  o.checkpoint = checkpoint;
  if (*c.tokenizer) o.tokenizer_path = testing::fixture_path(c.tokenizer);
  if (*c.params) o.params_path = testing::fixture_path(c.params);
  o.output = dir.file("out.gguf");
  auto report = export_package(o);
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_EQ(report->n_tensors, 47u + (std::string(c.label) == "meta_pth" || std::string(c.label) == "bf16_pth" ||
                                              std::string(c.label) == "gguf" ? 1u : 0u));
  auto pkg = testing::load(o.output);
  ASSERT_TRUE(pkg.ok()) << pkg.status().message();
  const auto& contract = pkg->program->contract();
  EXPECT_TRUE(contract.from_keys);
  EXPECT_EQ(contract.max_seq_len, 128);
  EXPECT_EQ(contract.max_context_len, 128);
  EXPECT_EQ(contract.token_bound, 128);  // E3: never S - 1
  EXPECT_EQ(pkg->tokenizer->vocab_size(), 512);
  EXPECT_EQ(pkg->tokenizer->bos_id(), 1);
  EXPECT_EQ(pkg->tokenizer->eos_id(), 2);
  if (c.exact) {
    EXPECT_EQ(testing::greedy(*pkg->program, 64), testing::golden_ids(64));
  } else {
    // bf16 rounding moves logits a little; the first step's ranking holds.
    auto logits = testing::first_logits(*pkg->program);
    ASSERT_EQ(logits.size(), 512u);
    EXPECT_EQ(testing::argmax(logits), 403);
    EXPECT_NEAR(logits[403], 17.0235f, 0.3f);
    EXPECT_NEAR(logits[385], 15.4062f, 0.3f);
  }
  // The tokenizer travels inside (E4): it encodes like the fixture's.
  auto ids = pkg->tokenizer->encode("Once upon a time", 1, 0);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ((*ids)[0], 1);
  EXPECT_GT(ids->size(), 2u);
}

INSTANTIATE_TEST_SUITE_P(
    Stories260K, ExportSource,
    ::testing::Values(SourceCase{"bin_tokbin", "llama2c/stories260K.bin", "llama2c/tok512.bin", "", true},
                      SourceCase{"bin_spm", "llama2c/stories260K.bin", "llama2c/tok512.model", "", true},
                      SourceCase{"llama2c_pt", "pytorch/stories260K.pt", "llama2c/tok512.model", "", true},
                      SourceCase{"llama2c_pt_params", "pytorch/stories260K.pt", "llama2c/tok512.bin",
                                 "pytorch/params.json", true},
                      SourceCase{"meta_pth", "pytorch/consolidated.00.pth", "llama2c/tok512.model",
                                 "pytorch/params.json", true},
                      SourceCase{"bf16_pth", "pytorch/consolidated.bf16.pth", "llama2c/tok512.model",
                                 "pytorch/params.json", false},
                      SourceCase{"hf", "safetensors/stories260K-hf", "llama2c/tok512.model", "", true},
                      SourceCase{"gguf", "gguf/stories260K.gguf", "", "", true}),
    [](const auto& info) { return std::string(info.param.label); });

// tokenizer.bin and tokenizer.model give the same vocabulary in the package,
// and it equals the one in stories260K.gguf.
TEST(ExportTokenizer, E4_TokenizerBinAndModelGiveTheSameGgufVocabulary) {
  LLMPACK_REQUIRE_FIXTURE(bin, "llama2c/tok512.bin");
  LLMPACK_REQUIRE_FIXTURE(spm, "llama2c/tok512.model");
  LLMPACK_REQUIRE_FIXTURE(gguf_path, "gguf/stories260K.gguf");
  auto a = read_tokenizer_metadata(bin);
  auto b = read_tokenizer_metadata(spm);
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_TRUE(b.ok()) << b.status().message();
  auto gguf = GgufFile::open(gguf_path);
  ASSERT_TRUE(gguf.ok());
  auto tokens = [](const TokenizerMetadata& m) {
    for (const auto& [k, v] : m.keys)
      if (k == "tokenizer.ggml.tokens") return std::get<StringTable>(v.value);
    return StringTable{};
  };
  EXPECT_EQ(tokens(*a), *(*gguf)->get_string_array("tokenizer.ggml.tokens"));
  EXPECT_EQ(tokens(*b), *(*gguf)->get_string_array("tokenizer.ggml.tokens"));
  EXPECT_EQ(a->eos_id, 2);
  EXPECT_EQ(b->bos_id, 1);
}

TEST(ExportTokenizer, HfFolderWithoutTokenizerAsksForOne) {
  LLMPACK_REQUIRE_FIXTURE(hf, "safetensors/stories260K-hf");
  ScratchDir dir;
  ExportOptions o;
  o.checkpoint = hf;
  o.output = dir.file("out.gguf");
  auto report = export_package(o);
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.status().message().find("--tokenizer_path"), std::string::npos) << report.status().message();
  EXPECT_FALSE(std::filesystem::exists(o.output));
}

TEST(ExportTokenizer, MetaCheckpointWithoutParamsAsksForThem) {
  LLMPACK_REQUIRE_FIXTURE(pth, "pytorch/consolidated.00.pth");
  ScratchDir dir;
  ExportOptions o;
  o.checkpoint = pth;
  o.output = dir.file("out.gguf");
  auto report = export_package(o);
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.status().message().find("--params"), std::string::npos) << report.status().message();
  EXPECT_EQ(dir.n_files(), 0u);
}

}  // namespace
}  // namespace llmpack

namespace llmpack {
namespace {

// HF q_proj/k_proj rows are in rotate_half order; the export puts them back
// into llama2.c's adjacent pairs, byte for byte.
TEST(ExportHfPermutation, QAndKRowsComeBackToTheOriginalLayout) {
  LLMPACK_REQUIRE_FIXTURE(hf, "safetensors/stories260K-hf");
  LLMPACK_REQUIRE_FIXTURE(bin, "llama2c/stories260K.bin");
  testing::ScratchDir dir;
  ExportOptions o;
  o.tokenizer_path = testing::fixture_path("llama2c/tok512.bin");
  o.checkpoint = hf;
  o.output = dir.file("hf.gguf");
  ASSERT_TRUE(export_package(o).ok());
  o.checkpoint = bin;
  o.output = dir.file("bin.gguf");
  ASSERT_TRUE(export_package(o).ok());
  auto a = GgufFile::open(dir.file("hf.gguf"));
  auto b = GgufFile::open(dir.file("bin.gguf"));
  ASSERT_TRUE(a.ok() && b.ok());
  for (const char* name : {"blk.0.attn_q.weight", "blk.4.attn_k.weight", "blk.2.attn_v.weight"}) {
    const GgufTensorInfo* x = (*a)->find_tensor(name);
    const GgufTensorInfo* y = (*b)->find_tensor(name);
    ASSERT_TRUE(x && y) << name;
    ASSERT_EQ(x->n_bytes, y->n_bytes) << name;
    EXPECT_EQ(std::memcmp(x->data, y->data, x->n_bytes), 0) << name;
  }
}

// E2/E5 through the CLI: the hidden option stays out of --help, a bad
// combination exits non-zero before creating the file, a good one prints
// the one-line summary.
TEST(ExportCli, HelpHidesTokenBoundAndBadOptionsCreateNothing) {
  LLMPACK_REQUIRE_FIXTURE(bin, "llama2c/stories260K.bin");
#ifdef LLMPACK_BINARY_PATH
  const std::string exe = LLMPACK_BINARY_PATH;
#else  // test_export is not marked CLI in tests/CMakeLists.txt: find it in the build tree
  const std::string exe =
      (std::filesystem::read_symlink("/proc/self/exe").parent_path().parent_path() / "apps/llmpack/llmpack").string();
#endif
  if (!std::filesystem::exists(exe)) GTEST_SKIP() << "llmpack binary not built: " << exe;
  testing::ScratchDir dir;
  auto run = [&](const std::string& args, std::string* out) {
    const std::string cmd = exe + " export " + args + " > " + dir.file("stdout.txt") + " 2>&1";
    const int rc = std::system(cmd.c_str());
    std::ifstream in(dir.file("stdout.txt"));
    out->assign(std::istreambuf_iterator<char>(in), {});
    return rc;
  };
  std::string out;
  EXPECT_EQ(run("--help", &out), 0);
  EXPECT_NE(out.find("--static_chunk"), std::string::npos);
  EXPECT_EQ(out.find("token_bound"), std::string::npos) << out;
  const std::string common = "--checkpoint " + bin + " --tokenizer_path " + testing::fixture_path("llama2c/tok512.bin");
  const std::string pkg = dir.file("out.gguf");
  EXPECT_NE(run(common + " --output " + pkg + " --max_context_length 64", &out), 0);
  EXPECT_NE(out.find("below --max_seq_length 128"), std::string::npos) << out;
  EXPECT_NE(run(common + " --output " + pkg + " --static_chunk 4", &out), 0);
  EXPECT_NE(run(common + " --output " + pkg + " --dtype q8_k", &out), 0);
  EXPECT_FALSE(std::filesystem::exists(pkg));
  EXPECT_EQ(run(common + " --output " + pkg + " --token_bound 127", &out), 0) << out;
  EXPECT_NE(out.find("S 128, C 128, B 127"), std::string::npos) << out;
  EXPECT_TRUE(std::filesystem::exists(pkg));
}

}  // namespace
}  // namespace llmpack

namespace llmpack {
namespace {

// Exports the Meta-layout stories260K checkpoint with `params_text` as its
// params.json (written into dir), to dir/out.gguf.
Result<ExportReport> export_meta_with_params(const std::string& pth, const ScratchDir& dir,
                                             const std::string& params_text) {
  testing::write_text(dir.file("params.json"), params_text);
  ExportOptions o;
  o.checkpoint = pth;
  o.params_path = dir.file("params.json");
  o.tokenizer_path = testing::fixture_path("llama2c/tok512.bin");
  o.output = dir.file("out.gguf");
  return export_package(o);
}

// Meta's params.json for Llama 3.1 and later says "use_scaled_rope": true
// without a factor; the export writes the llama3 frequency factors (as an HF
// config's rope_scaling does), with the factor ExecuTorch's key gives, else
// the one Meta's releases of that width use, said in a notice.
TEST(ExportMetaParams, UseScaledRopeWritesLlama3FrequencyFactors) {
  LLMPACK_REQUIRE_FIXTURE(pth, "pytorch/consolidated.00.pth");
  LLMPACK_REQUIRE_FIXTURE(params, "pytorch/params.json");
  ScratchDir dir;
  std::ifstream in(params);
  std::stringstream text;
  text << in.rdbuf();
  const std::string base = text.str().substr(0, text.str().rfind('}'));  // the fixture's object, open
  const auto export_with = [&](const std::string& extra) {
    return export_meta_with_params(pth, dir, base + ", \"rope_theta\": 500000.0" + extra + "}");
  };
  // head_dim 8: wavelengths 2 pi 500000^(i / 4) = 6.3, 167, 4443, 118142 against
  // 8192 / 4 and 8192 / 1: factors 1, 1, smooth, the scale factor.
  const auto expected_third = [](double factor) {
    const double smooth = (8192.0 / (2 * M_PI * std::pow(500000.0, 0.5)) - 1.0) / 3.0;
    return static_cast<float>(1.0 / ((1 - smooth) / factor + smooth));
  };
  const auto factors = [&]() {
    auto out = GgufFile::open(dir.file("out.gguf"));
    EXPECT_TRUE(out.ok());
    const GgufTensorInfo* t = out.ok() ? (*out)->find_tensor("rope_freqs.weight") : nullptr;
    if (!t || t->ne != std::vector<int64_t>{4}) return std::vector<float>{};
    const float* v = reinterpret_cast<const float*>(t->data);
    return std::vector<float>(v, v + 4);
  };

  auto report = export_with(", \"use_scaled_rope\": true");
  ASSERT_TRUE(report.ok()) << report.status().message();
  std::vector<float> f = factors();
  ASSERT_EQ(f.size(), 4u);
  EXPECT_EQ(f[0], 1.0f);
  EXPECT_EQ(f[1], 1.0f);
  EXPECT_FLOAT_EQ(f[2], expected_third(32.0));
  EXPECT_EQ(f[3], 32.0f);  // width 64 < 4096: Llama 3.2's factor
  bool noticed = false;
  for (const std::string& n : report->notices) noticed |= n.find("use_scaled_rope without a factor: 32") != n.npos;
  EXPECT_TRUE(noticed);
  ASSERT_TRUE(testing::load(dir.file("out.gguf")).ok());

  report = export_with(", \"use_scaled_rope\": true, \"rope_scale_factor\": 8");
  ASSERT_TRUE(report.ok()) << report.status().message();
  f = factors();
  ASSERT_EQ(f.size(), 4u);
  EXPECT_FLOAT_EQ(f[2], expected_third(8.0));
  EXPECT_EQ(f[3], 8.0f);
  for (const std::string& n : report->notices) EXPECT_EQ(n.find("use_scaled_rope"), n.npos) << n;

  ASSERT_TRUE(export_with(", \"use_scaled_rope\": false").ok());
  EXPECT_TRUE(factors().empty());

  report = export_with(", \"use_scaled_rope\": true, \"rope_scale_factor\": -1");
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.status().message().find("expected factor > 0"), std::string::npos) << report.status().message();
}


// The params.json keys the export reads must hold what they name; null is
// absent (Meta's files say "n_kv_heads": null for plain attention).
TEST(ExportMetaParams, KeysOfTheWrongTypeAreRefusedNamingThem) {
  LLMPACK_REQUIRE_FIXTURE(pth, "pytorch/consolidated.00.pth");
  ScratchDir dir;
  const std::string dims = "\"multiple_of\": 4, \"n_layers\": 5, \"norm_eps\": 1e-05, \"vocab_size\": 512";
  const auto export_with = [&](const std::string& fields) {
    return export_meta_with_params(pth, dir, "{" + dims + ", " + fields + "}");
  };
  const struct {
    const char* fields;
    const char* said;
  } cases[] = {
      {"\"dim\": \"64\", \"n_heads\": 8, \"n_kv_heads\": 4", "'dim' is \"64\", expected an integer"},
      {"\"dim\": 64, \"n_heads\": 8.5, \"n_kv_heads\": 4", "'n_heads' is 8.5, expected an integer"},
      {"\"dim\": 64, \"n_heads\": 8, \"n_kv_heads\": 4, \"rope_theta\": \"1e4\"",
       "'rope_theta' is \"1e4\", expected a number"},
      {"\"dim\": 64, \"n_heads\": 8, \"n_kv_heads\": 4, \"use_scaled_rope\": 1",
       "'use_scaled_rope' is 1, expected true or false"},
  };
  for (const auto& c : cases) {
    auto r = export_with(c.fields);
    ASSERT_FALSE(r.ok()) << c.fields;
    EXPECT_NE(r.status().message().find(c.said), std::string::npos) << r.status().message();
    EXPECT_FALSE(std::filesystem::exists(dir.file("out.gguf")));
  }
  // n_kv_heads null: as many kv heads as heads (the fixture has 4, so its k rows do not fit 8)
  auto r = export_with("\"dim\": 64, \"n_heads\": 8, \"n_kv_heads\": null");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("attn_k.weight' has shape [64, 32], expected [64, 64]"), std::string::npos)
      << r.status().message();
  r = export_with("\"dim\": 64.0, \"n_heads\": 8, \"n_kv_heads\": 4, \"ffn_dim_multiplier\": null");
  EXPECT_TRUE(r.ok()) << r.status().message();
}

}  // namespace
}  // namespace llmpack
