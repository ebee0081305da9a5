// The off-graph KV cache (C1, C7): growth, element types, binding to a
// program, and the file format's refusals.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>

#include "common/tiny_model.h"
#include "core/half.h"
#include "engine/kv_cache.h"

namespace llmpack {
namespace {

using testing::TinyContract;
using testing::TinyModelSpec;

std::vector<float> random_row(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = d(rng);
  return v;
}

TEST(KvCache, C7_D16_StartsSmallGrowsByDoublingUpToItsCapacity) {
  auto c = KvCache::create(2, 40, {KvDtype::kF32, 16, 100}).value();
  EXPECT_EQ(c->allocated_rows(), 16);
  const auto k = random_row(40, 1), v = random_row(40, 2);
  c->store(1, 15, k.data(), v.data());
  ASSERT_TRUE(c->reserve(17).ok());
  EXPECT_EQ(c->allocated_rows(), 32);  // doubled, not 17
  ASSERT_TRUE(c->reserve(33).ok());
  EXPECT_EQ(c->allocated_rows(), 64);
  ASSERT_TRUE(c->reserve(65).ok());
  EXPECT_EQ(c->allocated_rows(), 100);  // capped at the capacity
  std::vector<float> k_back(40), v_back(40);
  c->read_row(1, 15, k_back.data(), v_back.data());
  const auto view = c->head_view(1, 0, 1);  // the f32 rows in place, after the growth
  const auto* k_raw = reinterpret_cast<const float*>(view.k + 15 * view.row_stride_bytes);
  for (int i = 0; i < 40; ++i) {  // rows written before growing survive it
    EXPECT_EQ(k_back[i], k[i]);
    EXPECT_EQ(v_back[i], v[i]);
    EXPECT_EQ(k_raw[i], k[i]);
  }
  EXPECT_EQ(view.row_stride_bytes, 40 * 4);  // layer-major: one layer's rows are contiguous
  EXPECT_EQ(c->bytes(), 100u * 2 * 2 * 40 * 4);  // the rows, nothing else
  auto refused = c->reserve(101);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("capacity is 100"), std::string::npos) << refused.message();
  EXPECT_FALSE(KvCache::create(2, 40, {KvDtype::kF32, 16, 0}).ok());
  EXPECT_FALSE(KvCache::create(0, 40, {KvDtype::kF32, 16, 10}).ok());
}

TEST(KvCache, C7_F16AndQ8RowsReadBackCloseToF32AndTakeLessMemory) {
  const int64_t dim = 72;  // two q8_0 blocks and a short tail
  const auto k = random_row(dim, 3), v = random_row(dim, 4);
  for (auto [dtype, tolerance] : {std::pair{KvDtype::kF16, 2e-3f}, std::pair{KvDtype::kQ8_0, 3e-2f}}) {
    auto c = KvCache::create(3, dim, {dtype, 4, 8}).value();
    c->store(2, 3, k.data(), v.data());
    std::vector<float> k_back(dim), v_back(dim);
    c->read_row(2, 3, k_back.data(), v_back.data());
    for (int64_t i = 0; i < dim; ++i) {
      EXPECT_NEAR(k_back[i], k[i], tolerance * std::fabs(k[i]) + tolerance) << i;
      EXPECT_NEAR(v_back[i], v[i], tolerance * std::fabs(v[i]) + tolerance) << i;
    }
    // The view the attention kernels read: the stored type in place, one
    // layer's rows back to back, and no f32 copy held beside them.
    const auto view = c->head_view(2, 0, 1);
    EXPECT_EQ(view.dtype, dtype);
    const int64_t row_bytes = dtype == KvDtype::kF16 ? dim * 2 : 3 * 34;
    EXPECT_EQ(view.row_stride_bytes, row_bytes);
    EXPECT_EQ(c->bytes(), static_cast<uint64_t>(c->allocated_rows() * 2 * 3 * row_bytes));
    const uint8_t* row = view.k + 3 * view.row_stride_bytes;
    if (dtype == KvDtype::kF16) {
      uint16_t h;
      std::memcpy(&h, row + 2 * 5, 2);
      EXPECT_EQ(f16_to_f32(h), k_back[5]);
    } else {  // element 40: block 1, int8 8, scale at the block's start
      uint16_t d;
      std::memcpy(&d, row + 34, 2);
      EXPECT_EQ(f16_to_f32(d) * static_cast<int8_t>(row[34 + 2 + 8]), k_back[40]);
    }
  }
  EXPECT_EQ(KvCache::create(3, dim, {KvDtype::kF32, 1, 1}).value()->bytes_per_row(), 3u * 2 * dim * 4);
  EXPECT_EQ(KvCache::create(3, dim, {KvDtype::kF16, 1, 1}).value()->bytes_per_row(), 3u * 2 * dim * 2);
  EXPECT_EQ(KvCache::create(3, dim, {KvDtype::kQ8_0, 1, 1}).value()->bytes_per_row(), 3u * 2 * 3 * 34);
  EXPECT_TRUE(parse_kv_dtype("q8_0").ok());
  EXPECT_FALSE(parse_kv_dtype("q4_0").ok());
}

// A value that names its layer, row and element, exactly representable in
// f16 (and in q8_0 relative terms), so growth bugs show as wrong numbers.
float tagged(int64_t layer, int64_t row, int64_t i) {
  return static_cast<float>(layer * 64 + row) + static_cast<float>(i) / 64.0f;
}

void store_tagged(KvCache& c, int64_t layer, int64_t row) {
  std::vector<float> k(static_cast<size_t>(c.kv_dim())), v(k.size());
  for (int64_t i = 0; i < c.kv_dim(); ++i) {
    k[i] = tagged(layer, row, i);
    v[i] = -tagged(layer, row, i);
  }
  c.store(layer, row, k.data(), v.data());
}

// Layer-major storage: growing moves every layer's rows into the new
// allocation; two doublings later every row of every layer reads back as
// written, both through read_row and through the contiguous layer view.
TEST(KvCache, C7_EveryLayersRowsSurviveTwoDoublings) {
  for (KvDtype dtype : {KvDtype::kF32, KvDtype::kF16, KvDtype::kQ8_0}) {
    const int64_t layers = 3, dim = 40;
    auto c = KvCache::create(layers, dim, {dtype, 4, 64}).value();
    std::vector<std::vector<float>> before;  // [layer * 4 + row] -> k then v, decoded
    for (int64_t r = 0; r < 4; ++r)
      for (int64_t l = 0; l < layers; ++l) store_tagged(*c, l, r);
    std::vector<float> k(dim), v(dim);
    for (int64_t l = 0; l < layers; ++l)
      for (int64_t r = 0; r < 4; ++r) {
        c->read_row(l, r, k.data(), v.data());
        std::vector<float> kv = k;
        kv.insert(kv.end(), v.begin(), v.end());
        before.push_back(kv);
      }
    ASSERT_TRUE(c->reserve(5).ok());
    EXPECT_EQ(c->allocated_rows(), 8);
    for (int64_t l = 0; l < layers; ++l) store_tagged(*c, l, 7);  // the new last row of each layer
    ASSERT_TRUE(c->reserve(9).ok());
    EXPECT_EQ(c->allocated_rows(), 16);
    for (int64_t l = 0; l < layers; ++l) store_tagged(*c, l, 15);
    for (int64_t l = 0; l < layers; ++l) {
      for (int64_t r = 0; r < 4; ++r) {
        c->read_row(l, r, k.data(), v.data());
        const auto& want = before[l * 4 + r];
        for (int64_t i = 0; i < dim; ++i) {
          ASSERT_EQ(k[i], want[i]) << kv_dtype_name(dtype) << " layer " << l << " row " << r << " elem " << i;
          ASSERT_EQ(v[i], want[dim + i]) << kv_dtype_name(dtype) << " layer " << l << " row " << r;
        }
      }
      for (int64_t r : {7, 15}) {
        c->read_row(l, r, k.data(), v.data());
        for (int64_t i = 0; i < dim; ++i)
          ASSERT_NEAR(k[i], tagged(l, r, i), 0.01f * std::fabs(tagged(l, r, i))) << l << " " << r;
      }
    }
    if (dtype == KvDtype::kF32) {  // the view: row j of layer l at k + j * row_bytes
      for (int64_t l = 0; l < layers; ++l) {
        const auto view = c->head_view(l, 0, 1);
        EXPECT_EQ(view.row_stride_bytes, dim * 4);
        for (int64_t r : {0, 3, 7, 15}) {
          const auto* kr = reinterpret_cast<const float*>(view.k + r * view.row_stride_bytes);
          const auto* vr = reinterpret_cast<const float*>(view.v + r * view.row_stride_bytes);
          EXPECT_EQ(kr[5], tagged(l, r, 5)) << l << " " << r;
          EXPECT_EQ(vr[5], -tagged(l, r, 5)) << l << " " << r;
        }
      }
    }
  }
}

// Per-head storage (KvCacheOptions::heads): each kv head's rows are
// contiguous, a head view points at them with first 0 and a stride of one
// head, growth keeps every head's rows, and the raw rows (the file order)
// are those of the same cache stored as whole rows.
TEST(KvCache, C7_PerHeadStorageKeepsEachHeadsRowsTogetherThroughGrowth) {
  struct Case { KvDtype dtype; int64_t heads, dim; size_t head_bytes; };
  for (const Case& t : {Case{KvDtype::kF32, 4, 40, 10 * 4}, Case{KvDtype::kF16, 5, 40, 8 * 2},
                        Case{KvDtype::kQ8_0, 2, 64, 34}}) {
    const int64_t layers = 3, width = t.dim / t.heads;
    auto split = KvCache::create(layers, t.dim, {t.dtype, 4, 64, t.heads}).value();
    auto whole = KvCache::create(layers, t.dim, {t.dtype, 4, 64}).value();
    EXPECT_EQ(split->heads(), t.heads);
    EXPECT_EQ(whole->heads(), 1);
    for (int64_t r = 0; r < 16; ++r) {
      ASSERT_TRUE(split->reserve(r + 1).ok());  // grows 4 -> 8 -> 16 among the writes
      ASSERT_TRUE(whole->reserve(r + 1).ok());
      for (int64_t l = 0; l < layers; ++l) {
        store_tagged(*split, l, r);
        store_tagged(*whole, l, r);
      }
    }
    const std::string name(kv_dtype_name(t.dtype));
    std::vector<float> ks(t.dim), vs(t.dim), kw(t.dim), vw(t.dim);
    for (int64_t l = 0; l < layers; ++l)
      for (int64_t r = 0; r < 16; ++r) {
        split->read_row(l, r, ks.data(), vs.data());
        whole->read_row(l, r, kw.data(), vw.data());
        ASSERT_EQ(ks, kw) << name << " layer " << l << " row " << r;
        ASSERT_EQ(vs, vw) << name << " layer " << l << " row " << r;
      }
    EXPECT_TRUE(split->raw_keys(16) == whole->raw_keys(16)) << name;
    EXPECT_TRUE(split->raw_values(16) == whole->raw_values(16)) << name;
    if (t.dtype == KvDtype::kF32) {  // the view: head g's row j at k + j * head_bytes, element 0
      for (int64_t g = 0; g < t.heads; ++g) {
        const auto view = split->head_view(2, g, t.heads);
        EXPECT_EQ(view.first, 0);
        EXPECT_EQ(view.row_stride_bytes, static_cast<int64_t>(t.head_bytes));
        const auto* row11 = reinterpret_cast<const float*>(view.k + 11 * view.row_stride_bytes);
        EXPECT_EQ(row11[3], tagged(2, 11, g * width + 3)) << g;
        const auto old = whole->head_view(2, g, t.heads);  // whole rows: the head starts `first` in
        EXPECT_EQ(old.first, g * width);
        EXPECT_EQ(old.row_stride_bytes, t.dim * 4);
      }
    } else {
      EXPECT_EQ(split->head_view(1, 1, t.heads).row_stride_bytes, static_cast<int64_t>(t.head_bytes)) << name;
    }
    EXPECT_EQ(split->bytes(), whole->bytes()) << name;  // the same rows, only in another order
  }
  // Heads that do not divide the row, or split a q8_0 block, are refused.
  auto uneven = KvCache::create(2, 40, {KvDtype::kF32, 4, 8, 3});
  ASSERT_FALSE(uneven.ok());
  EXPECT_NE(uneven.status().message().find("40 elements cannot be stored as 3 heads"), std::string::npos)
      << uneven.status().message();
  auto split_block = KvCache::create(2, 64, {KvDtype::kQ8_0, 4, 8, 4});
  ASSERT_FALSE(split_block.ok());
  EXPECT_NE(split_block.status().message().find("q8_0 blocks of 32"), std::string::npos)
      << split_block.status().message();
  EXPECT_FALSE(KvCache::create(2, 64, {KvDtype::kF32, 4, 8, 0}).ok());
}

// Writes a version-1 conversation file by hand, in the on-disk order the
// format has always had: keys [rows][layers][kv_dim] then values alike.
std::string handmade_v1_file(int64_t layers, int64_t dim, int64_t rows, uint64_t identity) {
  std::string out(64, '\0');
  const char magic[8] = {'L', 'L', 'M', 'P', 'K', 'V', 'C', '1'};
  const uint32_t version = 1, dtype = 0;  // f32
  const int64_t header_ints[4] = {layers, dim, rows, rows};
  const uint64_t metadata_bytes = 2;
  std::memcpy(out.data(), magic, 8);
  std::memcpy(out.data() + 8, &version, 4);
  std::memcpy(out.data() + 12, &dtype, 4);
  std::memcpy(out.data() + 16, &identity, 8);
  std::memcpy(out.data() + 24, header_ints, 32);
  std::memcpy(out.data() + 56, &metadata_bytes, 8);
  for (int64_t t = 0; t < rows; ++t) out.append(reinterpret_cast<const char*>(&t), 8);
  out += "md";
  for (float sign : {1.0f, -1.0f})
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t l = 0; l < layers; ++l)
        for (int64_t i = 0; i < dim; ++i) {
          const float x = sign * tagged(l, r, i);
          out.append(reinterpret_cast<const char*>(&x), 4);
        }
  const uint64_t sum = fnv1a64(out.data(), out.size());
  out.append(reinterpret_cast<const char*>(&sum), 8);
  return out;
}

