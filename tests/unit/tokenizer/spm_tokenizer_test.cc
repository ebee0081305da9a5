// SpmTokenizer on small hand-made vocabularies: merge order, ties, byte
// fallback, unknown characters, invalid UTF-8, decode rules, and the fast
// merge against the plain llama2.c loop.
#include "tokenizer/spm_tokenizer.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <random>

#include "reference_encoder.h"

namespace llmpack {
namespace {

using Ids = std::vector<int32_t>;

// <unk> <s> </s>, then optionally the 256 byte pieces, then `pieces`.
SpmVocab make_vocab(const std::vector<std::pair<std::string, float>>& pieces, bool with_bytes = true) {
  SpmVocab v;
  v.pieces = {"<unk>", "<s>", "</s>"};
  v.scores = {0, 0, 0};
  v.types = {TokenType::kUnknown, TokenType::kControl, TokenType::kControl};
  if (with_bytes) {
    for (int b = 0; b < 256; ++b) {
      char name[8];
      std::snprintf(name, sizeof(name), "<0x%02X>", b);
      v.pieces.push_back(name);
      v.scores.push_back(0);
      v.types.push_back(TokenType::kByte);
    }
  }
  for (const auto& [p, s] : pieces) {
    v.pieces.push_back(p);
    v.scores.push_back(s);
    v.types.push_back(TokenType::kNormal);
  }
  v.unk_id = 0;
  v.bos_id = 1;
  v.eos_id = 2;
  return v;
}

std::unique_ptr<SpmTokenizer> make(SpmVocab v) {
  auto tok = SpmTokenizer::create(std::move(v));
  EXPECT_TRUE(tok.ok()) << tok.status().message();
  return tok.ok() ? std::move(*tok) : nullptr;
}

int32_t id_of(const SpmTokenizer& t, std::string_view piece) { return t.find_piece(piece); }

Ids encode(const SpmTokenizer& t, std::string_view text, int n_bos = 0) {
  auto r = t.encode(text, n_bos, 0);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : Ids{};
}

const std::string kSpmMeta = "\xE2\x96\x81";

TEST(SpmTokenizer, MergesTheHighestScoringPairFirst) {
  auto t = make(make_vocab({{kSpmMeta, -10}, {"a", -10}, {"b", -10}, {"c", -10}, {"ab", -1}, {"bc", -2}}));
  EXPECT_EQ(encode(*t, "abc"), (Ids{id_of(*t, kSpmMeta), id_of(*t, "ab"), id_of(*t, "c")}));
  auto u = make(make_vocab({{kSpmMeta, -10}, {"a", -10}, {"b", -10}, {"c", -10}, {"ab", -2}, {"bc", -1}}));
  EXPECT_EQ(encode(*u, "abc"), (Ids{id_of(*u, kSpmMeta), id_of(*u, "a"), id_of(*u, "bc")}));
}

TEST(SpmTokenizer, TiesGoToTheLeftmostPair) {
  auto t = make(make_vocab({{kSpmMeta, -10}, {"a", -10}, {"aa", -1}}));
  EXPECT_EQ(encode(*t, "aaa"), (Ids{id_of(*t, kSpmMeta), id_of(*t, "aa"), id_of(*t, "a")}));
  EXPECT_EQ(encode(*t, "aaaaa"), (Ids{id_of(*t, kSpmMeta), id_of(*t, "aa"), id_of(*t, "aa"), id_of(*t, "a")}));
}

TEST(SpmTokenizer, MergedSymbolsKeepMerging) {
  auto t = make(make_vocab({{kSpmMeta, -10}, {"a", -10}, {"b", -10}, {"ab", -1}, {kSpmMeta + "ab", -3}, {"abab", -2}}));
  // ab, ab first (-1), then abab (-2) beats ▁ab (-3).
  EXPECT_EQ(encode(*t, "abab"), (Ids{id_of(*t, kSpmMeta), id_of(*t, "abab")}));
}

TEST(SpmTokenizer, PiecesScoringAtOrBelowMinus1e10NeverMerge) {
  auto t = make(make_vocab({{kSpmMeta, -10}, {"a", -10}, {"aa", -1e10f}}));
  EXPECT_EQ(encode(*t, "aa"), (Ids{id_of(*t, kSpmMeta), id_of(*t, "a"), id_of(*t, "a")}));
}

TEST(SpmTokenizer, SpacesBecomeMetaSpaceAndDummyPrefixIsAdded) {
  auto t = make(make_vocab({{kSpmMeta, -10}, {"a", -10}, {kSpmMeta + "a", -1}}));
  EXPECT_TRUE(t->uses_meta_space());
  EXPECT_EQ(t->normalize("a a"), kSpmMeta + "a" + kSpmMeta + "a");
  EXPECT_EQ(encode(*t, "a a"), (Ids{id_of(*t, kSpmMeta + "a"), id_of(*t, kSpmMeta + "a")}));
  EXPECT_EQ(encode(*t, ""), Ids{});
}

TEST(SpmTokenizer, PlainSpaceVocabulariesKeepSpaces) {
  auto t = make(make_vocab({{" ", -10}, {"a", -10}, {" a", -1}}));
  EXPECT_FALSE(t->uses_meta_space());
  EXPECT_EQ(t->normalize("a a"), " a a");
  EXPECT_EQ(encode(*t, "a a"), (Ids{id_of(*t, " a"), id_of(*t, " a")}));
}

TEST(SpmTokenizer, NoDummyPrefixWhenTheVocabularySaysSo) {
  SpmVocab v = make_vocab({{kSpmMeta, -10}, {"a", -10}});
  v.add_dummy_prefix = false;
  auto t = make(std::move(v));
  EXPECT_EQ(encode(*t, "a"), (Ids{id_of(*t, "a")}));
}

TEST(SpmTokenizer, UnknownCharactersUseByteFallback) {
  auto t = make(make_vocab({{kSpmMeta, -10}, {"a", -10}}));
  // 中 = E4 B8 AD; byte pieces are ids 3 + byte.
  EXPECT_EQ(encode(*t, "a中"), (Ids{id_of(*t, kSpmMeta), id_of(*t, "a"), 3 + 0xE4, 3 + 0xB8, 3 + 0xAD}));
}

TEST(SpmTokenizer, InvalidUtf8GoesThroughByteFallback) {
  auto t = make(make_vocab({{kSpmMeta, -10}, {"a", -10}}));
  EXPECT_EQ(encode(*t, "a\xFF" "a"), (Ids{id_of(*t, kSpmMeta), id_of(*t, "a"), 3 + 0xFF, id_of(*t, "a")}));
  // A truncated sequence followed by ASCII: each stray byte on its own.
  EXPECT_EQ(encode(*t, "\xE4\xB8" "a"), (Ids{id_of(*t, kSpmMeta), 3 + 0xE4, 3 + 0xB8, id_of(*t, "a")}));
}

TEST(SpmTokenizer, InvalidUtf8WithoutByteFallbackNamesTheOffset) {
  auto t = make(make_vocab({{kSpmMeta, -10}, {"a", -10}}, /*with_bytes=*/false));
  auto r = t->encode("a a\xC3(", 1, 0);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("invalid UTF-8 at byte 3"), std::string::npos) << r.status().message();
}

TEST(SpmTokenizer, UnknownCharacterWithoutByteFallbackIsUnk) {
  auto t = make(make_vocab({{kSpmMeta, -10}, {"a", -10}}, /*with_bytes=*/false));
  EXPECT_EQ(encode(*t, "a中a"), (Ids{id_of(*t, kSpmMeta), id_of(*t, "a"), 0, id_of(*t, "a")}));
}

TEST(SpmTokenizer, UnknownCharacterWithoutUnkOrBytesIsAnError) {
  SpmVocab v = make_vocab({{kSpmMeta, -10}, {"a", -10}}, /*with_bytes=*/false);
  v.unk_id = -1;
  auto t = make(std::move(v));
  auto r = t->encode("中", 0, 0);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("not in the vocabulary"), std::string::npos) << r.status().message();
}

