// SentencePiece vocabularies read from GGUF metadata (built in memory with
// GgufWriter): keys, defaults, and clear errors for damaged metadata.
#include <gtest/gtest.h>

#include "format/gguf.h"
#include "tokenizer/tokenizer_loader.h"

namespace llmpack {
namespace {

const std::string kMeta = "\xE2\x96\x81";

// <unk> <s> </s> ▁ a ▁a <0x41>
GgufWriter vocab_writer() {
  GgufWriter w;
  w.set_string("tokenizer.ggml.model", "llama");
  w.set_string_array("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", kMeta, "a", kMeta + "a", "<0x41>"});
  w.set_f32_array("tokenizer.ggml.scores", {0, 0, 0, -10, -10, -1, 0});
  w.set_i32_array("tokenizer.ggml.token_type", {2, 3, 3, 1, 1, 1, 6});
  w.set_u32("tokenizer.ggml.bos_token_id", 1);
  w.set_u32("tokenizer.ggml.eos_token_id", 2);
  w.set_u32("tokenizer.ggml.unknown_token_id", 0);
  return w;
}

Result<std::unique_ptr<SpmTokenizer>> load(const GgufWriter& w) {
  const std::vector<uint8_t> bytes = w.to_bytes();
  auto gguf = GgufFile::from_bytes(bytes);
  if (!gguf.ok()) return gguf.status();
  return load_spm_from_gguf(**gguf);
}

std::string error_of(const GgufWriter& w) {
  auto r = load(w);
  return r.ok() ? std::string("(loaded)") : r.status().message();
}

TEST(GgufVocab, ReadsPiecesScoresTypesAndSpecialIds) {
  auto t = load(vocab_writer());
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ((*t)->vocab_size(), 7);
  EXPECT_EQ((*t)->bos_id(), 1);
  EXPECT_EQ((*t)->eos_id(), 2);
  EXPECT_EQ((*t)->default_num_bos(), 1);  // add_bos_token defaults to true
  auto ids = (*t)->encode("a a", 1, 1);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, (std::vector<int32_t>{1, 5, 5, 2}));
  EXPECT_EQ(*(*t)->decode(5, 6), "A");  // byte piece
  EXPECT_EQ(*(*t)->decode(5, 1), "");   // control
}

TEST(GgufVocab, FlagsChangeTheRules) {
  GgufWriter w = vocab_writer();
  w.set_bool("tokenizer.ggml.add_bos_token", false);
  w.set_bool("tokenizer.ggml.add_space_prefix", false);
  auto t = load(w);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ((*t)->default_num_bos(), 0);
  auto ids = (*t)->encode("a a", 0, 0);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, (std::vector<int32_t>{4, 5}));  // no dummy prefix
}

// SentencePiece's remove_extra_whitespaces, as a .model carries it to a
// package: leading spaces go, runs become one, trailing spaces and U+2581 go.
TEST(GgufVocab, RemoveExtraWhitespacesCollapsesAndTrimsSpaces) {
  GgufWriter w = vocab_writer();
  auto plain = load(w);
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  // The flag is off by default.
  EXPECT_EQ(*(*plain)->encode("  a  a ", 0, 0), (std::vector<int32_t>{3, 3, 5, 3, 5, 3}));
  w.set_bool("tokenizer.ggml.remove_extra_whitespaces", true);
  auto t = load(w);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(*(*t)->encode("  a  a ", 0, 0), (std::vector<int32_t>{5, 5}));
  EXPECT_EQ(*(*t)->encode("a " + kMeta + " " + kMeta, 0, 0), (std::vector<int32_t>{5}));
  EXPECT_EQ(*(*t)->encode(kMeta + "a", 0, 0), (std::vector<int32_t>{3, 5}));  // a leading U+2581 stays
  EXPECT_EQ(*(*t)->encode("   ", 0, 0), (std::vector<int32_t>{}));
  EXPECT_EQ((*t)->normalize(" a  a "), kMeta + "a" + kMeta + "a");
}

TEST(GgufVocab, OtherModelsAndMissingKeysAreRefused) {
  GgufWriter bpe = vocab_writer();
  bpe.set_string("tokenizer.ggml.model", "gpt2");
  EXPECT_NE(error_of(bpe).find("\"gpt2\" is not supported"), std::string::npos) << error_of(bpe);
  GgufWriter none;
  none.set_string_array("tokenizer.ggml.tokens", {"a"});
  EXPECT_NE(error_of(none).find("tokenizer.ggml.model is missing"), std::string::npos) << error_of(none);
  GgufWriter no_tokens;
  no_tokens.set_string("tokenizer.ggml.model", "llama");
  EXPECT_NE(error_of(no_tokens).find("tokenizer.ggml.tokens"), std::string::npos) << error_of(no_tokens);
}

TEST(GgufVocab, InconsistentArraysAreErrors) {
  GgufWriter scores = vocab_writer();
  scores.set_f32_array("tokenizer.ggml.scores", {0, 0});
  EXPECT_NE(error_of(scores).find("scores has 2 entries"), std::string::npos) << error_of(scores);
  GgufWriter types = vocab_writer();
  types.set_i32_array("tokenizer.ggml.token_type", {1, 1, 1, 1, 1, 1, 9});
  EXPECT_NE(error_of(types).find("token 6 is 9"), std::string::npos) << error_of(types);
  GgufWriter bos = vocab_writer();
  bos.set_u32("tokenizer.ggml.bos_token_id", 70);
  EXPECT_NE(error_of(bos).find("bos_token_id is 70"), std::string::npos) << error_of(bos);
  GgufWriter wrong_kind = vocab_writer();
  wrong_kind.set_string("tokenizer.ggml.scores", "high");
  EXPECT_NE(error_of(wrong_kind).find("scores"), std::string::npos) << error_of(wrong_kind);
}

TEST(GgufVocab, NoneSentinelMeansNoSpecialToken) {
  GgufWriter w = vocab_writer();
  w.set_u32("tokenizer.ggml.eos_token_id", 0xFFFFFFFFu);
  auto t = load(w);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ((*t)->eos_id(), -1);
  EXPECT_FALSE((*t)->encode("a", 0, 1).ok());
}

}  // namespace
}  // namespace llmpack
