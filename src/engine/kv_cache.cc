#include "engine/kv_cache.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/file_text.h"
#include "core/half.h"
#include "kernels/kernels.h"

namespace llmpack {
namespace {

constexpr int64_t kQ8Block = 32;        // q8_0: an f16 scale and 32 int8 values per block
constexpr size_t kQ8BlockBytes = 2 + kQ8Block;
constexpr char kMagic[8] = {'L', 'L', 'M', 'P', 'K', 'V', 'C', '1'};
constexpr uint32_t kFileVersion = 1;

size_t row_bytes_for(KvDtype dtype, int64_t kv_dim) {
  switch (dtype) {
    case KvDtype::kF32: return static_cast<size_t>(kv_dim) * 4;
    case KvDtype::kF16: return static_cast<size_t>(kv_dim) * 2;
    case KvDtype::kQ8_0: return static_cast<size_t>((kv_dim + kQ8Block - 1) / kQ8Block) * kQ8BlockBytes;
  }
  return 0;
}

// A row of n elements in the cache's type (the kernels' SIMD paths: a decode
// token writes one row per layer and head, a prefill chunk one per token too).
void encode(KvDtype dtype, const float* in, int64_t n, uint8_t* out) {
  if (dtype == KvDtype::kF32) {
    std::memcpy(out, in, static_cast<size_t>(n) * 4);
  } else if (dtype == KvDtype::kF16) {
    kernels::convert_to_f16(in, n, reinterpret_cast<uint16_t*>(out));
  } else {  // q8_0; a short last block keeps its own scale
    kernels::quantize_row_q8_0(in, n, out);
  }
}

void decode(KvDtype dtype, const uint8_t* in, int64_t n, float* out) {
  if (dtype == KvDtype::kF32) {
    std::memcpy(out, in, static_cast<size_t>(n) * 4);
  } else if (dtype == KvDtype::kF16) {
    for (int64_t i = 0; i < n; ++i) {
      uint16_t h;
      std::memcpy(&h, in + 2 * i, 2);
      out[i] = f16_to_f32(h);
    }
  } else {
    for (int64_t b = 0; b * kQ8Block < n; ++b) {
      const uint8_t* block = in + b * kQ8BlockBytes;
      uint16_t h;
      std::memcpy(&h, block, 2);
      const float scale = f16_to_f32(h);
      const int64_t len = std::min(kQ8Block, n - b * kQ8Block);
      for (int64_t i = 0; i < len; ++i) out[b * kQ8Block + i] = scale * static_cast<int8_t>(block[2 + i]);
    }
  }
}

std::string kv_count_str(int64_t v) { return std::to_string(v); }

}  // namespace

std::string_view kv_dtype_name(KvDtype dtype) {
  switch (dtype) {
    case KvDtype::kF32: return "f32";
    case KvDtype::kF16: return "f16";
    case KvDtype::kQ8_0: return "q8_0";
  }
  return "?";
}

Result<KvDtype> parse_kv_dtype(std::string_view name) {
  for (KvDtype d : {KvDtype::kF32, KvDtype::kF16, KvDtype::kQ8_0})
    if (name == kv_dtype_name(d)) return d;
  return error_status("KV cache dtype '" + std::string(name) + "' is unknown, expected f32, f16 or q8_0");
}

uint64_t fnv1a64(const void* data, size_t n, uint64_t seed) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint64_t h = seed;
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

Result<std::unique_ptr<KvCache>> KvCache::create(int64_t n_layers, int64_t kv_dim, const KvCacheOptions& options) {
  if (n_layers < 1 || kv_dim < 1)
    return error_status("KV cache: expected layers >= 1 and a row width >= 1, found " + kv_count_str(n_layers) + " and " +
                        kv_count_str(kv_dim));
  if (options.capacity_rows < 1)
    return error_status("KV cache: capacity of " + kv_count_str(options.capacity_rows) + " rows, expected at least 1");
  if (options.initial_rows < 1)
    return error_status("KV cache: initial size of " + kv_count_str(options.initial_rows) + " rows, expected at least 1");
  const int64_t heads = options.heads;
  if (heads < 1 || kv_dim % heads != 0 || (options.dtype == KvDtype::kQ8_0 && heads > 1 && (kv_dim / heads) % kQ8Block != 0))
    return error_status("KV cache: rows of " + kv_count_str(kv_dim) + " elements cannot be stored as " +
                        kv_count_str(heads) + " heads; expected a count >= 1 that divides the row" +
                        (options.dtype == KvDtype::kQ8_0 ? " into whole q8_0 blocks of 32, or 1" : ""));
  std::unique_ptr<KvCache> c(new KvCache());
  c->n_layers_ = n_layers;
  c->kv_dim_ = kv_dim;
  c->heads_ = heads;
  c->capacity_ = options.capacity_rows;
  c->dtype_ = options.dtype;
  c->row_bytes_ = row_bytes_for(options.dtype, kv_dim);
  c->head_bytes_ = c->row_bytes_ / static_cast<size_t>(heads);
  LLMPACK_RETURN_IF_ERROR(c->reserve(std::min(options.initial_rows, options.capacity_rows)));
  return c;
}

Status KvCache::reserve(int64_t n_rows) {
  if (n_rows <= allocated_) return ok_status();
  if (n_rows > capacity_)
    return error_status("KV cache: " + kv_count_str(n_rows) + " rows needed, its capacity is " + kv_count_str(capacity_) + " rows");
  // Doubling keeps growth amortized: a conversation of n tokens reallocates
  // log2(n / initial) times, never per token.
  const int64_t rows = std::min(capacity_, std::max(n_rows, allocated_ * 2));
  // Each (layer, head) block [allocated_][head_bytes] moves to the start of
  // its new, larger block [rows][head_bytes].
  const size_t old_block = static_cast<size_t>(allocated_) * head_bytes_;
  const size_t new_block = static_cast<size_t>(rows) * head_bytes_;
  const size_t n_blocks = static_cast<size_t>(n_layers_ * heads_);
  for (ZeroedVector<uint8_t>* store : {&k_, &v_}) {
    ZeroedVector<uint8_t> grown(new_block * n_blocks);
    for (size_t b = 0; b < n_blocks && old_block > 0; ++b)
      std::memcpy(grown.data() + b * new_block, store->data() + b * old_block, old_block);
    store->swap(grown);
  }
  allocated_ = rows;
  return ok_status();
}

// Each head's elements go to its own block (for q8_0 the heads are whole
// blocks, so this equals encoding the row at once).
void KvCache::store(int64_t layer, int64_t row, const float* k, const float* v) {
  const int64_t width = kv_dim_ / heads_;
  for (int64_t h = 0; h < heads_; ++h) {
    const size_t at = offset(layer, h, row);
    encode(dtype_, k + h * width, width, k_.data() + at);
    encode(dtype_, v + h * width, width, v_.data() + at);
  }
}

KvCache::HeadView KvCache::head_view(int64_t layer, int64_t g, int64_t n_heads) const {
  if (heads_ == 1) {
    const size_t at = offset(layer, 0, 0);
    return {dtype_, k_.data() + at, v_.data() + at, static_cast<int64_t>(row_bytes_), g * (kv_dim_ / n_heads)};
  }
  const size_t at = offset(layer, g, 0);  // heads_ == n_heads
  return {dtype_, k_.data() + at, v_.data() + at, static_cast<int64_t>(head_bytes_), 0};
}

void KvCache::read_row(int64_t layer, int64_t row, float* k, float* v) const {
  const int64_t width = kv_dim_ / heads_;
  for (int64_t h = 0; h < heads_; ++h) {
    const size_t at = offset(layer, h, row);
    decode(dtype_, k_.data() + at, width, k + h * width);
    decode(dtype_, v_.data() + at, width, v + h * width);
  }
}

// Storage -> row-major [n_rows][n_layers][row_bytes] (a row's heads side by side).
std::vector<uint8_t> KvCache::gather(const ZeroedVector<uint8_t>& store, int64_t n_rows) const {
  std::vector<uint8_t> rows(static_cast<size_t>(n_rows) * n_layers_ * row_bytes_);
  for (int64_t j = 0; j < n_rows; ++j)
    for (int64_t l = 0; l < n_layers_; ++l)
      for (int64_t h = 0; h < heads_; ++h)
        std::memcpy(rows.data() + (static_cast<size_t>(j) * n_layers_ + l) * row_bytes_ + h * head_bytes_,
                    store.data() + offset(l, h, j), head_bytes_);
  return rows;
}

// Row-major [n_rows][n_layers][row_bytes] -> storage.
void KvCache::scatter(std::span<const uint8_t> rows, int64_t n_rows, ZeroedVector<uint8_t>& store) {
  for (int64_t j = 0; j < n_rows; ++j)
    for (int64_t l = 0; l < n_layers_; ++l)
      for (int64_t h = 0; h < heads_; ++h)
        std::memcpy(store.data() + offset(l, h, j),
                    rows.data() + (static_cast<size_t>(j) * n_layers_ + l) * row_bytes_ + h * head_bytes_,
                    head_bytes_);
}

std::vector<uint8_t> KvCache::raw_keys(int64_t n_rows) const { return gather(k_, n_rows); }

std::vector<uint8_t> KvCache::raw_values(int64_t n_rows) const { return gather(v_, n_rows); }

Status KvCache::assign_raw(int64_t n_rows, std::span<const uint8_t> keys, std::span<const uint8_t> values) {
  const size_t want = static_cast<size_t>(n_rows) * n_layers_ * row_bytes_;
  if (keys.size() != want || values.size() != want)
    return error_status("KV cache: " + kv_count_str(static_cast<int64_t>(keys.size())) + " bytes of rows given, expected " +
                        kv_count_str(static_cast<int64_t>(want)));
  LLMPACK_RETURN_IF_ERROR(reserve(n_rows));
  scatter(keys, n_rows, k_);
  scatter(values, n_rows, v_);
  return ok_status();
}

// ---- files ----------------------------------------------------------------

namespace {

struct Header {
  char magic[8];
  uint32_t version;
  uint32_t dtype;
  uint64_t model_identity;
  int64_t n_layers, kv_dim, n_rows, n_tokens;
  uint64_t metadata_bytes;
};
static_assert(sizeof(Header) == 64);

template <typename T>
void append(std::string& out, const T* data, size_t n) {
  out.append(reinterpret_cast<const char*>(data), n * sizeof(T));
}

}  // namespace

Status save_kv_cache_file(const std::string& path, const KvCache& cache, const KvCacheFile& contents) {
  const auto n_rows = static_cast<int64_t>(contents.tokens.size());
  if (n_rows > cache.allocated_rows())
    return error_status("saving the KV cache: " + kv_count_str(n_rows) + " tokens but only " +
                        kv_count_str(cache.allocated_rows()) + " rows allocated");
  Header h{};
  std::memcpy(h.magic, kMagic, 8);
  h.version = kFileVersion;
  h.dtype = static_cast<uint32_t>(cache.dtype());
  h.model_identity = contents.model_identity;
  h.n_layers = cache.n_layers();
  h.kv_dim = cache.kv_dim();
  h.n_rows = n_rows;
  h.n_tokens = n_rows;
  h.metadata_bytes = contents.metadata.size();
  std::string out;
  append(out, &h, 1);
  append(out, contents.tokens.data(), contents.tokens.size());
  out += contents.metadata;
  // The file keeps the row-major order [rows][layers] (version 1 files from
  // before the layer-major cache load unchanged); raw_* convert.
  const std::vector<uint8_t> k = cache.raw_keys(n_rows), v = cache.raw_values(n_rows);
  append(out, k.data(), k.size());
  append(out, v.data(), v.size());
  const uint64_t sum = fnv1a64(out.data(), out.size());
  append(out, &sum, 1);
  // Written beside the target and renamed, so a failed save never leaves a
  // half-written file under the name a later /load would read.
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return error_status("'" + path + "' is a directory, expected the path of a file to write");
  if (std::filesystem::exists(path, ec)) {
    char magic[8] = {};
    std::ifstream(path, std::ios::binary).read(magic, 8);
    if (std::memcmp(magic, kMagic, 8) != 0)
      return error_status("'" + path + "' exists and is not an llmpack conversation file; it was left as it is " +
                          "(remove it, or save under another name)");
  }
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) return error_status("cannot write '" + path + "': " + std::strerror(errno));
    f.write(out.data(), static_cast<std::streamsize>(out.size()));
    f.close();
    if (!f) {
      std::remove(tmp.c_str());
      return error_status("writing '" + path + "' failed (is the disk full?)");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    return error_status("cannot write '" + path + "': " + std::strerror(err));
  }
  return ok_status();
}

