// Details of the GGUF encoding shared by the reader and the writer.
#pragma once

#include <cstdint>
#include <string_view>

#include "format/gguf.h"

namespace llmpack::gguf_detail {

inline constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian u32
inline constexpr uint32_t kVersion = 3;
inline constexpr uint64_t kDefaultAlignment = 32;
inline constexpr uint32_t kMaxDims = 4;
inline constexpr std::string_view kAlignmentKey = "general.alignment";

inline bool is_known_type(uint32_t t) { return t <= static_cast<uint32_t>(GgufValueType::kF64); }

// Name used in messages ("u32", "string", "array").
std::string_view value_type_name(GgufValueType t);

// Encoded size of one scalar of type t; 8 for string (its length prefix, the
// least a string can take), 0 for array (variable).
uint64_t min_encoded_size(GgufValueType t);

inline bool is_unsigned_int(GgufValueType t) {
  return t == GgufValueType::kU8 || t == GgufValueType::kU16 || t == GgufValueType::kU32 ||
         t == GgufValueType::kU64;
}
inline bool is_signed_int(GgufValueType t) {
  return t == GgufValueType::kI8 || t == GgufValueType::kI16 || t == GgufValueType::kI32 ||
         t == GgufValueType::kI64;
}
inline bool is_float(GgufValueType t) {
  return t == GgufValueType::kF32 || t == GgufValueType::kF64;
}

inline bool is_power_of_two(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

// Rounds v up to a multiple of `alignment` (a power of two); false on overflow.
inline bool align_up(uint64_t v, uint64_t alignment, uint64_t* out) {
  const uint64_t mask = alignment - 1;
  if (v > UINT64_MAX - mask) return false;
  *out = (v + mask) & ~mask;
  return true;
}

}  // namespace llmpack::gguf_detail
