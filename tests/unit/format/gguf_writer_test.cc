// GgufWriter: round trip through GgufFile (every value type, several tensor
// dtypes, alignment), insertion order, progress, and failed writes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <numeric>

#include "format/gguf.h"
#include "unit/format/format_test_util.h"

namespace llmpack {
namespace {

using testing::HasText;
using testing::TempDir;

GgufValue make(GgufValueType t, decltype(GgufValue::value) v) {
  GgufValue g;
  g.type = t;
  g.value = std::move(v);
  return g;
}

GgufValue make_array(GgufValueType et, decltype(GgufValue::value) v) {
  GgufValue g;
  g.type = GgufValueType::kArray;
  g.array_type = et;
  g.value = std::move(v);
  return g;
}

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 7);
  return v;
}

struct Fixture {
  GgufWriter w;
  std::vector<std::pair<std::string, GgufValue>> expected;
  struct T {
    std::string name;
    DType dtype;
    std::vector<int64_t> ne;
    std::vector<uint8_t> bytes;
  };
  std::vector<T> tensors;

  void set(const std::string& key, GgufValue v) {
    w.set(key, v);
    expected.emplace_back(key, std::move(v));
  }

  Fixture() {
    using VT = GgufValueType;
    set("t.u8", make(VT::kU8, uint64_t{200}));
    set("t.i8", make(VT::kI8, int64_t{-100}));
    set("t.u16", make(VT::kU16, uint64_t{60000}));
    set("t.i16", make(VT::kI16, int64_t{-30000}));
    set("t.u32", make(VT::kU32, uint64_t{4000000000u}));
    set("t.i32", make(VT::kI32, int64_t{-2000000000}));
    set("t.f32", make(VT::kF32, double{0.25}));
    set("t.bool", make(VT::kBool, true));
    set("t.string", make(VT::kString, std::string("h\xc3\xa9llo\0x", 8)));
    set("t.u64", make(VT::kU64, uint64_t{18000000000000000000u}));
    set("t.i64", make(VT::kI64, int64_t{-9000000000000000000}));
    set("t.f64", make(VT::kF64, double{3.141592653589793}));
    set("a.u8", make_array(VT::kU8, std::vector<uint64_t>{0, 1, 255}));
    set("a.i8", make_array(VT::kI8, std::vector<int64_t>{-128, 127}));
    set("a.u16", make_array(VT::kU16, std::vector<uint64_t>{65535}));
    set("a.i16", make_array(VT::kI16, std::vector<int64_t>{-32768, 5}));
    set("a.u32", make_array(VT::kU32, std::vector<uint64_t>{1, 4294967295u}));
    set("a.i32", make_array(VT::kI32, std::vector<int64_t>{-1, 2, -3}));
    set("a.f32", make_array(VT::kF32, std::vector<double>{1.5, -2.25}));
    set("a.bool", make_array(VT::kBool, std::vector<bool>{true, false, true}));
    set("a.string", make_array(VT::kString, StringTable{"x", "", "zz"}));
    set("a.u64", make_array(VT::kU64, std::vector<uint64_t>{~uint64_t{0}}));
    set("a.i64", make_array(VT::kI64, std::vector<int64_t>{INT64_MIN, INT64_MAX}));
    set("a.f64", make_array(VT::kF64, std::vector<double>{1e300, -1e-300}));
    set("a.empty", make_array(VT::kU32, std::vector<uint64_t>{}));
    w.set_alignment(64);
    expected.emplace_back("general.alignment", make(VT::kU32, uint64_t{64}));

    tensors = {
        {"f32.weight", DType::kF32, {3, 2}, pattern(24, 1)},
        {"f16.weight", DType::kF16, {5}, pattern(10, 2)},
        {"q4_0.weight", DType::kQ4_0, {64, 2}, pattern(4 * 18, 3)},
        {"q6_k.weight", DType::kQ6_K, {256}, pattern(210, 4)},
        {"bf16.weight", DType::kBF16, {7, 3, 2}, pattern(84, 5)},
        {"i32.weight", DType::kI32, {2, 2, 2, 2}, pattern(64, 6)},
    };
    for (const auto& t : tensors) {
      Status s = w.add_tensor(t.name, t.dtype, t.ne, t.bytes);
      EXPECT_TRUE(s.ok()) << s.message();
    }
  }
};

