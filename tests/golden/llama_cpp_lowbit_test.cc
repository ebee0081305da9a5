// Q2_K, Q3_K, IQ4_XS and IQ4_NL blocks written by llama.cpp's own quantizer
// (tests/data/llama_cpp_lowbit, with its README): llmpack reads them as
// llama.cpp does. The scalar path (blocks dequantized, products in double)
// and every SIMD path this CPU has lie as close to llama.cpp's logits as
// llama.cpp's activation rounding puts its own logits from an exact forward
// pass (about 0.013 of the largest logit for the shared fixtures' types);
// a block layout read wrongly gives unrelated logits (distances near 1).
// Measured on Zen 5: scalar 0.012-0.014, AVX2 and AVX-512 0.012-0.017 from
// llama.cpp, 0.009-0.011 from the scalar path.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/llama_program.h"
#include "kernels/kernels.h"

namespace llmpack {
namespace {

constexpr double kBound = 0.03;  // max |diff| over the 13 positions / max |llama.cpp logit|

std::string data_path(const std::string& file) { return std::string(LLMPACK_TEST_DATA_DIR) + "/llama_cpp_lowbit/" + file; }

using Rows = std::vector<std::vector<double>>;

// All 13 positions' logits of `model` on the active kernel path, in one forward call.
Rows forward_logits(const std::string& model, const std::vector<int64_t>& tokens) {
  ProgramOptions options;
  options.cpu_threads = 2;
  options.logits_rows = 16;
  auto pkg = load_package(model, "", options);
  EXPECT_TRUE(pkg.ok()) << pkg.status().message();
  if (!pkg.ok()) return {};
  auto logits = pkg->program->forward(tokens, 0, /*all_logits=*/true);
  EXPECT_TRUE(logits.ok()) << logits.status().message();
  if (!logits.ok()) return {};
  Rows rows(tokens.size());
  for (size_t p = 0; p < tokens.size(); ++p) {
    const auto row = logits->row(p);
    rows[p].assign(row.begin(), row.end());
  }
  return rows;
}

// max |a - b| over every position and token id, over `scale`; 1e9 if the shapes differ.
double relative_max_diff(const Rows& a, const Rows& b, double scale) {
  if (a.size() != b.size()) return 1e9;
  double diff = 0;
  for (size_t p = 0; p < a.size(); ++p) {
    if (a[p].size() != b[p].size()) return 1e9;
    for (size_t i = 0; i < a[p].size(); ++i) diff = std::max(diff, std::abs(a[p][i] - b[p][i]));
  }
  return diff / scale;
}

class LlamaCppLowBitFiles : public ::testing::TestWithParam<const char*> {};

TEST_P(LlamaCppLowBitFiles, EveryPathIsAsCloseToLlamaCppAsItsActivationRounding) {
  const std::string model = data_path(GetParam());
  std::ifstream in(model + ".llama_cpp_logits.json");
  ASSERT_TRUE(in) << "missing " << model << ".llama_cpp_logits.json";
  const auto golden = nlohmann::json::parse(in);
  const auto tokens = golden["tokens"].get<std::vector<int64_t>>();
  const auto llama_cpp = golden["logits"].get<Rows>();
  ASSERT_EQ(llama_cpp.size(), tokens.size());
  double scale = 0;
  for (const auto& row : llama_cpp)
    for (double v : row) scale = std::max(scale, std::abs(v));

  const kernels::KernelPath best = kernels::active_kernel_path();
  ASSERT_TRUE(kernels::set_kernel_path(kernels::KernelPath::kScalar));
  const Rows scalar = forward_logits(model, tokens);
  const double scalar_vs_llama_cpp = relative_max_diff(scalar, llama_cpp, scale);
  RecordProperty("scalar_vs_llama_cpp", std::to_string(scalar_vs_llama_cpp));
  EXPECT_LT(scalar_vs_llama_cpp, kBound) << GetParam() << " scalar";
  for (kernels::KernelPath p : {kernels::KernelPath::kAvx2, kernels::KernelPath::kAvx512, kernels::KernelPath::kNeon,
                                  kernels::KernelPath::kNeonDotprod, kernels::KernelPath::kNeonI8mm}) {
    if (!kernels::set_kernel_path(p)) continue;
    const Rows simd = forward_logits(model, tokens);
    const std::string path(kernels::kernel_path_name(p));
    const double vs_llama_cpp = relative_max_diff(simd, llama_cpp, scale);
    const double vs_scalar = relative_max_diff(simd, scalar, scale);
    RecordProperty(path + "_vs_llama_cpp", std::to_string(vs_llama_cpp));
    EXPECT_LT(vs_llama_cpp, kBound) << GetParam() << " " << path;
    EXPECT_LT(vs_scalar, kBound) << GetParam() << " " << path;
  }
  ASSERT_TRUE(kernels::set_kernel_path(best));
}

INSTANTIATE_TEST_SUITE_P(Files, LlamaCppLowBitFiles,
                         ::testing::Values("eco-llama-Q2_K.gguf", "eco-llama-Q3_K_M.gguf", "eco-llama-IQ4_XS.gguf",
                                           "eco-llama-IQ4_NL.gguf"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& ch : name)
                             if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return name;
                         });

}  // namespace
}  // namespace llmpack