// The file format did not change with the layer-major cache: a file in the
// row-major order loads into the right layers and rows (also into an f16
// cache, converted), and a save writes exactly that order back.
TEST(KvCache, C4_FilesKeepTheRowMajorOrderAcrossTheLayerMajorCache) {
  const std::string path = ::testing::TempDir() + "/llmpack_kv_v1_" + std::to_string(getpid()) + ".bin";
  const int64_t layers = 3, dim = 8, rows = 6;
  const std::string file = handmade_v1_file(layers, dim, rows, 7);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << file;
  for (int64_t heads : {1, 4}) {  // whole rows, and each of 4 heads' rows together
  SCOPED_TRACE("heads " + std::to_string(heads));
  std::ofstream(path, std::ios::binary | std::ios::trunc) << file;
  auto c = KvCache::create(layers, dim, {KvDtype::kF32, 2, 32, heads}).value();  // grows while loading
  auto loaded = load_kv_cache_file(path, *c, 7);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(loaded->metadata, "md");
  EXPECT_GE(c->allocated_rows(), rows);
  std::vector<float> k(dim), v(dim);
  for (int64_t l = 0; l < layers; ++l)
    for (int64_t r = 0; r < rows; ++r) {
      c->read_row(l, r, k.data(), v.data());
      for (int64_t i = 0; i < dim; ++i) {
        ASSERT_EQ(k[i], tagged(l, r, i)) << "layer " << l << " row " << r;
        ASSERT_EQ(v[i], -tagged(l, r, i)) << "layer " << l << " row " << r;
      }
    }
  auto half = KvCache::create(layers, dim, {KvDtype::kF16, 2, 32, heads}).value();
  ASSERT_TRUE(load_kv_cache_file(path, *half, 7).ok());
  half->read_row(2, 5, k.data(), v.data());
  for (int64_t i = 0; i < dim; ++i) EXPECT_NEAR(k[i], tagged(2, 5, i), 0.07f) << i;  // f16 steps of 1/8 near 133

  // Saved again from the layer-major cache: byte for byte the handmade file.
  KvCacheFile contents{7, {0, 1, 2, 3, 4, 5}, "md"};
  ASSERT_TRUE(save_kv_cache_file(path, *c, contents).ok());
  std::string saved;
  {
    std::ifstream in(path, std::ios::binary);
    saved.assign(std::istreambuf_iterator<char>(in), {});
  }
  EXPECT_EQ(saved.size(), file.size());
  EXPECT_TRUE(saved == file) << "the saved file differs from the row-major version-1 layout";
  const auto raw = c->raw_keys(rows);  // raw rows are row-major too
  ASSERT_EQ(raw.size(), static_cast<size_t>(rows * layers * dim * 4));
  float x;
  std::memcpy(&x, raw.data() + ((4 * layers + 1) * dim + 3) * 4, 4);  // row 4, layer 1, elem 3
  EXPECT_EQ(x, tagged(1, 4, 3));
  }
  std::remove(path.c_str());
}

