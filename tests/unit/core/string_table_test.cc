// StringTable: the compact list of strings GGUF string arrays (vocabularies,
// merges) are read into.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/string_table.h"

namespace llmpack {
namespace {

TEST(StringTable, KeepsEveryStringInOrderEmptyOnesAndBytesIncluded) {
  std::vector<std::string> strings = {"", "a", std::string("\0b\xff", 3), "", "a long string past the SSO size"};
  StringTable t(strings);
  ASSERT_EQ(t.size(), strings.size());
  for (size_t i = 0; i < strings.size(); ++i) EXPECT_EQ(t[i], strings[i]) << i;
  EXPECT_EQ(t.back(), strings.back());
  EXPECT_EQ(t.total_bytes(), 1u + 3u + 31u);
  EXPECT_EQ(t.to_vector(), strings);
  EXPECT_TRUE(std::equal(t.begin(), t.end(), strings.begin(), strings.end()));
  EXPECT_EQ(t.end() - t.begin(), static_cast<std::ptrdiff_t>(strings.size()));
}

TEST(StringTable, PushBackGrowsAndEqualityComparesContents) {
  StringTable a;
  EXPECT_TRUE(a.empty());
  a.reserve(2, 1);  // too small: push_back still grows
  for (int i = 0; i < 1000; ++i) a.push_back(std::to_string(i));
  ASSERT_EQ(a.size(), 1000u);
  EXPECT_EQ(a[0], "0");
  EXPECT_EQ(a[999], "999");
  StringTable b{"0"};
  EXPECT_FALSE(a == b);
  for (int i = 1; i < 1000; ++i) b.push_back(std::to_string(i));
  EXPECT_TRUE(a == b);
  // The same bytes cut differently are different lists.
  EXPECT_FALSE((StringTable{"ab", "c"}) == (StringTable{"a", "bc"}));
}

TEST(StringTable, PushBackOfItsOwnStringIsSafe) {
  StringTable t{"abc"};
  for (int i = 0; i < 20; ++i) t.push_back(t[0]);  // the view points into the table as it grows
  for (std::string_view s : t) EXPECT_EQ(s, "abc");
}

TEST(StringTable, CopiesShareTheirBytesUntilOneIsChanged) {
  StringTable original{"one", "two"};
  StringTable copy = original;
  EXPECT_TRUE(copy.shares_storage_with(original));  // no second buffer for a copy
  EXPECT_EQ(copy[1].data(), original[1].data());
  copy.push_back(copy[0]);  // the view stays valid: the original still holds those bytes
  EXPECT_FALSE(copy.shares_storage_with(original));
  ASSERT_EQ(original.size(), 2u);  // the original is not changed
  EXPECT_EQ(original[1], "two");
  ASSERT_EQ(copy.size(), 3u);
  EXPECT_EQ(copy[2], "one");
  StringTable again = original;
  original.reserve(10, 100);  // a reserve is a change too
  EXPECT_FALSE(again.shares_storage_with(original));
  EXPECT_TRUE(again == original);
  EXPECT_FALSE(StringTable().shares_storage_with(StringTable()));
}

}  // namespace
}  // namespace llmpack
