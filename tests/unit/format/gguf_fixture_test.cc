// GgufFile on real files: stories260K.gguf, ecosystem-quantized GGUFs and a
// vocab-only GGUF (tests/common/fixtures.h skips when fixtures are absent).
#include <gtest/gtest.h>

#include <cstring>
#include <map>

#include "common/fixtures.h"
#include "format/gguf.h"
#include "unit/format/format_test_util.h"

namespace llmpack {
namespace {

using testing::read_file_bytes;

TEST(GgufFixture, Stories260KHeaderAndTensors) {
  LLMPACK_REQUIRE_FIXTURE(path, "gguf/stories260K.gguf");
  auto f = GgufFile::open(path);
  ASSERT_TRUE(f.ok()) << f.status().message();
  const GgufFile& g = **f;
  EXPECT_EQ(g.version(), 3u);
  EXPECT_EQ(g.alignment(), 32u);
  EXPECT_EQ(g.file_size(), 1185376u);
  EXPECT_EQ(g.path(), path);
  ASSERT_EQ(g.tensors().size(), 48u);

  const GgufTensorInfo* emb = g.find_tensor("token_embd.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->dtype, DType::kF32);
  EXPECT_EQ(emb->ne, (std::vector<int64_t>{64, 512}));
  EXPECT_EQ(emb->n_elements(), 64 * 512);
  EXPECT_EQ(emb->n_bytes, 64u * 512u * 4u);
  EXPECT_EQ(g.find_tensor("no.such.tensor"), nullptr);

  // Every tensor's data pointer is the byte at 14176 (data start) + offset.
  const std::vector<uint8_t> raw = read_file_bytes(path);
  ASSERT_EQ(raw.size(), g.file_size());
  for (const GgufTensorInfo& t : g.tensors()) {
    EXPECT_EQ(t.offset % 32, 0u) << t.name;
    ASSERT_LE(14176 + t.offset + t.n_bytes, raw.size()) << t.name;
    EXPECT_EQ(std::memcmp(t.data, raw.data() + 14176 + t.offset, t.n_bytes), 0) << t.name;
    EXPECT_EQ(g.find_tensor(t.name), &t);
  }
  const GgufTensorInfo* q = g.find_tensor("blk.4.attn_q.weight");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->ne, (std::vector<int64_t>{64, 64}));
  const GgufTensorInfo* down = g.find_tensor("blk.0.ffn_down.weight");
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->ne, (std::vector<int64_t>{172, 64}));
}

TEST(GgufFixture, Stories260KMetadata) {
  LLMPACK_REQUIRE_FIXTURE(path, "gguf/stories260K.gguf");
  auto f = GgufFile::open(path);
  ASSERT_TRUE(f.ok()) << f.status().message();
  const GgufFile& g = **f;
  EXPECT_EQ(g.get_string("general.architecture"), "llama");
  EXPECT_EQ(g.get_uint("llama.embedding_length"), 64u);
  EXPECT_EQ(g.get_int("llama.embedding_length"), 64);
  EXPECT_EQ(g.get_float("llama.embedding_length"), 64.0);
  EXPECT_EQ(g.get_uint("llama.block_count"), 5u);
  EXPECT_EQ(g.get_uint("llama.feed_forward_length"), 172u);
  EXPECT_EQ(g.get_uint("llama.attention.head_count"), 8u);
  EXPECT_EQ(g.get_uint("llama.attention.head_count_kv"), 4u);
  EXPECT_EQ(g.get_uint("llama.context_length"), 2048u);
  EXPECT_EQ(g.get_uint("llama.rope.dimension_count"), 8u);
  EXPECT_EQ(g.get_uint("tokenizer.ggml.seperator_token_id"), 4294967295u);
  EXPECT_EQ(g.get_string("tokenizer.ggml.model"), "llama");
  auto eps = g.get_float("llama.attention.layer_norm_rms_epsilon");
  ASSERT_TRUE(eps.has_value());
  EXPECT_NEAR(*eps, 1e-5, 1e-9);
  // Wrong-type lookups give nothing rather than a converted value.
  EXPECT_FALSE(g.get_uint("general.architecture").has_value());
  EXPECT_FALSE(g.get_string("llama.embedding_length").has_value());
  EXPECT_FALSE(g.get_bool("llama.embedding_length").has_value());
  EXPECT_FALSE(g.get_uint("no.such.key").has_value());

  const auto* tokens = g.get_string_array("tokenizer.ggml.tokens");
  ASSERT_NE(tokens, nullptr);
  ASSERT_EQ(tokens->size(), 512u);
  EXPECT_EQ((*tokens)[3], "<0x00>");
  const GgufValue* tv = g.find("tokenizer.ggml.tokens");
  ASSERT_NE(tv, nullptr);
  EXPECT_EQ(tv->type, GgufValueType::kArray);
  EXPECT_EQ(tv->array_type, GgufValueType::kString);
  auto scores = g.get_float_array("tokenizer.ggml.scores");
  ASSERT_TRUE(scores.has_value());
  EXPECT_EQ(scores->size(), 512u);
  auto types = g.get_int_array("tokenizer.ggml.token_type");
  ASSERT_TRUE(types.has_value());
  ASSERT_EQ(types->size(), 512u);
  EXPECT_EQ((*types)[3], 6);  // byte token
  EXPECT_EQ(g.get_string_array("tokenizer.ggml.scores"), nullptr);
}

TEST(GgufFixture, FromBytesEqualsOpen) {
  LLMPACK_REQUIRE_FIXTURE(path, "gguf/stories260K.gguf");
  const std::vector<uint8_t> raw = read_file_bytes(path);
  auto a = GgufFile::open(path);
  auto b = GgufFile::from_bytes(raw);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ((*a)->tensors().size(), (*b)->tensors().size());
  EXPECT_EQ((*a)->metadata().size(), (*b)->metadata().size());
  for (size_t i = 0; i < (*a)->tensors().size(); ++i) {
    const auto& ta = (*a)->tensors()[i];
    const auto& tb = (*b)->tensors()[i];
    EXPECT_EQ(ta.name, tb.name);
    EXPECT_EQ(std::memcmp(ta.data, tb.data, ta.n_bytes), 0);
  }
}

struct EcoCase {
  const char* file;
  std::map<DType, int> dtype_counts;
};

int64_t expected_bytes(DType t, const std::vector<int64_t>& ne) {
  // Block sizes written out here rather than taken from core/dtype.
  int64_t n = 1;
  for (int64_t d : ne) n *= d;
  switch (t) {
    case DType::kF32: return n * 4;
    case DType::kF16:
    case DType::kBF16: return n * 2;
    case DType::kQ8_0: return n / 32 * 34;
    case DType::kQ4_0: return n / 32 * 18;
    case DType::kQ4_K: return n / 256 * 144;
    case DType::kQ5_K: return n / 256 * 176;
    case DType::kQ6_K: return n / 256 * 210;
    default: return -1;
  }
}

class GgufEcosystem : public ::testing::TestWithParam<EcoCase> {};

TEST_P(GgufEcosystem, DTypesAndSizes) {
  const EcoCase& c = GetParam();
  LLMPACK_REQUIRE_FIXTURE(path, std::string("gguf/ecosystem/") + c.file);
  auto f = GgufFile::open(path);
  ASSERT_TRUE(f.ok()) << f.status().message();
  const GgufFile& g = **f;
  EXPECT_EQ(g.tensors().size(), 21u);
  std::map<DType, int> counts;
  uint64_t end = 0;
  for (const GgufTensorInfo& t : g.tensors()) {
    ++counts[t.dtype];
    EXPECT_EQ(static_cast<int64_t>(t.n_bytes), expected_bytes(t.dtype, t.ne)) << t.name;
    EXPECT_EQ(t.offset % g.alignment(), 0u);
    end = std::max(end, t.offset + t.n_bytes);
  }
  EXPECT_EQ(counts, c.dtype_counts);
  EXPECT_LE(end, g.file_size());
  const GgufTensorInfo* q = g.find_tensor("blk.0.attn_q.weight");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->ne, (std::vector<int64_t>{256, 256}));
  const GgufTensorInfo* k = g.find_tensor("blk.0.attn_k.weight");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->ne, (std::vector<int64_t>{256, 128}));
  EXPECT_EQ(g.get_uint("llama.embedding_length"), 256u);
  EXPECT_EQ(g.get_uint("general.quantization_version"), 2u);
}

