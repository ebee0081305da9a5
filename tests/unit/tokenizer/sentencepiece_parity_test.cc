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
      "д", "я", "中", "文", "😀", "🦙", "ក", "ا", "€", "Hello", " world", "little", "girl", "<", ">", "|",
      // Spaces of other kinds, controls, compatibility characters (the identity normalizer keeps them), a
      // decomposed accent, a literal U+2581, format characters, Hangul, Thai, a ZWJ sequence, piece names.
      "\r", "\x01", "\x7f", "\u00a0", "\u3000", "\u180e", "\u2028", "\u0085", "\ufb01", "\uff21", "\u2460",
      "e\u0301", "\u2581", "\u200b", "\ufeff", "\u00ad", "\u01c5", "\ud55c", "\u0e01",
      "\U0001F468\u200d\U0001F469", "<s>", "</s>", "<unk>", "<0x41>"};
  std::uniform_int_distribution<size_t> pick(0, pool.size() - 1);
  std::uniform_int_distribution<int> len(0, 30);
  std::string s;
  for (int i = len(rng); i > 0; --i) s += pool[pick(rng)];
  return s;
}

// SentencePiece's remove_extra_whitespaces (tok512.model has it; llama2.c's
// encoder, which reads tokenizer.bin, does not): trim spaces and collapse runs.
std::string collapse_spaces(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == ' ' && (out.empty() || out.back() == ' ')) continue;
    out += c;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

bool has_meta_space(const std::string& s) { return s.find("\xE2\x96\x81") != std::string::npos; }

// A tokenizer under test and what it is given: the text itself, or (a
// llama2.c tokenizer.bin, which cannot tell a literal U+2581 from a space
// and knows no normalizer) the text with spaces collapsed where the model
// asks for it, and no text holding U+2581.
struct Candidate {
  const Tokenizer* tok;
  bool llama2c_bin;
};

void expect_parity(const std::string& model_path, const std::vector<Candidate>& ours, int n_random,
                   bool collapse = false) {
  sentencepiece::SentencePieceProcessor sp;
  ASSERT_TRUE(sp.Load(model_path).ok());
  auto cases = parse_vocab_inputs(read_all(fixture_path("llama.cpp-vocab/ggml-vocab-llama-spm.gguf.inp")));
  std::mt19937 rng(7);
  for (int i = 0; i < n_random; ++i) cases.push_back(random_spm_text(rng));
  // Spaces at the ends and in runs, and literal U+2581 among them (remove_extra_whitespaces).
  cases.insert(cases.end(), {"  lead", "trail  ", "a  b   c", "   ", " \xE2\x96\x81",
                             "a \xE2\x96\x81 b\xE2\x96\x81 \xE2\x96\x81"});
  size_t mismatches = 0;
  for (const std::string& s : cases) {
    std::vector<int> expected;
    ASSERT_TRUE(sp.Encode(s, &expected).ok());
    const std::vector<int32_t> want(expected.begin(), expected.end());
    for (const Candidate& c : ours) {
      if (c.llama2c_bin && has_meta_space(s)) continue;
      auto ids = c.tok->encode(c.llama2c_bin && collapse ? collapse_spaces(s) : s, 0, 0);
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
  expect_parity(model, {{bin->get(), true}, {gguf->get(), false}, {own->get(), false}}, 4000);
}

TEST(SentencePieceParity, Tok512Model) {
  LLMPACK_REQUIRE_FIXTURE(model, "llama2c/tok512.model");
  auto bin = load_llama2c_tokenizer(fixture_path("llama2c/tok512.bin"), 512);
  ASSERT_TRUE(bin.ok()) << bin.status().message();
  auto own = load_tokenizer(model);
  ASSERT_TRUE(own.ok()) << own.status().message();
  expect_parity(model, {{bin->get(), true}, {own->get(), false}}, 4000, /*collapse=*/true);
}

}  // namespace
}  // namespace llmpack::testing

#endif  // LLMPACK_HAVE_SENTENCEPIECE
