// Damaged or unsupported tokenizer.json / tiktoken / gzip inputs: a clear
// error naming what was expected, never a crash.
#include <gtest/gtest.h>

#include "tokenizer/hf_tokenizer_json.h"
#include "tokenizer/hf_tokenizer_json_parser.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/tiktoken.h"
#include "tokenizer/tokenizer_loader.h"
#include "unit/tokenizer/vocab_vectors.h"

namespace llmpack::testing {
namespace {

// A tiny valid byte-level tokenizer.json: 256 byte tokens, one merge.
std::string tiny_json(const std::string& model_type = "BPE", const std::string& pre = "ByteLevel",
                      const std::string& merges = "[\"h i\"]", const std::string& normalizer = "null") {
  std::string vocab;
  for (int b = 0; b < 256; ++b) {
    const uint32_t cp = byte_to_unicode(static_cast<uint8_t>(b));
    std::string ch;
    if (cp < 0x80) {
      ch = cp == '"' ? "\\\"" : cp == '\\' ? "\\\\" : std::string(1, static_cast<char>(cp));
    } else {
      ch = {static_cast<char>(0xC0 | (cp >> 6)), static_cast<char>(0x80 | (cp & 0x3F))};
    }
    vocab += "\"" + ch + "\": " + std::to_string(b) + ",";
  }
  vocab += "\"hi\": 256";
  return "{\"added_tokens\": [{\"id\": 257, \"content\": \"<|end|>\", \"special\": true}],"
         "\"normalizer\": " + normalizer + ", \"pre_tokenizer\": {\"type\": \"" + pre +
         "\", \"add_prefix_space\": false, \"use_regex\": true}, \"decoder\": {\"type\": \"ByteLevel\"},"
         "\"model\": {\"type\": \"" + model_type + "\", \"vocab\": {" + vocab + "}, \"merges\": " + merges + "}}";
}

TEST(TokenizerJson, TinyFileWorks) {
  auto vocab = parse_hf_tokenizer_json(tiny_json());
  ASSERT_TRUE(vocab.ok()) << vocab.status().message();
  auto tok = BpeTokenizer::create(std::move(*vocab));
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  EXPECT_EQ(*(*tok)->encode("hi", 0, 0), std::vector<int32_t>{256});
  EXPECT_EQ((*tok)->vocab_size(), 258);
  // The pair form of merges reads the same.
  auto pairs = parse_hf_tokenizer_json(tiny_json("BPE", "ByteLevel", "[[\"h\", \"i\"]]"));
  ASSERT_TRUE(pairs.ok()) << pairs.status().message();
  EXPECT_EQ(pairs->merges, (std::vector<std::pair<std::string, std::string>>{{"h", "i"}}));
}

// SmolLM's pre-tokenizer: Sequence [Digits (individual_digits), ByteLevel]
// gives llama.cpp's "smollm" regexes (each digit its own piece, then GPT-2's),
// so "2024" cannot merge as one piece; without individual digits they group.
TEST(TokenizerJson, DigitsPreTokenizerSplitsNumbers) {
  const std::string byte_level = "{\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": true}";
  for (bool individual : {true, false}) {
    std::string json = tiny_json("BPE", "ByteLevel", "[\"h i\", \"2 0\"]");
    const std::string digits = std::string("{\"type\": \"Digits\", \"individual_digits\": ") +
                               (individual ? "true" : "false") + "}";
    const std::string old_pre = "{\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": true}";
    json.replace(json.find(old_pre), old_pre.size(),
                 "{\"type\": \"Sequence\", \"pretokenizers\": [" + digits + ", " + byte_level + "]}");
    json.replace(json.find("\"hi\": 256"), std::string("\"hi\": 256").size(), "\"hi\": 256, \"20\": 258");
    auto vocab = parse_hf_tokenizer_json(json);
    ASSERT_TRUE(vocab.ok()) << vocab.status().message();
    auto smollm = pretokenizer_regexes("smollm");
    ASSERT_TRUE(smollm.ok());
    if (individual) {
      EXPECT_EQ(vocab->pretokenizer_regexes, *smollm);
    }
    auto tok = BpeTokenizer::create(std::move(*vocab));
    ASSERT_TRUE(tok.ok()) << tok.status().message();
    const std::vector<int32_t> each = {256, '2', '0', '2', '4'};
    const std::vector<int32_t> grouped = {256, 258, '2', '4'};
    EXPECT_EQ(*(*tok)->encode("hi2024", 0, 0), individual ? each : grouped) << individual;
  }
}

void expect_error(const std::string& json, const std::string& needle) {
  auto vocab = parse_hf_tokenizer_json(json);
  ASSERT_FALSE(vocab.ok()) << "accepted: " << json.substr(0, 80);
  EXPECT_NE(vocab.status().message().find(needle), std::string::npos) << vocab.status().message();
}

