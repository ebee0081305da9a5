// Byte-level BPE: round trips on every vocabulary, tiktoken vs tokenizer.json,
// parse_special, special ids, NFC, and damaged inputs refused clearly.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "format/gguf.h"
#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/hf_tokenizer_json.h"
#include "tokenizer/pretokenizer_nfc.h"
#include "tokenizer/tiktoken.h"
#include "tokenizer/tokenizer_loader.h"
#include "unit/tokenizer/reference_bpe.h"
#include "unit/tokenizer/vocab_vectors.h"

namespace llmpack::testing {
namespace {

std::string decode_all(const Tokenizer& tok, const std::vector<int32_t>& ids) {
  std::string out;
  for (int32_t id : ids) {
    auto piece = tok.decode(-1, id);
    EXPECT_TRUE(piece.ok()) << piece.status().message();
    if (piece.ok()) out += *piece;
  }
  return out;
}

// Random text mixing scripts, spaces, newlines, digits, punctuation, emoji.
std::string random_text(std::mt19937& rng) {
  static const std::vector<std::string> pool = {
      "a", "b", "Z", "e", "the", " ", " ", "  ", "\n", "\t", "0", "7", "123", ".", ",", "'s", "'LL", "!", "?",
      "-", "(", ")", "\"", "é", "ß", "Ü", "ñ", "д", "Ж", "я", "λ", "Ω", "中", "文", "字", "日本", "한국어",
      "ا", "ل", "ع", "ក", "ា", "ន", "😀", "🦙", "✅", "€", "½", "…", "—", "\u200d", "\r\n", "~", "_", "=", "<|"};
  std::uniform_int_distribution<size_t> pick(0, pool.size() - 1);
  std::uniform_int_distribution<int> len(0, 40);
  std::string s;
  for (int i = len(rng); i > 0; --i) s += pool[pick(rng)];
  return s;
}

void expect_round_trips(const Tokenizer& tok, const std::string& label, bool nfc = false) {
  auto inputs = parse_vocab_inputs(read_all(fixture_path("llama.cpp-vocab/ggml-vocab-gpt-2.gguf.inp")));
  std::mt19937 rng(1234);
  for (int i = 0; i < 150; ++i) inputs.push_back(random_text(rng));
  for (const std::string& s : inputs) {
    auto ids = tok.encode(s, 0, 0);
    ASSERT_TRUE(ids.ok()) << label << ": " << ids.status().message();
    EXPECT_EQ(decode_all(tok, *ids), nfc ? nfc_normalize(s) : s) << label;
  }
}

class GgufRoundTrip : public ::testing::TestWithParam<const char*> {};

TEST_P(GgufRoundTrip, DecodeOfEncodeIsTheText) {
  const std::string name = GetParam();
  LLMPACK_REQUIRE_FIXTURE(path, "llama.cpp-vocab/ggml-vocab-" + name + ".gguf");
  auto tok = load_tokenizer(path);
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  expect_round_trips(**tok, name);
}

INSTANTIATE_TEST_SUITE_P(Vocabs, GgufRoundTrip,
                         ::testing::Values("gpt-2", "mpt", "falcon", "starcoder", "refact", "deepseek-coder",
                                           "deepseek-llm"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& c : s) c = c == '-' ? '_' : c;
                           return s;
                         });

TEST(BpeTokenizer, JsonTokenizersRoundTrip) {
  LLMPACK_REQUIRE_FIXTURE(l3, "hf-tokenizers/llama3/tokenizer.json.gz");
  LLMPACK_REQUIRE_FIXTURE(q3, "hf-tokenizers/qwen3/tokenizer.json.gz");
  ASSERT_NE(shared_llama3_json(), nullptr);
  ASSERT_NE(shared_qwen3_json(), nullptr);
  expect_round_trips(*shared_llama3_json(), "llama3");
  expect_round_trips(*shared_qwen3_json(), "qwen3", /*nfc=*/true);
}

// The fast merge loop (a priority queue over linked symbols, merges found by
// id pair) against the quadratic reference on the same vocabulary: the
// 46 test-vector inputs and 150 random texts, none holding an added token.
void expect_reference_ids(const Tokenizer* tok, const std::string& label) {
  ASSERT_NE(tok, nullptr);
  const auto& bpe = dynamic_cast<const BpeTokenizer&>(*tok);
  auto reference = ReferenceBpe::create(bpe.vocab());
  ASSERT_TRUE(reference.ok()) << reference.status().message();
  auto inputs = parse_vocab_inputs(read_all(fixture_path("llama.cpp-vocab/ggml-vocab-gpt-2.gguf.inp")));
  std::mt19937 rng(99);
  for (int i = 0; i < 150; ++i) inputs.push_back(random_text(rng));
  int compared = 0;
  for (const std::string& s : inputs) {
    auto ids = tok->encode(s, 0, 0);
    ASSERT_TRUE(ids.ok()) << label << ": " << ids.status().message();
    auto expected = (*reference)->encode(s);
    ASSERT_TRUE(expected.ok()) << expected.status().message();
    EXPECT_EQ(*ids, *expected) << label << ": " << s;
    compared += !ids->empty();
  }
  EXPECT_GT(compared, 150) << label;
}

TEST(BpeTokenizer, JsonTokenizersMatchTheQuadraticReference) {
  LLMPACK_REQUIRE_FIXTURE(l3, "hf-tokenizers/llama3/tokenizer.json.gz");
  LLMPACK_REQUIRE_FIXTURE(q3, "hf-tokenizers/qwen3/tokenizer.json.gz");
  LLMPACK_REQUIRE_FIXTURE(inp, "llama.cpp-vocab/ggml-vocab-gpt-2.gguf.inp");
  expect_reference_ids(shared_llama3_json(), "llama3");
  expect_reference_ids(shared_qwen3_json(), "qwen3");
}

// A tiktoken file written from Llama 3's tokenizer.json (same 128000 ranked
// tokens) must tokenize exactly like it.
std::string base64(std::string_view bytes) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const uint32_t v = (uint8_t(bytes[i]) << 16) | (uint8_t(bytes[i + 1]) << 8) | uint8_t(bytes[i + 2]);
    for (int k = 18; k >= 0; k -= 6) out += kAlphabet[(v >> k) & 63];
  }
  if (bytes.size() - i == 1) {
    const uint32_t v = uint8_t(bytes[i]) << 16;
    out += std::string{kAlphabet[(v >> 18) & 63], kAlphabet[(v >> 12) & 63], '=', '='};
  } else if (bytes.size() - i == 2) {
    const uint32_t v = (uint8_t(bytes[i]) << 16) | (uint8_t(bytes[i + 1]) << 8);
    out += std::string{kAlphabet[(v >> 18) & 63], kAlphabet[(v >> 12) & 63], kAlphabet[(v >> 6) & 63], '='};
  }
  return out;
}