INSTANTIATE_TEST_SUITE_P(
    Files, GgufEcosystem,
    ::testing::Values(
        EcoCase{"eco-llama-F16.gguf", {{DType::kF16, 16}, {DType::kF32, 5}}},
        EcoCase{"eco-llama-BF16.gguf", {{DType::kBF16, 16}, {DType::kF32, 5}}},
        EcoCase{"eco-llama-Q8_0.gguf", {{DType::kQ8_0, 16}, {DType::kF32, 5}}},
        EcoCase{"eco-llama-Q4_0.gguf", {{DType::kQ4_0, 15}, {DType::kQ6_K, 1}, {DType::kF32, 5}}},
        EcoCase{"eco-llama-Q4_K_M.gguf", {{DType::kQ4_K, 13}, {DType::kQ6_K, 3}, {DType::kF32, 5}}},
        EcoCase{"eco-llama-Q5_K_M.gguf", {{DType::kQ5_K, 13}, {DType::kQ6_K, 3}, {DType::kF32, 5}}},
        EcoCase{"eco-llama-Q6_K.gguf", {{DType::kQ6_K, 16}, {DType::kF32, 5}}}),
    [](const ::testing::TestParamInfo<EcoCase>& info) {
      std::string n = info.param.file;
      n = n.substr(4, n.size() - 9);  // "llama-Q4_0"
      for (char& ch : n)
        if (ch == '-' || ch == '.') ch = '_';
      return n;
    });

TEST(GgufFixture, VocabOnlyFileHasNoTensors) {
  LLMPACK_REQUIRE_FIXTURE(path, "llama.cpp-vocab/ggml-vocab-gpt-2.gguf");
  auto f = GgufFile::open(path);
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_TRUE((*f)->tensors().empty());
  EXPECT_EQ((*f)->get_string("tokenizer.ggml.model"), "gpt2");
  const auto* tokens = (*f)->get_string_array("tokenizer.ggml.tokens");
  ASSERT_NE(tokens, nullptr);
  EXPECT_EQ(tokens->size(), 50257u);
  const auto* merges = (*f)->get_string_array("tokenizer.ggml.merges");
  ASSERT_NE(merges, nullptr);
  EXPECT_EQ(merges->size(), 50000u);
}

TEST(GgufFixture, MissingFileNamesPathAndReason) {
  auto f = GgufFile::open("/nonexistent/dir/model.gguf");
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("/nonexistent/dir/model.gguf"), std::string::npos);
  EXPECT_NE(f.status().message().find("No such file or directory"), std::string::npos);
}

}  // namespace
}  // namespace llmpack
