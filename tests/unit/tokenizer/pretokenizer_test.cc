// The pre-tokenizer (PCRE2) against how Python's `regex` module, which
// follows the Unicode properties as Hugging Face's tokenizers do, cuts random
// text with Llama 3's and Qwen3's Split regexes (tests/data/pretokenizer/,
// written by scripts/pretokenizer-vectors), and the white-space rule.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tokenizer/pretokenizer.h"
#include "unit/tokenizer/code_points.h"

namespace llmpack::testing {
namespace {

std::vector<std::string> split_or_die(const Pretokenizer& pre, const std::string& text) {
  auto pieces = pre.split(text);
  EXPECT_TRUE(pieces.ok()) << pieces.status().message();
  if (!pieces.ok()) return {};
  return {pieces->begin(), pieces->end()};
}

class PretokenizerVectors : public ::testing::TestWithParam<const char*> {};

TEST_P(PretokenizerVectors, CutsAsTheUnicodePropertiesSay) {
  std::ifstream file(std::string(LLMPACK_TEST_DATA_DIR) + "/pretokenizer/" + GetParam() + ".txt");
  ASSERT_TRUE(file) << "tests/data/pretokenizer/" << GetParam() << ".txt is missing";
  std::string pattern, line;
  ASSERT_TRUE(std::getline(file, pattern));
  auto pre = Pretokenizer::create({pattern});
  ASSERT_TRUE(pre.ok()) << pre.status().message();
  int cases = 0, failures = 0;
  while (std::getline(file, line)) {
    const size_t semi = line.find(';');
    ASSERT_NE(semi, std::string::npos) << line;
    std::vector<std::string> expected;
    std::istringstream pieces(line.substr(semi + 1));
    for (std::string piece; std::getline(pieces, piece, '|');) expected.push_back(utf8_of_hexes(piece));
    ++cases;
    if (split_or_die(**pre, utf8_of_hexes(line.substr(0, semi))) != expected && ++failures <= 20) {
      ADD_FAILURE() << GetParam() << ": text " << line.substr(0, semi) << " cut otherwise than "
                    << line.substr(semi + 1);
    }
  }
  EXPECT_EQ(failures, 0);
  EXPECT_GT(cases, 600);
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, PretokenizerVectors, ::testing::Values("llama3", "qwen3"));

// U+180E MONGOLIAN VOWEL SEPARATOR left White_Space in Unicode 6.3; PCRE2's
// \s still matches it, so the pre-tokenizer asks for the property instead.
TEST(Pretokenizer, MongolianVowelSeparatorIsNotWhiteSpace) {
  auto pre = Pretokenizer::create({"\\s+", "[^\\s]+"});
  ASSERT_TRUE(pre.ok()) << pre.status().message();
  const std::string mvs = "\xE1\xA0\x8E";
  EXPECT_EQ(split_or_die(**pre, "a " + mvs + "b\xE3\x80\x80" "c"),
            (std::vector<std::string>{"a", " ", mvs + "b", "\xE3\x80\x80", "c"}));
  auto quoted = Pretokenizer::create({"\\Q\\s\\E"});  // quoted text stays literal
  ASSERT_TRUE(quoted.ok()) << quoted.status().message();
  EXPECT_EQ(split_or_die(**quoted, "a\\sb"), (std::vector<std::string>{"a", "\\s", "b"}));
  auto escaped = Pretokenizer::create({"\\\\s"});  // an escaped backslash, then 's'
  ASSERT_TRUE(escaped.ok()) << escaped.status().message();
  EXPECT_EQ(split_or_die(**escaped, "a\\s b"), (std::vector<std::string>{"a", "\\s", " b"}));
}

}  // namespace
}  // namespace llmpack::testing
