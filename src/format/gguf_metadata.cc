// GGUF metadata lookups: typed getters over the parsed key/values.
#include <limits>

#include "format/gguf.h"
#include "format/gguf_internal.h"

namespace llmpack {

namespace gguf_detail {

std::string_view value_type_name(GgufValueType t) {
  switch (t) {
    case GgufValueType::kU8: return "u8";
    case GgufValueType::kI8: return "i8";
    case GgufValueType::kU16: return "u16";
    case GgufValueType::kI16: return "i16";
    case GgufValueType::kU32: return "u32";
    case GgufValueType::kI32: return "i32";
    case GgufValueType::kF32: return "f32";
    case GgufValueType::kBool: return "bool";
    case GgufValueType::kString: return "string";
    case GgufValueType::kArray: return "array";
    case GgufValueType::kU64: return "u64";
    case GgufValueType::kI64: return "i64";
    case GgufValueType::kF64: return "f64";
  }
  return "unknown";
}

uint64_t min_encoded_size(GgufValueType t) {
  switch (t) {
    case GgufValueType::kU8:
    case GgufValueType::kI8:
    case GgufValueType::kBool: return 1;
    case GgufValueType::kU16:
    case GgufValueType::kI16: return 2;
    case GgufValueType::kU32:
    case GgufValueType::kI32:
    case GgufValueType::kF32: return 4;
    case GgufValueType::kU64:
    case GgufValueType::kI64:
    case GgufValueType::kF64:
    case GgufValueType::kString: return 8;
    case GgufValueType::kArray: return 12;  // element type + count
  }
  return 1;
}

}  // namespace gguf_detail

std::string gguf_value_type(const GgufValue& v) {
  std::string out(gguf_detail::value_type_name(v.type));
  if (v.type == GgufValueType::kArray) out += " of " + std::string(gguf_detail::value_type_name(v.array_type));
  return out;
}

using namespace gguf_detail;

const GgufValue* GgufFile::find(std::string_view key) const {
  auto it = metadata_.find(key);
  return it == metadata_.end() ? nullptr : &it->second;
}

const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

bool GgufFile::rewrite_tensor(std::string_view name, DType layout, const std::function<void(uint8_t*)>& rewrite) {
  auto it = tensor_index_.find(name);
  if (it == tensor_index_.end()) return false;
  GgufTensorInfo& t = tensors_[it->second];
  uint8_t* bytes = file_->writable(t.data, t.n_bytes);
  if (bytes == nullptr) return false;
  rewrite(bytes);
  file_->seal(t.data, t.n_bytes);
  t.dtype = layout;
  return true;
}

std::optional<uint64_t> GgufFile::get_uint(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (const auto* u = std::get_if<uint64_t>(&v->value)) return *u;
  if (const auto* i = std::get_if<int64_t>(&v->value); i && *i >= 0)
    return static_cast<uint64_t>(*i);
  return std::nullopt;
}

std::optional<int64_t> GgufFile::get_int(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (const auto* i = std::get_if<int64_t>(&v->value)) return *i;
  if (const auto* u = std::get_if<uint64_t>(&v->value);
      u && *u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    return static_cast<int64_t>(*u);
  return std::nullopt;
}

std::optional<double> GgufFile::get_float(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (const auto* d = std::get_if<double>(&v->value)) return *d;
  if (const auto* i = std::get_if<int64_t>(&v->value)) return static_cast<double>(*i);
  if (const auto* u = std::get_if<uint64_t>(&v->value)) return static_cast<double>(*u);
  return std::nullopt;
}

std::optional<bool> GgufFile::get_bool(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (const auto* b = std::get_if<bool>(&v->value)) return *b;
  return std::nullopt;
}

std::optional<std::string> GgufFile::get_string(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (const auto* s = std::get_if<std::string>(&v->value)) return *s;
  return std::nullopt;
}

const StringTable* GgufFile::get_string_array(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return nullptr;
  return std::get_if<StringTable>(&v->value);
}

std::optional<std::vector<double>> GgufFile::get_float_array(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (const auto* d = std::get_if<std::vector<double>>(&v->value)) return *d;
  if (const auto* i = std::get_if<std::vector<int64_t>>(&v->value))
    return std::vector<double>(i->begin(), i->end());
  if (const auto* u = std::get_if<std::vector<uint64_t>>(&v->value))
    return std::vector<double>(u->begin(), u->end());
  return std::nullopt;
}

std::optional<std::vector<int64_t>> GgufFile::get_int_array(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (const auto* i = std::get_if<std::vector<int64_t>>(&v->value)) return *i;
  if (const auto* u = std::get_if<std::vector<uint64_t>>(&v->value)) {
    std::vector<int64_t> out;
    out.reserve(u->size());
    for (uint64_t x : *u) {
      if (x > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
      out.push_back(static_cast<int64_t>(x));
    }
    return out;
  }
  return std::nullopt;
}

GgufValue gguf_u32(int64_t v) {
  GgufValue g;
  g.type = GgufValueType::kU32;
  g.value = static_cast<uint64_t>(v);
  return g;
}

GgufValue gguf_bool(bool v) {
  GgufValue g;
  g.type = GgufValueType::kBool;
  g.value = v;
  return g;
}

GgufValue gguf_string(std::string v) {
  GgufValue g;
  g.type = GgufValueType::kString;
  g.value = std::move(v);
  return g;
}

GgufValue gguf_string_array(const std::vector<std::string>& v) { return gguf_string_array(StringTable(v)); }

GgufValue gguf_string_array(StringTable v) {
  GgufValue g;
  g.type = GgufValueType::kArray;
  g.array_type = GgufValueType::kString;
  g.value = std::move(v);
  return g;
}

GgufValue gguf_f32_array(const std::vector<float>& v) {
  GgufValue g;
  g.type = GgufValueType::kArray;
  g.array_type = GgufValueType::kF32;
  g.value = std::vector<double>(v.begin(), v.end());
  return g;
}

GgufValue gguf_i32_array(const std::vector<int32_t>& v) {
  GgufValue g;
  g.type = GgufValueType::kArray;
  g.array_type = GgufValueType::kI32;
  g.value = std::vector<int64_t>(v.begin(), v.end());
  return g;
}

}  // namespace llmpack