void expect_round_trip(const Fixture& fx, const GgufFile& g) {
  EXPECT_EQ(g.version(), 3u);
  EXPECT_EQ(g.alignment(), 64u);
  ASSERT_EQ(g.metadata().size(), fx.expected.size());
  for (const auto& [key, v] : fx.expected) {
    const GgufValue* got = g.find(key);
    ASSERT_NE(got, nullptr) << key;
    EXPECT_EQ(got->type, v.type) << key;
    if (v.type == GgufValueType::kArray) {
      EXPECT_EQ(got->array_type, v.array_type) << key;
    }
    EXPECT_TRUE(got->value == v.value) << key;
  }
  ASSERT_EQ(g.tensors().size(), fx.tensors.size());
  const uint8_t* base = g.tensors()[0].data;
  for (size_t i = 0; i < fx.tensors.size(); ++i) {
    const auto& want = fx.tensors[i];
    const GgufTensorInfo& t = g.tensors()[i];  // file order = insertion order
    EXPECT_EQ(t.name, want.name);
    EXPECT_EQ(t.dtype, want.dtype);
    EXPECT_EQ(t.ne, want.ne);
    EXPECT_EQ(t.n_bytes, want.bytes.size());
    EXPECT_EQ(t.offset % 64, 0u) << t.name;
    EXPECT_EQ(static_cast<uint64_t>(t.data - base), t.offset) << t.name;
    EXPECT_EQ(std::memcmp(t.data, want.bytes.data(), want.bytes.size()), 0) << t.name;
  }
}

TEST(GgufWriter, RoundTripInMemory) {
  Fixture fx;
  const std::vector<uint8_t> bytes = fx.w.to_bytes();
  ASSERT_FALSE(bytes.empty());
  auto g = GgufFile::from_bytes(bytes);
  ASSERT_TRUE(g.ok()) << g.status().message();
  expect_round_trip(fx, **g);
  // Convenience getters see through the stored widths.
  EXPECT_EQ((*g)->get_uint("t.u8"), 200u);
  EXPECT_EQ((*g)->get_int("t.i16"), -30000);
  EXPECT_FALSE((*g)->get_uint("t.i16").has_value());
  EXPECT_EQ((*g)->get_float("t.f32"), 0.25);
  EXPECT_EQ((*g)->get_bool("t.bool"), true);
  EXPECT_EQ((*g)->get_int_array("a.u32"), (std::vector<int64_t>{1, 4294967295}));
  EXPECT_FALSE((*g)->get_int_array("a.u64").has_value());  // does not fit int64
  EXPECT_EQ((*g)->get_float_array("a.f32"), (std::vector<double>{1.5, -2.25}));
}

TEST(GgufWriter, DataSectionAndFileAreAligned) {
  Fixture fx;
  const std::vector<uint8_t> bytes = fx.w.to_bytes();
  EXPECT_EQ(bytes.size() % 64, 0u);
  auto g = GgufFile::from_bytes(bytes);
  ASSERT_TRUE(g.ok());
  // Data section start = file size - the padded data size.
  uint64_t data = 0;
  for (const auto& t : (*g)->tensors()) data = std::max(data, (t.offset + t.n_bytes + 63) / 64 * 64);
  EXPECT_EQ((bytes.size() - data) % 64, 0u);
}

