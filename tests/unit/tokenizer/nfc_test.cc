// NFC against Unicode 14.0.0's normalization as Python's unicodedata computes
// it (tests/data/nfc/vectors.txt, written by scripts/nfc-vectors): every code
// point NFC or NFD changes or that has a combining class, its decomposition,
// Hangul syllables and random mark sequences.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tokenizer/pretokenizer_nfc.h"
#include "unit/tokenizer/code_points.h"

namespace llmpack::testing {
namespace {

TEST(Nfc, MatchesUnicodeDataOnEveryChangedCodePointAndRandomMarkSequences) {
  std::ifstream file(std::string(LLMPACK_TEST_DATA_DIR) + "/nfc/vectors.txt");
  ASSERT_TRUE(file) << "tests/data/nfc/vectors.txt is missing";
  std::string line;
  int cases = 0, changed = 0, failures = 0;
  while (std::getline(file, line)) {
    const size_t semi = line.find(';');
    ASSERT_NE(semi, std::string::npos) << line;
    const std::string input = utf8_of_hexes(line.substr(0, semi));
    const std::string expected = utf8_of_hexes(line.substr(semi + 1));
    const std::string got = nfc_normalize(input);
    ++cases;
    changed += got != input;
    if (got != expected && ++failures <= 20) {
      ADD_FAILURE() << "NFC of " << line.substr(0, semi) << " gave the wrong text";
    }
  }
  EXPECT_EQ(failures, 0);
  EXPECT_GT(cases, 9000);
  EXPECT_GT(changed, 3000);  // the file exercises composition, not only unchanged text
}

// Text around the vectors' code points: normalization runs per starter
// segment, so a long text of ASCII with marks between must equal the
// segments normalized one by one.
TEST(Nfc, LongTextEqualsItsSegmentsNormalizedAlone) {
  const std::string segments[] = {"Cafe\xCC\x81", " na\xC3\xAFve ", "\xE1\x84\x80\xE1\x85\xA1\xE1\x86\xA8",
                                  "a\xCC\x82\xCC\xA3", "\xE2\x84\xAB", " plain "};
  std::string text, expected;
  for (int round = 0; round < 200; ++round) {
    for (const auto& s : segments) {
      text += s;
      expected += nfc_normalize(s);
    }
  }
  EXPECT_EQ(nfc_normalize(text), expected);
}

}  // namespace
}  // namespace llmpack::testing
