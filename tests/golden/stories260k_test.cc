// Real-model goldens: stories260K from its llama2.c .bin and from its GGUF
// must reproduce the 256 greedy ids and the reference logits of
// ../shared/fixtures/llama2c/stories260K_greedy_256.json.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "common/fixtures.h"
#include "engine/llama_program.h"
#include "reference/reference_forward.h"

namespace llmpack {
namespace {

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

int64_t argmax(std::span<const float> v) {
  return std::max_element(v.begin(), v.end()) - v.begin();
}

// Greedy from BOS at position 0, llama2.c run.c semantics (stop on BOS).
std::vector<int64_t> greedy(Program& program, int64_t steps) {
  std::vector<int64_t> out;
  int64_t token = 1;
  for (int64_t pos = 0; pos < steps; ++pos) {
    auto logits = program.forward(std::span<const int64_t>(&token, 1), pos);
    EXPECT_TRUE(logits.ok()) << logits.status().message();
    if (!logits.ok()) break;
    token = argmax(logits->last());
    if (token == 1) break;
    out.push_back(token);
  }
  return out;
}

void expect_reference_logits(Program& program, const nlohmann::json& ref) {
  const auto& inputs = ref["input_tokens"];
  const auto& rows = ref["logits"];
  for (size_t p = 0; p < inputs.size(); ++p) {
    int64_t token = inputs[p].get<int64_t>();
    auto logits = program.forward(std::span<const int64_t>(&token, 1), static_cast<int64_t>(p));
    ASSERT_TRUE(logits.ok());
    std::vector<float> got(logits->last().begin(), logits->last().end());
    std::vector<double> expected = rows[p].get<std::vector<double>>();
    EXPECT_LT(reference::relative_max_diff(got, expected), 1e-4) << "position " << p;
  }
}

class Stories260K : public ::testing::TestWithParam<const char*> {};

TEST_P(Stories260K, GreedyFromBosReproducesAll256Ids) {
  LLMPACK_REQUIRE_FIXTURE(golden_path, "llama2c/stories260K_greedy_256.json");
  LLMPACK_REQUIRE_FIXTURE(model_path, GetParam());
  LLMPACK_REQUIRE_FIXTURE(tokenizer_path, "llama2c/tok512.bin");
  const bool is_bin = std::string(GetParam()).ends_with(".bin");
  ProgramOptions options;
  options.cpu_threads = 2;
  options.defaults.max_context_len = 512;
  auto pkg = load_package(model_path, is_bin ? tokenizer_path : "", options);
  ASSERT_TRUE(pkg.ok()) << pkg.status().message();
  const auto golden = read_json(golden_path);
  auto expected = golden["generated_ids"].get<std::vector<int64_t>>();
  ASSERT_EQ(expected.size(), 256u);
  EXPECT_EQ(greedy(*pkg->program, 256), expected);
}

TEST_P(Stories260K, LogitsMatchTheFp64Reference) {
  LLMPACK_REQUIRE_FIXTURE(golden_path, "llama2c/stories260K_greedy_256.json");
  LLMPACK_REQUIRE_FIXTURE(model_path, GetParam());
  LLMPACK_REQUIRE_FIXTURE(tokenizer_path, "llama2c/tok512.bin");
  const bool is_bin = std::string(GetParam()).ends_with(".bin");
  ProgramOptions options;
  options.kv_dtype = KvDtype::kF32;  // the forward's math against fp64; the default f16 cache rounds k and v
  auto pkg = load_package(model_path, is_bin ? tokenizer_path : "", options);
  ASSERT_TRUE(pkg.ok()) << pkg.status().message();
  expect_reference_logits(*pkg->program, read_json(golden_path)["reference_logits"]);
  // And our own fp64 reference agrees with the fixture's on the same tokens.
  const auto ref = read_json(golden_path)["reference_logits"];
  auto ours = reference::forward_all(pkg->program->model(), ref["input_tokens"].get<std::vector<int64_t>>());
  for (size_t p = 0; p < ours.size(); ++p) {
    auto theirs = ref["logits"][p].get<std::vector<double>>();
    std::vector<float> as_float(theirs.begin(), theirs.end());
    EXPECT_LT(reference::relative_max_diff(as_float, ours[p]), 1e-5);
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, Stories260K,
                         ::testing::Values("llama2c/stories260K.bin", "gguf/stories260K.gguf"),
                         [](const auto& info) { return std::string(info.param).ends_with(".bin") ? "bin" : "gguf"; });

}  // namespace
}  // namespace llmpack
