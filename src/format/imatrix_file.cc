// Reading and writing importance matrices in llama.cpp's two forms
// (imatrix_file.h has the layouts). Both readers check every count, length
// and value against the file before use: a damaged or hostile file gives an
// error saying what was expected and what was found.
#include "format/imatrix_file.h"

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <utility>

#include "format/byte_cursor.h"
#include "format/gguf.h"
#include "format/mapped_file.h"

namespace llmpack {
namespace {

constexpr std::string_view kSum2Suffix = ".in_sum2";
constexpr std::string_view kCountsSuffix = ".counts";
constexpr const char* kTypeKey = "general.type";
constexpr const char* kDatasetsKey = "imatrix.datasets";
constexpr const char* kChunkCountKey = "imatrix.chunk_count";
constexpr const char* kChunkSizeKey = "imatrix.chunk_size";

// 'name' (built by appends: GCC 12 warns a false -Wrestrict on "'" + std::string(s)).
std::string quoted_text(std::string_view s) {
  std::string q(1, '\'');
  q.append(s).push_back('\'');
  return q;
}

// Sums of squares must be finite and not negative; "" when they all are.
std::string bad_value(const std::vector<float>& values) {
  for (size_t j = 0; j < values.size(); ++j)
    if (!std::isfinite(values[j]) || values[j] < 0)
      return "value " + std::to_string(j) + " is " + std::to_string(values[j]) +
             " (expected a finite sum of squares >= 0)";
  return "";
}

// ---- GGUF form ----

// An optional u32 key as a count: absent is 0, any other type an error.
Status read_count_key(const GgufFile& g, const char* key, int64_t* out) {
  *out = 0;
  const GgufValue* v = g.find(key);
  if (!v) return ok_status();
  const auto n = g.get_uint(key);
  if (!n || *n > std::numeric_limits<uint32_t>::max())
    return error_status("imatrix: key '" + std::string(key) + "' is a " + gguf_value_type(*v) +
                        ", expected a u32 count");
  *out = static_cast<int64_t>(*n);
  return ok_status();
}

Status read_gguf_header(const GgufFile& g, ImportanceMatrix* m) {
  const GgufValue* type = g.find(kTypeKey);
  const auto type_name = g.get_string(kTypeKey);
  if (!type) return error_status("imatrix: GGUF file has no 'general.type' key (expected \"imatrix\")");
  if (!type_name) return error_status("imatrix: 'general.type' is a " + gguf_value_type(*type) + ", expected a string");
  if (*type_name != "imatrix")
    return error_status("imatrix: GGUF file's general.type is \"" + *type_name + "\", expected \"imatrix\"");
  if (const GgufValue* datasets = g.find(kDatasetsKey)) {
    const StringTable* names = g.get_string_array(kDatasetsKey);
    if (!names)
      return error_status("imatrix: key 'imatrix.datasets' is a " + gguf_value_type(*datasets) +
                          ", expected an array of strings");
    m->datasets = names->to_vector();
  }
  LLMPACK_RETURN_IF_ERROR(read_count_key(g, kChunkCountKey, &m->chunk_count));
  return read_count_key(g, kChunkSizeKey, &m->chunk_size);
}

// Checks that `t` is F32 with ne[0] == cols (any cols when 0) and one matrix:
// ne[1..] all 1. More than one row is a mixture-of-experts entry.
Status check_one_matrix(const GgufTensorInfo& t, int64_t cols) {
  if (t.ne.empty() || t.ne[0] < 1)
    return error_status("imatrix: tensor " + quoted_text(t.name) + " has no elements");
  if (t.dtype != DType::kF32)
    return error_status("imatrix: tensor " + quoted_text(t.name) + " is " + std::string(dtype_name(t.dtype)) +
                        ", expected f32");
  for (size_t d = 1; d < t.ne.size(); ++d) {
    if (t.ne[d] == 1) continue;
    if (d == 1)
      return error_status("imatrix: tensor " + quoted_text(t.name) + " holds " + std::to_string(t.ne[1]) +
                          " matrices (a mixture-of-experts entry), which is not supported: expected 1");
    return error_status("imatrix: tensor " + quoted_text(t.name) + " has dimension " + std::to_string(d) + " of " +
                        std::to_string(t.ne[d]) + ", expected 1");
  }
  if (cols > 0 && t.ne[0] != cols)
    return error_status("imatrix: tensor " + quoted_text(t.name) + " has " + std::to_string(t.ne[0]) +
                        " elements, expected " + std::to_string(cols));
  return ok_status();
}

std::vector<float> tensor_floats(const GgufTensorInfo& t) {
  std::vector<float> v(static_cast<size_t>(t.ne[0]));
  std::memcpy(v.data(), t.data, v.size() * sizeof(float));  // the reader checked the bytes are in the file
  return v;
}

// One weight's entry from NAME.in_sum2 and NAME.counts.
Result<ImatrixEntry> read_gguf_entry(const GgufFile& g, const GgufTensorInfo& sum2, std::string_view name) {
  LLMPACK_RETURN_IF_ERROR(check_one_matrix(sum2, 0));
  const std::string counts_name = std::string(name) + std::string(kCountsSuffix);
  const GgufTensorInfo* counts = g.find_tensor(counts_name);
  if (!counts)
    return error_status("imatrix: tensor " + quoted_text(counts_name) + " is missing (expected beside " +
                        quoted_text(sum2.name) + ")");
  LLMPACK_RETURN_IF_ERROR(check_one_matrix(*counts, 1));
  ImatrixEntry e;
  e.sum_sq = tensor_floats(sum2);
  if (const std::string why = bad_value(e.sum_sq); !why.empty())
    return error_status("imatrix: tensor " + quoted_text(sum2.name) + ": " + why);
  const float count = tensor_floats(*counts)[0];
  if (!std::isfinite(count) || count < 0)
    return error_status("imatrix: tensor " + quoted_text(counts_name) + " holds " + std::to_string(count) +
                        ", expected a finite count >= 0");
  e.count = count;
  return e;
}

Result<ImportanceMatrix> read_gguf_form(const std::unique_ptr<GgufFile>& g) {
  ImportanceMatrix m;
  LLMPACK_RETURN_IF_ERROR(read_gguf_header(*g, &m));
  for (const GgufTensorInfo& t : g->tensors()) {
    if (!t.name.ends_with(kSum2Suffix)) continue;  // NAME.counts is read with its in_sum2; NAME.in_sum unused
    const std::string_view name = std::string_view(t.name).substr(0, t.name.size() - kSum2Suffix.size());
    LLMPACK_ASSIGN_OR_RETURN(ImatrixEntry e, read_gguf_entry(*g, t, name));
    m.entries.emplace(std::string(name), std::move(e));
  }
  if (m.entries.empty() && !g->tensors().empty())
    return error_status("imatrix: GGUF file has " + std::to_string(g->tensors().size()) +
                        " tensors but none named NAME.in_sum2");
  return m;
}

// ---- legacy form ----

constexpr std::string_view kLegacy = "imatrix (legacy .dat)";

// Reads an i32 that must be >= `least`.
Status read_i32(ByteCursor& c, std::string_view what, int32_t least, int32_t* out) {
  LLMPACK_RETURN_IF_ERROR(c.read(out, what));
  if (*out < least)
    return error_status(std::string(kLegacy) + ": " + std::string(what) + " at byte " +
                        std::to_string(c.pos() - 4) + " is " + std::to_string(*out) + ", expected at least " +
                        std::to_string(least));
  return ok_status();
}

// An i32 length, then that many bytes; the length must fit what is left.
Status read_name(ByteCursor& c, std::string_view what, int32_t least, std::string* out) {
  int32_t len = 0;
  LLMPACK_RETURN_IF_ERROR(read_i32(c, std::string(what) + " length", least, &len));
  std::span<const uint8_t> bytes;
  LLMPACK_RETURN_IF_ERROR(c.take(static_cast<uint64_t>(len), &bytes, what));
  out->assign(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  return ok_status();
}

// One entry: name, ncall, nval, nval floats (the mean squares times ncall,
// which is the sum of squares when ncall counts the rows).
Status read_legacy_entry(ByteCursor& c, int32_t index, ImportanceMatrix* m) {
  const std::string what = "entry " + std::to_string(index);
  std::string name;
  LLMPACK_RETURN_IF_ERROR(read_name(c, what + " name", 1, &name));
  int32_t ncall = 0, nval = 0;
  LLMPACK_RETURN_IF_ERROR(read_i32(c, what + " (" + name + ") ncall", 0, &ncall));
  LLMPACK_RETURN_IF_ERROR(read_i32(c, what + " (" + name + ") nval", 1, &nval));
  std::span<const uint8_t> bytes;
  LLMPACK_RETURN_IF_ERROR(c.take(uint64_t{4} * static_cast<uint32_t>(nval), &bytes,
                                 what + " (" + name + ")'s " + std::to_string(nval) + " values"));
  ImatrixEntry e;
  e.sum_sq.resize(static_cast<size_t>(nval));
  std::memcpy(e.sum_sq.data(), bytes.data(), bytes.size());
  if (const std::string why = bad_value(e.sum_sq); !why.empty())
    return error_status(std::string(kLegacy) + ": " + what + " (" + name + "): " + why);
  e.count = ncall;
  if (!m->entries.emplace(name, std::move(e)).second)
    return error_status(std::string(kLegacy) + ": " + what + " repeats the name " + quoted_text(name));
  return ok_status();
}

Result<ImportanceMatrix> read_legacy_form(std::span<const uint8_t> bytes) {
  ByteCursor c(bytes, kLegacy);
  int32_t n_entries = 0;
  LLMPACK_RETURN_IF_ERROR(read_i32(c, "entry count", 0, &n_entries));
  // An entry takes at least 4 (name length) + 1 (name) + 4 (ncall) + 4 (nval) + 4 (a value) bytes.
  if (static_cast<uint64_t>(n_entries) * 17 > c.remaining())
    return error_status(std::string(kLegacy) + ": the file claims " + std::to_string(n_entries) +
                        " entries, but only " + std::to_string(c.remaining()) +
                        " bytes follow (at least 17 per entry: truncated, or not an imatrix file)");
  ImportanceMatrix m;
  for (int32_t i = 0; i < n_entries; ++i) LLMPACK_RETURN_IF_ERROR(read_legacy_entry(c, i, &m));
  if (c.remaining() == 0) return m;  // files of older llama-imatrix versions end here
  int32_t chunks = 0;
  LLMPACK_RETURN_IF_ERROR(read_i32(c, "chunk count", 0, &chunks));
  m.chunk_count = chunks;
  std::string dataset;
  LLMPACK_RETURN_IF_ERROR(read_name(c, "dataset name", 0, &dataset));
  if (!dataset.empty()) m.datasets.push_back(std::move(dataset));
  if (c.remaining() != 0)
    return error_status(std::string(kLegacy) + ": " + std::to_string(c.remaining()) +
                        " bytes follow the dataset name at byte " + std::to_string(c.pos()) +
                        " (expected the end of the file)");
  return m;
}

// ---- writing ----

Status check_for_writing(const ImportanceMatrix& m) {
  for (const auto& [name, e] : m.entries) {
    if (name.empty()) return error_status("imatrix: an entry has no name");
    if (e.sum_sq.empty()) return error_status("imatrix: entry " + quoted_text(name) + " has no values");
    if (const std::string why = bad_value(e.sum_sq); !why.empty())
      return error_status("imatrix: entry " + quoted_text(name) + ": " + why);
    if (!std::isfinite(e.count) || e.count < 0)
      return error_status("imatrix: entry " + quoted_text(name) + " has a count of " + std::to_string(e.count) +
                          " (expected a finite count >= 0)");
  }
  return ok_status();
}

std::span<const uint8_t> float_bytes(const float* v, size_t n) {
  return {reinterpret_cast<const uint8_t*>(v), n * sizeof(float)};
}

Status write_gguf_form(const std::string& path, const ImportanceMatrix& m) {
  if (m.chunk_count < 0 || m.chunk_count > std::numeric_limits<uint32_t>::max() || m.chunk_size < 0 ||
      m.chunk_size > std::numeric_limits<uint32_t>::max())
    return error_status("imatrix: chunk count " + std::to_string(m.chunk_count) + " or chunk size " +
                        std::to_string(m.chunk_size) + " does not fit a u32");
  GgufWriter w;
  w.set_string(kTypeKey, "imatrix");
  w.set_string_array(kDatasetsKey, m.datasets);
  w.set_u32(kChunkCountKey, static_cast<uint32_t>(m.chunk_count));
  w.set_u32(kChunkSizeKey, static_cast<uint32_t>(m.chunk_size));
  // ggml writes [n, 1] as one dimension (trailing ones dropped), so do we:
  // NAME.in_sum2 [n_cols], NAME.counts [1]. The writer borrows the bytes.
  std::vector<float> counts;
  counts.reserve(m.entries.size());
  for (const auto& [name, e] : m.entries) {
    counts.push_back(static_cast<float>(e.count));
    const auto n = static_cast<int64_t>(e.sum_sq.size());
    LLMPACK_RETURN_IF_ERROR(w.add_tensor(name + std::string(kSum2Suffix), DType::kF32, {n},
                                         float_bytes(e.sum_sq.data(), e.sum_sq.size())));
    LLMPACK_RETURN_IF_ERROR(
        w.add_tensor(name + std::string(kCountsSuffix), DType::kF32, {1}, float_bytes(&counts.back(), 1)));
  }
  return w.write(path);
}

template <typename T>
void put_le(std::vector<uint8_t>& out, T v) {
  const size_t at = out.size();
  out.resize(at + sizeof(T));
  std::memcpy(out.data() + at, &v, sizeof(T));
}

Status put_i32(std::vector<uint8_t>& out, int64_t v, const std::string& what) {
  if (v < 0 || v > std::numeric_limits<int32_t>::max())
    return error_status("imatrix: " + what + " of " + std::to_string(v) + " does not fit the legacy form's i32");
  put_le<int32_t>(out, static_cast<int32_t>(v));
  return ok_status();
}

// ncall is the count rounded; the values are the mean squares times ncall
// (the sums themselves when the count is whole), as llama-quantize divides them back.
Result<std::vector<uint8_t>> legacy_bytes(const ImportanceMatrix& m) {
  std::vector<uint8_t> out;
  LLMPACK_RETURN_IF_ERROR(put_i32(out, static_cast<int64_t>(m.entries.size()), "entry count"));
  for (const auto& [name, e] : m.entries) {
    LLMPACK_RETURN_IF_ERROR(put_i32(out, static_cast<int64_t>(name.size()), "name length"));
    out.insert(out.end(), name.begin(), name.end());
    if (e.count > std::numeric_limits<int32_t>::max())
      return error_status("imatrix: entry " + quoted_text(name) + "'s count of " + std::to_string(e.count) +
                          " does not fit the legacy form's i32");
    const int64_t ncall = std::llround(e.count);
    LLMPACK_RETURN_IF_ERROR(put_i32(out, ncall, "ncall"));
    LLMPACK_RETURN_IF_ERROR(put_i32(out, static_cast<int64_t>(e.sum_sq.size()), "value count"));
    for (const float s : e.sum_sq) {
      const bool whole = static_cast<double>(ncall) == e.count || e.count == 0;
      put_le<float>(out, whole ? s : static_cast<float>(s / e.count * static_cast<double>(ncall)));
    }
  }
  LLMPACK_RETURN_IF_ERROR(put_i32(out, m.chunk_count, "chunk count"));
  // The form holds one dataset name: the first.
  const std::string dataset = m.datasets.empty() ? std::string() : m.datasets.front();
  LLMPACK_RETURN_IF_ERROR(put_i32(out, static_cast<int64_t>(dataset.size()), "dataset name length"));
  out.insert(out.end(), dataset.begin(), dataset.end());
  return out;
}

// Through "<path>.tmp-<pid>" and a rename, as GgufWriter writes, so a failed
// write leaves no half-written file at `path`.
Status write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  const std::string tmp = path + ".tmp-" + std::to_string(getpid());
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) return error_status("cannot write " + path + ": " + std::strerror(errno));
  const bool written = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  const int saved_errno = errno;
  if (std::fclose(f) != 0 || !written) {
    std::remove(tmp.c_str());
    return error_status("cannot write " + path + ": " + std::strerror(written ? errno : saved_errno));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int rename_errno = errno;
    std::remove(tmp.c_str());
    return error_status("cannot write " + path + ": " + std::strerror(rename_errno));
  }
  return ok_status();
}

}  // namespace