TEST(Tiktoken, Llama3FromTiktokenMatchesTokenizerJson) {
  LLMPACK_REQUIRE_FIXTURE(l3, "hf-tokenizers/llama3/tokenizer.json.gz");
  const Tokenizer* json = shared_llama3_json();
  ASSERT_NE(json, nullptr);
  std::string text;
  for (int32_t id = 0; id < 128000; ++id) text += base64(*json->decode(-1, id)) + " " + std::to_string(id) + "\n";
  const std::string path = (std::filesystem::temp_directory_path() / "llmpack_llama3.tiktoken").string();
  std::ofstream(path, std::ios::binary) << text;
  auto tok = load_tokenizer(path);  // told apart by content
  std::filesystem::remove(path);
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  EXPECT_EQ((*tok)->vocab_size(), 128256);
  EXPECT_EQ((*tok)->bos_id(), 128000);
  EXPECT_EQ((*tok)->piece(128009), "<|eot_id|>");
  EXPECT_EQ((*tok)->default_num_bos(), 1);
  const auto inputs = parse_vocab_inputs(read_all(fixture_path("llama.cpp-vocab/ggml-vocab-llama-bpe.gguf.inp")));
  const auto outputs = parse_vocab_outputs(read_all(fixture_path("llama.cpp-vocab/ggml-vocab-llama-bpe.gguf.out")));
  int passed = 0;
  for (size_t i = 0; i < inputs.size(); ++i) passed += *(*tok)->encode(inputs[i], 0, 0) == outputs[i];
  EXPECT_EQ(passed, 46);
  std::printf("[ vectors  ] llama-bpe (tiktoken): %d/46\n", passed);
  std::mt19937 rng(99);
  for (int i = 0; i < 200; ++i) {
    const std::string s = random_text(rng);
    EXPECT_EQ(*(*tok)->encode(s, 0, 0), *json->encode(s, 0, 0)) << s;
  }
  EncodeOptions special;
  special.parse_special = true;
  EXPECT_EQ(*(*tok)->encode("<|eot_id|>hi", special), *json->encode("<|eot_id|>hi", special));
}

