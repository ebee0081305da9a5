// llama2.c tokenizer.bin files (tok512.bin, Llama 2 tokenizer.bin): llama2.c
// encoder semantics, cross-checks with the same vocabularies stored in GGUF,
// decode round trips, and damaged files.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/fixtures.h"
#include "format/gguf.h"
#include "reference_encoder.h"
#include "tokenizer/tokenizer_loader.h"

namespace llmpack {
namespace {

using Ids = std::vector<int32_t>;

std::unique_ptr<SpmTokenizer> load_bin(const std::string& path, int32_t vocab_size) {
  auto tok = load_llama2c_tokenizer(path, vocab_size);
  EXPECT_TRUE(tok.ok()) << tok.status().message();
  return tok.ok() ? std::move(*tok) : nullptr;
}

std::unique_ptr<SpmTokenizer> load_gguf(const std::string& path) {
  auto gguf = GgufFile::open(path);
  EXPECT_TRUE(gguf.ok()) << gguf.status().message();
  if (!gguf.ok()) return nullptr;
  auto tok = load_spm_from_gguf(**gguf);
  EXPECT_TRUE(tok.ok()) << tok.status().message();
  return tok.ok() ? std::move(*tok) : nullptr;
}

Ids encode(const Tokenizer& t, std::string_view text, int n_bos = 1) {
  auto r = t.encode(text, n_bos, 0);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : Ids{};
}

std::string decode_all(const Tokenizer& t, const Ids& ids) {
  std::string out;
  int32_t prev = -1;
  for (int32_t id : ids) {
    auto piece = t.decode(prev, id);
    EXPECT_TRUE(piece.ok()) << piece.status().message();
    if (piece.ok()) out += *piece;
    prev = id;
  }
  return out;
}

const std::vector<std::string>& sample_texts() {
  static const std::vector<std::string> kTexts = {
      "Once upon a time, there was a little girl",
      "Hello world",
      " leading space",
      "trailing space ",
      "multiple   spaces\tand\ttabs\n\nnewlines\n",
      "   ",
      "\n",
      "中文字符和日本語のテキスト",
      "emoji 🙂🚀👍🏽 and more 🇫🇷",
      "Ünïcödé àccents ß ﬁ Ω ж",
      "numbers 1234567890 3.14159",
      "symbols <s> </s> <0x41> ▁ `~!@#$%^&*()_+-={}[]|\\:;\"'<>,.?/",
      "a",
  };
  return kTexts;
}

TEST(Llama2cTokenizer, Tok512MatchesTheStories260KPrompt) {
  LLMPACK_REQUIRE_FIXTURE(path, "llama2c/tok512.bin");
  auto t = load_bin(path, 512);
  ASSERT_TRUE(t);
  EXPECT_FALSE(t->uses_meta_space());
  EXPECT_EQ(encode(*t, "Once upon a time, there was a little girl"),
            (Ids{1, 403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315, 421}));
  EXPECT_EQ(encode(*t, ""), (Ids{1}));  // empty text: just BOS
  EXPECT_EQ(t->bos_id(), 1);
  EXPECT_EQ(t->eos_id(), 2);
}

TEST(Llama2cTokenizer, DecodesTheGreedyStories260KSample) {
  LLMPACK_REQUIRE_FIXTURE(path, "llama2c/tok512.bin");
  LLMPACK_REQUIRE_FIXTURE(json_path, "llama2c/stories260K_greedy_256.json");
  auto t = load_bin(path, 512);
  ASSERT_TRUE(t);
  std::ifstream in(json_path);
  const nlohmann::json j = nlohmann::json::parse(in);
  Ids ids = {1};
  for (const auto& id : j["generated_ids"]) ids.push_back(id.get<int32_t>());
  EXPECT_EQ(decode_all(*t, ids), j["generated_text"].get<std::string>());
}

TEST(Llama2cTokenizer, ByteFallbackIdsAreBytePlusThree) {
  LLMPACK_REQUIRE_FIXTURE(path, "llama2c/tokenizer.bin");
  auto t = load_bin(path, 32000);
  ASSERT_TRUE(t);
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    EXPECT_EQ(t->find_piece(name), b + 3);
    EXPECT_EQ(*t->decode(5, b + 3), std::string(1, static_cast<char>(b)));
  }
  EXPECT_EQ(*t->decode(5, 1), "");  // "\n<s>\n" is a control token
  EXPECT_EQ(*t->decode(5, 2), "");
}

// The fast encoder against the quadratic reference over the same vocabulary.
TEST(Llama2cTokenizer, MatchesTheRunCEncoderOnManyStrings) {
  for (const char* name : {"llama2c/tok512.bin", "llama2c/tokenizer.bin"}) {
    LLMPACK_REQUIRE_FIXTURE(path, name);
    auto t = load_bin(path, -1);
    ASSERT_TRUE(t);
    const testing::ReferenceEncoder reference(t->vocab(), false);
    for (const auto& text : sample_texts()) {
      EXPECT_EQ(encode(*t, text, 0), reference.encode(text)) << name << ": " << text;
    }
    for (uint32_t seed = 0; seed < 150; ++seed) {
      const std::string text = testing::random_text(seed, 1 + seed % 60);
      ASSERT_EQ(encode(*t, text, 0), reference.encode(text)) << name << ": " << text;
    }
  }
}

// The same vocabularies in GGUF form ('▁' instead of ' ') give the same ids,
// except for text holding a literal '▁', which SentencePiece vocabularies
// cannot tell from a space (it is left out here).
bool has_meta_space(const std::string& text) { return text.find("\xE2\x96\x81") != std::string::npos; }

TEST(Llama2cTokenizer, AgreesWithTheGgufForm) {
  const std::pair<const char*, const char*> kPairs[] = {
      {"llama2c/tok512.bin", "gguf/stories260K.gguf"},
      {"llama2c/tokenizer.bin", "llama.cpp-vocab/ggml-vocab-llama-spm.gguf"},
  };
  for (const auto& [bin_name, gguf_name] : kPairs) {
    LLMPACK_REQUIRE_FIXTURE(bin_path, bin_name);
    LLMPACK_REQUIRE_FIXTURE(gguf_path, gguf_name);
    auto a = load_bin(bin_path, -1);
    auto b = load_gguf(gguf_path);
    ASSERT_TRUE(a && b);
    ASSERT_EQ(a->vocab_size(), b->vocab_size());
    EXPECT_FALSE(a->uses_meta_space());
    EXPECT_TRUE(b->uses_meta_space());
    for (const auto& text : sample_texts()) {
      if (has_meta_space(text)) continue;
      EXPECT_EQ(encode(*a, text), encode(*b, text)) << bin_name << ": " << text;
    }
    int compared = 0;
    for (uint32_t seed = 1000; seed < 1300; ++seed) {
      const std::string text = testing::random_text(seed, 1 + seed % 50);
      if (has_meta_space(text)) continue;
      ++compared;
      ASSERT_EQ(encode(*a, text), encode(*b, text)) << bin_name << ": " << text;
      const Ids ids = encode(*a, text);
      ASSERT_EQ(decode_all(*a, ids), decode_all(*b, ids)) << text;
    }
    EXPECT_GT(compared, 100);
  }
}

TEST(Llama2cTokenizer, DecodeOfEncodeIsTheText) {
  for (const char* name : {"llama2c/tok512.bin", "llama2c/tokenizer.bin"}) {
    LLMPACK_REQUIRE_FIXTURE(path, name);
    auto t = load_bin(path, -1);
    ASSERT_TRUE(t);
    for (const auto& text : sample_texts()) EXPECT_EQ(decode_all(*t, encode(*t, text)), text) << name;
    for (uint32_t seed = 0; seed < 100; ++seed) {
      const std::string text = testing::random_text(seed, 1 + seed % 40);
      ASSERT_EQ(decode_all(*t, encode(*t, text)), text) << name;
    }
    // Without BOS, the first piece still loses only the dummy prefix.
    EXPECT_EQ(decode_all(*t, encode(*t, "  two spaces", 0)), "  two spaces");
  }
}

// A benchmark, not a timed test (run with --gtest_also_run_disabled_tests on a
// Release build): loading the 32000-piece Llama 2 tokenizer.bin took well under
// 50 ms there. Only the load's result is asserted.
TEST(Llama2cTokenizer, DISABLED_LoadSpeed) {
  LLMPACK_REQUIRE_FIXTURE(path, "llama2c/tokenizer.bin");
  const auto start = std::chrono::steady_clock::now();
  auto t = load_bin(path, 32000);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(t);
  EXPECT_EQ(t->vocab_size(), 32000);
  std::printf("[ bench    ] llama2c tokenizer.bin (32000 pieces): load %.2f ms\n", ms);
  RecordProperty("load_ms", std::to_string(ms));
}

TEST(Llama2cTokenizer, LoadTokenizerTellsFormatsApart) {
  LLMPACK_REQUIRE_FIXTURE(bin_path, "llama2c/tok512.bin");
  LLMPACK_REQUIRE_FIXTURE(gguf_path, "gguf/stories260K.gguf");
  auto a = load_tokenizer(bin_path);
  auto b = load_tokenizer(gguf_path);
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ((*a)->vocab_size(), 512);
  EXPECT_EQ((*b)->vocab_size(), 512);
  EXPECT_EQ(encode(**a, "Once upon a time"), encode(**b, "Once upon a time"));
  auto missing = load_tokenizer("/nonexistent/tokenizer.bin");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("/nonexistent/tokenizer.bin"), std::string::npos);
}