TEST(GgufWriter, MetadataInInsertionOrder) {
  Fixture fx;
  const std::vector<uint8_t> bytes = fx.w.to_bytes();
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  size_t last = 0;
  for (const auto& [key, v] : fx.expected) {
    const size_t at = text.find(key);
    ASSERT_NE(at, std::string_view::npos) << key;
    EXPECT_GT(at, last) << key << " out of order";
    last = at;
  }
}

TEST(GgufWriter, SetReplacesExistingKeyInPlace) {
  GgufWriter w;
  w.set_u32("a", 1);
  w.set_string("b", "x");
  w.set_u32("a", 2);
  auto g = GgufFile::from_bytes(w.to_bytes());
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ((*g)->metadata().size(), 2u);
  EXPECT_EQ((*g)->get_uint("a"), 2u);
}

TEST(GgufWriter, ConvenienceSetters) {
  GgufWriter w;
  w.set_u32("u32", 7);
  w.set_i32("i32", -7);
  w.set_u64("u64", 1ull << 40);
  w.set_f32("f32", 0.5f);
  w.set_bool("bool", false);
  w.set_string("s", "text");
  w.set_string_array("sa", {"a", "b"});
  w.set_f32_array("fa", {1.0f, 2.5f});
  w.set_i32_array("ia", {-1, 3});
  auto g = GgufFile::from_bytes(w.to_bytes());
  ASSERT_TRUE(g.ok()) << g.status().message();
  const GgufFile& f = **g;
  EXPECT_EQ(f.alignment(), 32u);
  EXPECT_EQ(f.find("general.alignment"), nullptr);  // only written when set
  EXPECT_EQ(f.find("u32")->type, GgufValueType::kU32);
  EXPECT_EQ(f.find("i32")->type, GgufValueType::kI32);
  EXPECT_EQ(f.get_int("i32"), -7);
  EXPECT_EQ(f.get_uint("u64"), 1ull << 40);
  EXPECT_EQ(f.get_float("f32"), 0.5);
  EXPECT_EQ(f.get_bool("bool"), false);
  EXPECT_EQ(f.get_string("s"), "text");
  EXPECT_EQ(f.get_string_array("sa")->to_vector(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(f.find("fa")->array_type, GgufValueType::kF32);
  EXPECT_EQ(f.get_float_array("fa"), (std::vector<double>{1.0, 2.5}));
  EXPECT_EQ(f.find("ia")->array_type, GgufValueType::kI32);
  EXPECT_EQ(f.get_int_array("ia"), (std::vector<int64_t>{-1, 3}));
}

TEST(GgufWriter, WriteToDiskEqualsToBytesAndReportsProgress) {
  TempDir dir;
  Fixture fx;
  const std::string path = dir.file("model.gguf");
  std::vector<std::tuple<size_t, size_t, uint64_t>> calls;
  Status s = fx.w.write(path, [&](size_t done, size_t total, uint64_t bytes) {
    calls.emplace_back(done, total, bytes);
  });
  ASSERT_TRUE(s.ok()) << s.message();
  const std::vector<uint8_t> on_disk = testing::read_file_bytes(path);
  EXPECT_EQ(on_disk, fx.w.to_bytes());
  ASSERT_EQ(calls.size(), fx.tensors.size());
  for (size_t i = 0; i < calls.size(); ++i) {
    EXPECT_EQ(std::get<0>(calls[i]), i + 1);
    EXPECT_EQ(std::get<1>(calls[i]), fx.tensors.size());
    if (i > 0) {
      EXPECT_GT(std::get<2>(calls[i]), std::get<2>(calls[i - 1]));
    }
  }
  EXPECT_EQ(std::get<2>(calls.back()), on_disk.size());
  auto g = GgufFile::open(path);
  ASSERT_TRUE(g.ok()) << g.status().message();
  expect_round_trip(fx, **g);
  // Only the final file remains (the temporary was renamed).
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()),
                          std::filesystem::directory_iterator()), 1);
}

