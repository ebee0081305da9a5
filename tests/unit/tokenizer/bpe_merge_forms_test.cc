// BPE merges handed over as GGUF stores them ("left right", straight from
// the file's string table) must tokenize exactly as the same merges given as
// pairs, and the merge table must hold any pair of ids, (0, 0) included.
#include <gtest/gtest.h>

#include <climits>
#include <cstdint>
#include <map>
#include <random>
#include <set>

#include "core/string_table.h"
#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/pretokenizer.h"

namespace llmpack::testing {
namespace {

BpeVocab letters_vocab() {
  BpeVocab v;
  v.tokens = {"a", "b", "c", "d"};
  auto pre = pretokenizer_regexes("gpt-2");
  EXPECT_TRUE(pre.ok());
  if (pre.ok()) v.pretokenizer_regexes = *pre;
  return v;
}

// Grows `v` with `n` random merges of existing tokens (some repeated, some
// whose result is already a token) and returns them in rank order.
std::vector<std::pair<std::string, std::string>> random_merges(BpeVocab* v, int n, std::mt19937* rng) {
  std::vector<std::pair<std::string, std::string>> merges;
  std::set<std::string> known(v->tokens.begin(), v->tokens.end());
  for (int i = 0; i < n; ++i) {
    std::uniform_int_distribution<size_t> pick(0, v->tokens.size() - 1);
    const std::string a(v->tokens[pick(*rng)]);
    const std::string b(v->tokens[pick(*rng)]);
    if (a.size() + b.size() > 12) continue;
    merges.emplace_back(a, b);
    if (known.insert(a + b).second) v->tokens.push_back(a + b);
  }
  return merges;
}

std::string random_word(std::mt19937* rng) {
  std::uniform_int_distribution<int> len(1, 30);
  std::uniform_int_distribution<int> letter(0, 3);
  std::string s;
  for (int i = len(*rng); i > 0; --i) s += static_cast<char>('a' + letter(*rng));
  return s;
}

TEST(BpeMergeForms, JoinedMergesTokenizeAsPairs) {
  std::mt19937 rng(7);
  BpeVocab vocab = letters_vocab();
  const auto pairs = random_merges(&vocab, 400, &rng);
  StringTable joined;
  for (const auto& [a, b] : pairs) joined.push_back(a + " " + b);

  BpeVocab with_pairs = vocab;
  with_pairs.merges = pairs;
  auto from_pairs = BpeTokenizer::create(with_pairs);
  auto from_joined = BpeTokenizer::create(vocab, joined);
  ASSERT_TRUE(from_pairs.ok()) << from_pairs.status().message();
  ASSERT_TRUE(from_joined.ok()) << from_joined.status().message();
  EXPECT_EQ((*from_joined)->num_merges(), (*from_pairs)->num_merges());
  EXPECT_GT((*from_joined)->num_merges(), 100u);
  EXPECT_TRUE((*from_joined)->vocab().merges.empty()) << "joined merges are not kept as pairs";

  int merged = 0;
  for (int i = 0; i < 300; ++i) {
    const std::string text = random_word(&rng);
    auto a = (*from_pairs)->encode(text, 0, 0);
    auto b = (*from_joined)->encode(text, 0, 0);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(*b, *a) << text;
    if (a->size() < text.size()) ++merged;
  }
  EXPECT_GT(merged, 200) << "the merges should apply to most words";
}

// BPE written out plainly: merge the adjacent pair of lowest rank (the
// leftmost among equals) while one applies; a text's id is the lowest id
// spelled so. The tokenizer builds its tables in batches of lookups: this
// checks ranks and duplicate texts across those batches.
std::vector<int32_t> plain_bpe(const BpeVocab& v, const std::vector<std::pair<std::string, std::string>>& merges,
                               const std::string& word) {
  std::map<std::pair<std::string, std::string>, size_t> rank;
  for (size_t r = 0; r < merges.size(); ++r) rank.emplace(merges[r], r);  // the first rank wins
  std::map<std::string, int32_t> id;
  for (size_t i = 0; i < v.tokens.size(); ++i) id.emplace(std::string(v.tokens[i]), static_cast<int32_t>(i));
  std::vector<std::string> parts;
  for (char c : word) parts.emplace_back(1, c);
  for (;;) {
    size_t best = parts.size();
    size_t best_rank = SIZE_MAX;
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      const auto it = rank.find({parts[i], parts[i + 1]});
      if (it != rank.end() && it->second < best_rank && id.count(parts[i] + parts[i + 1])) {
        best = i;
        best_rank = it->second;
      }
    }
    if (best == parts.size()) break;
    parts[best] += parts[best + 1];
    parts.erase(parts.begin() + static_cast<std::ptrdiff_t>(best) + 1);
  }
  std::vector<int32_t> ids;
  for (const std::string& p : parts) ids.push_back(id.at(p));
  return ids;
}

TEST(BpeMergeForms, ManyMergesAndDuplicateTextsMatchPlainBpe) {
  std::mt19937 rng(11);
  BpeVocab vocab = letters_vocab();
  for (const char* t : {"ab", "ab", "ba", "cd", "ba"}) vocab.tokens.push_back(t);  // ids 4-8: duplicates
  auto merges = random_merges(&vocab, 1200, &rng);
  merges.insert(merges.begin() + 50, {"a", "b"});
  merges.insert(merges.begin() + 130, {"b", "a"});
  for (size_t i = 0; i < 40; ++i) vocab.tokens.push_back(std::string(vocab.tokens[20 + 3 * i]));  // more, later
  StringTable joined;
  for (const auto& [a, b] : merges) joined.push_back(a + " " + b);
  auto tok = BpeTokenizer::create(vocab, joined);
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  ASSERT_GT(merges.size(), 150u);  // batches of 32 merges
  for (int i = 0; i < 400; ++i) {
    const std::string word = i < 4 ? std::string(i % 2 ? "ab" : "ba") : random_word(&rng);
    auto ids = (*tok)->encode(word, 0, 0);
    ASSERT_TRUE(ids.ok());
    ASSERT_EQ(*ids, plain_bpe(vocab, merges, word)) << word;
  }
  EXPECT_EQ(*(*tok)->encode("ab", 0, 0), std::vector<int32_t>{4});
  EXPECT_EQ(*(*tok)->encode("ba", 0, 0), std::vector<int32_t>{6});
}

TEST(BpeMergeForms, TokenZeroMergesWithItself) {
  // Ids 0 and 0 make the pair key 0; the merge table must not take it for an
  // empty slot.
  BpeVocab vocab = letters_vocab();
  vocab.tokens.push_back("aa");
  vocab.tokens.push_back("aaaa");
  auto tok = BpeTokenizer::create(vocab, StringTable{"a a", "aa aa"});
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  auto ids = (*tok)->encode("aaaaa", 0, 0);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, (std::vector<int32_t>{5, 0}));  // "aaaa" "a"
}

