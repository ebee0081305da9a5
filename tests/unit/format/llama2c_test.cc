// llama2.c checkpoints: the real stories260K.bin (cross-checked against the
// GGUF of the same model) and damaged headers built in the test.
#include <gtest/gtest.h>

#include <cstring>

#include "common/fixtures.h"
#include "format/gguf.h"
#include "format/llama2c.h"
#include "unit/format/format_test_util.h"

namespace llmpack {
namespace {

using testing::HasText;
using testing::RawBytes;

TEST(Llama2c, Stories260KConfig) {
  LLMPACK_REQUIRE_FIXTURE(path, "llama2c/stories260K.bin");
  auto ck = read_llama2c_checkpoint(path);
  ASSERT_TRUE(ck.ok()) << ck.status().message();
  const Llama2cConfig& c = ck->config;
  EXPECT_EQ(c.dim, 64);
  EXPECT_EQ(c.hidden_dim, 172);
  EXPECT_EQ(c.n_layers, 5);
  EXPECT_EQ(c.n_heads, 8);
  EXPECT_EQ(c.n_kv_heads, 4);
  EXPECT_EQ(c.vocab_size, 512);
  EXPECT_EQ(c.seq_len, 512);
  EXPECT_TRUE(c.shared_classifier);
  EXPECT_EQ(c.head_dim(), 8);
  EXPECT_EQ(c.kv_dim(), 32);
  EXPECT_EQ(ck->weights.wcls, ck->weights.token_embedding);
  ASSERT_NE(ck->file, nullptr);
  EXPECT_EQ(ck->file->size(), 1056540u);
  // Offsets in floats after the 28-byte header.
  const float* base = reinterpret_cast<const float*>(ck->file->data() + 28);
  EXPECT_EQ(ck->weights.token_embedding, base);
  EXPECT_EQ(ck->weights.rms_att, base + 512 * 64);
  EXPECT_EQ(ck->weights.wq, base + 512 * 64 + 5 * 64);
  EXPECT_EQ(ck->weights.rms_final + 64 + 2 * 512 * 4, base + (1056540 - 28) / 4);
}

// The GGUF of the same model holds the same float data (README: no Q/K permutation).
TEST(Llama2c, Stories260KMatchesGguf) {
  LLMPACK_REQUIRE_FIXTURE(bin, "llama2c/stories260K.bin");
  LLMPACK_REQUIRE_FIXTURE(gguf, "gguf/stories260K.gguf");
  auto ck = read_llama2c_checkpoint(bin);
  auto g = GgufFile::open(gguf);
  ASSERT_TRUE(ck.ok() && g.ok());
  const Llama2cConfig& c = ck->config;
  const Llama2cWeights& w = ck->weights;
  auto same = [&](const char* name, const float* p, int64_t n_floats) {
    const GgufTensorInfo* t = (*g)->find_tensor(name);
    ASSERT_NE(t, nullptr) << name;
    ASSERT_EQ(t->n_bytes, static_cast<uint64_t>(n_floats) * 4) << name;
    EXPECT_EQ(std::memcmp(t->data, p, t->n_bytes), 0) << name;
  };
  same("token_embd.weight", w.token_embedding, int64_t{c.vocab_size} * c.dim);
  same("output_norm.weight", w.rms_final, c.dim);
  const int64_t dd = int64_t{c.dim} * c.dim, kd = int64_t{c.kv_dim()} * c.dim;
  const int64_t hd = int64_t{c.hidden_dim} * c.dim;
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    same((b + "attn_norm.weight").c_str(), w.rms_att + l * c.dim, c.dim);
    same((b + "attn_q.weight").c_str(), w.wq + l * dd, dd);
    same((b + "attn_k.weight").c_str(), w.wk + l * kd, kd);
    same((b + "attn_v.weight").c_str(), w.wv + l * kd, kd);
    same((b + "attn_output.weight").c_str(), w.wo + l * dd, dd);
    same((b + "ffn_norm.weight").c_str(), w.rms_ffn + l * c.dim, c.dim);
    same((b + "ffn_gate.weight").c_str(), w.w1 + l * hd, hd);
    same((b + "ffn_down.weight").c_str(), w.w2 + l * hd, hd);
    same((b + "ffn_up.weight").c_str(), w.w3 + l * hd, hd);
  }
}

// A tiny checkpoint: dim 8, hidden 12, 2 layers, 2 heads, 1 kv head, vocab 10,
// seq_len 4; float i of the file holds the value i so views can be checked.
struct Header {
  int32_t dim = 8, hidden = 12, layers = 2, heads = 2, kv_heads = 1, vocab = 10, seq_len = 4;
};

int64_t n_floats(const Header& h) {
  const int64_t d = h.dim, hd = h.hidden, L = h.layers, kv = h.dim / h.heads * h.kv_heads;
  const int64_t v = h.vocab < 0 ? -int64_t{h.vocab} : h.vocab;
  int64_t n = v * d + L * d + L * d * d + 2 * L * kv * d + L * d * d + L * d + 3 * L * hd * d + d;
  n += 2 * int64_t{h.seq_len} * (h.dim / h.heads / 2);
  if (h.vocab < 0) n += v * d;
  return n;
}

std::vector<uint8_t> build(const Header& h, int64_t floats) {
  RawBytes b;
  b.i32(h.dim).i32(h.hidden).i32(h.layers).i32(h.heads).i32(h.kv_heads).i32(h.vocab).i32(h.seq_len);
  for (int64_t i = 0; i < floats; ++i) b.f32(static_cast<float>(i));
  return b.bytes();
}

Result<Llama2cCheckpoint> parse(const std::vector<uint8_t>& bytes) {
  return parse_llama2c_checkpoint(MappedFile::from_bytes(bytes));
}

TEST(Llama2c, TinySharedClassifier) {
  Header h;
  auto ck = parse(build(h, n_floats(h)));
  ASSERT_TRUE(ck.ok()) << ck.status().message();
  const Llama2cWeights& w = ck->weights;
  EXPECT_EQ(w.token_embedding[0], 0.0f);
  // Float index where each array starts (kv_dim 4):
  EXPECT_EQ(w.rms_att[0], 80.0f);     // after token_embedding [10, 8]
  EXPECT_EQ(w.wq[0], 96.0f);          // after rms_att [2, 8]
  EXPECT_EQ(w.wk[0], 224.0f);         // after wq [2, 8, 8]
  EXPECT_EQ(w.wv[0], 288.0f);         // after wk [2, 4, 8]
  EXPECT_EQ(w.wo[0], 352.0f);         // after wv [2, 4, 8]
  EXPECT_EQ(w.rms_ffn[0], 480.0f);    // after wo [2, 8, 8]
  EXPECT_EQ(w.w1[0], 496.0f);         // after rms_ffn [2, 8]
  EXPECT_EQ(w.w2[0], 688.0f);         // after w1 [2, 12, 8]
  EXPECT_EQ(w.w3[0], 880.0f);         // after w2 [2, 8, 12]
  EXPECT_EQ(w.rms_final[0], 1072.0f); // after w3 [2, 12, 8]
  EXPECT_EQ(n_floats(h), 1072 + 8 + 2 * 4 * 2);  // + rms_final + freq_cis [4, 2] x 2
  EXPECT_EQ(w.wcls, w.token_embedding);
}

TEST(Llama2c, TinySeparateClassifier) {
  Header h;
  h.vocab = -10;
  const int64_t n = n_floats(h);
  auto ck = parse(build(h, n));
  ASSERT_TRUE(ck.ok()) << ck.status().message();
  EXPECT_EQ(ck->config.vocab_size, 10);
  EXPECT_FALSE(ck->config.shared_classifier);
  EXPECT_NE(ck->weights.wcls, ck->weights.token_embedding);
  EXPECT_EQ(ck->weights.wcls[0], static_cast<float>(n - 80));  // the last 10 x 8 floats
  // The same file read as shared has 80 trailing floats.
  h.vocab = 10;
  auto shared = parse(build(h, n));
  ASSERT_FALSE(shared.ok());
  EXPECT_TRUE(HasText(shared.status().message(), "trailing bytes"));
}

TEST(Llama2c, Truncated) {
  Header h;
  const std::vector<uint8_t> good = build(h, n_floats(h));
  for (size_t cut : {size_t{0}, size_t{27}, size_t{28}, size_t{100}, good.size() - 4, good.size() - 1}) {
    auto ck = parse(std::vector<uint8_t>(good.begin(), good.begin() + cut));
    ASSERT_FALSE(ck.ok()) << cut;
    const std::string& m = ck.status().message();
    if (cut < 28)
      EXPECT_TRUE(HasText(m, "smaller than the 28-byte header")) << cut;
    else
      EXPECT_TRUE(HasText(m, "file too short")) << cut;
  }
}

TEST(Llama2c, FileTooShortMessageNamesSizes) {
  Header h;
  std::vector<uint8_t> bytes = build(h, n_floats(h) - 1);
  auto ck = parse(bytes);
  ASSERT_FALSE(ck.ok());
  const std::string expected = std::to_string(28 + 4 * n_floats(h));
  EXPECT_TRUE(HasText(ck.status().message(), "file is " + std::to_string(bytes.size()) + " bytes"));
  EXPECT_TRUE(HasText(ck.status().message(), "needs exactly " + expected));
}

TEST(Llama2c, NegativeOrZeroDims) {
  const std::pair<int32_t Header::*, const char*> fields[] = {
      {&Header::dim, "dim"},         {&Header::hidden, "hidden_dim"},
      {&Header::layers, "n_layers"}, {&Header::heads, "n_heads"},
      {&Header::kv_heads, "n_kv_heads"}, {&Header::vocab, "vocab_size"},
      {&Header::seq_len, "seq_len"},
  };
  for (const auto& [field, name] : fields) {
    for (int32_t v : {0, -1, INT32_MIN}) {
      if (field == &Header::vocab && v != 0) continue;  // negative vocab is the unshared flag
      Header h;
      h.*field = v;
      auto ck = parse(build(h, 1000));
      ASSERT_FALSE(ck.ok()) << name << " " << v;
      EXPECT_TRUE(HasText(ck.status().message(), std::string(name))) << v;
      EXPECT_TRUE(HasText(ck.status().message(), "is " + std::to_string(v) + " (expected > 0)"));
    }
  }
  Header h;
  h.vocab = INT32_MIN;  // abs() would overflow int32
  auto ck = parse(build(h, 10));
  ASSERT_FALSE(ck.ok());
  EXPECT_TRUE(HasText(ck.status().message(), "vocab_size"));
}

TEST(Llama2c, DimNotDivisibleByHeads) {
  Header h;
  h.heads = 3;
  h.kv_heads = 1;
  auto ck = parse(build(h, 1000));
  ASSERT_FALSE(ck.ok());
  EXPECT_TRUE(HasText(ck.status().message(), "dim 8 is not divisible by n_heads 3"));
}

TEST(Llama2c, HeadsNotDivisibleByKvHeads) {
  Header h;
  h.dim = 12;
  h.heads = 3;
  h.kv_heads = 2;
  auto ck = parse(build(h, 1000));
  ASSERT_FALSE(ck.ok());
  EXPECT_TRUE(HasText(ck.status().message(), "n_heads 3 is not divisible by n_kv_heads 2"));
}

TEST(Llama2c, MoreKvHeadsThanHeads) {
  Header h;
  h.kv_heads = 4;
  auto ck = parse(build(h, 1000));
  ASSERT_FALSE(ck.ok());
  EXPECT_TRUE(HasText(ck.status().message(), "n_kv_heads is 4 (expected at most 2)"));
}

TEST(Llama2c, OddHeadDim) {
  Header h;
  h.dim = 6;
  h.heads = 2;
  auto ck = parse(build(h, 1000));
  ASSERT_FALSE(ck.ok());
  EXPECT_TRUE(HasText(ck.status().message(), "head_dim 3 is odd"));
}

TEST(Llama2c, HugeDimsRefusedWithoutOverflow) {
  Header h;
  h.dim = INT32_MAX - 1;
  h.heads = 2;
  auto ck = parse(build(h, 10));
  ASSERT_FALSE(ck.ok());
  EXPECT_TRUE(HasText(ck.status().message(), "dim is 2147483646 (expected at most"));
}

TEST(Llama2c, VersionedFormatNamed) {
  RawBytes b;
  b.u32(0x616b3432).i32(2);
  b.zeros(256);
  auto ck = parse(b.bytes());
  ASSERT_FALSE(ck.ok());
  EXPECT_TRUE(HasText(ck.status().message(), "versioned llama2.c export format"));
}

TEST(Llama2c, MissingFile) {
  auto ck = read_llama2c_checkpoint("/nonexistent/model.bin");
  ASSERT_FALSE(ck.ok());
  EXPECT_TRUE(HasText(ck.status().message(), "/nonexistent/model.bin"));
  EXPECT_TRUE(HasText(ck.status().message(), "No such file or directory"));
  EXPECT_FALSE(parse_llama2c_checkpoint(nullptr).ok());
}

}  // namespace
}  // namespace llmpack
