// Importance-matrix files (format/imatrix_file.h): both forms round trip,
// the GGUF form is llama.cpp's layout field by field, the legacy form its
// bytes, and damaged or hostile files are refused with what was expected.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "format/gguf.h"
#include "format/imatrix_file.h"
#include "unit/format/format_test_util.h"

namespace llmpack {
namespace {

using testing::HasText;
using testing::RawBytes;
using testing::TempDir;

void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes, size_t n) {
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                              static_cast<std::streamsize>(n));
}

// Three entries of different widths, one never seen (count 0), two datasets.
ImportanceMatrix sample_matrix() {
  ImportanceMatrix m;
  m.entries["blk.0.attn_q.weight"] = {{1.5f, 0.25f, 7.0f, 0.0f}, 12};
  m.entries["blk.0.ffn_down.weight"] = {{3.0f, 9.5f, 0.125f, 2.0f, 4.0f, 1e-8f}, 12};
  m.entries["output.weight"] = {{0.0f, 0.0f}, 0};
  m.datasets = {"calibration.txt", "more.txt"};
  m.chunk_count = 3;
  m.chunk_size = 4;
  return m;
}

void expect_same(const ImportanceMatrix& got, const ImportanceMatrix& want) {
  ASSERT_EQ(got.entries.size(), want.entries.size());
  for (const auto& [name, e] : want.entries) {
    const ImatrixEntry* g = got.find(name);
    ASSERT_NE(g, nullptr) << name;
    EXPECT_EQ(g->sum_sq, e.sum_sq) << name;
    EXPECT_EQ(g->count, e.count) << name;
  }
  EXPECT_EQ(got.datasets, want.datasets);
  EXPECT_EQ(got.chunk_count, want.chunk_count);
  EXPECT_EQ(got.chunk_size, want.chunk_size);
}

// A GGUF with general.type "imatrix" and the tensors `add` puts in it.
template <typename Add>
std::string write_gguf(const TempDir& dir, const std::string& name, Add add) {
  GgufWriter w;
  w.set_string("general.type", "imatrix");
  w.set_u32("imatrix.chunk_count", 1);
  w.set_u32("imatrix.chunk_size", 8);
  add(w);
  const std::string path = dir.file(name);
  EXPECT_TRUE(w.write(path).ok());
  return path;
}

std::span<const uint8_t> as_bytes(const std::vector<float>& v) {
  return {reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(float)};
}

TEST(ImatrixFile, GgufFormRoundTrips) {
  TempDir dir;
  const ImportanceMatrix m = sample_matrix();
  const std::string path = dir.file("m.gguf");
  ASSERT_TRUE(write_imatrix(path, m).ok());
  auto back = read_imatrix(path);
  ASSERT_TRUE(back.ok()) << back.status().message();
  expect_same(*back, m);
}

TEST(ImatrixFile, LegacyFormRoundTripsWithOneDataset) {
  TempDir dir;
  ImportanceMatrix m = sample_matrix();
  m.datasets.resize(1);  // the legacy form holds one name
  const std::string path = dir.file("m.dat");
  ASSERT_TRUE(write_imatrix(path, m, /*legacy=*/true).ok());
  auto back = read_imatrix(path);
  ASSERT_TRUE(back.ok()) << back.status().message();
  m.chunk_size = 0;  // the legacy form has no chunk size
  expect_same(*back, m);
}

