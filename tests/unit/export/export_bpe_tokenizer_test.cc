// Byte-level BPE tokenizers travel into packages (issue 5 item 1): a Hugging
// Face folder with Llama 3's tokenizer.json, or any checkpoint with
// --tokenizer_path at a tokenizer.json(.gz) or a tiktoken file, exports the
// tokenizer.ggml.* "gpt2" keys, and the package's own tokenizer gives the
// ids of llama.cpp's 46 test vectors; the package generates.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "export/tokenizer_metadata_bpe.h"
#include "format/gguf.h"
#include "tokenizer/hf_tokenizer_json.h"
#include "tokenizer/pretokenizer.h"
#include "unit/export/export_test_util.h"
#include "unit/tokenizer/vocab_vectors.h"

namespace llmpack {
namespace {

using json = nlohmann::json;
using testing::ScratchDir;

struct Tensor {
  std::string name;
  std::vector<int64_t> shape;  // HF order: [out, in]
  float fill = 0;              // != 0: every value this (norms); 0: random
};

// A model.safetensors of f32 tensors, random values in [-0.5, 0.5).
std::vector<uint8_t> safetensors(const std::vector<Tensor>& tensors) {
  json header = json::object();
  uint64_t offset = 0;
  std::vector<uint8_t> data;
  uint32_t state = 12345;
  for (const auto& t : tensors) {
    int64_t n = 1;
    for (int64_t d : t.shape) n *= d;
    header[t.name] = {{"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", {offset, offset + n * 4}}};
    offset += static_cast<uint64_t>(n) * 4;
    for (int64_t i = 0; i < n; ++i) {
      state = state * 1664525u + 1013904223u;
      const float v = t.fill != 0 ? t.fill : static_cast<float>(state >> 8) / 16777216.0f - 0.5f;
      uint8_t b[4];
      std::memcpy(b, &v, 4);
      data.insert(data.end(), b, b + 4);
    }
  }
  std::string text = header.dump();
  while (text.size() % 8) text += ' ';
  std::vector<uint8_t> out(8);
  const uint64_t size = text.size();
  std::memcpy(out.data(), &size, 8);
  out.insert(out.end(), text.begin(), text.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

// A one-layer Llama HF folder (dim 16, tied output) with `vocab` rows.
void write_tiny_hf_llama(const std::string& dir, int64_t vocab) {
  std::filesystem::create_directories(dir);
  const std::string l = "model.layers.0.";
  const std::vector<Tensor> tensors = {
      {"model.embed_tokens.weight", {vocab, 16}},    {"model.norm.weight", {16}, 1.0f},
      {l + "input_layernorm.weight", {16}, 1.0f},    {l + "post_attention_layernorm.weight", {16}, 1.0f},
      {l + "self_attn.q_proj.weight", {16, 16}},     {l + "self_attn.k_proj.weight", {16, 16}},
      {l + "self_attn.v_proj.weight", {16, 16}},     {l + "self_attn.o_proj.weight", {16, 16}},
      {l + "mlp.gate_proj.weight", {32, 16}},        {l + "mlp.up_proj.weight", {32, 16}},
      {l + "mlp.down_proj.weight", {16, 32}}};
  testing::write_file(dir + "/model.safetensors", safetensors(tensors));
  const json config = {{"architectures", {"LlamaForCausalLM"}}, {"hidden_size", 16}, {"intermediate_size", 32},
                       {"num_hidden_layers", 1}, {"num_attention_heads", 2}, {"num_key_value_heads", 2},
                       {"vocab_size", vocab}, {"max_position_embeddings", 256}, {"rms_norm_eps", 1e-5},
                       {"rope_theta", 500000.0}, {"tie_word_embeddings", true}, {"eos_token_id", 128009}};
  testing::write_text(dir + "/config.json", config.dump());
}

// Encodes the 46 llama.cpp cases of `vectors` (no BOS/EOS, no specials) and
// counts the ones that give exactly the expected ids.
int count_vector_passes(const Tokenizer& tok, const std::string& vectors) {
  const auto inputs = testing::parse_vocab_inputs(testing::read_all(vectors + ".inp"));
  const auto outputs = testing::parse_vocab_outputs(testing::read_all(vectors + ".out"));
  EXPECT_EQ(inputs.size(), 46u);
  EXPECT_EQ(outputs.size(), inputs.size());
  int passed = 0;
  for (size_t i = 0; i < inputs.size() && i < outputs.size(); ++i) {
    auto ids = tok.encode(inputs[i], 0, 0);
    EXPECT_TRUE(ids.ok()) << "case " << i;
    if (!ids.ok()) continue;
    EXPECT_EQ(*ids, outputs[i]) << "case " << i << ": '" << inputs[i] << "'";
    passed += *ids == outputs[i];
  }
  return passed;
}

// Greedy generation from the package (test_export does not link the runner
// library): the prompt's ids through the program, 6 tokens decoded back to
// text by the package's tokenizer.
void expect_package_generates(LoadedPackage& package) {
  const Tokenizer& tok = *package.tokenizer;
  auto prompt = tok.encode("Hello world", tok.default_num_bos(), 0);
  ASSERT_TRUE(prompt.ok()) << prompt.status().message();
  std::vector<int64_t> ids(prompt->begin(), prompt->end());
  auto logits = package.program->forward(ids, 0);
  ASSERT_TRUE(logits.ok()) << logits.status().message();
  int64_t pos = static_cast<int64_t>(ids.size());
  int32_t prev = ids.back();
  std::string text;
  for (int step = 0; step < 6; ++step) {
    const int64_t next = testing::argmax(logits->last());
    ASSERT_GE(next, 0);
    ASSERT_LT(next, tok.vocab_size());
    auto piece = tok.decode(prev, static_cast<int32_t>(next));
    ASSERT_TRUE(piece.ok()) << piece.status().message();
    text += *piece;
    prev = static_cast<int32_t>(next);
    logits = package.program->forward(std::span<const int64_t>(&next, 1), pos++);
    ASSERT_TRUE(logits.ok()) << logits.status().message();
  }
  EXPECT_FALSE(text.empty());
}

std::string key_string(const GgufFile& g, const char* key) { return g.get_string(key).value_or("<absent>"); }

TEST(ExportBpeTokenizer, HfFolderWithLlama3TokenizerJsonPackagesTheVocabulary) {
  LLMPACK_REQUIRE_FIXTURE(json_gz, "hf-tokenizers/llama3/tokenizer.json.gz");
  LLMPACK_REQUIRE_FIXTURE(inputs, "llama.cpp-vocab/ggml-vocab-llama-bpe.gguf.inp");
  const std::string vectors = testing::fixture_path("llama.cpp-vocab/ggml-vocab-llama-bpe.gguf");
  ScratchDir dir;
  const std::string hf = dir.file("hf");
  write_tiny_hf_llama(hf, 128256);
  // hf_model looks for tokenizer.json; the loader gunzips by content.
  std::filesystem::copy_file(json_gz, hf + "/tokenizer.json");
  std::filesystem::copy_file(testing::fixture_path("hf-tokenizers/llama3/tokenizer_config.json"),
                             hf + "/tokenizer_config.json");
  ExportOptions o;
  o.checkpoint = hf;
  o.output = dir.file("llama3.gguf");
  o.max_seq_len = 32;
  o.max_context_len = 64;
  auto report = export_package(o, {}, null_log_sink());
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_NE(report->tokenizer.find("llama-bpe"), std::string::npos) << report->tokenizer;

  auto gguf = GgufFile::open(o.output);
  ASSERT_TRUE(gguf.ok()) << gguf.status().message();
  EXPECT_EQ(key_string(**gguf, "tokenizer.ggml.model"), "gpt2");
  EXPECT_EQ(key_string(**gguf, "tokenizer.ggml.pre"), "llama-bpe");
  ASSERT_NE((*gguf)->get_string_array("tokenizer.ggml.tokens"), nullptr);
  EXPECT_EQ((*gguf)->get_string_array("tokenizer.ggml.tokens")->size(), 128256u);
  ASSERT_NE((*gguf)->get_string_array("tokenizer.ggml.merges"), nullptr);
  EXPECT_EQ((*gguf)->get_string_array("tokenizer.ggml.merges")->size(), 280147u);
  EXPECT_EQ((*gguf)->get_int("tokenizer.ggml.bos_token_id").value_or(-1), 128000);
  EXPECT_EQ((*gguf)->get_bool("tokenizer.ggml.add_bos_token"), std::optional<bool>(true));
  EXPECT_NE(key_string(**gguf, "tokenizer.chat_template").find("start_header_id"), std::string::npos);

  auto package = testing::load(o.output);
  ASSERT_TRUE(package.ok()) << package.status().message();
  auto reference = load_hf_tokenizer_json(json_gz);
  ASSERT_TRUE(reference.ok()) << reference.status().message();
  const Tokenizer& tok = *package->tokenizer;
  EXPECT_EQ(tok.vocab_size(), (*reference)->vocab_size());
  EXPECT_EQ(tok.bos_id(), (*reference)->bos_id());
  EXPECT_EQ(tok.eos_id(), (*reference)->eos_id());
  EXPECT_EQ(tok.default_num_bos(), 1);
  auto sorted = [](std::vector<int32_t> v) {
    std::sort(v.begin(), v.end());
    return v;
  };
  EXPECT_EQ(sorted(tok.end_of_turn_ids()), sorted((*reference)->end_of_turn_ids()));
  EXPECT_EQ(sorted(tok.special_token_ids()), sorted((*reference)->special_token_ids()));
  EXPECT_EQ(count_vector_passes(tok, vectors), 46);
  // Specials parse the same way through both.
  EncodeOptions special;
  special.parse_special = true;
  const std::string chat = "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>";
  auto a = tok.encode(chat, special);
  auto b = (*reference)->encode(chat, special);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);
  expect_package_generates(*package);
}

TEST(ExportBpeTokenizer, TokenizerPathAtQwen3TokenizerJsonPadsToTheEmbeddingRows) {
  LLMPACK_REQUIRE_FIXTURE(json_gz, "hf-tokenizers/qwen3/tokenizer.json.gz");
  LLMPACK_REQUIRE_FIXTURE(inputs, "llama.cpp-vocab/ggml-vocab-qwen2.gguf.inp");
  const std::string vectors = testing::fixture_path("llama.cpp-vocab/ggml-vocab-qwen2.gguf");
  ScratchDir dir;
  // Qwen3's embedding has more rows (151936) than the tokenizer has tokens.
  write_tiny_hf_llama(dir.file("hf"), 151936);
  ExportOptions o;
  o.checkpoint = dir.file("hf");
  o.tokenizer_path = json_gz;
  o.output = dir.file("qwen3.gguf");
  o.max_seq_len = 32;
  auto report = export_package(o, {}, null_log_sink());
  ASSERT_TRUE(report.ok()) << report.status().message();
  auto gguf = GgufFile::open(o.output);
  ASSERT_TRUE(gguf.ok());
  EXPECT_EQ(key_string(**gguf, "tokenizer.ggml.pre"), "qwen2");
  // tokenizer_config.json beside the fixture carries Qwen3's template.
  EXPECT_NE(key_string(**gguf, "tokenizer.chat_template").find("im_start"), std::string::npos);
  auto package = testing::load(o.output);
  ASSERT_TRUE(package.ok()) << package.status().message();
  // Padded to the embedding's rows with unused tokens, as llama.cpp does.
  EXPECT_EQ(package->tokenizer->vocab_size(), 151936);
  EXPECT_EQ(package->tokenizer->piece(151669), "[PAD151669]");
  EXPECT_EQ(package->tokenizer->piece(151668), "</think>");
  ASSERT_FALSE(report->notices.empty());
  EXPECT_NE(report->notices.back().find("padded"), std::string::npos);
  EXPECT_EQ(count_vector_passes(*package->tokenizer, vectors), 46);
  EXPECT_EQ(package->tokenizer->default_num_bos(), 0);  // Qwen has no BOS
  // Qwen's NFC normalizer survives the trip: decomposed accents give the
  // composed text's ids, as through tokenizer.json.
  auto reference = load_hf_tokenizer_json(json_gz);
  ASSERT_TRUE(reference.ok()) << reference.status().message();
  EXPECT_EQ(package->tokenizer->eos_id(), (*reference)->eos_id());
  const std::string decomposed = "cafe\xCC\x81 A\xCC\x8Angstr\xC3\xB6m", composed = "caf\xC3\xA9 \xC3\x85ngstr\xC3\xB6m";
  auto a = package->tokenizer->encode(decomposed, 0, 0);
  auto b = (*reference)->encode(decomposed, 0, 0);
  auto c = package->tokenizer->encode(composed, 0, 0);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(*a, *b);
  EXPECT_EQ(*a, *c);
  expect_package_generates(*package);
}

std::string base64(std::string_view bytes) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t v = static_cast<uint8_t>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) v |= static_cast<uint8_t>(bytes[i + 1]) << 8;
    if (i + 2 < bytes.size()) v |= static_cast<uint8_t>(bytes[i + 2]);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < bytes.size() ? kAlphabet[(v >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? kAlphabet[v & 63] : '=';
  }
  return out;
}

// Llama 3's original tokenizer.model is a tiktoken file (no merge list):
// rebuilt here from tokenizer.json's first 128000 tokens, it exports with
// merges recovered from the ranks (the same list as tokenizer.json's) and
// tokenizes the vectors the same.
TEST(ExportBpeTokenizer, TiktokenFileExportsWithMergesRecoveredFromRanks) {
  LLMPACK_REQUIRE_FIXTURE(json_gz, "hf-tokenizers/llama3/tokenizer.json.gz");
  LLMPACK_REQUIRE_FIXTURE(inputs, "llama.cpp-vocab/ggml-vocab-llama-bpe.gguf.inp");
  const std::string vectors = testing::fixture_path("llama.cpp-vocab/ggml-vocab-llama-bpe.gguf");
  auto reference = load_hf_tokenizer_json(json_gz);
  ASSERT_TRUE(reference.ok()) << reference.status().message();
  std::string tiktoken;
  for (int32_t id = 0; id < 128000; ++id) {
    auto raw = (*reference)->decode(-1, id);
    ASSERT_TRUE(raw.ok());
    tiktoken += base64(*raw) + " " + std::to_string(id) + "\n";
  }
  ScratchDir dir;
  testing::write_text(dir.file("tokenizer.model"), tiktoken);
  write_tiny_hf_llama(dir.file("hf"), 128256);
  ExportOptions o;
  o.checkpoint = dir.file("hf");
  o.tokenizer_path = dir.file("tokenizer.model");
  o.output = dir.file("tiktoken.gguf");
  o.max_seq_len = 32;
  auto report = export_package(o, {}, null_log_sink());
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_NE(report->tokenizer.find("tiktoken"), std::string::npos) << report->tokenizer;
  auto gguf = GgufFile::open(o.output);
  ASSERT_TRUE(gguf.ok());
  EXPECT_EQ(key_string(**gguf, "tokenizer.ggml.pre"), "llama-bpe");
  const auto* merges = (*gguf)->get_string_array("tokenizer.ggml.merges");
  ASSERT_NE(merges, nullptr);
  // Every split of every token into two tokens, in Hugging Face's order:
  // exactly tokenizer.json's 280147 merges.
  const auto& want = (*reference)->vocab().merges;
  ASSERT_EQ(merges->size(), want.size());
  int differing_merges = 0;
  for (size_t i = 0; i < want.size(); ++i) differing_merges += (*merges)[i] != want[i].first + " " + want[i].second;
  EXPECT_EQ(differing_merges, 0);
  // Raw bytes are spelled as tokenizer.json spells them ("Ġthe").
  const auto* tokens = (*gguf)->get_string_array("tokenizer.ggml.tokens");
  ASSERT_NE(tokens, nullptr);
  ASSERT_GE(tokens->size(), 128000u);
  int differing = 0;
  for (int32_t id = 0; id < 128000; ++id) differing += (*tokens)[id] != (*reference)->vocab().tokens[id];
  EXPECT_EQ(differing, 0);
  auto package = testing::load(o.output);
  ASSERT_TRUE(package.ok()) << package.status().message();
  EXPECT_EQ(package->tokenizer->bos_id(), 128000);
  EXPECT_EQ(count_vector_passes(*package->tokenizer, vectors), 46);
  expect_package_generates(*package);
}

TEST(ExportBpeTokenizer, PreKindIsFoundByBehaviourAndUnknownSplittersAreRefused) {
  BpeVocab v;
  // GPT-2's pattern as HF's ByteLevel(use_regex) spells it.
  v.pretokenizer_regexes = {"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"};
  auto kind = gguf_pre_kind(v);
  ASSERT_TRUE(kind.ok()) << kind.status().message();
  EXPECT_EQ(*kind, "gpt-2");
  v.pretokenizer_regexes = {"[a-z]+"};
  kind = gguf_pre_kind(v);
  ASSERT_FALSE(kind.ok());
  EXPECT_NE(kind.status().message().find("[a-z]+"), std::string::npos) << kind.status().message();
}

TEST(ExportBpeTokenizer, BadTokenizerFilesAreRefusedNamingTheFile) {
  ScratchDir dir;
  write_tiny_hf_llama(dir.file("hf"), 300);
  struct Case {
    std::string name, content, expect;
  };
  const std::vector<Case> cases = {
      {"broken.json", "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": ", "broken.json"},
      {"wordpiece.json", R"({"model": {"type": "WordPiece", "vocab": {"a": 0}}})", "WordPiece"},
      {"truncated.json.gz", std::string("\x1f\x8b\x08\x00\x00\x00", 6), "truncated.json.gz"},
  };
  for (const Case& c : cases) {
    testing::write_text(dir.file(c.name), c.content);
    ExportOptions o;
    o.checkpoint = dir.file("hf");
    o.tokenizer_path = dir.file(c.name);
    o.output = dir.file("out.gguf");
    auto report = export_package(o, {}, null_log_sink());
    ASSERT_FALSE(report.ok()) << c.name;
    EXPECT_NE(report.status().message().find(c.expect), std::string::npos) << report.status().message();
    EXPECT_FALSE(std::filesystem::exists(o.output)) << c.name;
  }
}

// JSON is told apart by its '{', which a tokenizer.bin whose
// max_token_length is 123 also starts with: it still reads as one.
TEST(ExportBpeTokenizer, TokenizerBinStartingWithABraceIsStillATokenizerBin) {
  LLMPACK_REQUIRE_FIXTURE(bin, "llama2c/tok512.bin");
  std::string bytes = testing::read_all(bin);
  ASSERT_GT(bytes.size(), 4u);
  const int32_t max_len = 123;  // bytes 7B 00 00 00: '{'
  std::memcpy(bytes.data(), &max_len, 4);
  ScratchDir dir;
  testing::write_text(dir.file("tok.bin"), bytes);
  auto m = read_tokenizer_metadata(dir.file("tok.bin"));
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->vocab_size, 512);
  EXPECT_NE(m->description.find("llama2.c"), std::string::npos) << m->description;
}

TEST(ExportBpeTokenizer, HfFolderWithSpmStyleTokenizerJsonSaysWhy) {
  LLMPACK_REQUIRE_FIXTURE(mistral, "hf-tokenizers/mistral-7b-v0.1/tokenizer.json");
  ScratchDir dir;
  write_tiny_hf_llama(dir.file("hf"), 32000);
  std::filesystem::copy_file(mistral, dir.file("hf/tokenizer.json"));
  ExportOptions o;
  o.checkpoint = dir.file("hf");
  o.output = dir.file("out.gguf");
  auto report = export_package(o, {}, null_log_sink());
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.status().message().find("tokenizer.json"), std::string::npos) << report.status().message();
}

TEST(ExportBpeTokenizer, WholeWordLookupThatNoPreKindImpliesIsRefused) {
  BpeVocab v;
  v.tokens = {"a", "b", "ab"};
  v.merges = {{"a", "b"}};
  auto pre = pretokenizer_regexes("gpt-2");
  ASSERT_TRUE(pre.ok());
  v.pretokenizer_regexes = *pre;
  v.ignore_merges = true;  // GGUF turns this on for llama-bpe only
  auto tok = BpeTokenizer::create(v);
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  auto m = bpe_tokenizer_metadata(**tok, std::nullopt);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("gpt-2"), std::string::npos) << m.status().message();
  v.ignore_merges = false;
  tok = BpeTokenizer::create(v);
  ASSERT_TRUE(tok.ok());
  m = bpe_tokenizer_metadata(**tok, std::string("{{ x }}"));
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->vocab_size, 3);
  bool has_template = false;
  for (const auto& [key, value] : m->keys) has_template |= key == "tokenizer.chat_template";
  EXPECT_TRUE(has_template);
}

}  // namespace
}  // namespace llmpack