TEST(GgufWriter, AFileOfSeveralWritePiecesEqualsToBytes) {
  // write() sends the file out in 4 MiB pieces (so the page cache holds it in
  // 2 MiB folios): tensors of 3 MiB + 17 bytes, 5 MiB and a few bytes cross
  // piece boundaries at odd offsets and leave a partial last piece.
  TempDir dir;
  GgufWriter w;
  w.set_string("general.architecture", "llama");
  std::vector<std::vector<uint8_t>> data;
  for (size_t n : {(size_t{3} << 20) + 17, size_t{5} << 20, size_t{7}, (size_t{1} << 20) + 3}) {
    std::vector<uint8_t> bytes(n);
    for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<uint8_t>((i * 131 + n) >> 3);
    data.push_back(std::move(bytes));
  }
  for (size_t t = 0; t < data.size(); ++t) {
    const int64_t n = static_cast<int64_t>(data[t].size());
    ASSERT_TRUE(w.add_tensor("t" + std::to_string(t), DType::kI8, {n}, data[t]).ok());
  }
  const std::string path = dir.file("big.gguf");
  ASSERT_TRUE(w.write(path).ok());
  const std::vector<uint8_t> on_disk = testing::read_file_bytes(path);
  EXPECT_GT(on_disk.size(), size_t{9} << 20);
  EXPECT_EQ(on_disk, w.to_bytes());
}

TEST(GgufWriter, FailedWriteLeavesNoFile) {
  Fixture fx;
  const std::string path = "/nonexistent_llmpack_dir/out.gguf";
  Status s = fx.w.write(path);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(HasText(s.message(), "/nonexistent_llmpack_dir/out.gguf"));
  EXPECT_TRUE(HasText(s.message(), "No such file or directory"));
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(GgufWriter, UnencodableMetadataFailsAndLeavesNothing) {
  TempDir dir;
  GgufWriter w;
  w.set("bad", make(GgufValueType::kU32, std::string("not a number")));
  const std::string path = dir.file("bad.gguf");
  Status s = w.write(path);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(HasText(s.message(), "metadata key 'bad' is declared u32 but holds a value of another kind"));
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));  // temporary removed too
  EXPECT_TRUE(w.to_bytes().empty());
}

TEST(GgufWriter, OutOfRangeIntegerRefused) {
  GgufWriter w;
  w.set("small", make(GgufValueType::kU8, uint64_t{300}));
  TempDir dir;
  Status s = w.write(dir.file("x.gguf"));
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(HasText(s.message(), "metadata key 'small': value does not fit u8"));
}

TEST(GgufWriter, BadAlignmentRefused) {
  GgufWriter w;
  w.set_alignment(48);
  TempDir dir;
  Status s = w.write(dir.file("x.gguf"));
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(HasText(s.message(), "alignment 48 is not a nonzero power of two"));
}

TEST(GgufWriter, AddTensorValidates) {
  GgufWriter w;
  std::vector<uint8_t> b(16);
  EXPECT_TRUE(HasText(w.add_tensor("t", DType::kF32, {4}, std::span(b).first(12)).message(),
                      "12 bytes given, 16 expected for f32"));
  EXPECT_TRUE(HasText(w.add_tensor("t", DType::kQ4_0, {16}, b).message(),
                      "row length 16 is not a multiple of the q4_0 block size 32"));
  EXPECT_TRUE(HasText(w.add_tensor("t", DType::kF32, {}, b).message(), "0 dimensions"));
  EXPECT_TRUE(HasText(w.add_tensor("t", DType::kF32, {1, 1, 1, 1, 4}, b).message(), "5 dimensions"));
  EXPECT_TRUE(HasText(w.add_tensor("t", DType::kF32, {-4}, b).message(), "dimension of -4"));
  EXPECT_TRUE(HasText(w.add_tensor("", DType::kF32, {4}, b).message(), "needs a name"));
  EXPECT_TRUE(HasText(w.add_tensor("t", static_cast<DType>(99), {4}, b).message(), "unknown dtype 99"));
  std::vector<uint8_t> group(176);
  EXPECT_TRUE(HasText(w.add_tensor("t", DType::kQ5_0x8, {256}, group).message(),
                      "memory-only layout q5_0x8, which no GGUF holds"));
  ASSERT_TRUE(w.add_tensor("t", DType::kF32, {4}, b).ok());
  EXPECT_TRUE(HasText(w.add_tensor("t", DType::kF32, {4}, b).message(), "'t' added twice"));
}