// Programs whose own cache is f32, so a bound cache of each type is compared
// with exact arithmetic.
LoadedPackage load_tiny(const TinyModelSpec& spec) {
  ProgramOptions o;
  o.cpu_threads = 2;
  o.kv_dtype = KvDtype::kF32;
  auto p = testing::load_tiny_package(spec, o);
  EXPECT_TRUE(p.ok()) << p.status().message();
  return std::move(p).value();
}

TinyModelSpec with_kind(const std::string& kind) {
  TinyModelSpec spec;
  spec.contract = TinyContract{16, 64, 16, true, kind};
  return spec;
}

// A bound f32 cache gives the same logits as the program's own; f16 and
// q8_0 caches stay close; positions past the bound cache's capacity are refused.
TEST(KvCache, C1_ABoundCacheGivesTheLogitsOfTheProgramsOwn) {
  auto pkg = load_tiny(with_kind("off_graph"));
  std::vector<int64_t> prompt = {1, 40, 50, 60, 70, 80, 90, 100, 110, 120};
  std::vector<int64_t> one = {200};
  auto own1 = pkg.program->forward(prompt, 0);
  ASSERT_TRUE(own1.ok());
  auto own = pkg.program->forward(one, 10);
  ASSERT_TRUE(own.ok());
  const std::vector<float> expected(own->last().begin(), own->last().end());
  for (auto [dtype, tolerance] : {std::pair{KvDtype::kF32, 0.0f}, std::pair{KvDtype::kF16, 5e-3f},
                                  std::pair{KvDtype::kQ8_0, 5e-2f}}) {
    auto cache = pkg.program->create_kv_cache({dtype, 4, 32}).value();
    ASSERT_TRUE(pkg.program->bind_kv_cache(cache.get()).ok());
    ASSERT_TRUE(pkg.program->forward(prompt, 0).ok());
    auto got = pkg.program->forward(one, 10);
    ASSERT_TRUE(got.ok());
    EXPECT_GE(cache->allocated_rows(), 11);
    float worst = 0;
    for (size_t i = 0; i < expected.size(); ++i) worst = std::max(worst, std::fabs(got->last()[i] - expected[i]));
    EXPECT_LE(worst, tolerance) << kv_dtype_name(dtype);
    std::vector<int64_t> chunk(16, 7);
    auto past = pkg.program->forward(chunk, 20);  // positions 20..35 > capacity 32
    ASSERT_FALSE(past.ok());
    EXPECT_NE(past.status().message().find("32 positions"), std::string::npos) << past.status().message();
    ASSERT_TRUE(pkg.program->bind_kv_cache(nullptr).ok());
  }
  EXPECT_FALSE(pkg.program->create_kv_cache({KvDtype::kF32, 4, 65}).ok());
  auto wrong = KvCache::create(3, 16, {KvDtype::kF32, 4, 8}).value();
  EXPECT_FALSE(pkg.program->bind_kv_cache(wrong.get()).ok());

  // The program's caches keep each of its 2 kv heads' rows together (a q8_0
  // head of 8 elements would split a block: whole rows); a cache of whole
  // rows made by hand gives the same logits; one of 4 heads does not fit.
  EXPECT_EQ(pkg.program->create_kv_cache({KvDtype::kF16, 4, 32}).value()->heads(), 2);
  EXPECT_EQ(pkg.program->create_kv_cache({KvDtype::kQ8_0, 4, 32}).value()->heads(), 1);
  auto rows = KvCache::create(2, 16, {KvDtype::kF32, 4, 32, 1}).value();
  ASSERT_TRUE(pkg.program->bind_kv_cache(rows.get()).ok());
  ASSERT_TRUE(pkg.program->forward(prompt, 0).ok());
  auto got = pkg.program->forward(one, 10);
  ASSERT_TRUE(got.ok());
  for (size_t i = 0; i < expected.size(); ++i) ASSERT_EQ(got->last()[i], expected[i]) << i;
  auto four = KvCache::create(2, 16, {KvDtype::kF32, 4, 32, 4}).value();
  auto refused = pkg.program->bind_kv_cache(four.get());
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("4 heads do not fit this program's 2 kv heads"), std::string::npos)
      << refused.message();
}

