// GGUF reader: header, metadata key/values, tensor infos, data section.
// Layout (little-endian): "GGUF", u32 version, u64 n_tensors, u64 n_kv,
// n_kv x {string key, u32 type, value}, n_tensors x {string name, u32 n_dims,
// u64 ne[n_dims], u32 ggml type, u64 offset}, padding to general.alignment,
// then the tensor data (offsets relative to the start of that section).
#include <limits>
#include <string>
#include <utility>

#include "format/byte_cursor.h"
#include "format/gguf.h"
#include "format/gguf_internal.h"

namespace llmpack {
namespace {

using namespace gguf_detail;

constexpr uint64_t kHeaderBytes = 4 + 4 + 8 + 8;
// Smallest encodings, used to refuse absurd counts before allocating:
// a KV is at least a key length (8), a 1-byte key, a type (4) and a u8 value;
// a tensor info at least name length (8), n_dims (4), one dim (8), type (4), offset (8).
constexpr uint64_t kMinKvBytes = 8 + 1 + 4 + 1;
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;
// Keys and tensor names longer than this are refused (real ones are < 100 bytes).
constexpr uint64_t kMaxNameBytes = 1 << 16;

std::string quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

class Parser {
 public:
  explicit Parser(std::span<const uint8_t> bytes) : cur_(bytes, "GGUF") {}

  // Borrows the next string's bytes when it is whole; false (nothing read)
  // otherwise, and read_string then says what is wrong. Reading a vocabulary's
  // 400k strings this way builds no per-element description.
  bool try_take_string(std::string_view* out) {
    const uint64_t start = cur_.pos();
    uint64_t len = 0;
    std::span<const uint8_t> s;
    if (cur_.read(&len, "").ok() && cur_.take(len, &s, "").ok()) {
      *out = std::string_view(reinterpret_cast<const char*>(s.data()), s.size());
      return true;
    }
    cur_.seek_back_to(start);
    return false;
  }

  // The bytes of the next `count` strings, as far as they are whole, without
  // moving: a table reserved with it is written once, not grown by doubling.
  uint64_t string_bytes_ahead(uint64_t count) {
    const uint64_t start = cur_.pos();
    uint64_t total = 0;
    std::string_view s;
    for (uint64_t i = 0; i < count && try_take_string(&s); ++i) total += s.size();
    cur_.seek_back_to(start);
    return total;
  }

  Status read_string(std::string* out, std::string_view what, uint64_t max_len) {
    uint64_t len = 0;
    if (cur_.remaining() < sizeof(len)) return cur_.truncated(std::string(what) + " length", sizeof(len));
    LLMPACK_RETURN_IF_ERROR(cur_.read(&len, what));
    if (len > cur_.remaining())
      return Status::error("GGUF: " + std::string(what) + " at byte " +
                           std::to_string(cur_.pos() - 8) + " has length " + std::to_string(len) +
                           " but only " + std::to_string(cur_.remaining()) +
                           " bytes remain in the file");
    if (len > max_len)
      return Status::error("GGUF: " + std::string(what) + " has length " + std::to_string(len) +
                           " (at most " + std::to_string(max_len) + " expected)");
    std::span<const uint8_t> s;
    LLMPACK_RETURN_IF_ERROR(cur_.take(len, &s, what));
    out->assign(reinterpret_cast<const char*>(s.data()), s.size());
    return ok_status();
  }

  Status read_scalar(GgufValueType t, GgufValue* v, const std::string& what);
  Status read_array(GgufValue* v, const std::string& what);
  Status read_value(GgufValueType t, GgufValue* v, const std::string& what);

  // One scalar stored in v->value as Stored (uint64_t, int64_t or double).
  template <typename Raw, typename Stored>
  Status read_as(GgufValue* v, const std::string& what) {
    Raw raw{};
    LLMPACK_RETURN_IF_ERROR(cur_.read(&raw, what));
    v->value = static_cast<Stored>(raw);
    return ok_status();
  }

  // `count` elements (already checked against the bytes left) as vector<Stored>.
  template <typename Raw, typename Stored>
  Status read_vector(uint64_t count, GgufValue* v, const std::string& what) {
    std::vector<Stored> out;
    out.reserve(static_cast<size_t>(count));
    for (uint64_t i = 0; i < count; ++i) {
      Raw raw{};
      LLMPACK_RETURN_IF_ERROR(cur_.read(&raw, what));
      out.push_back(static_cast<Stored>(raw));
    }
    v->value = std::move(out);
    return ok_status();
  }

