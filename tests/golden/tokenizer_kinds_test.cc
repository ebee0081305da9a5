// Packages carry any tokenizer kind: a model whose GGUF vocabulary is
// byte-level BPE (tokenizer.ggml.model = gpt2) loads, and prompts round-trip
// through the runner.
#include <gtest/gtest.h>

#include "common/fixtures.h"
#include "common/tiny_model.h"
#include "runner/text_llm_runner.h"

namespace llmpack {
namespace {

TEST(TokenizerKinds, PackageWithByteLevelBpeVocabularyGenerates) {
  LLMPACK_REQUIRE_FIXTURE(vocab, "llama.cpp-vocab/ggml-vocab-gpt-2.gguf");
  testing::TinyModelSpec spec;
  spec.dim = 16;
  spec.hidden_dim = 24;
  spec.n_heads = 2;
  spec.n_kv_heads = 1;
  spec.vocab_size = 50257;
  spec.tied_output = true;
  spec.tokenizer_gguf = vocab;
  auto pkg = testing::load_tiny_package(spec);
  ASSERT_TRUE(pkg.ok()) << pkg.status().message();
  auto ids = pkg->tokenizer->encode("Hello world", 0, 0);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, (std::vector<int32_t>{15496, 995}));  // GPT-2's ids for "Hello" and " world"
  TextLLMRunner runner(std::move(pkg->program), std::move(pkg->tokenizer));
  GenerationConfig config;
  config.temperature = 0;
  config.max_new_tokens = 5;
  config.ignore_eos = true;
  std::string text;
  ASSERT_TRUE(runner.generate("Hello world", config, [&](const std::string& s) { text += s; }).ok());
  EXPECT_EQ(text.rfind("Hello world", 0), 0u) << text;
  EXPECT_EQ(runner.stats().num_generated_tokens, 5);
}

TEST(TokenizerKinds, RunnerParsesSpecialTokensOnlyWhenAsked) {
  LLMPACK_REQUIRE_FIXTURE(vocab, "llama.cpp-vocab/ggml-vocab-gpt-2.gguf");
  testing::TinyModelSpec spec;
  spec.dim = 16;
  spec.hidden_dim = 24;
  spec.n_heads = 2;
  spec.n_kv_heads = 1;
  spec.vocab_size = 50257;
  spec.tied_output = true;
  spec.tokenizer_gguf = vocab;
  for (bool parse : {false, true}) {
    auto pkg = testing::load_tiny_package(spec);
    ASSERT_TRUE(pkg.ok());
    TextLLMRunner runner(std::move(pkg->program), std::move(pkg->tokenizer));
    GenerationConfig config;
    config.temperature = 0;
    config.max_new_tokens = 1;
    config.num_bos = 0;
    config.parse_special = parse;
    ASSERT_TRUE(runner.generate("<|endoftext|>", config).ok());
    if (parse) EXPECT_EQ(runner.stats().num_prompt_tokens, 1);
    else EXPECT_GT(runner.stats().num_prompt_tokens, 3);
  }
}

TEST(TokenizerKinds, UnsupportedArchitectureIsRefusedByName) {
  testing::TinyModelSpec spec;
  spec.arch = "mamba";
  auto pkg = testing::load_tiny_package(spec);
  ASSERT_FALSE(pkg.ok());
  EXPECT_NE(pkg.status().message().find("unsupported architecture 'mamba' (supported: llama, qwen2, qwen3)"),
            std::string::npos)
      << pkg.status().message();
}

}  // namespace
}  // namespace llmpack