// Produced tensors (the exporter's way: each converted into one shared buffer
// when the file reaches it) make the same file as borrowed ones; each
// producer runs once per write, in tensor order, and to_bytes() sizes the
// file without running any.
TEST(GgufWriter, ProducedTensorsMakeTheSameFileOneAtATime) {
  Fixture fx;
  GgufWriter produced;
  for (const auto& [key, value] : fx.expected) produced.set(key, value);
  std::vector<uint8_t> shared;  // every producer overwrites it
  std::vector<size_t> calls;
  for (size_t i = 0; i < fx.tensors.size(); ++i) {
    const auto& t = fx.tensors[i];
    Status s = produced.add_tensor(t.name, t.dtype, t.ne, [&, i]() -> Result<std::span<const uint8_t>> {
      calls.push_back(i);
      shared = fx.tensors[i].bytes;
      return std::span<const uint8_t>(shared);
    });
    ASSERT_TRUE(s.ok()) << s.message();
  }
  EXPECT_EQ(produced.to_bytes(), fx.w.to_bytes());
  std::vector<size_t> in_order(fx.tensors.size());
  std::iota(in_order.begin(), in_order.end(), size_t{0});
  EXPECT_EQ(calls, in_order);
  TempDir dir;
  calls.clear();
  ASSERT_TRUE(produced.write(dir.file("p.gguf")).ok());
  EXPECT_EQ(calls, in_order);
  EXPECT_EQ(testing::read_file_bytes(dir.file("p.gguf")), fx.w.to_bytes());
}

TEST(GgufWriter, AProducerOfTheWrongSizeOrAnErrorFailsTheWriteAndLeavesNothing) {
  TempDir dir;
  std::vector<uint8_t> bytes(12);
  GgufWriter short_one;
  ASSERT_TRUE(short_one.add_tensor("w", DType::kF32, {4}, [&]() -> Result<std::span<const uint8_t>> {
    return std::span<const uint8_t>(bytes);
  }).ok());
  Status s = short_one.write(dir.file("a.gguf"));
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(HasText(s.message(), "tensor 'w': its producer made 12 bytes, 16 expected for f32")) << s.message();
  EXPECT_TRUE(short_one.to_bytes().empty());

  GgufWriter failing;
  ASSERT_TRUE(failing.add_tensor("w", DType::kF32, {4}, []() -> Result<std::span<const uint8_t>> {
    return error_status("tensor 'w': cannot convert q4_0 to iq9");
  }).ok());
  s = failing.write(dir.file("b.gguf"));
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(HasText(s.message(), "cannot convert q4_0 to iq9")) << s.message();
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));  // no file, no temporary

  GgufWriter none;
  EXPECT_TRUE(HasText(none.add_tensor("w", DType::kF32, {4}, GgufWriter::Producer{}).message(), "no producer"));
  EXPECT_TRUE(HasText(none.add_tensor("w", DType::kQ4_0, {16}, [&]() -> Result<std::span<const uint8_t>> {
    return std::span<const uint8_t>(bytes);
  }).message(), "row length 16 is not a multiple of the q4_0 block size 32"));
}

TEST(GgufWriter, EmptyWriterMakesAValidFile) {
  GgufWriter w;
  auto g = GgufFile::from_bytes(w.to_bytes());
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_TRUE((*g)->metadata().empty());
  EXPECT_TRUE((*g)->tensors().empty());
}

}  // namespace
}  // namespace llmpack