TEST(SpmTokenizer, BosAndEos) {
  auto t = make(make_vocab({{kSpmMeta, -10}, {"a", -10}}));
  EXPECT_EQ(encode(*t, "", 1), (Ids{1}));
  auto r = t->encode("a", 2, 1);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, (Ids{1, 1, id_of(*t, kSpmMeta), id_of(*t, "a"), 2}));
  EXPECT_FALSE(t->encode("a", -1, 0).ok());
  SpmVocab v = make_vocab({{"a", 0}});
  v.bos_id = -1;
  auto nb = make(std::move(v));
  auto e = nb->encode("a", 1, 0);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("no BOS"), std::string::npos);
}

TEST(SpmTokenizer, DecodeRules) {
  auto t = make(make_vocab({{kSpmMeta, -10}, {"a", -10}, {kSpmMeta + "a", -1}}));
  const int32_t meta_a = id_of(*t, kSpmMeta + "a");
  EXPECT_EQ(*t->decode(1, meta_a), "a");           // after BOS the dummy space goes
  EXPECT_EQ(*t->decode(-1, meta_a), "a");          // so it does at the very start
  EXPECT_EQ(*t->decode(meta_a, meta_a), " a");     // elsewhere it is a space
  EXPECT_EQ(*t->decode(meta_a, 3 + 0x0A), "\n");   // <0x0A>
  EXPECT_EQ(*t->decode(meta_a, 3 + 0xE4), "\xE4");
  EXPECT_EQ(*t->decode(meta_a, 1), "");            // control tokens
  EXPECT_EQ(*t->decode(meta_a, 2), "");
  EXPECT_FALSE(t->decode(1, t->vocab_size()).ok());
  EXPECT_FALSE(t->decode(1, -1).ok());
  EXPECT_EQ(t->piece(meta_a), kSpmMeta + "a");
  EXPECT_EQ(t->piece(99999), "");
}

