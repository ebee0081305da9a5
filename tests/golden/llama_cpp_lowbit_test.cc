// Q2_K, Q3_K, IQ4_XS, IQ4_NL, Q5_0 and Q5_1 blocks, and the codebook types
// (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M), written by llama.cpp's own
// quantizer (tests/data/llama_cpp_lowbit, with its README): llmpack reads them
// as llama.cpp does. The scalar path (blocks dequantized, products in double)
// and every SIMD path this CPU has, the prompt in one call (prefill kernels)
// and a token a call (decode kernels), lie as close to llama.cpp's logits as
// llama.cpp's activation rounding puts its own logits from an exact forward
// pass (0.012-0.017 of the largest logit for the shared fixtures' types); a
// block layout read wrongly gives unrelated logits (distances near 1).
// Measured on Zen 5 (each position's max |diff| over its max |logit|, the
// worst position): scalar 0.015-0.018, AVX2 and AVX-512 0.015-0.021 from
// llama.cpp, 0.011-0.014 from the scalar path; the codebook files: scalar
// 0.017-0.021, AVX2 and AVX-512 0.022-0.023 from llama.cpp, 0.012-0.016 from
// the scalar path.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "common/golden_logits.h"
#include "kernels/kernels.h"

namespace llmpack {
namespace {

constexpr double kBound = 0.04;  // the worst position's max |diff| / max |reference logit|

std::string data_path(const std::string& file) { return std::string(LLMPACK_TEST_DATA_DIR) + "/llama_cpp_lowbit/" + file; }

using testing::all_logits;
using testing::worst_relative;

class LlamaCppLowBitFiles : public ::testing::TestWithParam<const char*> {};

TEST_P(LlamaCppLowBitFiles, EveryPathIsAsCloseToLlamaCppAsItsActivationRounding) {
  const std::string model = data_path(GetParam());
  std::ifstream in(model + ".llama_cpp_logits.json");
  ASSERT_TRUE(in) << "missing " << model << ".llama_cpp_logits.json";
  const auto golden = nlohmann::json::parse(in);
  const auto tokens = golden["tokens"].get<std::vector<int64_t>>();
  const auto llama_cpp = golden["logits"].get<std::vector<std::vector<double>>>();
  ASSERT_EQ(llama_cpp.size(), tokens.size());

  const kernels::KernelPath best = kernels::active_kernel_path();
  ASSERT_TRUE(kernels::set_kernel_path(kernels::KernelPath::kScalar));
  const auto scalar = all_logits(model, tokens);
  const double scalar_vs_llama_cpp = worst_relative(scalar, llama_cpp);
  RecordProperty("scalar_vs_llama_cpp", std::to_string(scalar_vs_llama_cpp));
  EXPECT_LT(scalar_vs_llama_cpp, kBound) << GetParam() << " scalar";
  for (kernels::KernelPath p : {kernels::KernelPath::kAvx2, kernels::KernelPath::kAvxVnni,
                                kernels::KernelPath::kAvx512, kernels::KernelPath::kNeon,
                                kernels::KernelPath::kNeonDotprod, kernels::KernelPath::kNeonI8mm}) {
    if (!kernels::set_kernel_path(p)) continue;
    for (bool one_by_one : {false, true}) {
      const auto simd = all_logits(model, tokens, one_by_one);
      const std::string run = std::string(kernels::kernel_path_name(p)) + (one_by_one ? "_decode" : "_prefill");
      const double vs_llama_cpp = worst_relative(simd, llama_cpp), vs_scalar = worst_relative(simd, scalar);
      RecordProperty(run + "_vs_llama_cpp", std::to_string(vs_llama_cpp));
      RecordProperty(run + "_vs_scalar", std::to_string(vs_scalar));
      EXPECT_LT(vs_llama_cpp, kBound) << GetParam() << " " << run;
      EXPECT_LT(vs_scalar, kBound) << GetParam() << " " << run;
    }
  }
  ASSERT_TRUE(kernels::set_kernel_path(best));
}

INSTANTIATE_TEST_SUITE_P(Files, LlamaCppLowBitFiles,
                         ::testing::Values("eco-llama-Q2_K.gguf", "eco-llama-Q3_K_M.gguf", "eco-llama-IQ4_XS.gguf",
                                           "eco-llama-IQ4_NL.gguf", "eco-llama-Q5_0.gguf", "eco-llama-Q5_1.gguf",
                                           "eco-llama-IQ2_XXS.gguf", "eco-llama-IQ2_XS.gguf", "eco-llama-IQ2_M.gguf",
                                           "eco-llama-IQ3_XXS.gguf", "eco-llama-IQ1_S.gguf", "eco-llama-IQ1_M.gguf"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& ch : name)
                             if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return name;
                         });

}  // namespace
}  // namespace llmpack
