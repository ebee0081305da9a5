// The low-bit types no llama.cpp fixture holds (Q2_K, Q3_K, IQ4_NL, IQ4_XS):
// the F32 ecosystem model (256 wide, so every row is whole super-blocks)
// exported by `llmpack export --dtype` to each, then run on every kernel
// path. The scalar path dequantizes and multiplies in double, so the SIMD
// paths must stay within the int8 rounding of the activations of it, in a
// whole model (two layers, the 13-token fixture prompt, every position; the
// prompt in one call for the prefill kernels and a token a call for the decode
// ones), and each type's distance from the F32 model's fp64 logits must rank
// as its bits do. Measured on Zen 5: SIMD 0.012-0.013 from scalar (llama.cpp's
// own logits lie 0.012-0.017 from the fp64 reference on its quantized
// models); scalar from the F32 reference q2_k 0.91, q3_k 0.40, q3_k_m 0.22,
// iq4_nl 0.18, iq4_xs 0.21, q4_k 0.19 (max differences on random weights).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <span>

#include "common/fixtures.h"
#include "common/golden_logits.h"
#include "engine/llama_program.h"
#include "export/exporter.h"
#include "kernels/kernels.h"

namespace llmpack {
namespace {

using testing::all_logits;
using testing::worst_relative;

TEST(EcosystemLowBitExports, SimdPathsMatchScalarAndErrorsRankByBits) {
  LLMPACK_REQUIRE_FIXTURE(model_path, "gguf/ecosystem/eco-llama-F32.gguf");
  LLMPACK_REQUIRE_FIXTURE(json_path, "gguf/ecosystem/eco-llama-F32.gguf.logits.json");
  std::ifstream in(json_path);
  const auto golden = nlohmann::json::parse(in);
  const auto tokens = golden["tokens"].get<std::vector<int64_t>>();
  std::vector<std::vector<double>> ref;
  for (size_t p = 0; p < tokens.size(); ++p) ref.push_back(golden["ref_f64"]["logits"][p].get<std::vector<double>>());

  const std::string dir = ::testing::TempDir() + "/eco_lowbit_" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  const kernels::KernelPath best = kernels::active_kernel_path();
  std::map<std::string, double> vs_f32;
  for (const char* dtype : {"q2_k", "q3_k", "q3_k_m", "iq4_nl", "iq4_xs", "q4_k"}) {
    ExportOptions o;
    o.checkpoint = model_path;
    o.output = dir + "/" + dtype + ".gguf";
    o.dtype = dtype;
    auto report = export_package(o);
    ASSERT_TRUE(report.ok()) << dtype << ": " << report.status().message();
    EXPECT_TRUE(report->notices.empty()) << dtype << ": nothing falls back at 256 wide";
    ASSERT_TRUE(kernels::set_kernel_path(kernels::KernelPath::kScalar));
    const auto scalar = all_logits(o.output, tokens);
    ASSERT_EQ(scalar.size(), tokens.size());
    vs_f32[dtype] = worst_relative(scalar, ref);
    RecordProperty(std::string(dtype) + "_scalar_vs_f32", std::to_string(vs_f32[dtype]));
    for (kernels::KernelPath p : {kernels::KernelPath::kAvx2, kernels::KernelPath::kAvxVnni,
                                  kernels::KernelPath::kAvx512, kernels::KernelPath::kNeon,
                                  kernels::KernelPath::kNeonDotprod, kernels::KernelPath::kNeonI8mm}) {
      if (!kernels::set_kernel_path(p)) continue;
      kernels::set_avx512_decode(kernels::Avx512Decode::kOn);  // the AVX-512 decode kernels on every such CPU
      for (bool one_by_one : {false, true}) {
        const auto simd = all_logits(o.output, tokens, one_by_one);
        ASSERT_EQ(simd.size(), tokens.size());
        const double d = worst_relative(simd, scalar);
        RecordProperty(std::string(dtype) + "_" + std::string(kernels::kernel_path_name(p)) +
                           (one_by_one ? "_decode" : "_prefill") + "_vs_scalar",
                       std::to_string(d));
        EXPECT_LT(d, 0.03) << dtype << " " << kernels::kernel_path_name(p) << (one_by_one ? " decode" : " prefill");
      }
      kernels::set_avx512_decode(kernels::Avx512Decode::kAuto);
    }
  }
  ASSERT_TRUE(kernels::set_kernel_path(best));
  std::filesystem::remove_all(dir);
  EXPECT_GT(vs_f32["q2_k"], vs_f32["q3_k"]);
  EXPECT_GT(vs_f32["q3_k"], vs_f32["iq4_xs"]);
  EXPECT_GT(vs_f32["q3_k"], vs_f32["q3_k_m"]);
  EXPECT_LT(vs_f32["iq4_xs"], 1.5 * vs_f32["q4_k"]);
  EXPECT_LT(vs_f32["iq4_nl"], 1.5 * vs_f32["q4_k"]);
  for (const auto& [dtype, d] : vs_f32) EXPECT_LT(d, 1.0) << dtype;
}

}  // namespace
}  // namespace llmpack
