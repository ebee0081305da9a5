// Parity with libsentencepiece (the reference implementation, linked only
// into this test): our SpmTokenizer, loaded from tokenizer.bin / GGUF / the
// .model itself, must give the same ids as SentencePieceProcessor on the
// llama.cpp test strings and a few thousand random strings.
#include <gtest/gtest.h>

#ifdef LLMPACK_HAVE_SENTENCEPIECE
#include <sentencepiece_processor.h>

#include <random>

#include "format/gguf.h"
#include "tokenizer/tokenizer_loader.h"
#include "unit/tokenizer/vocab_vectors.h"

namespace llmpack::testing {
namespace {

std::string random_spm_text(std::mt19937& rng) {
  static const std::vector<std::string> pool = {
      "a", "e", "t", "h", "the", "Once", " upon", " ", "  ", "\n", "\t", "0", "42", ".", ",", "'", "!", "é", "ß",
      "д", "я", "中", "文", "😀", "🦙", "ក", "ا", "€", "Hello", " world", "little", "girl", "<", ">", "|"};
  std::uniform_int_distribution<size_t> pick(0, pool.size() - 1);
  std::uniform_int_distribution<int> len(0, 30);
  std::string s;
  for (int i = len(rng); i > 0; --i) s += pool[pick(rng)];
  return s;
}

// SentencePiece's remove_extra_whitespaces (tok512.model has it, llama2.c's
// encoder does not): trim spaces and collapse runs.
std::string collapse_spaces(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == ' ' && (out.empty() || out.back() == ' ')) continue;
    out += c;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

void expect_parity(const std::string& model_path, const std::vector<const Tokenizer*>& ours, int n_random,
                   bool collapse = false) {
  sentencepiece::SentencePieceProcessor sp;
  ASSERT_TRUE(sp.Load(model_path).ok());
  auto cases = parse_vocab_inputs(read_all(fixture_path("llama.cpp-vocab/ggml-vocab-llama-spm.gguf.inp")));
  std::mt19937 rng(7);
  for (int i = 0; i < n_random; ++i) cases.push_back(random_spm_text(rng));
  size_t mismatches = 0;
  for (std::string s : cases) {
    if (collapse) s = collapse_spaces(s);
    std::vector<int> expected;
    ASSERT_TRUE(sp.Encode(s, &expected).ok());
    const std::vector<int32_t> want(expected.begin(), expected.end());
    for (const Tokenizer* tok : ours) {
      auto ids = tok->encode(s, 0, 0);
      ASSERT_TRUE(ids.ok()) << ids.status().message();
      if (*ids != want && ++mismatches <= 5) ADD_FAILURE() << "mismatch on '" << s << "'";
    }
  }
  EXPECT_EQ(mismatches, 0u) << "of " << cases.size() << " strings x " << ours.size() << " tokenizers";
}

TEST(SentencePieceParity, Llama2TokenizerModel) {
  LLMPACK_REQUIRE_FIXTURE(model, "llama2c/tokenizer.model");
  auto bin = load_llama2c_tokenizer(fixture_path("llama2c/tokenizer.bin"), 32000);
  ASSERT_TRUE(bin.ok()) << bin.status().message();
  auto gguf = load_tokenizer(fixture_path("llama.cpp-vocab/ggml-vocab-llama-spm.gguf"));
  ASSERT_TRUE(gguf.ok()) << gguf.status().message();
  auto own = load_tokenizer(model);  // our reader of the .model itself
  ASSERT_TRUE(own.ok()) << own.status().message();
  expect_parity(model, {bin->get(), gguf->get(), own->get()}, 2000);
}

TEST(SentencePieceParity, Tok512Model) {
  LLMPACK_REQUIRE_FIXTURE(model, "llama2c/tok512.model");
  auto bin = load_llama2c_tokenizer(fixture_path("llama2c/tok512.bin"), 512);
  ASSERT_TRUE(bin.ok()) << bin.status().message();
  auto own = load_tokenizer(model);
  ASSERT_TRUE(own.ok()) << own.status().message();
  expect_parity(model, {bin->get(), own->get()}, 3000, /*collapse=*/true);
}

}  // namespace
}  // namespace llmpack::testing

#endif  // LLMPACK_HAVE_SENTENCEPIECE