std::vector<float> ImatrixEntry::mean_sq() const {
  std::vector<float> mean(sum_sq.size(), 1.0f);
  if (count > 0)
    for (size_t j = 0; j < sum_sq.size(); ++j) mean[j] = static_cast<float>(sum_sq[j] / count);
  return mean;
}

const ImatrixEntry* ImportanceMatrix::find(std::string_view weight_name) const {
  const auto it = entries.find(weight_name);
  return it == entries.end() ? nullptr : &it->second;
}

Status merge_imatrix(ImportanceMatrix* into, const ImportanceMatrix& from) {
  for (const auto& [name, e] : from.entries) {
    const auto it = into->entries.find(name);
    if (it != into->entries.end() && it->second.sum_sq.size() != e.sum_sq.size())
      return error_status("imatrix entry '" + name + "' has " + std::to_string(e.sum_sq.size()) +
                          " columns in one file and " + std::to_string(it->second.sum_sq.size()) +
                          " in another: the files are of different models");
  }
  for (const auto& [name, e] : from.entries) {
    auto [it, added] = into->entries.emplace(name, e);
    if (added) continue;
    for (size_t j = 0; j < e.sum_sq.size(); ++j) it->second.sum_sq[j] += e.sum_sq[j];
    it->second.count += e.count;
  }
  into->datasets.insert(into->datasets.end(), from.datasets.begin(), from.datasets.end());
  into->chunk_count += from.chunk_count;
  if (into->chunk_size == 0) into->chunk_size = from.chunk_size;
  return ok_status();
}

