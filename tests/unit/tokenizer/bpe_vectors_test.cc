// llama.cpp's tokenizer test vectors for byte-level BPE vocabularies: every
// case must give exactly the expected ids (add_special=false,
// parse_special=false), through the vocab GGUF where the snapshot has it and
// through HF tokenizer.json for llama-bpe (Llama 3) and qwen2 /
// deepseek-r1-qwen (Qwen3: same vocab and merges).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <mutex>

#include "format/gguf.h"
#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/hf_tokenizer_json.h"
#include "tokenizer/tokenizer_loader.h"
#include "unit/tokenizer/vocab_vectors.h"

namespace llmpack::testing {

namespace {

std::unique_ptr<Tokenizer> load_or_null(const std::string& rel) {
  const std::string path = fixture_path(rel);
  if (!std::filesystem::exists(path)) return nullptr;
  auto tok = load_tokenizer(path);
  if (!tok.ok()) {
    ADD_FAILURE() << tok.status().message();
    return nullptr;
  }
  return std::move(*tok);
}

}  // namespace

const Tokenizer* shared_llama3_json() {
  static std::unique_ptr<Tokenizer> tok = load_or_null("hf-tokenizers/llama3/tokenizer.json.gz");
  return tok.get();
}

const Tokenizer* shared_qwen3_json() {
  static std::unique_ptr<Tokenizer> tok = load_or_null("hf-tokenizers/qwen3/tokenizer.json.gz");
  return tok.get();
}

namespace {

// Runs the 46 cases of `vectors` (a *.gguf path whose .inp/.out exist) and
// returns how many pass; each failure is reported.
int run_vectors(const Tokenizer& tok, const std::string& vectors, const std::string& label) {
  const auto inputs = parse_vocab_inputs(read_all(vectors + ".inp"));
  const auto outputs = parse_vocab_outputs(read_all(vectors + ".out"));
  EXPECT_EQ(inputs.size(), 46u);
  EXPECT_EQ(outputs.size(), inputs.size());
  int passed = 0;
  for (size_t i = 0; i < inputs.size() && i < outputs.size(); ++i) {
    auto ids = tok.encode(inputs[i], 0, 0);
    if (!ids.ok()) {
      ADD_FAILURE() << label << " case " << i << ": " << ids.status().message();
      continue;
    }
    EXPECT_EQ(*ids, outputs[i]) << label << " case " << i << ": '" << inputs[i] << "'";
    passed += *ids == outputs[i];
  }
  std::printf("[ vectors  ] %s: %d/%zu\n", label.c_str(), passed, inputs.size());
  return passed;
}

class GgufBpeVectors : public ::testing::TestWithParam<const char*> {};

TEST_P(GgufBpeVectors, AllCasesPass) {
  const std::string name = GetParam();
  LLMPACK_REQUIRE_FIXTURE(path, "llama.cpp-vocab/ggml-vocab-" + name + ".gguf");
  auto gguf = GgufFile::open(path);
  ASSERT_TRUE(gguf.ok()) << gguf.status().message();
  auto tok = load_bpe_from_gguf(**gguf);
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  EXPECT_EQ(run_vectors(**tok, path, name + " (GGUF)"), 46);
}

INSTANTIATE_TEST_SUITE_P(Vocabs, GgufBpeVectors,
                         ::testing::Values("gpt-2", "mpt", "falcon", "starcoder", "refact", "deepseek-coder",
                                           "deepseek-llm"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& c : s) c = c == '-' ? '_' : c;
                           return s;
                         });

TEST(HfJsonBpeVectors, Llama3JsonPassesLlamaBpeVectors) {
  LLMPACK_REQUIRE_FIXTURE(path, "hf-tokenizers/llama3/tokenizer.json.gz");
  const Tokenizer* tok = shared_llama3_json();
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(run_vectors(*tok, fixture_path("llama.cpp-vocab/ggml-vocab-llama-bpe.gguf"), "llama-bpe (tokenizer.json)"),
            46);
}

TEST(HfJsonBpeVectors, Qwen3JsonPassesQwen2AndDeepseekR1QwenVectors) {
  LLMPACK_REQUIRE_FIXTURE(path, "hf-tokenizers/qwen3/tokenizer.json.gz");
  const Tokenizer* tok = shared_qwen3_json();
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(run_vectors(*tok, fixture_path("llama.cpp-vocab/ggml-vocab-qwen2.gguf"), "qwen2 (tokenizer.json)"), 46);
  EXPECT_EQ(run_vectors(*tok, fixture_path("llama.cpp-vocab/ggml-vocab-deepseek-r1-qwen.gguf"),
                        "deepseek-r1-qwen (tokenizer.json)"),
            46);
}

}  // namespace
}  // namespace llmpack::testing