// A q8_0 cache whose heads are whole blocks (head_dim 32) is stored per head;
// it holds the very blocks a cache of whole rows holds, so its logits are
// those of a whole-row q8_0 cache bit for bit, and within q8_0's error of
// the program's f32 cache.
TEST(KvCache, C1_APerHeadQ8CacheGivesTheLogitsOfAWholeRowQ8Cache) {
  TinyModelSpec spec = with_kind("off_graph");
  spec.dim = 128;
  spec.n_heads = 4;
  spec.n_kv_heads = 2;  // head_dim 32
  auto pkg = load_tiny(spec);
  std::vector<int64_t> prompt = {1, 40, 50, 60, 70, 80, 90, 100, 110, 120};
  std::vector<int64_t> one = {200};
  auto last_logits = [&] {
    EXPECT_TRUE(pkg.program->forward(prompt, 0).ok());
    auto got = pkg.program->forward(one, 10);
    EXPECT_TRUE(got.ok());
    return std::vector<float>(got->last().begin(), got->last().end());
  };
  const std::vector<float> f32 = last_logits();
  auto split = pkg.program->create_kv_cache({KvDtype::kQ8_0, 4, 32}).value();
  EXPECT_EQ(split->heads(), 2);
  ASSERT_TRUE(pkg.program->bind_kv_cache(split.get()).ok());
  const std::vector<float> per_head = last_logits();
  auto whole = KvCache::create(2, 64, {KvDtype::kQ8_0, 4, 32, 1}).value();
  ASSERT_TRUE(pkg.program->bind_kv_cache(whole.get()).ok());
  const std::vector<float> whole_rows = last_logits();
  EXPECT_TRUE(per_head == whole_rows);
  float worst = 0, largest = 0;
  for (size_t i = 0; i < f32.size(); ++i) {
    worst = std::max(worst, std::fabs(per_head[i] - f32[i]));
    largest = std::max(largest, std::fabs(f32[i]));
  }
  EXPECT_GT(largest, 0.1f);  // logits that are not all near zero
  EXPECT_LE(worst, 0.05f * largest) << "largest logit " << largest;
}