namespace {

bool is_gguf(std::span<const uint8_t> bytes) { return bytes.size() >= 4 && std::memcmp(bytes.data(), "GGUF", 4) == 0; }

}  // namespace

Result<ImportanceMatrix> read_imatrix(const std::string& path) {
  LLMPACK_ASSIGN_OR_RETURN(const std::unique_ptr<MappedFile> file, MappedFile::open(path));
  const std::span<const uint8_t> bytes = file->bytes();
  Result<ImportanceMatrix> m = error_status("unread");
  if (is_gguf(bytes)) {
    auto g = GgufFile::open(path);
    m = g.ok() ? read_gguf_form(*g) : Result<ImportanceMatrix>(g.status());
  } else {
    m = read_legacy_form(bytes);
  }
  if (!m.ok()) return m.status().with_context("reading " + path);
  return m;
}

Result<ImportanceMatrix> read_imatrix_bytes(std::span<const uint8_t> bytes) {
  if (!is_gguf(bytes)) return read_legacy_form(bytes);
  LLMPACK_ASSIGN_OR_RETURN(const std::unique_ptr<GgufFile> g, GgufFile::from_bytes(bytes));
  return read_gguf_form(g);
}

Status write_imatrix(const std::string& path, const ImportanceMatrix& imatrix, bool legacy) {
  LLMPACK_RETURN_IF_ERROR(check_for_writing(imatrix).with_context("writing " + path));
  if (!legacy) return write_gguf_form(path, imatrix).with_context("writing " + path);
  LLMPACK_ASSIGN_OR_RETURN(const std::vector<uint8_t> bytes, legacy_bytes(imatrix).with_context("writing " + path));
  return write_file(path, bytes);
}

}  // namespace llmpack