// The GGUF as llama-imatrix writes it: general.type, the imatrix.* keys with
// their types, and per weight in name order NAME.in_sum2 (f32, [n_cols]) then
// NAME.counts (f32, [1]) holding the sums and the count.
TEST(ImatrixFile, GgufFormIsLlamaCppsLayout) {
  TempDir dir;
  const ImportanceMatrix m = sample_matrix();
  const std::string path = dir.file("m.gguf");
  ASSERT_TRUE(write_imatrix(path, m).ok());
  auto g = GgufFile::open(path);
  ASSERT_TRUE(g.ok()) << g.status().message();
  const GgufFile& f = **g;
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.get_string("general.type"), "imatrix");
  const GgufValue* datasets = f.find("imatrix.datasets");
  ASSERT_NE(datasets, nullptr);
  EXPECT_EQ(datasets->type, GgufValueType::kArray);
  EXPECT_EQ(datasets->array_type, GgufValueType::kString);
  EXPECT_EQ(f.get_string_array("imatrix.datasets")->to_vector(), m.datasets);
  for (const char* key : {"imatrix.chunk_count", "imatrix.chunk_size"}) {
    ASSERT_NE(f.find(key), nullptr) << key;
    EXPECT_EQ(f.find(key)->type, GgufValueType::kU32) << key;
  }
  EXPECT_EQ(f.get_uint("imatrix.chunk_count"), 3u);
  EXPECT_EQ(f.get_uint("imatrix.chunk_size"), 4u);
  EXPECT_EQ(f.metadata().size(), 4u) << "general.type, imatrix.datasets, chunk_count, chunk_size";

  const std::vector<std::string> names = {"blk.0.attn_q.weight.in_sum2",   "blk.0.attn_q.weight.counts",
                                          "blk.0.ffn_down.weight.in_sum2", "blk.0.ffn_down.weight.counts",
                                          "output.weight.in_sum2",         "output.weight.counts"};
  ASSERT_EQ(f.tensors().size(), names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    const GgufTensorInfo& t = f.tensors()[i];
    EXPECT_EQ(t.name, names[i]);
    EXPECT_EQ(t.dtype, DType::kF32) << t.name;
    const ImatrixEntry& e = m.entries.at(names[i].substr(0, names[i].rfind('.')));
    const bool sums = names[i].ends_with(".in_sum2");
    // ggml drops trailing dimensions of 1: [n_cols, 1] is written as [n_cols].
    EXPECT_EQ(t.ne, std::vector<int64_t>{sums ? static_cast<int64_t>(e.sum_sq.size()) : 1}) << t.name;
    std::vector<float> data(static_cast<size_t>(t.ne[0]));
    std::memcpy(data.data(), t.data, data.size() * sizeof(float));
    if (sums) EXPECT_EQ(data, e.sum_sq) << t.name;
    else EXPECT_EQ(data[0], static_cast<float>(e.count)) << t.name;
  }
}

// The legacy bytes: i32 entry count; per entry i32 name length, the name,
// i32 ncall, i32 nval, the values; then i32 chunk count and the dataset name.
TEST(ImatrixFile, LegacyFormIsLlamaCppsBytes) {
  TempDir dir;
  ImportanceMatrix m;
  m.entries["a.weight"] = {{2.0f, 6.0f}, 4};
  m.entries["b.weight"] = {{1.0f, 3.0f, 5.0f}, 2.5};  // a fractional count: ncall 3 (rounded), values x 3 / 2.5
  m.datasets = {"text.txt"};
  m.chunk_count = 7;
  const std::string path = dir.file("m.dat");
  ASSERT_TRUE(write_imatrix(path, m, true).ok());
  RawBytes want;
  want.i32(2).i32(8);
  for (char c : std::string("a.weight")) want.u8(static_cast<uint8_t>(c));
  want.i32(4).i32(2).f32(2.0f).f32(6.0f).i32(8);
  for (char c : std::string("b.weight")) want.u8(static_cast<uint8_t>(c));
  want.i32(3).i32(3).f32(1.2f).f32(3.6f).f32(6.0f).i32(7).i32(8);
  for (char c : std::string("text.txt")) want.u8(static_cast<uint8_t>(c));
  const std::vector<uint8_t> got = testing::read_file_bytes(path);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], want.bytes()[i]) << "byte " << i;

  // Read back, the fractional entry keeps its mean squares: values / ncall.
  auto back = read_imatrix(path);
  ASSERT_TRUE(back.ok()) << back.status().message();
  const ImatrixEntry* b = back->find("b.weight");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->count, 3);
  const std::vector<float> mean = b->mean_sq();
  ASSERT_EQ(mean.size(), 3u);
  for (size_t j = 0; j < 3; ++j) EXPECT_NEAR(mean[j], m.entries["b.weight"].sum_sq[j] / 2.5f, 1e-6f);
}

