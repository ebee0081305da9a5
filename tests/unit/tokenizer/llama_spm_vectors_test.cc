// llama.cpp's tokenizer test vectors (test-tokenizer-0) for SentencePiece
// vocabularies in GGUF: every case must give exactly the expected ids.
#include <gtest/gtest.h>

#include "common/fixtures.h"
#include "format/gguf.h"
#include "tokenizer/tokenizer_loader.h"
#include "unit/tokenizer/vocab_vectors.h"

namespace llmpack {
namespace {

void check_vectors(const std::string& gguf_path) {
  auto gguf = GgufFile::open(gguf_path);
  ASSERT_TRUE(gguf.ok()) << gguf.status().message();
  auto tok = load_spm_from_gguf(**gguf);
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  const auto inputs = testing::parse_vocab_inputs(testing::read_all(gguf_path + ".inp"));
  const auto outputs = testing::parse_vocab_outputs(testing::read_all(gguf_path + ".out"));
  ASSERT_EQ(inputs.size(), 46u);
  ASSERT_EQ(outputs.size(), inputs.size());
  int passed = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto ids = (*tok)->encode(inputs[i], 0, 0);
    ASSERT_TRUE(ids.ok()) << ids.status().message();
    EXPECT_EQ(*ids, outputs[i]) << "case " << i << ": '" << inputs[i] << "'";
    passed += *ids == outputs[i];
  }
  EXPECT_EQ(passed, 46);
}

TEST(LlamaSpmVectors, AllCasesOfLlamaSpm) {
  LLMPACK_REQUIRE_FIXTURE(path, "llama.cpp-vocab/ggml-vocab-llama-spm.gguf");
  check_vectors(path);
}

TEST(LlamaSpmVectors, AllCasesOfPhi3) {
  LLMPACK_REQUIRE_FIXTURE(path, "llama.cpp-vocab/ggml-vocab-phi-3.gguf");
  check_vectors(path);
}

TEST(LlamaSpmVectors, GgufVocabularyMetadata) {
  LLMPACK_REQUIRE_FIXTURE(path, "llama.cpp-vocab/ggml-vocab-llama-spm.gguf");
  auto gguf = GgufFile::open(path);
  ASSERT_TRUE(gguf.ok()) << gguf.status().message();
  auto tok = load_spm_from_gguf(**gguf);
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  EXPECT_EQ((*tok)->vocab_size(), 32000);
  EXPECT_EQ((*tok)->bos_id(), 1);
  EXPECT_EQ((*tok)->eos_id(), 2);
  EXPECT_EQ((*tok)->default_num_bos(), 1);
  EXPECT_TRUE((*tok)->uses_meta_space());
  EXPECT_EQ((*tok)->piece(13), "<0x0A>");
  EXPECT_EQ(*(*tok)->decode(100, 13), "\n");
}

TEST(LlamaSpmVectors, OtherTokenizerModelsAreRefusedByName) {
  LLMPACK_REQUIRE_FIXTURE(path, "llama.cpp-vocab/ggml-vocab-gpt-2.gguf");
  auto gguf = GgufFile::open(path);
  ASSERT_TRUE(gguf.ok()) << gguf.status().message();
  auto tok = load_spm_from_gguf(**gguf);
  ASSERT_FALSE(tok.ok());
  EXPECT_NE(tok.status().message().find("\"gpt2\""), std::string::npos) << tok.status().message();
}

}  // namespace
}  // namespace llmpack