TEST(TokenizerJson, UnsupportedPartsAreRefusedByName) {
  expect_error(tiny_json("Unigram"), "model type \"Unigram\"");
  expect_error(tiny_json("WordPiece"), "\"WordPiece\"");
  expect_error(tiny_json("BPE", "Metaspace"), "pre_tokenizer type \"Metaspace\"");
  expect_error(tiny_json("BPE", "ByteLevel", "[\"h i\"]", "{\"type\": \"NFKC\"}"), "normalizer type \"NFKC\"");
  expect_error(tiny_json("BPE", "ByteLevel", "[\"hi\"]"), "merge 0");
  expect_error(tiny_json("BPE", "ByteLevel", "[[\"h\"]]"), "merge 0 has 1 parts");
  expect_error("{\"added_tokens\": []}", "no \"model\"");
}

TEST(TokenizerJson, BrokenJsonNamesTheOffset) {
  const std::string good = tiny_json();
  for (size_t cut : {size_t{0}, size_t{1}, size_t{40}, good.size() / 2, good.size() - 1}) {
    auto vocab = parse_hf_tokenizer_json(good.substr(0, cut));
    ASSERT_FALSE(vocab.ok()) << cut;
    EXPECT_NE(vocab.status().message().find("at byte"), std::string::npos) << cut << ": " << vocab.status().message();
  }
  expect_error(good + "x", "expected the end of the input");
  expect_error("{\"model\": {\"vocab\": {\"a\": 1.5}}}", "an integer");
  expect_error("{\"model\": {\"vocab\": {\"a\\uD800\": 1}}}", "low surrogate");
  expect_error("{\"unknown_key\": " + std::string(200, '['), "nested");
}

TEST(TokenizerJson, MistralSpmStyleJsonIsRefusedClearly) {
  LLMPACK_REQUIRE_FIXTURE(path, "hf-tokenizers/mistral-7b-v0.1/tokenizer.json");
  auto tok = load_tokenizer(path);
  ASSERT_FALSE(tok.ok());
  EXPECT_NE(tok.status().message().find("byte_fallback"), std::string::npos) << tok.status().message();
}

TEST(TokenizerJson, DamagedGzipIsRefused) {
  LLMPACK_REQUIRE_FIXTURE(path, "hf-tokenizers/llama3/tokenizer.json.gz");
  const std::string gz = read_all(path);
  const auto* p = reinterpret_cast<const uint8_t*>(gz.data());
  auto truncated = gunzip({p, gz.size() / 100});
  ASSERT_FALSE(truncated.ok());
  EXPECT_NE(truncated.status().message().find("gzip"), std::string::npos);
  std::string corrupt = gz.substr(0, 4096);
  for (size_t i = 20; i < corrupt.size(); i += 7) corrupt[i] = static_cast<char>(corrupt[i] ^ 0x5A);
  auto bad = gunzip({reinterpret_cast<const uint8_t*>(corrupt.data()), corrupt.size()});
  EXPECT_FALSE(bad.ok());
}

TEST(Tiktoken, DamagedFilesAreRefused) {
  const auto expect = [](const std::string& text, const std::string& needle) {
    auto v = parse_tiktoken(text);
    ASSERT_FALSE(v.ok()) << text;
    EXPECT_NE(v.status().message().find(needle), std::string::npos) << v.status().message();
  };
  expect("IQ== 0\nIg== 2\n", "rank 1 is missing");
  expect("IQ== 0\nIg== 0\n", "appears twice");
  expect("I*== 0\n", "not base64");
  expect("IQ==0\n", "no space");
  expect("IQ== x\n", "expected a rank");
  expect("IQ== 99999999999\n", "expected a rank");
  expect("IQ== 3000000\n", "expected a rank");
  expect("", "no tokens");
  auto ok = parse_tiktoken("IQ== 0\nIg== 1\nISI= 2\n");  // "!", "\"", "!\""
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->tokens[2], "!\"");
  EXPECT_TRUE(looks_like_tiktoken({reinterpret_cast<const uint8_t*>("IQ== 0\n"), 7}));
  EXPECT_FALSE(looks_like_tiktoken({reinterpret_cast<const uint8_t*>("{\"a\": 1}"), 8}));
}

TEST(TokenizerConfig, SideFilesGiveSpecialIds) {
  HfTokenizerConfig config;
  ASSERT_TRUE(parse_hf_tokenizer_config(
                  "{\"bos_token\": {\"content\": \"<s>\"}, \"eos_token\": \"</s>\", \"add_bos_token\": true}", &config)
                  .ok());
  EXPECT_EQ(config.bos_token, "<s>");
  EXPECT_EQ(config.eos_token, "</s>");
  EXPECT_EQ(config.add_bos, 1);
  ASSERT_TRUE(parse_hf_generation_config("{\"eos_token_id\": [128001, 128008, 128009], \"bos_token_id\": 128000}",
                                         &config)
                  .ok());
  EXPECT_EQ(config.generation_eos_ids, (std::vector<int64_t>{128001, 128008, 128009}));
  EXPECT_EQ(config.generation_bos_id, 128000);
  EXPECT_FALSE(parse_hf_generation_config("{\"eos_token_id\": [1,", &config).ok());
}

}  // namespace
}  // namespace llmpack::testing
