// GGUFs written and quantized by another tool (../shared/fixtures/gguf/
// ecosystem): our reader and kernels reproduce the fp64 reference logits
// stored beside each model (the reference ran on the same dequantized
// weights), for every position of the 13-token input, in one batch.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "common/fixtures.h"
#include "engine/llama_program.h"
#include "kernels/kernels.h"

namespace llmpack {
namespace {

struct EcoCase {
  const char* file;
  double tolerance;  // max |diff| / max |ref|
};

class EcosystemLogits : public ::testing::TestWithParam<EcoCase> {};

TEST_P(EcosystemLogits, BatchLogitsMatchFp64Reference) {
  const EcoCase c = GetParam();
  LLMPACK_REQUIRE_FIXTURE(model_path, c.file);
  LLMPACK_REQUIRE_FIXTURE(json_path, std::string(c.file) + ".logits.json");
  ProgramOptions options;
  options.cpu_threads = 2;
  options.logits_rows = 16;
  auto pkg = load_package(model_path, "", options);
  ASSERT_TRUE(pkg.ok()) << pkg.status().message();
  std::ifstream in(json_path);
  const auto golden = nlohmann::json::parse(in);
  const auto tokens = golden["tokens"].get<std::vector<int64_t>>();
  auto logits = pkg->program->forward(tokens, 0, /*all_logits=*/true);
  ASSERT_TRUE(logits.ok()) << logits.status().message();
  double worst = 0;
  for (size_t p = 0; p < tokens.size(); ++p) {
    const auto ref = golden["ref_f64"]["logits"][p].get<std::vector<double>>();
    double diff = 0, scale = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
      diff = std::max(diff, std::abs(logits->row(p)[i] - ref[i]));
      scale = std::max(scale, std::abs(ref[i]));
    }
    worst = std::max(worst, diff / scale);
  }
  EXPECT_LT(worst, c.tolerance) << c.file;
  RecordProperty("relative_max_diff", std::to_string(worst));
}

INSTANTIATE_TEST_SUITE_P(
    Models, EcosystemLogits,
    ::testing::Values(EcoCase{"gguf/stories260K.gguf", 1e-4}, EcoCase{"gguf/ecosystem/eco-llama-F32.gguf", 1e-4},
                      EcoCase{"gguf/ecosystem/eco-llama-F16.gguf", 1e-4},
                      EcoCase{"gguf/ecosystem/eco-llama-BF16.gguf", 1e-4},
                      EcoCase{"gguf/ecosystem/eco-qwen2-F16.gguf", 1e-4},
                      EcoCase{"gguf/ecosystem/eco-qwen3-F16.gguf", 1e-4}),
    [](const auto& info) {
      std::string name = info.param.file;
      name = name.substr(name.rfind('/') + 1);
      for (char& ch : name)
        if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
      return name;
    });

}  // namespace
}  // namespace llmpack