TEST(ImatrixFile, MeanSquaresDivideByTheCountOrAreOnesWhenNothingWasSeen) {
  const ImatrixEntry seen{{4.0f, 1.0f, 0.0f}, 4};
  EXPECT_EQ(seen.mean_sq(), (std::vector<float>{1.0f, 0.25f, 0.0f}));
  const ImatrixEntry unseen{{4.0f, 1.0f}, 0};
  EXPECT_EQ(unseen.mean_sq(), (std::vector<float>{1.0f, 1.0f}));
  ImportanceMatrix m;
  m.entries["x"] = seen;
  EXPECT_EQ(m.find("x"), &m.entries["x"]);
  EXPECT_EQ(m.find("y"), nullptr);
}

// A legacy file written by an older llama-imatrix ends after its entries
// (no chunk count, no dataset): read with chunk count 0.
TEST(ImatrixFile, LegacyFileWithoutItsTrailerIsAnOlderFile) {
  TempDir dir;
  RawBytes raw;
  raw.i32(1).i32(1).u8('w').i32(5).i32(2).f32(10.0f).f32(2.5f);
  const std::string path = dir.file("old.dat");
  write_bytes(path, raw.bytes(), raw.size());
  auto m = read_imatrix(path);
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_NE(m->find("w"), nullptr);
  EXPECT_EQ(m->find("w")->sum_sq, (std::vector<float>{10.0f, 2.5f}));
  EXPECT_EQ(m->find("w")->count, 5);
  EXPECT_EQ(m->find("w")->mean_sq(), (std::vector<float>{2.0f, 0.5f}));
  EXPECT_EQ(m->chunk_count, 0);
  EXPECT_TRUE(m->datasets.empty());
}

// Every prefix of a small legacy file is refused, except the one that ends
// right after the entries (an older file's form), which reads the same entries.
TEST(ImatrixFile, EveryTruncationOfALegacyFileIsAnError) {
  TempDir dir;
  ImportanceMatrix m = sample_matrix();
  m.datasets.resize(1);
  const std::string full = dir.file("full.dat"), cut = dir.file("cut.dat");
  ASSERT_TRUE(write_imatrix(full, m, true).ok());
  const std::vector<uint8_t> bytes = testing::read_file_bytes(full);
  const size_t trailer = 4 + 4 + m.datasets[0].size();
  int accepted = 0;
  for (size_t n = 0; n < bytes.size(); ++n) {
    write_bytes(cut, bytes, n);
    auto r = read_imatrix(cut);
    if (n == bytes.size() - trailer) {
      ASSERT_TRUE(r.ok()) << r.status().message();
      EXPECT_EQ(r->entries.size(), m.entries.size());
      EXPECT_EQ(r->chunk_count, 0);
      ++accepted;
      continue;
    }
    ASSERT_FALSE(r.ok()) << "prefix of " << n << " bytes";
    EXPECT_TRUE(HasText(r.status().message(), "reading " + cut + ": ")) << n;
    if (n > 0) {
      EXPECT_TRUE(HasText(r.status().message(), "truncated")) << n;
    }
  }
  EXPECT_EQ(accepted, 1);
}

// Every prefix of a small GGUF file is refused; only a cut inside the
// padding after the last tensor's data may read, and then reads the same.
TEST(ImatrixFile, EveryTruncationOfAGgufFileIsAnError) {
  TempDir dir;
  const ImportanceMatrix m = sample_matrix();
  const std::string full = dir.file("full.gguf"), cut = dir.file("cut.gguf");
  ASSERT_TRUE(write_imatrix(full, m).ok());
  const std::vector<uint8_t> bytes = testing::read_file_bytes(full);
  // The last tensor (output.weight.counts) is 4 bytes followed by padding to 32.
  constexpr size_t kAlignment = 32;
  for (size_t n = 0; n < bytes.size(); ++n) {
    write_bytes(cut, bytes, n);
    auto r = read_imatrix(cut);
    if (r.ok()) {
      EXPECT_GT(n, bytes.size() - kAlignment) << "a prefix of " << n << " of " << bytes.size() << " bytes read";
      expect_same(*r, m);
      continue;
    }
    EXPECT_TRUE(HasText(r.status().message(), "reading " + cut + ": ")) << n;
  }
}

