// Element types of tensors, numbered as GGUF numbers them (ggml_type), so a
// GGUF tensor's type field converts directly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace llmpack {

enum class DType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kIQ2_XXS = 16,
  kIQ2_XS = 17,
  kIQ3_XXS = 18,
  kIQ1_S = 19,
  kIQ4_NL = 20,
  kIQ3_S = 21,
  kIQ2_S = 22,
  kIQ4_XS = 23,
  kI8 = 24,
  kI16 = 25,
  kI32 = 26,
  kI64 = 27,
  kF64 = 28,
  kIQ1_M = 29,
  kBF16 = 30,
  // Layouts that exist only in memory, never in a file (a GGUF tensor of
  // these numbers is refused as an unknown type): Q5_0 and Q5_1 rows regrouped
  // at load for the x86 decode kernels (kernels/grouped_blocks.h).
  kQ5_0x8 = 0x10006,
  kQ5_1x8 = 0x10007,
};

struct DTypeInfo {
  std::string_view name;   // "q4_0"
  int64_t block_elems;     // elements per block (1 for plain types)
  int64_t block_bytes;     // bytes per block
};

// nullopt for numbers that are not a known type (hostile files carry any u32).
std::optional<DTypeInfo> dtype_info(uint32_t raw);
// Whether t is a memory-only layout (kQ5_0x8, kQ5_1x8): no file holds one.
bool dtype_is_memory_only(DType t);
inline std::optional<DTypeInfo> dtype_info(DType t) { return dtype_info(static_cast<uint32_t>(t)); }
std::string_view dtype_name(DType t);
// Parses "f32", "q4_0", ... (case-insensitive); nullopt when unknown or
// memory-only.
std::optional<DType> dtype_from_name(std::string_view name);

// Bytes of a row of n elements; n must be a multiple of the block size.
inline int64_t row_bytes(const DTypeInfo& info, int64_t n) {
  return n / info.block_elems * info.block_bytes;
}

}  // namespace llmpack
