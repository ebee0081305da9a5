// StreamingDecoder: whole UTF-8 characters only (CONTRACT G4), U+FFFD for
// bytes that can never form one.
#include "tokenizer/streaming_decoder.h"

#include <gtest/gtest.h>

#include <cstdio>

#include "common/fixtures.h"
#include "core/utf8.h"
#include "reference_encoder.h"
#include "tokenizer/spm_tokenizer.h"
#include "tokenizer/tokenizer_loader.h"

namespace llmpack {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";

// <unk> <s> </s>, the 256 byte pieces (id = 3 + byte), then "▁a".
std::unique_ptr<SpmTokenizer> byte_tokenizer() {
  SpmVocab v;
  v.pieces = {"<unk>", "<s>", "</s>"};
  v.types = {TokenType::kUnknown, TokenType::kControl, TokenType::kControl};
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    v.pieces.push_back(name);
    v.types.push_back(TokenType::kByte);
  }
  v.pieces.push_back("\xE2\x96\x81" "a");
  v.types.push_back(TokenType::kNormal);
  v.scores.assign(v.pieces.size(), 0.0f);
  v.unk_id = 0;
  v.bos_id = 1;
  v.eos_id = 2;
  auto t = SpmTokenizer::create(std::move(v));
  EXPECT_TRUE(t.ok()) << t.status().message();
  return std::move(*t);
}

int32_t byte_id(unsigned char b) { return 3 + b; }

std::string push(StreamingDecoder& d, int32_t id) {
  auto r = d.push(byte_id('x'), id);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : "<error>";
}

TEST(StreamingDecoder, EmojiSplitAcrossByteTokensWaitsUntilComplete) {
  auto t = byte_tokenizer();
  StreamingDecoder d(*t);
  // 🙂 = F0 9F 99 82
  EXPECT_EQ(push(d, byte_id(0xF0)), "");
  EXPECT_EQ(push(d, byte_id(0x9F)), "");
  EXPECT_EQ(push(d, byte_id(0x99)), "");
  EXPECT_EQ(push(d, byte_id(0x82)), "\xF0\x9F\x99\x82");
  EXPECT_EQ(d.flush(), "");
}

TEST(StreamingDecoder, AsciiAndWholePiecesPassStraightThrough) {
  auto t = byte_tokenizer();
  StreamingDecoder d(*t);
  EXPECT_EQ(push(d, byte_id('h')), "h");
  EXPECT_EQ(push(d, t->vocab_size() - 1), " a");
  auto first = d.push(1, t->vocab_size() - 1);  // after BOS: no leading space
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(*first, "a");
  EXPECT_EQ(push(d, 2), "");  // EOS gives no text
}

TEST(StreamingDecoder, InvalidBytesBecomeReplacementCharacters) {
  auto t = byte_tokenizer();
  StreamingDecoder d(*t);
  EXPECT_EQ(push(d, byte_id(0xFF)), kFffd);            // never valid
  EXPECT_EQ(push(d, byte_id(0x80)), kFffd);            // stray continuation
  EXPECT_EQ(push(d, byte_id(0xC0)), kFffd);            // overlong lead
  EXPECT_EQ(push(d, byte_id(0xE4)), "");               // 中 begins...
  EXPECT_EQ(push(d, byte_id(0xB8)), "");
  EXPECT_EQ(push(d, byte_id('a')), kFffd + "a");       // ...but breaks off: one U+FFFD
  EXPECT_EQ(push(d, byte_id(0xE0)), "");
  EXPECT_EQ(push(d, byte_id(0x80)), kFffd + kFffd);    // E0 80 is overlong: both bytes bad
  EXPECT_EQ(push(d, byte_id(0xED)), "");
  EXPECT_EQ(push(d, byte_id(0xA0)), kFffd + kFffd);    // a surrogate
}

TEST(StreamingDecoder, FlushReplacesAnUnfinishedCharacter) {
  auto t = byte_tokenizer();
  StreamingDecoder d(*t);
  EXPECT_EQ(push(d, byte_id(0xF0)), "");
  EXPECT_EQ(push(d, byte_id(0x9F)), "");
  EXPECT_EQ(d.flush(), kFffd);
  EXPECT_EQ(d.flush(), "");
  EXPECT_EQ(push(d, byte_id(0xE4)), "");
  d.reset();
  EXPECT_EQ(push(d, byte_id('z')), "z");
}

TEST(StreamingDecoder, UnknownIdsAreErrors) {
  auto t = byte_tokenizer();
  StreamingDecoder d(*t);
  EXPECT_FALSE(d.push(1, t->vocab_size()).ok());
  EXPECT_FALSE(d.push(1, -3).ok());
}

TEST(StreamingDecoder, StreamsTokenizerBinTextInWholeCharacters) {
  LLMPACK_REQUIRE_FIXTURE(path, "llama2c/tok512.bin");
  auto t = load_llama2c_tokenizer(path, 512);
  ASSERT_TRUE(t.ok()) << t.status().message();
  for (uint32_t seed = 0; seed < 50; ++seed) {
    const std::string text = testing::random_text(seed, 30);
    auto ids = (*t)->encode(text, 1, 0);
    ASSERT_TRUE(ids.ok());
    StreamingDecoder d(**t);
    std::string out;
    for (size_t i = 1; i < ids->size(); ++i) {
      auto piece = d.push((*ids)[i - 1], (*ids)[i]);
      ASSERT_TRUE(piece.ok()) << piece.status().message();
      ASSERT_EQ(utf8_first_invalid(*piece), std::string_view::npos) << "a piece splits a character";
      out += *piece;
    }
    out += d.flush();
    EXPECT_EQ(out, text);
  }
}

}  // namespace
}  // namespace llmpack
