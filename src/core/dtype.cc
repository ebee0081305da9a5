#include "core/dtype.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>

namespace llmpack {
namespace {

struct Entry {
  DType type;
  DTypeInfo info;
};

// Block layouts as GGUF defines them.
constexpr std::array<Entry, 30> kTable = {{
    {DType::kF32, {"f32", 1, 4}},
    {DType::kF16, {"f16", 1, 2}},
    {DType::kQ4_0, {"q4_0", 32, 18}},
    {DType::kQ4_1, {"q4_1", 32, 20}},
    {DType::kQ5_0, {"q5_0", 32, 22}},
    {DType::kQ5_1, {"q5_1", 32, 24}},
    {DType::kQ8_0, {"q8_0", 32, 34}},
    {DType::kQ8_1, {"q8_1", 32, 36}},
    {DType::kQ2_K, {"q2_k", 256, 84}},
    {DType::kQ3_K, {"q3_k", 256, 110}},
    {DType::kQ4_K, {"q4_k", 256, 144}},
    {DType::kQ5_K, {"q5_k", 256, 176}},
    {DType::kQ6_K, {"q6_k", 256, 210}},
    {DType::kQ8_K, {"q8_k", 256, 292}},
    {DType::kIQ4_NL, {"iq4_nl", 32, 18}},
    {DType::kIQ4_XS, {"iq4_xs", 256, 136}},
    {DType::kIQ2_XXS, {"iq2_xxs", 256, 66}},
    {DType::kIQ2_XS, {"iq2_xs", 256, 74}},
    {DType::kIQ2_S, {"iq2_s", 256, 82}},
    {DType::kIQ3_XXS, {"iq3_xxs", 256, 98}},
    {DType::kIQ3_S, {"iq3_s", 256, 110}},
    {DType::kIQ1_S, {"iq1_s", 256, 50}},
    {DType::kIQ1_M, {"iq1_m", 256, 56}},
    {DType::kI8, {"i8", 1, 1}},
    {DType::kI16, {"i16", 1, 2}},
    {DType::kI32, {"i32", 1, 4}},
    {DType::kI64, {"i64", 1, 8}},
    {DType::kBF16, {"bf16", 1, 2}},
    // memory-only: the blocks of the plain type, regrouped in rows
    {DType::kQ5_0x8, {"q5_0x8", 32, 22}},
    {DType::kQ5_1x8, {"q5_1x8", 32, 24}},
}};

}  // namespace

std::optional<DTypeInfo> dtype_info(uint32_t raw) {
  if (raw == static_cast<uint32_t>(DType::kF64)) return DTypeInfo{"f64", 1, 8};
  for (const auto& e : kTable)
    if (static_cast<uint32_t>(e.type) == raw) return e.info;
  return std::nullopt;
}

bool dtype_is_memory_only(DType t) { return t == DType::kQ5_0x8 || t == DType::kQ5_1x8; }

std::string_view dtype_name(DType t) {
  auto info = dtype_info(t);
  return info ? info->name : std::string_view("unknown");
}

std::optional<DType> dtype_from_name(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const auto& e : kTable)
    if (e.info.name == lower && !dtype_is_memory_only(e.type)) return e.type;
  if (lower == "f64") return DType::kF64;
  return std::nullopt;
}

}  // namespace llmpack
