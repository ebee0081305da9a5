// The off-graph KV cache (CONTRACT C1, C7): key and value rows of every layer,
// owned by whoever drives the program (a chat session, a runner) and bound to
// it with Program::bind_kv_cache. It starts small and grows (doubling, so no
// per-token reallocation) up to its capacity; rows are stored as f32, f16 or
// q8_0 and the attention kernels read them in place in that type
// (kernels::attention_head{,_f16,_q8_0}): nothing is converted in bulk.
//
// Layout: each row of kv_dim elements is split into `heads` equal parts (the
// model's kv heads), and the store is [n_layers][heads][allocated_rows]
// [head_bytes] for keys and the same for values, so one kv head's rows are
// contiguous and decode attention streams them (a [n_layers][rows][row_bytes]
// layout put one head's consecutive rows row_bytes apart, 2 KiB for the
// Llama-3.2-1B shape in f32, and its decode attention after 4096 positions
// took 1.5x as long: docs/PERFORMANCE.md section 23). With heads = 1 it is
// [n_layers][rows][row_bytes]. Growing moves each head's rows into the new
// allocation; it is amortized by doubling. Save/load keep the portable
// [rows][n_layers][row_bytes] order, whatever the heads.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/zero_pages.h"

namespace llmpack {

enum class KvDtype { kF32, kF16, kQ8_0 };
std::string_view kv_dtype_name(KvDtype dtype);
Result<KvDtype> parse_kv_dtype(std::string_view name);
// The cache's element type unless one is asked for: f16, as llama.cpp's (half
// of f32's memory and decode reads; docs/PERFORMANCE.md section 51). The
// program's own cache, KvCacheOptions, the CLI and Python all default to it.
constexpr KvDtype kDefaultKvDtype = KvDtype::kF16;

struct KvCacheOptions {
  KvDtype dtype = kDefaultKvDtype;
  int64_t initial_rows = 256;  // rows allocated up front (capped by capacity)
  int64_t capacity_rows = 0;   // rows it may grow to; 0: the program's context C
  // Parts each row is stored in, one after another (see the layout above):
  // kv_dim % heads == 0, and for q8_0 each part whole blocks of 32.
  // Program::create_kv_cache sets the model's kv heads where they qualify.
  int64_t heads = 1;
};

class KvCache {
 public:
  // Rows are [kv_dim] per layer; capacity_rows >= 1, initial_rows >= 1.
  static Result<std::unique_ptr<KvCache>> create(int64_t n_layers, int64_t kv_dim, const KvCacheOptions& options);

  // Makes rows [0, n_rows) writable, doubling the allocation as needed up to
  // the capacity; beyond it is an error naming both numbers. Rows already
  // written keep their values.
  Status reserve(int64_t n_rows);

  // Writes the key and value of one position ([kv_dim] f32 each, converted
  // to the cache's element type). Precondition: row < allocated_rows().
  void store(int64_t layer, int64_t row, const float* k, const float* v);

  // Head g of one layer's rows, for a model whose rows hold n_heads heads of
  // kv_dim / n_heads elements (heads() is 1 or n_heads): key row j of the
  // head starts at element `first` of k + j * row_stride_bytes (value row j
  // likewise from v). Elements are of `dtype`: f32 floats, f16 halves, or q8_0
  // as GGUF BlockQ8_0 blocks of 32 (with heads() == 1, kv_dim need not be a
  // multiple of 32: the short last block is zero-padded and has its own
  // scale). Valid until the next reserve (growing moves the rows).
  struct HeadView {
    KvDtype dtype = KvDtype::kF32;
    const uint8_t* k = nullptr;
    const uint8_t* v = nullptr;
    int64_t row_stride_bytes = 0;
    int64_t first = 0;  // elements into each row (0 when heads() == n_heads)
  };
  HeadView head_view(int64_t layer, int64_t g, int64_t n_heads) const;

  // Decodes the key and value of one position to f32 (k[kv_dim], v[kv_dim]);
  // for tests and tools, not the forward pass. Precondition: row < allocated_rows().
  void read_row(int64_t layer, int64_t row, float* k, float* v) const;

  int64_t n_layers() const { return n_layers_; }
  int64_t kv_dim() const { return kv_dim_; }
  int64_t heads() const { return heads_; }
  KvDtype dtype() const { return dtype_; }
  int64_t capacity_rows() const { return capacity_; }
  int64_t allocated_rows() const { return allocated_; }
  // Bytes of one position over all layers, keys and values.
  uint64_t bytes_per_row() const { return 2 * static_cast<uint64_t>(n_layers_) * row_bytes_; }
  // Bytes held now: the rows allocated (keys and values).
  uint64_t bytes() const { return k_.size() + v_.size(); }

  // Rows [0, n_rows) of every layer in the stored element type, for save/load,
  // in the portable row-major order [n_rows][n_layers][row_bytes] (the file
  // format's, whatever the in-memory layout): a copy gathered per layer.
  // Precondition: n_rows <= allocated_rows().
  std::vector<uint8_t> raw_keys(int64_t n_rows) const;
  std::vector<uint8_t> raw_values(int64_t n_rows) const;
  // Replaces rows [0, n_rows) with raw rows in that same row-major order.
  Status assign_raw(int64_t n_rows, std::span<const uint8_t> keys, std::span<const uint8_t> values);

 private:
  KvCache() = default;
  // Head h of row j in layer l (h < heads_).
  size_t offset(int64_t layer, int64_t head, int64_t row) const {
    return ((static_cast<size_t>(layer) * heads_ + head) * allocated_ + row) * head_bytes_;
  }
  std::vector<uint8_t> gather(const ZeroedVector<uint8_t>& store, int64_t n_rows) const;
  void scatter(std::span<const uint8_t> rows, int64_t n_rows, ZeroedVector<uint8_t>& store);

  int64_t n_layers_ = 0, kv_dim_ = 0, heads_ = 1, capacity_ = 0, allocated_ = 0;
  KvDtype dtype_ = KvDtype::kF32;
  size_t row_bytes_ = 0;   // one layer's row of kv_dim elements
  size_t head_bytes_ = 0;  // row_bytes_ / heads_
  // [n_layers][heads][allocated][head_bytes], sized without being written: the rows
  // a conversation has not reached stay out of RSS (core/zero_pages.h)
  ZeroedVector<uint8_t> k_, v_;
};

// A saved conversation: what the cache held and who it belongs to.
struct KvCacheFile {
  uint64_t model_identity = 0;
  std::vector<int64_t> tokens;  // the tokens whose keys and values the rows hold
  std::string metadata;         // opaque to the cache (the session's messages)
};

// Writes rows [0, tokens.size()) of `cache` with a versioned header, the
// model identity, the tokens, the metadata and a checksum of everything. An
// existing file is replaced only if it is a conversation file itself: a
// mistyped `/save model.gguf` must not destroy the model.
Status save_kv_cache_file(const std::string& path, const KvCache& cache, const KvCacheFile& contents);

// Reads a file written by save_kv_cache_file into `cache`. Everything is
// checked before the cache is touched: magic, version, checksum (a damaged
// file), model identity (a file from another model), shape and capacity. On
// error the cache is unchanged.
Result<KvCacheFile> load_kv_cache_file(const std::string& path, KvCache& cache, uint64_t model_identity);

// FNV-1a 64 over bytes, chained through `seed` (model identities, checksums).
uint64_t fnv1a64(const void* data, size_t n, uint64_t seed = 0xcbf29ce484222325ull);

}  // namespace llmpack
