// The UTF-8 helpers every text layer shares: sequence lengths, the first
// invalid sequence, and encoding a code point.
#include <gtest/gtest.h>

#include <string>

#include "core/utf8.h"

namespace llmpack {
namespace {

std::string encoded(uint32_t cp) {
  std::string s;
  append_utf8(cp, &s);
  return s;
}

TEST(Utf8, AppendsEachLengthAndReplacesWhatIsNoScalarValue) {
  EXPECT_EQ(encoded(0x41), "A");
  EXPECT_EQ(encoded(0x7F), "\x7F");
  EXPECT_EQ(encoded(0x80), "\xC2\x80");
  EXPECT_EQ(encoded(0x7FF), "\xDF\xBF");
  EXPECT_EQ(encoded(0x800), "\xE0\xA0\x80");
  EXPECT_EQ(encoded(0xFFFF), "\xEF\xBF\xBF");
  EXPECT_EQ(encoded(0x10000), "\xF0\x90\x80\x80");
  EXPECT_EQ(encoded(0x10FFFF), "\xF4\x8F\xBF\xBF");
  EXPECT_EQ(encoded(0xD800), "\xEF\xBF\xBD");    // a surrogate: U+FFFD
  EXPECT_EQ(encoded(0x110000), "\xEF\xBF\xBD");  // beyond Unicode: U+FFFD
  std::string all;
  for (uint32_t cp = 0; cp < 0x110000; ++cp) {
    if (cp < 0xD800 || cp > 0xDFFF) append_utf8(cp, &all);
  }
  EXPECT_EQ(utf8_first_invalid(all), std::string_view::npos);  // every scalar value encodes validly
}

TEST(Utf8, SequenceLengthsAndTheFirstInvalidByte) {
  EXPECT_EQ(utf8_sequence_length('a'), 1);
  EXPECT_EQ(utf8_sequence_length(0x80), 0);
  EXPECT_EQ(utf8_sequence_length(0xC3), 2);
  EXPECT_EQ(utf8_sequence_length(0xE2), 3);
  EXPECT_EQ(utf8_sequence_length(0xF0), 4);
  EXPECT_EQ(utf8_sequence_length(0xF8), 0);
  EXPECT_EQ(utf8_first_invalid("ab\xC3\xA9"), std::string_view::npos);
  EXPECT_EQ(utf8_first_invalid("ab\xC3"), 2u);            // cut short
  EXPECT_EQ(utf8_first_invalid("a\xC0\xAF"), 1u);         // overlong
  EXPECT_EQ(utf8_first_invalid("a\xED\xA0\x80"), 1u);     // a surrogate
}

}  // namespace
}  // namespace llmpack