TEST(ImatrixFile, MixtureOfExpertsEntriesAreRefusedByName) {
  TempDir dir;
  const std::vector<float> sums(8, 1.0f), counts = {3.0f, 4.0f};
  const std::string path = write_gguf(dir, "moe.gguf", [&](GgufWriter& w) {
    ASSERT_TRUE(w.add_tensor("blk.0.ffn_up_exps.weight.in_sum2", DType::kF32, {4, 2}, as_bytes(sums)).ok());
    ASSERT_TRUE(w.add_tensor("blk.0.ffn_up_exps.weight.counts", DType::kF32, {1, 2}, as_bytes(counts)).ok());
  });
  auto r = read_imatrix(path);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(HasText(r.status().message(),
                      "tensor 'blk.0.ffn_up_exps.weight.in_sum2' holds 2 matrices (a mixture-of-experts entry)"));
}

TEST(ImatrixFile, MissingCountsTensorIsRefusedByName) {
  TempDir dir;
  const std::vector<float> sums = {1.0f, 2.0f};
  const std::string path = write_gguf(dir, "nocounts.gguf", [&](GgufWriter& w) {
    ASSERT_TRUE(w.add_tensor("blk.0.attn_q.weight.in_sum2", DType::kF32, {2}, as_bytes(sums)).ok());
  });
  auto r = read_imatrix(path);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(HasText(r.status().message(),
                      "tensor 'blk.0.attn_q.weight.counts' is missing (expected beside "
                      "'blk.0.attn_q.weight.in_sum2')"));
}

// llama-imatrix may also store NAME.in_sum (the plain sums): read past.
TEST(ImatrixFile, PlainSumsTensorIsIgnored) {
  TempDir dir;
  const std::vector<float> sums = {1.0f, 2.0f}, count = {2.0f}, plain = {-1.0f, 0.5f};
  const std::string path = write_gguf(dir, "insum.gguf", [&](GgufWriter& w) {
    ASSERT_TRUE(w.add_tensor("x.weight.in_sum", DType::kF32, {2}, as_bytes(plain)).ok());
    ASSERT_TRUE(w.add_tensor("x.weight.in_sum2", DType::kF32, {2, 1}, as_bytes(sums)).ok());
    ASSERT_TRUE(w.add_tensor("x.weight.counts", DType::kF32, {1, 1}, as_bytes(count)).ok());
  });
  auto r = read_imatrix(path);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->entries.size(), 1u);
  EXPECT_EQ(r->find("x.weight")->sum_sq, sums);
  EXPECT_EQ(r->find("x.weight")->count, 2.0);
  EXPECT_EQ(r->chunk_size, 8);
}

TEST(ImatrixFile, GgufTensorsOfTheWrongTypeOrValuesAreRefused) {
  TempDir dir;
  const std::vector<uint8_t> halves(4, 0);
  const std::vector<float> count = {1.0f}, sums = {1.0f, 2.0f};
  const std::string f16 = write_gguf(dir, "f16.gguf", [&](GgufWriter& w) {
    ASSERT_TRUE(w.add_tensor("x.in_sum2", DType::kF16, {2}, halves).ok());
    ASSERT_TRUE(w.add_tensor("x.counts", DType::kF32, {1}, as_bytes(count)).ok());
  });
  auto r = read_imatrix(f16);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(HasText(r.status().message(), "tensor 'x.in_sum2' is f16, expected f32"));

  const std::vector<float> nan_sums = {1.0f, std::numeric_limits<float>::quiet_NaN()};
  const std::string nan = write_gguf(dir, "nan.gguf", [&](GgufWriter& w) {
    ASSERT_TRUE(w.add_tensor("x.in_sum2", DType::kF32, {2}, as_bytes(nan_sums)).ok());
    ASSERT_TRUE(w.add_tensor("x.counts", DType::kF32, {1}, as_bytes(count)).ok());
  });
  r = read_imatrix(nan);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(HasText(r.status().message(), "tensor 'x.in_sum2': value 1 is nan (expected a finite sum"));

  const std::vector<float> bad_count = {-2.0f};
  const std::string negative = write_gguf(dir, "negative.gguf", [&](GgufWriter& w) {
    ASSERT_TRUE(w.add_tensor("x.in_sum2", DType::kF32, {2}, as_bytes(sums)).ok());
    ASSERT_TRUE(w.add_tensor("x.counts", DType::kF32, {1}, as_bytes(bad_count)).ok());
  });
  r = read_imatrix(negative);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(HasText(r.status().message(), "tensor 'x.counts' holds -2"));

  const std::vector<float> two_counts = {1.0f, 1.0f};
  const std::string wide = write_gguf(dir, "wide.gguf", [&](GgufWriter& w) {
    ASSERT_TRUE(w.add_tensor("x.in_sum2", DType::kF32, {2}, as_bytes(sums)).ok());
    ASSERT_TRUE(w.add_tensor("x.counts", DType::kF32, {2}, as_bytes(two_counts)).ok());
  });
  r = read_imatrix(wide);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(HasText(r.status().message(), "tensor 'x.counts' has 2 elements, expected 1"));
}