TEST(BpeTokenizer, ParseSpecialOnlyWhenAsked) {
  LLMPACK_REQUIRE_FIXTURE(l3, "hf-tokenizers/llama3/tokenizer.json.gz");
  const Tokenizer& tok = *shared_llama3_json();
  const std::string text = "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>";
  EncodeOptions on;
  on.parse_special = true;
  auto with = tok.encode(text, on);
  ASSERT_TRUE(with.ok());
  ASSERT_GE(with->size(), 4u);
  EXPECT_EQ(with->front(), 128006);
  EXPECT_EQ(with->back(), 128009);
  EXPECT_NE(std::find(with->begin(), with->end(), 128007), with->end());
  auto without = tok.encode(text, EncodeOptions{});
  ASSERT_TRUE(without.ok());
  for (int32_t id : *without) EXPECT_LT(id, 128000) << "special id from plain text";
  EXPECT_EQ(decode_all(tok, *without), text);
  EXPECT_EQ(*tok.encode(text, 0, 0), *without);  // the 3-argument form is parse_special=false
  // BOS/EOS options.
  on.n_bos = 1;
  auto bos = tok.encode("Hi", on);
  ASSERT_TRUE(bos.ok());
  EXPECT_EQ(bos->front(), 128000);
}

TEST(BpeTokenizer, SpecialIdsFromTokenizerConfig) {
  LLMPACK_REQUIRE_FIXTURE(l3, "hf-tokenizers/llama3/tokenizer.json.gz");
  const Tokenizer& llama3 = *shared_llama3_json();
  EXPECT_EQ(llama3.bos_id(), 128000);
  EXPECT_EQ(llama3.eos_id(), 128009);  // tokenizer_config.json: <|eot_id|>
  EXPECT_EQ(llama3.default_num_bos(), 1);  // post_processor template
  const auto eot = llama3.end_of_turn_ids();
  EXPECT_NE(std::find(eot.begin(), eot.end(), 128001), eot.end());  // <|end_of_text|>
  const Tokenizer& qwen = *shared_qwen3_json();
  EXPECT_EQ(qwen.bos_id(), -1);
  EXPECT_EQ(qwen.eos_id(), 151645);  // <|im_end|>
  EXPECT_EQ(qwen.default_num_bos(), 0);
  const auto qeot = qwen.end_of_turn_ids();
  EXPECT_NE(std::find(qeot.begin(), qeot.end(), 151643), qeot.end());  // <|endoftext|>
  // Non-special added tokens match without parse_special; special ones do not.
  EXPECT_EQ(*qwen.encode("<think>", 0, 0), std::vector<int32_t>{151667});
  EXPECT_NE(*qwen.encode("<|im_start|>", 0, 0), std::vector<int32_t>{151644});
  EncodeOptions on;
  on.parse_special = true;
  EXPECT_EQ(*qwen.encode("<|im_start|>", on), std::vector<int32_t>{151644});
}