Result<KvCacheFile> load_kv_cache_file(const std::string& path, KvCache& cache, uint64_t model_identity) {
  LLMPACK_ASSIGN_OR_RETURN(const std::string bytes, read_file_text(path));
  const std::string what = "'" + path + "' ";
  if (bytes.size() < sizeof(Header) + 8 || std::memcmp(bytes.data(), kMagic, 8) != 0)
    return error_status(what + "is not an llmpack conversation file (no LLMPKVC1 header)");
  Header h;
  std::memcpy(&h, bytes.data(), sizeof(Header));
  if (h.version != kFileVersion)
    return error_status(what + "has format version " + kv_count_str(h.version) + ", expected " + kv_count_str(kFileVersion));
  uint64_t stored_sum;
  std::memcpy(&stored_sum, bytes.data() + bytes.size() - 8, 8);
  if (fnv1a64(bytes.data(), bytes.size() - 8) != stored_sum)
    return error_status(what + "is damaged (checksum mismatch)");
  if (h.model_identity != model_identity)
    return error_status(what + "was saved with another model (identity " + std::to_string(h.model_identity) +
                        ", this model is " + std::to_string(model_identity) + ")");
  if (h.dtype > static_cast<uint32_t>(KvDtype::kQ8_0) || h.n_layers != cache.n_layers() ||
      h.kv_dim != cache.kv_dim() || h.n_rows != h.n_tokens || h.n_rows < 0)
    return error_status(what + "holds a cache of " + kv_count_str(h.n_layers) + " layers x " + kv_count_str(h.kv_dim) +
                        ", expected " + kv_count_str(cache.n_layers()) + " x " + kv_count_str(cache.kv_dim()));
  if (h.n_rows > cache.capacity_rows())
    return error_status(what + "holds " + kv_count_str(h.n_rows) + " positions, the cache holds at most " +
                        kv_count_str(cache.capacity_rows()));
  const auto file_dtype = static_cast<KvDtype>(h.dtype);
  const size_t row = row_bytes_for(file_dtype, h.kv_dim) * static_cast<size_t>(h.n_layers);
  const size_t tokens_bytes = static_cast<size_t>(h.n_tokens) * 8;
  const size_t rows_bytes = row * static_cast<size_t>(h.n_rows);
  const size_t expected = sizeof(Header) + tokens_bytes + h.metadata_bytes + 2 * rows_bytes + 8;
  if (h.metadata_bytes > bytes.size() || expected != bytes.size())
    return error_status(what + "is " + kv_count_str(static_cast<int64_t>(bytes.size())) + " bytes, its header describes " +
                        kv_count_str(static_cast<int64_t>(expected)));
  KvCacheFile out;
  out.model_identity = h.model_identity;
  out.tokens.resize(static_cast<size_t>(h.n_tokens));
  const char* p = bytes.data() + sizeof(Header);
  std::memcpy(out.tokens.data(), p, tokens_bytes);
  p += tokens_bytes;
  out.metadata.assign(p, h.metadata_bytes);
  p += h.metadata_bytes;
  const auto* keys = reinterpret_cast<const uint8_t*>(p);
  const auto* values = keys + rows_bytes;
  if (file_dtype == cache.dtype()) {
    LLMPACK_RETURN_IF_ERROR(cache.assign_raw(h.n_rows, {keys, rows_bytes}, {values, rows_bytes}));
    return out;
  }
  // Another element type: convert each row through f32.
  const size_t cache_row = row_bytes_for(cache.dtype(), h.kv_dim) * static_cast<size_t>(h.n_layers);
  std::vector<uint8_t> k(cache_row * h.n_rows), v(cache_row * h.n_rows);
  std::vector<float> tmp(static_cast<size_t>(h.kv_dim));
  const size_t in_row = row / h.n_layers, out_row = cache_row / h.n_layers;
  for (int64_t i = 0; i < h.n_rows * h.n_layers; ++i) {
    decode(file_dtype, keys + i * in_row, h.kv_dim, tmp.data());
    encode(cache.dtype(), tmp.data(), h.kv_dim, k.data() + i * out_row);
    decode(file_dtype, values + i * in_row, h.kv_dim, tmp.data());
    encode(cache.dtype(), tmp.data(), h.kv_dim, v.data() + i * out_row);
  }
  LLMPACK_RETURN_IF_ERROR(cache.assign_raw(h.n_rows, k, v));
  return out;
}

}  // namespace llmpack