TEST(ImatrixFile, GgufThatIsNotAnImatrixIsRefused) {
  TempDir dir;
  GgufWriter model;
  model.set_string("general.type", "model");
  const std::string path = dir.file("model.gguf");
  ASSERT_TRUE(model.write(path).ok());
  auto r = read_imatrix(path);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(HasText(r.status().message(), "general.type is \"model\", expected \"imatrix\""));

  GgufWriter untyped;
  untyped.set_u32("imatrix.chunk_count", 1);
  ASSERT_TRUE(untyped.write(path).ok());
  r = read_imatrix(path);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(HasText(r.status().message(), "has no 'general.type' key"));

  GgufWriter wrong_key;
  wrong_key.set_string("general.type", "imatrix");
  wrong_key.set_string("imatrix.chunk_size", "512");
  ASSERT_TRUE(wrong_key.write(path).ok());
  r = read_imatrix(path);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(HasText(r.status().message(), "key 'imatrix.chunk_size' is a string, expected a u32 count"));
}

struct HostileLegacy {
  const char* label;
  std::vector<uint8_t> bytes;
  std::string expected;
};

std::vector<uint8_t> legacy(const std::function<void(RawBytes&)>& fill) {
  RawBytes raw;
  fill(raw);
  return raw.bytes();
}

TEST(ImatrixFile, HostileLegacyFilesAreRefusedSayingWhatWasExpected) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<HostileLegacy> cases = {
      {"negative entry count", legacy([](RawBytes& r) { r.i32(-1); }),
       "entry count at byte 0 is -1, expected at least 0"},
      {"entry count beyond the file", legacy([](RawBytes& r) { r.i32(1000).i32(1); }),
       "the file claims 1000 entries, but only 4 bytes follow"},
      {"negative name length", legacy([](RawBytes& r) { r.i32(1).i32(-5).zeros(20); }),
       "entry 0 name length at byte 4 is -5, expected at least 1"},
      {"name beyond the file", legacy([](RawBytes& r) { r.i32(1).i32(1000).zeros(20); }),
       "file truncated: entry 0 name at byte 8 needs 1000 bytes"},
      {"negative ncall", legacy([](RawBytes& r) { r.i32(1).i32(1).u8('w').i32(-3).i32(1).f32(1); }),
       "entry 0 (w) ncall at byte 9 is -3, expected at least 0"},
      {"no values", legacy([](RawBytes& r) { r.i32(1).i32(1).u8('w').i32(3).i32(0).f32(1); }),
       "entry 0 (w) nval at byte 13 is 0, expected at least 1"},
      {"more values than the file", legacy([](RawBytes& r) { r.i32(1).i32(1).u8('w').i32(3).i32(5).f32(1).f32(2); }),
       "entry 0 (w)'s 5 values at byte 17 needs 20 bytes but the file ends at byte 25"},
      {"infinite value", legacy([&](RawBytes& r) { r.i32(1).i32(1).u8('w').i32(3).i32(2).f32(1).f32(inf); }),
       "entry 0 (w): value 1 is inf (expected a finite sum of squares >= 0)"},
      {"repeated name",
       legacy([](RawBytes& r) { r.i32(2).i32(1).u8('w').i32(1).i32(1).f32(1).i32(1).u8('w').i32(1).i32(1).f32(1); }),
       "entry 1 repeats the name 'w'"},
      {"negative dataset length",
       legacy([](RawBytes& r) { r.i32(1).i32(1).u8('w').i32(1).i32(1).f32(1).i32(2).i32(-1); }),
       "dataset name length at byte 25 is -1, expected at least 0"},
      {"bytes after the dataset",
       legacy([](RawBytes& r) { r.i32(1).i32(1).u8('w').i32(1).i32(1).f32(1).i32(2).i32(1).u8('d').u8(0); }),
       "1 bytes follow the dataset name at byte 30 (expected the end of the file)"},
  };
  TempDir dir;
  const std::string path = dir.file("hostile.dat");
  for (const HostileLegacy& c : cases) {
    write_bytes(path, c.bytes, c.bytes.size());
    auto r = read_imatrix(path);
    ASSERT_FALSE(r.ok()) << c.label;
    EXPECT_TRUE(HasText(r.status().message(), c.expected)) << c.label;
  }
}