TEST(BpeTokenizer, SpmParseSpecialThroughTheDefault) {
  LLMPACK_REQUIRE_FIXTURE(path, "llama.cpp-vocab/ggml-vocab-phi-3.gguf");
  auto tok = load_tokenizer(path);
  ASSERT_TRUE(tok.ok());
  const Tokenizer& t = **tok;
  int32_t end_id = -1;
  for (int32_t id : t.special_token_ids()) end_id = t.piece(id) == "<|end|>" ? id : end_id;
  ASSERT_GE(end_id, 0) << t.special_token_ids().size() << " special ids";
  EncodeOptions on;
  on.parse_special = true;
  auto ids = t.encode("Hi<|end|>", on);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(ids->back(), end_id);
  auto plain = t.encode("Hi<|end|>", 0, 0);
  EXPECT_EQ(std::find(plain->begin(), plain->end(), end_id), plain->end());
  const auto eot = t.end_of_turn_ids();
  EXPECT_NE(std::find(eot.begin(), eot.end(), end_id), eot.end());
}

TEST(Nfc, ComposesDecomposedText) {
  EXPECT_EQ(nfc_normalize("e\xCC\x81"), "\xC3\xA9");                      // e + U+0301 -> é
  EXPECT_EQ(nfc_normalize("\xE2\x84\xAB"), "\xC3\x85");                   // U+212B ANGSTROM -> Å
  EXPECT_EQ(nfc_normalize("\xE1\x84\x80\xE1\x85\xA1"), "\xEA\xB0\x80");  // jamo G + A -> 가
  EXPECT_EQ(nfc_normalize("a\xCC\xA3\xCC\x82"), "\xE1\xBA\xAD");          // a + dot below + circumflex -> ậ
  EXPECT_EQ(nfc_normalize("a\xCC\x82\xCC\xA3"), "\xE1\xBA\xAD");          // marks in the other order
  EXPECT_EQ(nfc_normalize("plain ascii"), "plain ascii");
  EXPECT_EQ(nfc_normalize("\xFF" "e\xCC\x81"), "\xFF\xC3\xA9");           // invalid bytes pass through
  LLMPACK_REQUIRE_FIXTURE(q3, "hf-tokenizers/qwen3/tokenizer.json.gz");
  EXPECT_EQ(*shared_qwen3_json()->encode("Cafe\xCC\x81", 0, 0), *shared_qwen3_json()->encode("Caf\xC3\xA9", 0, 0));
}

TEST(BpeTokenizer, InvalidUtf8RoundTrips) {
  LLMPACK_REQUIRE_FIXTURE(l3, "hf-tokenizers/llama3/tokenizer.json.gz");
  const std::string s = "ab\xFF\xFE cd \xC3 \xE2\x82";
  auto ids = shared_llama3_json()->encode(s, 0, 0);
  ASSERT_TRUE(ids.ok()) << ids.status().message();
  EXPECT_EQ(decode_all(*shared_llama3_json(), *ids), s);
}

TEST(LoadTokenizer, ToldApartByContent) {
  LLMPACK_REQUIRE_FIXTURE(model, "llama2c/tok512.model");
  auto spm = load_tokenizer(model);
  ASSERT_TRUE(spm.ok()) << spm.status().message();
  EXPECT_EQ((*spm)->vocab_size(), 512);
  auto bin = load_tokenizer(fixture_path("llama2c/tok512.bin"));
  ASSERT_TRUE(bin.ok());
  EXPECT_EQ(*(*spm)->encode("Once upon a time", 1, 0), *(*bin)->encode("Once upon a time", 1, 0));
  auto gguf = load_tokenizer(fixture_path("llama.cpp-vocab/ggml-vocab-gpt-2.gguf"));
  ASSERT_TRUE(gguf.ok()) << gguf.status().message();
  EXPECT_EQ(*(*gguf)->encode("Hello world", 0, 0), (std::vector<int32_t>{15496, 995}));
  auto bert = load_tokenizer(fixture_path("llama.cpp-vocab/ggml-vocab-bert-bge.gguf"));
  ASSERT_FALSE(bert.ok());
  EXPECT_NE(bert.status().message().find("\"bert\""), std::string::npos) << bert.status().message();
}

}  // namespace
}  // namespace llmpack::testing
