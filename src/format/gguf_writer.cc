// GGUF v3 writer: metadata in insertion order, tensor infos, then tensor data
// each starting at a multiple of the alignment (offsets relative to the data
// section, which itself starts at a multiple of the alignment).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <string>
#include <utility>

#include "format/gguf.h"
#include "format/gguf_internal.h"

namespace llmpack {
namespace {

using namespace gguf_detail;

template <typename T>
void put(std::vector<uint8_t>& out, T v) {
  const size_t at = out.size();
  out.resize(at + sizeof(T));
  std::memcpy(out.data() + at, &v, sizeof(T));
}

void put_string(std::vector<uint8_t>& out, std::string_view s) {
  put<uint64_t>(out, s.size());
  out.insert(out.end(), s.begin(), s.end());
}

Status type_mismatch(const std::string& key, const GgufValue& v) {
  return Status::error("GGUF writer: metadata key '" + key + "' is declared " +
                       std::string(value_type_name(v.type)) +
                       (v.type == GgufValueType::kArray
                            ? " of " + std::string(value_type_name(v.array_type))
                            : std::string()) +
                       " but holds a value of another kind");
}

// Appends x as a T when it fits T's range.
template <typename T, typename X>
bool put_in_range(std::vector<uint8_t>& out, X x) {
  if (!std::in_range<T>(x)) return false;
  put<T>(out, static_cast<T>(x));
  return true;
}

// Writes integer x as the GGUF integer type t, refusing values that do not fit.
template <typename X>  // uint64_t or int64_t
Status put_int(std::vector<uint8_t>& out, const std::string& key, GgufValueType t, X x) {
  bool ok = false;
  switch (t) {
    case GgufValueType::kU8: ok = put_in_range<uint8_t>(out, x); break;
    case GgufValueType::kU16: ok = put_in_range<uint16_t>(out, x); break;
    case GgufValueType::kU32: ok = put_in_range<uint32_t>(out, x); break;
    case GgufValueType::kU64: ok = put_in_range<uint64_t>(out, x); break;
    case GgufValueType::kI8: ok = put_in_range<int8_t>(out, x); break;
    case GgufValueType::kI16: ok = put_in_range<int16_t>(out, x); break;
    case GgufValueType::kI32: ok = put_in_range<int32_t>(out, x); break;
    case GgufValueType::kI64: ok = put_in_range<int64_t>(out, x); break;
    default: break;
  }
  if (!ok)
    return Status::error("GGUF writer: metadata key '" + key + "': value does not fit " +
                         std::string(value_type_name(t)));
  return ok_status();
}

void put_float(std::vector<uint8_t>& out, GgufValueType t, double x) {
  if (t == GgufValueType::kF32) put<float>(out, static_cast<float>(x));
  else put<double>(out, x);
}

Status put_scalar(std::vector<uint8_t>& out, const std::string& key, const GgufValue& v) {
  const auto* u = std::get_if<uint64_t>(&v.value);
  const auto* i = std::get_if<int64_t>(&v.value);
  const auto* d = std::get_if<double>(&v.value);
  if (is_unsigned_int(v.type) || is_signed_int(v.type)) {
    if (u) return put_int(out, key, v.type, *u);
    if (i) return put_int(out, key, v.type, *i);
    return type_mismatch(key, v);
  }
  if (is_float(v.type)) {
    if (d) put_float(out, v.type, *d);
    else if (u) put_float(out, v.type, static_cast<double>(*u));
    else if (i) put_float(out, v.type, static_cast<double>(*i));
    else return type_mismatch(key, v);
    return ok_status();
  }
  if (v.type == GgufValueType::kBool) {
    const auto* b = std::get_if<bool>(&v.value);
    if (!b) return type_mismatch(key, v);
    put<uint8_t>(out, *b ? 1 : 0);
    return ok_status();
  }
  if (v.type == GgufValueType::kString) {
    const auto* s = std::get_if<std::string>(&v.value);
    if (!s) return type_mismatch(key, v);
    put_string(out, *s);
    return ok_status();
  }
  return type_mismatch(key, v);
}

Status put_array(std::vector<uint8_t>& out, const std::string& key, const GgufValue& v) {
  const GgufValueType et = v.array_type;
  if (!is_known_type(static_cast<uint32_t>(et)) || et == GgufValueType::kArray)
    return Status::error("GGUF writer: metadata key '" + key +
                         "': arrays of arrays are not supported");
  put<uint32_t>(out, static_cast<uint32_t>(et));
  const auto* strings = std::get_if<StringTable>(&v.value);
  if (strings && et == GgufValueType::kString) {
    put<uint64_t>(out, strings->size());
    for (std::string_view x : *strings) put_string(out, x);
    return ok_status();
  }
  if (const auto* b = std::get_if<std::vector<bool>>(&v.value); b && et == GgufValueType::kBool) {
    put<uint64_t>(out, b->size());
    for (bool x : *b) put<uint8_t>(out, x ? 1 : 0);
    return ok_status();
  }
  const bool numeric = is_unsigned_int(et) || is_signed_int(et) || is_float(et);
  auto emit_all = [&](const auto& vec) -> Status {
    put<uint64_t>(out, vec.size());
    for (const auto& x : vec) {
      if (is_float(et)) put_float(out, et, static_cast<double>(x));
      else if constexpr (std::is_integral_v<std::decay_t<decltype(x)>>)
        LLMPACK_RETURN_IF_ERROR(put_int(out, key, et, x));
      else return type_mismatch(key, v);
    }
    return ok_status();
  };
  if (numeric) {
    if (const auto* a = std::get_if<std::vector<int64_t>>(&v.value)) return emit_all(*a);
    if (const auto* a = std::get_if<std::vector<uint64_t>>(&v.value)) return emit_all(*a);
    if (const auto* a = std::get_if<std::vector<double>>(&v.value)) return emit_all(*a);
  }
  return type_mismatch(key, v);
}

Status put_value(std::vector<uint8_t>& out, const std::string& key, const GgufValue& v) {
  put<uint32_t>(out, static_cast<uint32_t>(v.type));
  if (v.type == GgufValueType::kArray) return put_array(out, key, v);
  return put_scalar(out, key, v);
}

GgufValue scalar(GgufValueType t, decltype(GgufValue::value) x) {
  GgufValue v;
  v.type = t;
  v.value = std::move(x);
  return v;
}

GgufValue array(GgufValueType et, decltype(GgufValue::value) x) {
  GgufValue v;
  v.type = GgufValueType::kArray;
  v.array_type = et;
  v.value = std::move(x);
  return v;
}

// Writes all of `bytes` to fd, retrying short writes and EINTR.
bool write_all(int fd, std::span<const uint8_t> bytes) {
  const uint8_t* p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    left -= static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

void GgufWriter::set(std::string key, GgufValue value) {
  if (key == kAlignmentKey) {
    const auto* u = std::get_if<uint64_t>(&value.value);
    const auto* i = std::get_if<int64_t>(&value.value);
    uint64_t a = u ? *u : (i && *i > 0 ? static_cast<uint64_t>(*i) : 0);
    alignment_ = a <= UINT32_MAX ? static_cast<uint32_t>(a) : 0;  // 0 is refused by write()
  }
  for (auto& kv : metadata_) {
    if (kv.first == key) {
      kv.second = std::move(value);
      return;
    }
  }
  metadata_.emplace_back(std::move(key), std::move(value));
}

void GgufWriter::set_u32(std::string key, uint32_t v) {
  set(std::move(key), scalar(GgufValueType::kU32, uint64_t{v}));
}
void GgufWriter::set_i32(std::string key, int32_t v) {
  set(std::move(key), scalar(GgufValueType::kI32, int64_t{v}));
}
void GgufWriter::set_u64(std::string key, uint64_t v) {
  set(std::move(key), scalar(GgufValueType::kU64, v));
}
void GgufWriter::set_f32(std::string key, float v) {
  set(std::move(key), scalar(GgufValueType::kF32, double{v}));
}
void GgufWriter::set_bool(std::string key, bool v) {
  set(std::move(key), scalar(GgufValueType::kBool, v));
}
void GgufWriter::set_string(std::string key, std::string v) {
  set(std::move(key), scalar(GgufValueType::kString, std::move(v)));
}
void GgufWriter::set_string_array(std::string key, const std::vector<std::string>& v) {
  set(std::move(key), gguf_string_array(v));
}
void GgufWriter::set_f32_array(std::string key, std::vector<float> v) {
  set(std::move(key), array(GgufValueType::kF32, std::vector<double>(v.begin(), v.end())));
}
void GgufWriter::set_i32_array(std::string key, std::vector<int32_t> v) {
  set(std::move(key), array(GgufValueType::kI32, std::vector<int64_t>(v.begin(), v.end())));
}
void GgufWriter::set_alignment(uint32_t alignment) {
  set_u32(std::string(kAlignmentKey), alignment);
}

Result<uint64_t> GgufWriter::check_new_tensor(const std::string& name, DType dtype,
                                              const std::vector<int64_t>& ne) const {
  const std::string what = "GGUF writer: tensor '" + name + "'";
  if (name.empty()) return error_status("GGUF writer: a tensor needs a name");
  for (const auto& t : tensors_)
    if (t.name == name) return error_status(what + " added twice");
  const auto info = dtype_info(dtype);
  if (!info) return error_status(what + ": unknown dtype " + std::to_string(uint32_t(dtype)));
  if (dtype_is_memory_only(dtype))
    return error_status(what + " has the memory-only layout " + std::string(info->name) +
                        ", which no GGUF holds (write the plain type's blocks)");
  if (ne.empty() || ne.size() > kMaxDims)
    return error_status(what + " has " + std::to_string(ne.size()) + " dimensions (expected 1 to 4)");
  int64_t n = 1;
  for (int64_t d : ne) {
    if (d <= 0) return error_status(what + " has a dimension of " + std::to_string(d));
    if (__builtin_mul_overflow(n, d, &n)) return error_status(what + ": element count overflows");
  }
  if (ne[0] % info->block_elems != 0)
    return error_status(what + ": row length " + std::to_string(ne[0]) + " is not a multiple of the " +
                        std::string(info->name) + " block size " + std::to_string(info->block_elems));
  int64_t expected = 0;
  if (__builtin_mul_overflow(n / info->block_elems, info->block_bytes, &expected))
    return error_status(what + ": byte size overflows");
  return static_cast<uint64_t>(expected);
}

Status GgufWriter::add_tensor(std::string name, DType dtype, std::vector<int64_t> ne,
                              std::span<const uint8_t> bytes) {
  LLMPACK_ASSIGN_OR_RETURN(const uint64_t expected, check_new_tensor(name, dtype, ne));
  if (bytes.size() != expected)
    return Status::error("GGUF writer: tensor '" + name + "': " + std::to_string(bytes.size()) +
                         " bytes given, " + std::to_string(expected) + " expected for " +
                         std::string(dtype_name(dtype)));
  tensors_.push_back({std::move(name), dtype, std::move(ne), expected, bytes, nullptr});
  return ok_status();
}

Status GgufWriter::add_tensor(std::string name, DType dtype, std::vector<int64_t> ne, Producer produce) {
  if (!produce) return Status::error("GGUF writer: tensor '" + name + "' has no producer");
  LLMPACK_ASSIGN_OR_RETURN(const uint64_t expected, check_new_tensor(name, dtype, ne));
  tensors_.push_back({std::move(name), dtype, std::move(ne), expected, {}, std::move(produce)});
  return ok_status();
}

Status GgufWriter::build_head(std::vector<uint8_t>* head, std::vector<uint64_t>* offsets) const {
  if (!is_power_of_two(alignment_))
    return Status::error("GGUF writer: alignment " + std::to_string(alignment_) +
                         " is not a nonzero power of two");
  const uint64_t align = alignment_;
  put<uint32_t>(*head, kMagic);
  put<uint32_t>(*head, kVersion);
  put<uint64_t>(*head, tensors_.size());
  put<uint64_t>(*head, metadata_.size());
  for (const auto& [key, value] : metadata_) {
    put_string(*head, key);
    LLMPACK_RETURN_IF_ERROR(put_value(*head, key, value));
  }
  uint64_t offset = 0;
  for (const auto& t : tensors_) {
    put_string(*head, t.name);
    put<uint32_t>(*head, static_cast<uint32_t>(t.ne.size()));
    for (int64_t d : t.ne) put<uint64_t>(*head, static_cast<uint64_t>(d));
    put<uint32_t>(*head, static_cast<uint32_t>(t.dtype));
    put<uint64_t>(*head, offset);
    offsets->push_back(offset);
    if (!align_up(offset + t.n_bytes, align, &offset))
      return Status::error("GGUF writer: data section size overflows");
  }
  offsets->push_back(offset);  // the end of the data section
  uint64_t data_start = 0;
  if (!align_up(head->size(), align, &data_start)) return Status::error("GGUF writer: overflow");
  head->resize(data_start, 0);
  return ok_status();
}

Status GgufWriter::emit(const Sink& sink, const Progress& progress) const {
  std::vector<uint8_t> head;
  std::vector<uint64_t> offsets;
  LLMPACK_RETURN_IF_ERROR(build_head(&head, &offsets));
  LLMPACK_RETURN_IF_ERROR(sink(head));
  uint64_t written = head.size();
  const std::vector<uint8_t> zeros(alignment_, 0);
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const auto& t = tensors_[i];
    std::span<const uint8_t> bytes = t.bytes;
    if (t.produce) {
      auto made = t.produce();
      if (!made.ok()) return made.status();
      bytes = *made;
      if (bytes.size() != t.n_bytes)
        return Status::error("GGUF writer: tensor '" + t.name + "': its producer made " +
                             std::to_string(bytes.size()) + " bytes, " + std::to_string(t.n_bytes) +
                             " expected for " + std::string(dtype_name(t.dtype)));
    }
    LLMPACK_RETURN_IF_ERROR(sink(bytes));
    const uint64_t end = offsets[i] + t.n_bytes;
    LLMPACK_RETURN_IF_ERROR(sink(std::span(zeros).first(offsets[i + 1] - end)));
    written += offsets[i + 1] - offsets[i];
    if (progress) progress(i + 1, tensors_.size(), written);
  }
  return ok_status();
}

std::vector<uint8_t> GgufWriter::to_bytes() const {
  // The size first (from the header and the offsets, without producing any
  // tensor), so a file of gigabytes is allocated once at its exact size
  // instead of growing (and copying) geometrically.
  std::vector<uint8_t> head;
  std::vector<uint64_t> offsets;
  if (!build_head(&head, &offsets).ok()) return {};
  std::vector<uint8_t> out;
  out.reserve(static_cast<size_t>(head.size() + offsets.back()));
  Status s = emit(
      [&](std::span<const uint8_t> b) {
        out.insert(out.end(), b.begin(), b.end());
        return ok_status();
      },
      nullptr);
  if (!s.ok()) out.clear();
  return out;
}

Status GgufWriter::write(const std::string& path, const Progress& progress) const {
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return Status::error("GGUF writer: cannot create '" + tmp + "': " + std::strerror(errno));
  // The file goes out in whole 4 MiB pieces at 4 MiB-aligned offsets, not
  // one write per tensor: the page cache then holds it in 2 MiB folios, which
  // MappedFile's aligned MADV_HUGEPAGE mapping maps with 2 MiB entries. Written
  // a tensor at a time (from another file's mapping, at 32-byte-aligned
  // offsets), a 1B package came out in small folios, and every later run's
  // first forward paid a 4 KiB mapping per page: time to first token 0.39-0.54 s
  // instead of 0.09 s on our VMs (docs/PERFORMANCE.md section 20).
  constexpr size_t kPiece = size_t{4} << 20;
  std::vector<uint8_t> piece;
  piece.reserve(kPiece);
  const auto flush = [&]() -> Status {
    if (!write_all(fd, piece)) {
      return Status::error("GGUF writer: writing '" + tmp + "': " + std::strerror(errno));
    }
    piece.clear();
    return ok_status();
  };
  Status s = emit(
      [&](std::span<const uint8_t> b) -> Status {
        while (!b.empty()) {
          const size_t take = std::min(b.size(), kPiece - piece.size());
          piece.insert(piece.end(), b.begin(), b.begin() + static_cast<std::ptrdiff_t>(take));
          b = b.subspan(take);
          if (piece.size() == kPiece) LLMPACK_RETURN_IF_ERROR(flush());
        }
        return ok_status();
      },
      progress);
  if (s.ok() && !piece.empty()) s = flush();
  if (s.ok() && ::fsync(fd) != 0)
    s = Status::error("GGUF writer: flushing '" + tmp + "': " + std::strerror(errno));
  if (::close(fd) != 0 && s.ok())
    s = Status::error("GGUF writer: closing '" + tmp + "': " + std::strerror(errno));
  if (s.ok() && ::rename(tmp.c_str(), path.c_str()) != 0)
    s = Status::error("GGUF writer: renaming '" + tmp + "' to '" + path + "': " +
                      std::strerror(errno));
  if (!s.ok()) ::unlink(tmp.c_str());
  return s;
}

}  // namespace llmpack