TEST(ImatrixFile, WritingRefusesBadValuesAndNamesAnUnwritablePath) {
  TempDir dir;
  ImportanceMatrix m = sample_matrix();
  const std::string missing = dir.file("no/such/folder/m.gguf");
  for (const bool legacy_form : {false, true}) {
    const Status s = write_imatrix(missing, m, legacy_form);
    ASSERT_FALSE(s.ok());
    EXPECT_TRUE(HasText(s.message(), missing)) << legacy_form;
  }
  m.entries["blk.0.attn_q.weight"].sum_sq[1] = -1.0f;
  Status s = write_imatrix(dir.file("m.gguf"), m);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(HasText(s.message(), "entry 'blk.0.attn_q.weight': value 1 is -1"));
  m = sample_matrix();
  m.entries["blk.0.attn_q.weight"].count = std::nan("");
  s = write_imatrix(dir.file("m.gguf"), m);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(HasText(s.message(), "has a count of nan"));
  EXPECT_FALSE(std::filesystem::exists(dir.file("m.gguf")));
}

// merge_imatrix: sums and counts add by name, new names are copied, datasets
// and chunk counts add up; an entry of another length refuses the merge
// before anything changes.
TEST(ImatrixFile, MergeAddsEntriesByNameAndRefusesAnotherWidth) {
  ImportanceMatrix a, b;
  a.entries["w1"] = ImatrixEntry{{1.0f, 2.0f}, 3};
  a.datasets = {"a.txt"}, a.chunk_count = 2, a.chunk_size = 64;
  b.entries["w1"] = ImatrixEntry{{10.0f, 20.0f}, 5};
  b.entries["w2"] = ImatrixEntry{{7.0f}, 1};
  b.datasets = {"b.txt"}, b.chunk_count = 4, b.chunk_size = 64;
  ASSERT_TRUE(merge_imatrix(&a, b).ok());
  EXPECT_EQ(a.entries["w1"].sum_sq, (std::vector<float>{11.0f, 22.0f}));
  EXPECT_EQ(a.entries["w1"].count, 8);
  EXPECT_EQ(a.entries["w2"].sum_sq, std::vector<float>{7.0f});
  EXPECT_EQ(a.datasets, (std::vector<std::string>{"a.txt", "b.txt"}));
  EXPECT_EQ(a.chunk_count, 6);
  EXPECT_EQ(a.chunk_size, 64);
  ImportanceMatrix wide;
  wide.entries["w2"] = ImatrixEntry{{1.0f, 1.0f}, 1};
  wide.entries["w3"] = ImatrixEntry{{1.0f}, 1};
  const Status s = merge_imatrix(&a, wide);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("'w2' has 2 columns in one file and 1 in another"), std::string::npos) << s.message();
  EXPECT_EQ(a.entries.count("w3"), 0u) << "nothing merged";
}

}  // namespace
}  // namespace llmpack