TEST(BpeMergeForms, AJoinedMergeWithoutASpaceIsRefused) {
  auto tok = BpeTokenizer::create(letters_vocab(), StringTable{"a b", "abc"});
  ASSERT_FALSE(tok.ok());
  EXPECT_NE(tok.status().message().find("merge 1 \"abc\" is not two tokens separated by a space"),
            std::string::npos)
      << tok.status().message();
}

TEST(BpeMergeForms, BothFormsAtOnceAreRefused) {
  BpeVocab vocab = letters_vocab();
  vocab.tokens.push_back("ab");
  vocab.merges = {{"a", "b"}};
  auto tok = BpeTokenizer::create(vocab, StringTable{"a b"});
  ASSERT_FALSE(tok.ok());
  EXPECT_NE(tok.status().message().find("expected one form"), std::string::npos) << tok.status().message();
}

TEST(BpeMergeForms, AMergeListForAVocabularyRankedByIdsIsRefused) {
  BpeVocab vocab = letters_vocab();
  vocab.merges_from_ranks = true;  // tiktoken's rule: no merge list
  auto tok = BpeTokenizer::create(vocab, StringTable{"a b"});
  ASSERT_FALSE(tok.ok());
  EXPECT_NE(tok.status().message().find("merges come from its ranks"), std::string::npos) << tok.status().message();
}

TEST(BpeMergeForms, MergesOfUnknownTokensAreSkippedAndCounted) {
  BpeVocab vocab = letters_vocab();
  vocab.tokens.push_back("ab");
  auto tok = BpeTokenizer::create(vocab, StringTable{"a b", "a x", "c d"});  // "x", "cd" are not tokens
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  EXPECT_EQ((*tok)->num_merges(), 1u);
  EXPECT_EQ((*tok)->skipped_merges(), 2u);
}

}  // namespace
}  // namespace llmpack::testing