TEST(KvCache, C1_InGraphAndCachelessProgramsRefuseAnOffGraphCache) {
  for (const char* kind : {"in_graph", "none"}) {
    auto pkg = load_tiny(with_kind(kind));
    auto c = pkg.program->create_kv_cache({});
    ASSERT_FALSE(c.ok()) << kind;
    EXPECT_NE(c.status().message().find("--kv_cache off_graph"), std::string::npos) << c.status().message();
  }
}

TEST(KvCache, C4_FilesRefuseDamageAnotherModelAndAnotherShape) {
  const std::string path = ::testing::TempDir() + "/llmpack_kv_" + std::to_string(getpid()) + ".bin";
  auto a = KvCache::create(2, 8, {KvDtype::kQ8_0, 4, 16}).value();
  for (int64_t r = 0; r < 5; ++r) {
    ASSERT_TRUE(a->reserve(r + 1).ok());
    const auto k = random_row(8, 10 + r), v = random_row(8, 20 + r);
    for (int64_t l = 0; l < 2; ++l) a->store(l, r, k.data(), v.data());
  }
  KvCacheFile contents{42, {1, 2, 3, 4, 5}, "meta"};
  ASSERT_TRUE(save_kv_cache_file(path, *a, contents).ok());
  auto b = KvCache::create(2, 8, {KvDtype::kQ8_0, 4, 16}).value();
  auto loaded = load_kv_cache_file(path, *b, 42);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(loaded->tokens, contents.tokens);
  EXPECT_EQ(loaded->metadata, "meta");
  auto ra = a->raw_keys(5), rb = b->raw_keys(5);
  EXPECT_TRUE(std::equal(ra.begin(), ra.end(), rb.begin()));

  auto fresh = KvCache::create(2, 8, {KvDtype::kQ8_0, 4, 16}).value();
  auto foreign = load_kv_cache_file(path, *fresh, 43);
  ASSERT_FALSE(foreign.ok());
  EXPECT_NE(foreign.status().message().find("another model"), std::string::npos);
  EXPECT_EQ(fresh->allocated_rows(), 4);  // untouched
  auto narrow = KvCache::create(2, 4, {KvDtype::kQ8_0, 4, 16}).value();
  EXPECT_FALSE(load_kv_cache_file(path, *narrow, 42).ok());
  auto small = KvCache::create(2, 8, {KvDtype::kQ8_0, 4, 4}).value();
  EXPECT_FALSE(load_kv_cache_file(path, *small, 42).ok());

  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  for (size_t at = 0; at < bytes.size(); at += 7) {  // any flipped byte is refused
    std::string copy = bytes;
    copy[at] ^= 0x01;
    std::ofstream(path, std::ios::binary | std::ios::trunc) << copy;
    EXPECT_FALSE(load_kv_cache_file(path, *fresh, 42).ok()) << at;
  }
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes.substr(0, 30);
  EXPECT_FALSE(load_kv_cache_file(path, *fresh, 42).ok());
  EXPECT_FALSE(load_kv_cache_file(path + ".missing", *fresh, 42).ok());
  std::remove(path.c_str());
}

}  // namespace
}  // namespace llmpack
