// A GGUF's file type in llama.cpp's words (format/gguf_file_type.h): what
// `bench` and `inspect` print. The expected words of real files are what
// llama-bench (Debian's llama.cpp, build 11669) printed in its model_type for
// the same files.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/fixtures.h"
#include "format/gguf.h"
#include "format/gguf_file_type.h"

namespace llmpack {
namespace {

// An in-memory GGUF with `n_q4k` Q4_K tensors and `n_f16` F16 ones (256
// elements each), declaring `file_type` when it is not negative.
std::unique_ptr<GgufFile> file_with(int64_t file_type, int n_q4k, int n_f16) {
  static const std::vector<uint8_t> q4k_block(144, 0), f16_row(512, 0);
  GgufWriter w;
  w.set_string("general.architecture", "llama");
  if (file_type >= 0) w.set_u32("general.file_type", static_cast<uint32_t>(file_type));
  for (int i = 0; i < n_q4k; ++i)
    EXPECT_TRUE(w.add_tensor("q" + std::to_string(i), DType::kQ4_K, {256}, q4k_block).ok());
  for (int i = 0; i < n_f16; ++i)
    EXPECT_TRUE(w.add_tensor("h" + std::to_string(i), DType::kF16, {256}, f16_row).ok());
  auto f = GgufFile::from_bytes(w.to_bytes());
  EXPECT_TRUE(f.ok()) << f.status().message();
  return f.ok() ? std::move(f).value() : nullptr;
}

TEST(GgufFileType, NumbersHaveLlamaCppWords) {
  EXPECT_EQ(llama_file_type_words(0), "all F32");
  EXPECT_EQ(llama_file_type_words(1), "F16");
  EXPECT_EQ(llama_file_type_words(2), "Q4_0");
  EXPECT_EQ(llama_file_type_words(7), "Q8_0");
  EXPECT_EQ(llama_file_type_words(14), "Q4_K - Small");
  EXPECT_EQ(llama_file_type_words(15), "Q4_K - Medium");
  EXPECT_EQ(llama_file_type_words(18), "Q6_K");
  EXPECT_EQ(llama_file_type_words(32), "BF16");
  EXPECT_EQ(llama_file_type_words(4), std::nullopt);  // retired by llama.cpp
  EXPECT_EQ(llama_file_type_words(1024), std::nullopt);
}

TEST(GgufFileType, DeclaredTypeWinsOverTheTensorsMajority) {
  auto f = file_with(/*file_type=*/2, /*n_q4k=*/1, /*n_f16=*/3);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(describe_file_type(*f), "Q4_0");
}

TEST(GgufFileType, UnknownDeclaredNumberReadsAsLlamaCppSaysIt) {
  auto f = file_with(/*file_type=*/99, 1, 0);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(describe_file_type(*f), "unknown, may not work");
}

TEST(GgufFileType, WithoutADeclarationTheMajorityTypeIsGuessed) {
  auto k = file_with(-1, /*n_q4k=*/3, /*n_f16=*/2);
  auto h = file_with(-1, /*n_q4k=*/1, /*n_f16=*/2);
  auto none = file_with(-1, 0, 0);
  ASSERT_TRUE(k && h && none);
  EXPECT_EQ(describe_file_type(*k), "(guessed) Q4_K - Medium");  // a Q4_K majority reads as the medium mix
  EXPECT_EQ(describe_file_type(*h), "(guessed) F16");
  EXPECT_EQ(describe_file_type(*none), "(guessed) all F32");
}

TEST(GgufFileType, LlamaCppQuantizedFilesReadAsLlamaBenchPrintsThem) {
  const std::pair<const char*, const char*> files[] = {
      {"eco-llama-IQ1_M.gguf", "IQ1_M - 1.75 bpw"},       {"eco-llama-IQ1_S.gguf", "IQ1_S - 1.5625 bpw"},
      {"eco-llama-IQ2_M.gguf", "IQ2_M - 2.7 bpw"},        {"eco-llama-IQ2_XS.gguf", "IQ2_XS - 2.3125 bpw"},
      {"eco-llama-IQ2_XXS.gguf", "IQ2_XXS - 2.0625 bpw"}, {"eco-llama-IQ3_XXS.gguf", "IQ3_XXS - 3.0625 bpw"},
      {"eco-llama-IQ4_NL.gguf", "IQ4_NL - 4.5 bpw"},      {"eco-llama-IQ4_XS.gguf", "IQ4_XS - 4.25 bpw"},
      {"eco-llama-Q2_K.gguf", "Q2_K - Medium"},           {"eco-llama-Q3_K_M.gguf", "Q3_K - Medium"},
      {"eco-llama-Q5_0.gguf", "Q5_0"},                    {"eco-llama-Q5_1.gguf", "Q5_1"},
  };
  for (const auto& [name, words] : files) {
    auto f = GgufFile::open(std::string(LLMPACK_TEST_DATA_DIR) + "/llama_cpp_lowbit/" + name);
    ASSERT_TRUE(f.ok()) << name << ": " << f.status().message();
    EXPECT_EQ(describe_file_type(**f), words) << name;
  }
}

TEST(GgufFileType, EcosystemFixturesReadAsLlamaBenchPrintsThem) {
  LLMPACK_REQUIRE_FIXTURE(dir, "gguf/ecosystem");
  const std::pair<const char*, const char*> files[] = {
      {"eco-llama-Q4_K_M.gguf", "Q4_K - Medium"},
      {"eco-llama-Q5_K_M.gguf", "Q5_K - Medium"},
      {"eco-llama-F32.gguf", "all F32"},
      {"stories260K-Q8_0.gguf", "Q8_0"},
  };
  for (const auto& [name, words] : files) {
    auto f = GgufFile::open(dir + "/" + name);
    ASSERT_TRUE(f.ok()) << name << ": " << f.status().message();
    EXPECT_EQ(describe_file_type(**f), words) << name;
  }
}

}  // namespace
}  // namespace llmpack
