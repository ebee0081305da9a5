// GgufFile on damaged files built field by field: each test breaks one thing
// and checks the error names it. Run under ASan+UBSan, "nothing crashes" is
// checked too.
#include <gtest/gtest.h>

#include <optional>

#include "format/gguf.h"
#include "unit/format/format_test_util.h"

namespace llmpack {
namespace {

using testing::RawBytes;
using testing::HasText;

struct TensorSpec {
  std::string name;
  std::vector<uint64_t> ne;
  uint32_t dtype = 0;
  uint64_t offset = 0;
  std::optional<uint32_t> n_dims;  // overrides ne.size() in the file
};

// A small valid file: three KVs, two tensors (f32 [4,2] at 0, q4_0 [32] at 32).
struct Spec {
  uint32_t magic = 0x46554747;
  uint32_t version = 3;
  std::optional<uint64_t> n_tensors;
  std::optional<uint64_t> n_kv;
  bool write_alignment = true;
  uint32_t alignment_type = 4;  // u32
  uint64_t alignment = 32;
  std::optional<uint64_t> arch_len;         // overrides the length of the "llama" string
  uint32_t tokens_elem_type = 8;            // string
  std::optional<uint64_t> tokens_count;     // overrides the array count
  uint32_t kv_type_of_arch = 8;
  std::vector<TensorSpec> tensors = {{"a.weight", {4, 2}, 0, 0, {}}, {"b.weight", {32}, 2, 32, {}}};
  size_t data_bytes = 32 + 18;
};

std::vector<uint8_t> build(const Spec& s) {
  RawBytes b;
  b.u32(s.magic).u32(s.version);
  b.u64(s.n_tensors.value_or(s.tensors.size()));
  b.u64(s.n_kv.value_or(s.write_alignment ? 3 : 2));
  b.str("general.architecture").u32(s.kv_type_of_arch);
  if (s.arch_len) {
    b.u64(*s.arch_len);
    b.str("lla");  // some bytes follow either way
  } else {
    b.str("llama");
  }
  if (s.write_alignment) {
    b.str("general.alignment").u32(s.alignment_type);
    if (s.alignment_type == 10) b.u64(s.alignment);
    else b.u32(static_cast<uint32_t>(s.alignment));
  }
  b.str("tokenizer.ggml.tokens").u32(9).u32(s.tokens_elem_type);
  b.u64(s.tokens_count.value_or(3));
  b.str("a").str("b").str("c");
  for (const TensorSpec& t : s.tensors) {
    b.str(t.name).u32(t.n_dims.value_or(static_cast<uint32_t>(t.ne.size())));
    for (uint64_t d : t.ne) b.u64(d);
    b.u32(t.dtype).u64(t.offset);
  }
  b.pad_to(s.write_alignment && s.alignment > 0 && s.alignment < 4096 ? s.alignment : 32);
  b.zeros(s.data_bytes);
  return b.bytes();
}

std::string parse_error(const Spec& s) {
  auto f = GgufFile::from_bytes(build(s));
  if (f.ok()) return "<parsed fine>";
  return f.status().message();
}

TEST(GgufValidation, BaselineParses) {
  auto f = GgufFile::from_bytes(build(Spec{}));
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ((*f)->tensors().size(), 2u);
  EXPECT_EQ((*f)->get_string("general.architecture"), "llama");
  EXPECT_EQ((*f)->path(), "<memory>");
  EXPECT_EQ((*f)->find_tensor("b.weight")->n_bytes, 18u);
  EXPECT_EQ((*f)->find_tensor("a.weight")->n_elements(), 8);
}

TEST(GgufValidation, EveryTruncationIsRefused) {
  const std::vector<uint8_t> full = build(Spec{});
  ASSERT_TRUE(GgufFile::from_bytes(full).ok());
  for (size_t cut = 0; cut < full.size(); ++cut) {
    auto f = GgufFile::from_bytes(std::span(full).first(cut));
    ASSERT_FALSE(f.ok()) << "prefix of " << cut << " bytes parsed";
    const std::string& m = f.status().message();
    EXPECT_TRUE(m.find("truncated") != std::string::npos ||
                m.find("extends past the end") != std::string::npos ||
                m.find("smaller than the 24-byte header") != std::string::npos ||
                m.find("remain") != std::string::npos || m.find("impossible") != std::string::npos)
        << "cut " << cut << ": " << m;
  }
}

TEST(GgufValidation, TruncatedHeaderMessage) {
  const std::vector<uint8_t> full = build(Spec{});
  auto f = GgufFile::from_bytes(std::span(full).first(10));
  ASSERT_FALSE(f.ok());
  EXPECT_TRUE(HasText(f.status().message(), "10 bytes, smaller than the 24-byte header"));
}

TEST(GgufValidation, TruncatedInTensorData) {
  std::vector<uint8_t> full = build(Spec{});
  full.resize(full.size() - 1);
  auto f = GgufFile::from_bytes(full);
  ASSERT_FALSE(f.ok());
  EXPECT_TRUE(HasText(f.status().message(), "tensor 'b.weight' data [offset 32, 18 bytes] extends past the end of the file"));
}

TEST(GgufValidation, WrongMagic) {
  Spec s;
  s.magic = 0x4c4d5447;  // "GTML"
  EXPECT_TRUE(HasText(parse_error(s), "bad magic \"GTML\" (expected \"GGUF\")"));
}

TEST(GgufValidation, BadVersion) {
  Spec s;
  s.version = 4;
  EXPECT_TRUE(HasText(parse_error(s), "unsupported version 4"));
  s.version = 1;
  EXPECT_TRUE(HasText(parse_error(s), "unsupported version 1"));
  s.version = 0x03000000;
  EXPECT_TRUE(HasText(parse_error(s), "big-endian"));
  s.version = 2;
  EXPECT_EQ(parse_error(s), "<parsed fine>");
}

TEST(GgufValidation, OffsetPastTheEnd) {
  Spec s;
  s.tensors[1].offset = 1 << 20;
  EXPECT_TRUE(HasText(parse_error(s), "tensor 'b.weight' data [offset 1048576, 18 bytes] extends past the end"));
  s.tensors[1].offset = ~uint64_t{31};  // offset + size would wrap around
  EXPECT_TRUE(HasText(parse_error(s), "extends past the end"));
}

TEST(GgufValidation, AbsurdTensorCount) {
  Spec s;
  s.n_tensors = uint64_t{1} << 60;
  EXPECT_TRUE(HasText(parse_error(s), "tensor count 1152921504606846976 is impossible"));
}

TEST(GgufValidation, AbsurdMetadataCount) {
  Spec s;
  s.n_kv = ~uint64_t{0};
  EXPECT_TRUE(HasText(parse_error(s), "metadata count 18446744073709551615 is impossible"));
}

TEST(GgufValidation, AbsurdNDims) {
  Spec s;
  s.tensors[0].n_dims = 5;
  EXPECT_TRUE(HasText(parse_error(s), "tensor 'a.weight' has 5 dimensions (expected 1 to 4)"));
  s.tensors[0].n_dims = 0;
  EXPECT_TRUE(HasText(parse_error(s), "tensor 'a.weight' has 0 dimensions"));
  s.tensors[0].n_dims = 0xffffffff;
  EXPECT_TRUE(HasText(parse_error(s), "4294967295 dimensions"));
}

TEST(GgufValidation, ZeroOrHugeDimension) {
  Spec s;
  s.tensors[0].ne = {4, 0};
  EXPECT_TRUE(HasText(parse_error(s), "tensor 'a.weight' dimension 1 is 0"));
  s.tensors[0].ne = {4, ~uint64_t{0}};
  EXPECT_TRUE(HasText(parse_error(s), "dimension 1 is 18446744073709551615"));
}

TEST(GgufValidation, DimensionsOverflow) {
  Spec s;
  s.tensors[0].ne = {uint64_t{1} << 32, uint64_t{1} << 32};
  EXPECT_TRUE(HasText(parse_error(s), "tensor 'a.weight': the product of its dimensions overflows"));
  // Elements fit in 64 bits, bytes do not (f32: x4).
  s.tensors[0].ne = {uint64_t{1} << 31, uint64_t{1} << 31};
  EXPECT_TRUE(HasText(parse_error(s), "byte size overflows"));
}

TEST(GgufValidation, BadStringLength) {
  Spec s;
  s.arch_len = uint64_t{1} << 40;
  EXPECT_TRUE(HasText(parse_error(s), "metadata key 'general.architecture' at byte"));
  EXPECT_TRUE(HasText(parse_error(s), "has length 1099511627776 but only"));
  s.arch_len = ~uint64_t{0};
  EXPECT_TRUE(HasText(parse_error(s), "has length 18446744073709551615"));
}

TEST(GgufValidation, AbsurdArrayCount) {
  Spec s;
  s.tokens_count = uint64_t{1} << 62;
  EXPECT_TRUE(HasText(parse_error(s), "metadata key 'tokenizer.ggml.tokens': array of 4611686018427387904 "
                        "string elements needs at least"));
  s.tokens_count = ~uint64_t{0};
  EXPECT_TRUE(HasText(parse_error(s), "needs at least 2^64 bytes"));
}

TEST(GgufValidation, NestedArrayRefused) {
  Spec s;
  s.tokens_elem_type = 9;
  EXPECT_TRUE(HasText(parse_error(s), "nested arrays"));
}

TEST(GgufValidation, UnknownValueTypes) {
  Spec s;
  s.tokens_elem_type = 13;
  EXPECT_TRUE(HasText(parse_error(s), "unknown array element type 13"));
  Spec t;
  t.kv_type_of_arch = 99;
  EXPECT_TRUE(HasText(parse_error(t), "metadata key 'general.architecture' has unknown value type 99"));
}

TEST(GgufValidation, UnknownTensorDType) {
  Spec s;
  s.tensors[0].dtype = 4;  // retired Q4_2
  EXPECT_TRUE(HasText(parse_error(s), "tensor 'a.weight' has unknown tensor type 4"));
  s.tensors[0].dtype = 0xdeadbeef;
  EXPECT_TRUE(HasText(parse_error(s), "unknown tensor type 3735928559"));
  s.tensors[0].dtype = static_cast<uint32_t>(DType::kQ5_0x8);  // memory-only: no file holds one
  EXPECT_TRUE(HasText(parse_error(s), "unknown tensor type 65542"));
}

TEST(GgufValidation, RowNotMultipleOfBlock) {
  Spec s;
  s.tensors[1].ne = {33};
  EXPECT_TRUE(HasText(parse_error(s), "tensor 'b.weight' of type q4_0 has rows of 33 elements, "
                                        "not a multiple of its block size 32"));
}

TEST(GgufValidation, MisalignedOffset) {
  Spec s;
  s.tensors[1].offset = 33;
  EXPECT_TRUE(HasText(parse_error(s), "tensor 'b.weight' offset 33 is not a multiple of the alignment 32"));
}

TEST(GgufValidation, BadAlignmentValue) {
  Spec s;
  s.alignment = 0;
  EXPECT_TRUE(HasText(parse_error(s), "general.alignment is 0 (expected a nonzero power of two"));
  s.alignment = 48;
  EXPECT_TRUE(HasText(parse_error(s), "general.alignment is 48"));
  s.alignment_type = 10;  // u64
  s.alignment = uint64_t{1} << 63;
  EXPECT_TRUE(HasText(parse_error(s), "general.alignment is 9223372036854775808"));
}

TEST(GgufValidation, OtherAlignmentHonoured) {
  Spec s;
  s.alignment = 64;
  s.tensors[1].offset = 64;
  s.data_bytes = 64 + 18;
  auto f = GgufFile::from_bytes(build(s));
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ((*f)->alignment(), 64u);
  s.tensors[1].offset = 32;  // aligned to 32 but not to 64
  EXPECT_TRUE(HasText(parse_error(s), "not a multiple of the alignment 64"));
}

TEST(GgufValidation, DuplicateTensorName) {
  Spec s;
  s.tensors[1].name = "a.weight";
  EXPECT_TRUE(HasText(parse_error(s), "duplicate tensor name 'a.weight'"));
}

TEST(GgufValidation, DuplicateMetadataKey) {
  RawBytes b;
  b.u32(0x46554747).u32(3).u64(0).u64(2);
  b.str("k").u32(4).u32(1);
  b.str("k").u32(4).u32(2);
  auto f = GgufFile::from_bytes(b.bytes());
  ASSERT_FALSE(f.ok());
  EXPECT_TRUE(HasText(f.status().message(), "duplicate metadata key 'k'"));
}

TEST(GgufValidation, BadBoolValue) {
  RawBytes b;
  b.u32(0x46554747).u32(3).u64(0).u64(1);
  b.str("flag").u32(7).u8(2);
  auto f = GgufFile::from_bytes(b.bytes());
  ASSERT_FALSE(f.ok());
  EXPECT_TRUE(HasText(f.status().message(), "bool value 2 (expected 0 or 1)"));
}

TEST(GgufValidation, EmptyInputAndFile) {
  auto f = GgufFile::from_bytes({});
  ASSERT_FALSE(f.ok());
  EXPECT_TRUE(HasText(f.status().message(), "0 bytes"));
}

// Flips each byte of the header region of a valid file in turn: whatever the
// result, no crash, and a failure always carries a message.
TEST(GgufValidation, SingleByteCorruptionsNeverCrash) {
  const std::vector<uint8_t> good = build(Spec{});
  for (size_t i = 0; i < good.size(); ++i) {
    for (uint8_t v : {uint8_t{0x00}, uint8_t{0xff}, uint8_t{0x80}}) {
      std::vector<uint8_t> bad = good;
      bad[i] = v;
      auto f = GgufFile::from_bytes(bad);
      if (!f.ok()) {
        EXPECT_FALSE(f.status().message().empty());
        EXPECT_EQ(f.status().message().rfind("GGUF", 0), 0u) << f.status().message();
      } else {
        for (const auto& t : (*f)->tensors()) EXPECT_GT(t.n_bytes, 0u);
      }
    }
  }
}

}  // namespace
}  // namespace llmpack