TEST(SpmTokenizer, CreateRejectsInconsistentVocabularies) {
  SpmVocab empty;
  EXPECT_FALSE(SpmTokenizer::create(empty).ok());
  SpmVocab v = make_vocab({{"a", 0}});
  v.scores.pop_back();
  auto r = SpmTokenizer::create(v);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("scores"), std::string::npos) << r.status().message();
  SpmVocab w = make_vocab({{"a", 0}});
  w.bos_id = 100000;
  auto s = SpmTokenizer::create(w);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("BOS id 100000"), std::string::npos) << s.status().message();
}

TEST(SpmTokenizer, ByteFallbackRoundTripsThroughDecode) {
  auto t = make(make_vocab({{kSpmMeta, -10}, {"a", -10}}));
  const std::string text = "a 中🙂é";
  std::string out;
  int32_t prev = 1;
  for (int32_t id : encode(*t, text)) {
    out += *t->decode(prev, id);
    prev = id;
  }
  EXPECT_EQ(out, text);
}

// Random vocabularies over a tiny alphabet with few distinct scores, so ties
// and chains of merges are everywhere: the priority-queue merge must match
// llama2.c's plain rescanning loop exactly.
TEST(SpmTokenizer, FastMergeEqualsPlainLoopOnRandomVocabularies) {
  std::mt19937 rng(1234);
  const std::vector<std::string> alphabet = {"a", "b", "c", kSpmMeta, "é"};
  for (int round = 0; round < 40; ++round) {
    std::vector<std::pair<std::string, float>> pieces;
    for (const auto& ch : alphabet) pieces.push_back({ch, -100.0f});
    for (int k = 0; k < 60; ++k) {
      std::string p;
      const int len = 2 + static_cast<int>(rng() % 4);
      for (int j = 0; j < len; ++j) p += alphabet[rng() % alphabet.size()];
      pieces.push_back({p, -static_cast<float>(rng() % 4)});
    }
    SpmVocab v = make_vocab(pieces);
    SpmVocab copy = v;
    auto t = make(std::move(v));
    for (int s = 0; s < 30; ++s) {
      std::string text;
      const int len = static_cast<int>(rng() % 40);
      for (int j = 0; j < len; ++j) {
        const uint32_t c = rng() % 7;
        text += c < 5 ? (alphabet[c] == kSpmMeta ? std::string(" ") : alphabet[c]) : (c == 5 ? "z" : "中");
      }
      ASSERT_EQ(encode(*t, text), testing::reference_encode(copy, true, text)) << "text: " << text;
    }
  }
}

TEST(SpmTokenizer, LongInputEncodesQuickly) {
  // 200k characters of one letter: the plain loop would rescan ~10^10 pairs.
  std::vector<std::pair<std::string, float>> pieces = {{kSpmMeta, -10}, {"a", -10}};
  std::string p = "a";
  for (int k = 1; k < 8; ++k) {
    p += "a";
    pieces.push_back({p, -static_cast<float>(k)});
  }
  auto t = make(make_vocab(pieces));
  const std::string text(200000, 'a');
  auto ids = encode(*t, text);
  ASSERT_FALSE(ids.empty());
  std::string back;
  int32_t prev = 1;
  for (int32_t id : ids) {
    back += *t->decode(prev, id);
    prev = id;
  }
  EXPECT_EQ(back, text);
}

}  // namespace
}  // namespace llmpack
