// The SentencePiece .model reader: the fixtures' fields, and damaged protobufs.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "export_test_util.h"
#include "export/model_source.h"
#include "format/mapped_file.h"
#include "format/sentencepiece_model.h"

namespace llmpack {
namespace {

TEST(SentencePieceModel, ReadsLlama2TokenizerFields) {
  LLMPACK_REQUIRE_FIXTURE(path, "llama2c/tokenizer.model");
  auto m = read_sentencepiece_model(path);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->pieces.size(), 32000u);
  EXPECT_EQ(m->model_type, 2);
  EXPECT_TRUE(m->byte_fallback);
  EXPECT_EQ(m->unk_id, 0);
  EXPECT_EQ(m->bos_id, 1);
  EXPECT_EQ(m->eos_id, 2);
  EXPECT_EQ(m->pad_id, -1);
  EXPECT_EQ(m->normalizer_name, "identity");
  EXPECT_TRUE(m->add_dummy_prefix);
  EXPECT_FALSE(m->remove_extra_whitespaces);
  EXPECT_EQ(m->pieces[1], "<s>");
  EXPECT_EQ(m->types[1], 3);   // control
  EXPECT_EQ(m->pieces[3], "<0x00>");
  EXPECT_EQ(m->types[3], 6);   // byte
}

TEST(SentencePieceModel, Tok512DefaultsApply) {
  LLMPACK_REQUIRE_FIXTURE(path, "llama2c/tok512.model");
  auto m = read_sentencepiece_model(path);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->pieces.size(), 512u);
  EXPECT_TRUE(m->add_dummy_prefix);  // omitted in the file: proto default
  EXPECT_TRUE(m->byte_fallback);
}

// tok512.model asks for SentencePiece's remove_extra_whitespaces (the proto's
// default); the package keeps the rule, Llama 2's (which turns it off) does not.
TEST(SentencePieceModel, ExtraWhitespaceRuleReachesThePackage) {
  LLMPACK_REQUIRE_FIXTURE(tok512, "llama2c/tok512.model");
  LLMPACK_REQUIRE_FIXTURE(llama2, "llama2c/tokenizer.model");
  const auto has_rule = [](const std::string& path) {
    auto m = read_tokenizer_metadata(path);
    EXPECT_TRUE(m.ok()) << m.status().message();
    if (!m.ok()) return false;
    for (const auto& [key, value] : m->keys) {
      if (key == "tokenizer.ggml.remove_extra_whitespaces") return true;
    }
    return false;
  };
  EXPECT_TRUE(read_sentencepiece_model(tok512)->remove_extra_whitespaces);
  EXPECT_TRUE(has_rule(tok512));
  EXPECT_FALSE(has_rule(llama2));
}

// A normalizer other than identity (its character map is not read) is named
// in the export's description of the tokenizer.
TEST(SentencePieceModel, UnappliedNormalizerIsSaid) {
  LLMPACK_REQUIRE_FIXTURE(tok512, "llama2c/tok512.model");
  auto plain = read_tokenizer_metadata(tok512);
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  EXPECT_EQ(plain->description.find("normalizer"), std::string::npos) << plain->description;
  auto file = MappedFile::open(tok512);
  ASSERT_TRUE(file.ok());
  std::string bytes((*file)->bytes().begin(), (*file)->bytes().end());
  const size_t at = bytes.find("identity");
  ASSERT_NE(at, std::string::npos);
  bytes.replace(at, 8, "nmt_nfkc");  // same length: the protobuf stays valid
  const std::string path = (std::filesystem::temp_directory_path() / "llmpack_nfkc.model").string();
  std::ofstream(path, std::ios::binary) << bytes;
  auto nfkc = read_tokenizer_metadata(path);
  std::filesystem::remove(path);
  ASSERT_TRUE(nfkc.ok()) << nfkc.status().message();
  EXPECT_NE(nfkc->description.find("normalizer \"nmt_nfkc\" is not applied"), std::string::npos) << nfkc->description;
}

TEST(SentencePieceModel, EveryTruncationIsAnErrorOrAPrefix) {
  LLMPACK_REQUIRE_FIXTURE(path, "llama2c/tok512.model");
  auto file = MappedFile::open(path);
  ASSERT_TRUE(file.ok());
  const auto bytes = (*file)->bytes();
  size_t errors = 0;
  for (size_t cut = 0; cut < bytes.size(); cut += 13) {
    auto m = parse_sentencepiece_model(bytes.first(cut));
    if (!m.ok()) ++errors;
    else EXPECT_LE(m->pieces.size(), 512u);
  }
  EXPECT_GT(errors, 0u);
}

TEST(SentencePieceModel, HostileLengthsAndWireTypesAreRefused) {
  const std::vector<std::vector<uint8_t>> cases = {
      {0x0A, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F},               // piece of 4 GiB
      {0x0A, 0x02, 0x1A, 0x05},                            // piece string longer than its message
      {0x0B},                                              // wire type 3 (group)
      {0x00},                                              // field 0
      {0x0A, 0x03, 0x18, 0x09, 0x00},                      // type 9
      {0x08, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01},  // endless varint
      {},                                                  // no pieces
  };
  for (const auto& c : cases) EXPECT_FALSE(parse_sentencepiece_model(c).ok());
}

}  // namespace
}  // namespace llmpack