// --- damaged files ---------------------------------------------------------

std::vector<uint8_t> make_bin(int32_t max_len, const std::vector<std::pair<float, std::string>>& tokens) {
  std::vector<uint8_t> out(4);
  std::memcpy(out.data(), &max_len, 4);
  for (const auto& [score, text] : tokens) {
    const int32_t len = static_cast<int32_t>(text.size());
    const size_t at = out.size();
    out.resize(at + 8 + text.size());
    std::memcpy(out.data() + at, &score, 4);
    std::memcpy(out.data() + at + 4, &len, 4);
    std::memcpy(out.data() + at + 8, text.data(), text.size());
  }
  return out;
}

std::string error_of(const std::vector<uint8_t>& bytes, int32_t vocab_size) {
  auto r = parse_llama2c_tokenizer(bytes, vocab_size);
  return r.ok() ? std::string("(loaded)") : r.status().message();
}

TEST(Llama2cTokenizer, SmallFileLoads) {
  const auto bytes = make_bin(4, {{0, "<unk>"}, {0, "\n<s>\n"}, {0, "\n</s>\n"}, {-1, " "}, {-1, "a"}, {0, " a"}});
  EXPECT_NE(error_of(bytes, 6), "(loaded)");  // "\n<s>\n" is 5 bytes, over max 4
  const auto ok = make_bin(8, {{0, "<unk>"}, {0, "\n<s>\n"}, {0, "\n</s>\n"}, {-1, " "}, {-1, "a"}, {0, " a"}});
  auto t = parse_llama2c_tokenizer(ok, 6);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(encode(**t, "a a"), (Ids{1, 5, 5}));
}