  ByteCursor cur_;
};

Status Parser::read_scalar(GgufValueType t, GgufValue* v, const std::string& what) {
  switch (t) {
    case GgufValueType::kU8: return read_as<uint8_t, uint64_t>(v, what);
    case GgufValueType::kU16: return read_as<uint16_t, uint64_t>(v, what);
    case GgufValueType::kU32: return read_as<uint32_t, uint64_t>(v, what);
    case GgufValueType::kU64: return read_as<uint64_t, uint64_t>(v, what);
    case GgufValueType::kI8: return read_as<int8_t, int64_t>(v, what);
    case GgufValueType::kI16: return read_as<int16_t, int64_t>(v, what);
    case GgufValueType::kI32: return read_as<int32_t, int64_t>(v, what);
    case GgufValueType::kI64: return read_as<int64_t, int64_t>(v, what);
    case GgufValueType::kF32: return read_as<float, double>(v, what);
    case GgufValueType::kF64: return read_as<double, double>(v, what);
    case GgufValueType::kBool: {
      uint8_t x = 0;
      LLMPACK_RETURN_IF_ERROR(cur_.read(&x, what));
      if (x > 1)
        return Status::error("GGUF: " + what + ": bool value " + std::to_string(x) +
                             " (expected 0 or 1)");
      v->value = x == 1;
      break;
    }
    case GgufValueType::kString: {
      std::string s;
      LLMPACK_RETURN_IF_ERROR(read_string(&s, what, std::numeric_limits<uint64_t>::max()));
      v->value = std::move(s);
      break;
    }
    case GgufValueType::kArray:
      return Status::error("GGUF: internal: array passed to read_scalar");
  }
  return ok_status();
}

Status Parser::read_array(GgufValue* v, const std::string& what) {
  uint32_t raw_type = 0;
  LLMPACK_RETURN_IF_ERROR(cur_.read(&raw_type, what + " element type"));
  if (!is_known_type(raw_type))
    return Status::error("GGUF: " + what + ": unknown array element type " +
                         std::to_string(raw_type) + " (expected 0..12)");
  const auto et = static_cast<GgufValueType>(raw_type);
  if (et == GgufValueType::kArray)
    return Status::error("GGUF: " + what + ": nested arrays (array of arrays) are not supported");
  uint64_t count = 0;
  LLMPACK_RETURN_IF_ERROR(cur_.read(&count, what + " element count"));
  const uint64_t min_size = min_encoded_size(et);
  if (count > cur_.remaining() / min_size)
    return Status::error("GGUF: " + what + ": array of " + std::to_string(count) + " " +
                         std::string(value_type_name(et)) + " elements needs at least " +
                         (count > UINT64_MAX / min_size ? std::string("2^64")
                                                        : std::to_string(count * min_size)) +
                         " bytes but only " + std::to_string(cur_.remaining()) + " remain");
  v->type = GgufValueType::kArray;
  v->array_type = et;
  const std::string elem = what + " element";
  switch (et) {
    case GgufValueType::kU8: return read_vector<uint8_t, uint64_t>(count, v, elem);
    case GgufValueType::kU16: return read_vector<uint16_t, uint64_t>(count, v, elem);
    case GgufValueType::kU32: return read_vector<uint32_t, uint64_t>(count, v, elem);
    case GgufValueType::kU64: return read_vector<uint64_t, uint64_t>(count, v, elem);
    case GgufValueType::kI8: return read_vector<int8_t, int64_t>(count, v, elem);
    case GgufValueType::kI16: return read_vector<int16_t, int64_t>(count, v, elem);
    case GgufValueType::kI32: return read_vector<int32_t, int64_t>(count, v, elem);
    case GgufValueType::kI64: return read_vector<int64_t, int64_t>(count, v, elem);
    case GgufValueType::kF32: return read_vector<float, double>(count, v, elem);
    case GgufValueType::kF64: return read_vector<double, double>(count, v, elem);
    case GgufValueType::kBool: {
      std::vector<bool> a;
      a.reserve(static_cast<size_t>(count));
      for (uint64_t i = 0; i < count; ++i) {
        GgufValue b;
        LLMPACK_RETURN_IF_ERROR(read_scalar(GgufValueType::kBool, &b, elem));
        a.push_back(std::get<bool>(b.value));
      }
      v->value = std::move(a);
      break;
    }
    case GgufValueType::kString: {
      StringTable a;
      const uint64_t bytes = string_bytes_ahead(count);
      if (bytes > StringTable::kMaxBytes)
        return Status::error("GGUF: " + what + ": an array of strings of " + std::to_string(bytes) +
                             " bytes in all; at most " + std::to_string(StringTable::kMaxBytes) + " supported");
      a.reserve(static_cast<size_t>(count), bytes);
      for (uint64_t i = 0; i < count; ++i) {
        std::string_view sv;
        if (try_take_string(&sv)) {
          a.push_back(sv);
          continue;
        }
        std::string s;  // not whole: read it again for the error
        LLMPACK_RETURN_IF_ERROR(read_string(&s, elem + " " + std::to_string(i),
                                            std::numeric_limits<uint64_t>::max()));
        a.push_back(std::move(s));
      }
      v->value = std::move(a);
      break;
    }
    case GgufValueType::kArray: break;  // refused above
  }
  return ok_status();
}

Status Parser::read_value(GgufValueType t, GgufValue* v, const std::string& what) {
  v->type = t;
  if (t == GgufValueType::kArray) return read_array(v, what);
  return read_scalar(t, v, what);
}

// Multiplies the dims, refusing overflow of int64.
Status checked_elements(const GgufTensorInfo& t, int64_t* out) {
  int64_t n = 1;
  for (int64_t d : t.ne) {
    if (__builtin_mul_overflow(n, d, &n))
      return Status::error("GGUF: tensor " + quoted(t.name) +
                           ": the product of its dimensions overflows 64 bits");
  }
  *out = n;
  return ok_status();
}

}  // namespace

int64_t GgufTensorInfo::n_elements() const {
  int64_t n = 1;
  for (int64_t d : ne) n *= d;  // validated not to overflow when read
  return n;
}

uint64_t GgufFile::file_size() const { return file_ ? file_->size() : 0; }

Result<std::unique_ptr<GgufFile>> GgufFile::open(const std::string& path) {
  auto mapped = MappedFile::open(path);
  if (!mapped.ok()) return mapped.status();
  std::unique_ptr<GgufFile> f(new GgufFile());
  f->path_ = path;
  f->file_ = std::move(mapped).value();
  Status s = f->parse();
  if (!s.ok()) return s.with_context("reading '" + path + "'");
  return f;
}

Result<std::unique_ptr<GgufFile>> GgufFile::from_bytes(std::span<const uint8_t> bytes) {
  std::unique_ptr<GgufFile> f(new GgufFile());
  f->file_ = MappedFile::from_bytes(bytes);
  f->path_ = f->file_->path();
  LLMPACK_RETURN_IF_ERROR(f->parse());
  return f;
}

Result<std::unique_ptr<GgufFile>> GgufFile::from_owned_bytes(std::vector<uint8_t> bytes, const TensorFill& fill) {
  std::unique_ptr<GgufFile> f(new GgufFile());
  f->file_ = MappedFile::from_owned(std::move(bytes));
  f->path_ = f->file_->path();
  LLMPACK_RETURN_IF_ERROR(f->parse());
  if (!fill) return f;
  for (const GgufTensorInfo& t : f->tensors_) {
    // The bytes are the vector adopted above (not a read-only mapping), so
    // writing through them is well defined; parse() checked each range.
    std::span<uint8_t> writable(const_cast<uint8_t*>(t.data), static_cast<size_t>(t.n_bytes));
    LLMPACK_RETURN_IF_ERROR(fill(t, writable));
  }
  return f;
}

namespace {

Status parse_header(ByteCursor& cur, uint32_t* version, uint64_t* n_tensors, uint64_t* n_kv) {
  if (cur.size() < kHeaderBytes)
    return Status::error("GGUF: file is " + std::to_string(cur.size()) +
                         " bytes, smaller than the 24-byte header");
  uint32_t magic = 0;
  LLMPACK_RETURN_IF_ERROR(cur.read(&magic, "magic"));
  if (magic != kMagic) {
    std::string found;
    for (int i = 0; i < 4; ++i) {
      const char c = static_cast<char>((magic >> (8 * i)) & 0xff);
      static constexpr char kHex[] = "0123456789abcdef";
      const auto u = static_cast<uint8_t>(c);
      found += (u >= 32 && u < 127) ? std::string(1, c)
                                    : std::string("\\x") + kHex[u >> 4] + kHex[u & 15];
    }
    return Status::error("GGUF: bad magic \"" + found + "\" (expected \"GGUF\"): not a GGUF file");
  }
  LLMPACK_RETURN_IF_ERROR(cur.read(version, "version"));
  if (*version != 2 && *version != 3) {
    std::string hint;
    if (*version == 1) hint = " (version 1 used 32-bit counts and is obsolete)";
    if ((*version & 0xffff) == 0 && *version != 0) hint = " (a big-endian file?)";
    return Status::error("GGUF: unsupported version " + std::to_string(*version) +
                         " (expected 3, or 2)" + hint);
  }
  LLMPACK_RETURN_IF_ERROR(cur.read(n_tensors, "tensor count"));
  LLMPACK_RETURN_IF_ERROR(cur.read(n_kv, "metadata count"));
  if (*n_kv > cur.remaining() / kMinKvBytes)
    return Status::error("GGUF: metadata count " + std::to_string(*n_kv) +
                         " is impossible: the file has only " + std::to_string(cur.remaining()) +
                         " bytes after the header");
  if (*n_tensors > cur.remaining() / kMinTensorInfoBytes)
    return Status::error("GGUF: tensor count " + std::to_string(*n_tensors) +
                         " is impossible: the file has only " + std::to_string(cur.remaining()) +
                         " bytes after the header");
  return ok_status();
}

Status read_alignment(const GgufValue& v, uint64_t* alignment) {
  uint64_t a = 0;
  if (const auto* u = std::get_if<uint64_t>(&v.value); u && is_unsigned_int(v.type)) {
    a = *u;
  } else if (const auto* i = std::get_if<int64_t>(&v.value); i && is_signed_int(v.type) && *i > 0) {
    a = static_cast<uint64_t>(*i);
  } else {
    return Status::error("GGUF: general.alignment must be a positive integer, found a " +
                         std::string(value_type_name(v.type)));
  }
  if (!is_power_of_two(a) || a > (uint64_t{1} << 30))
    return Status::error("GGUF: general.alignment is " + std::to_string(a) +
                         " (expected a nonzero power of two, at most 2^30)");
  *alignment = a;
  return ok_status();
}

}  // namespace

namespace {

// Reads one tensor info: name, n_dims, ne[], type, offset. The name's
// uniqueness and the data range are checked by the caller.
Status read_tensor_info(Parser& p, uint64_t index, uint64_t alignment, GgufTensorInfo* t) {
  LLMPACK_RETURN_IF_ERROR(
      p.read_string(&t->name, "name of tensor " + std::to_string(index), kMaxNameBytes));
  if (t->name.empty())
    return Status::error("GGUF: tensor " + std::to_string(index) + " has an empty name");
  const std::string what = "tensor " + quoted(t->name);
  uint32_t n_dims = 0;
  LLMPACK_RETURN_IF_ERROR(p.cur_.read(&n_dims, what + " n_dims"));
  if (n_dims < 1 || n_dims > kMaxDims)
    return Status::error("GGUF: " + what + " has " + std::to_string(n_dims) +
                         " dimensions (expected 1 to 4)");
  for (uint32_t d = 0; d < n_dims; ++d) {
    uint64_t dim = 0;
    LLMPACK_RETURN_IF_ERROR(p.cur_.read(&dim, what + " dimension " + std::to_string(d)));
    if (dim == 0 || dim > static_cast<uint64_t>(INT64_MAX))
      return Status::error("GGUF: " + what + " dimension " + std::to_string(d) + " is " +
                           std::to_string(dim) + " (expected 1 to 2^63-1)");
    t->ne.push_back(static_cast<int64_t>(dim));
  }
  int64_t n_elem = 0;
  LLMPACK_RETURN_IF_ERROR(checked_elements(*t, &n_elem));
  uint32_t raw_dtype = 0;
  LLMPACK_RETURN_IF_ERROR(p.cur_.read(&raw_dtype, what + " type"));
  const auto info = dtype_info(raw_dtype);
  if (!info || dtype_is_memory_only(static_cast<DType>(raw_dtype)))
    return Status::error("GGUF: " + what + " has unknown tensor type " + std::to_string(raw_dtype));
  t->dtype = static_cast<DType>(raw_dtype);
  if (t->ne[0] % info->block_elems != 0)
    return Status::error("GGUF: " + what + " of type " + std::string(info->name) +
                         " has rows of " + std::to_string(t->ne[0]) +
                         " elements, not a multiple of its block size " +
                         std::to_string(info->block_elems));
  int64_t bytes = 0;  // f32/f64/i64 have more bytes than elements: check again
  if (__builtin_mul_overflow(n_elem / info->block_elems, info->block_bytes, &bytes))
    return Status::error("GGUF: " + what + " byte size overflows 64 bits");
  t->n_bytes = static_cast<uint64_t>(bytes);
  LLMPACK_RETURN_IF_ERROR(p.cur_.read(&t->offset, what + " offset"));
  if (t->offset % alignment != 0)
    return Status::error("GGUF: " + what + " offset " + std::to_string(t->offset) +
                         " is not a multiple of the alignment " + std::to_string(alignment));
  return ok_status();
}

using Metadata = std::map<std::string, GgufValue, std::less<>>;

Status read_metadata(Parser& p, uint64_t n_kv, Metadata* metadata) {
  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string key;
    LLMPACK_RETURN_IF_ERROR(
        p.read_string(&key, "metadata key " + std::to_string(i), kMaxNameBytes));
    if (key.empty())
      return Status::error("GGUF: metadata key " + std::to_string(i) + " is empty");
    uint32_t raw_type = 0;
    LLMPACK_RETURN_IF_ERROR(p.cur_.read(&raw_type, "type of metadata key " + quoted(key)));
    if (!is_known_type(raw_type))
      return Status::error("GGUF: metadata key " + quoted(key) + " has unknown value type " +
                           std::to_string(raw_type) + " (expected 0..12)");
    GgufValue v;
    LLMPACK_RETURN_IF_ERROR(
        p.read_value(static_cast<GgufValueType>(raw_type), &v, "metadata key " + quoted(key)));
    if (metadata->count(key))
      return Status::error("GGUF: duplicate metadata key " + quoted(key));
    metadata->emplace(std::move(key), std::move(v));
  }
  return ok_status();
}

}  // namespace