TEST(Llama2cTokenizer, DamagedFilesGiveClearErrors) {
  const auto good = make_bin(8, {{0, "<unk>"}, {0, "\n<s>\n"}, {0, "\n</s>\n"}, {-1, " "}, {-1, "a"}});
  // Truncated inside the last token's text.
  std::vector<uint8_t> truncated(good.begin(), good.end() - 1);
  EXPECT_NE(error_of(truncated, 5).find("truncated"), std::string::npos) << error_of(truncated, 5);
  // Truncated inside a score.
  std::vector<uint8_t> cut_score(good.begin(), good.end() - 8);
  cut_score.resize(cut_score.size() + 2);
  EXPECT_NE(error_of(cut_score, 5).find("truncated"), std::string::npos) << error_of(cut_score, 5);
  // A negative length.
  auto negative = good;
  const int32_t minus = -5;
  std::memcpy(negative.data() + 4 + 4, &minus, 4);
  EXPECT_NE(error_of(negative, 5).find("token 0 has length -5"), std::string::npos) << error_of(negative, 5);
  // A length over max_token_length.
  auto too_long = make_bin(3, {{0, "<unk>"}});
  EXPECT_NE(error_of(too_long, 1).find("length 5, expected 0..3"), std::string::npos) << error_of(too_long, 1);
  // A bad max_token_length.
  EXPECT_NE(error_of(make_bin(0, {}), 1).find("max_token_length"), std::string::npos);
  EXPECT_NE(error_of(make_bin(-7, {}), 1).find("found -7"), std::string::npos);
  // Empty file, and no tokens.
  EXPECT_NE(error_of({}, 1).find("truncated"), std::string::npos) << error_of({}, 1);
  EXPECT_NE(error_of(make_bin(8, {}), -1).find("none"), std::string::npos) << error_of(make_bin(8, {}), -1);
  // Wrong vocabulary size.
  EXPECT_NE(error_of(good, 512).find("tokenizer has 5 tokens, the model expects 512"), std::string::npos)
      << error_of(good, 512);
}

TEST(Llama2cTokenizer, WrongVocabularySizeNamesBothCounts) {
  LLMPACK_REQUIRE_FIXTURE(path, "llama2c/tokenizer.bin");
  auto r = load_llama2c_tokenizer(path, 512);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("tokenizer has 32000 tokens, the model expects 512"), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find(path), std::string::npos);
}

}  // namespace
}  // namespace llmpack