Status GgufFile::parse() {
  Parser p(file_->bytes());
  uint64_t n_tensors = 0, n_kv = 0;
  LLMPACK_RETURN_IF_ERROR(parse_header(p.cur_, &version_, &n_tensors, &n_kv));
  LLMPACK_RETURN_IF_ERROR(read_metadata(p, n_kv, &metadata_));
  if (const GgufValue* a = find(kAlignmentKey))
    LLMPACK_RETURN_IF_ERROR(read_alignment(*a, &alignment_));

  tensors_.reserve(static_cast<size_t>(n_tensors));
  for (uint64_t i = 0; i < n_tensors; ++i) {
    GgufTensorInfo t;
    LLMPACK_RETURN_IF_ERROR(read_tensor_info(p, i, alignment_, &t));
    if (tensor_index_.count(t.name))
      return Status::error("GGUF: duplicate tensor name " + quoted(t.name));
    tensor_index_.emplace(t.name, tensors_.size());
    tensors_.push_back(std::move(t));
  }

  // Tensor data: [data_start + offset, + n_bytes) must lie inside the file.
  uint64_t data_start = 0;
  if (!align_up(p.cur_.pos(), alignment_, &data_start))
    return Status::error("GGUF: data section offset overflows");
  const uint64_t size = file_->size();
  const uint64_t avail = data_start <= size ? size - data_start : 0;
  for (GgufTensorInfo& t : tensors_) {
    if (data_start > size || t.offset > avail || t.n_bytes > avail - t.offset)
      return Status::error("GGUF: tensor " + quoted(t.name) + " data [offset " +
                           std::to_string(t.offset) + ", " + std::to_string(t.n_bytes) +
                           " bytes] extends past the end of the file (" + std::to_string(size) +
                           " bytes, data section at " + std::to_string(data_start) + ")");
    t.data = file_->data() + data_start + t.offset;
  }
  return ok_status();
}

}  // namespace llmpack
