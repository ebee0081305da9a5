// GGUF v3 files: a validating, mmap'd, zero-copy reader and a writer.
// Every offset, size, count, string length and dimension read from a file is
// checked against the file before use; a damaged or hostile file gives an
// error naming what was expected and what was found, never a crash.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "core/string_table.h"
#include "format/mapped_file.h"

namespace llmpack {

enum class GgufValueType : uint32_t {
  kU8 = 0, kI8 = 1, kU16 = 2, kI16 = 3, kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7,
  kString = 8, kArray = 9, kU64 = 10, kI64 = 11, kF64 = 12,
};

// One metadata value. Arrays keep their element type; integers of any width
// are held as int64/uint64, floats as double, string arrays as a StringTable
// (a vocabulary's 400k strings in two allocations).
struct GgufValue {
  GgufValueType type = GgufValueType::kU32;
  GgufValueType array_type = GgufValueType::kU32;  // element type when type == kArray
  std::variant<uint64_t, int64_t, double, bool, std::string,
               StringTable, std::vector<int64_t>, std::vector<uint64_t>,
               std::vector<double>, std::vector<bool>>
      value;
};

// A value's type for messages: "f32", "string", "array of u32".
std::string gguf_value_type(const GgufValue& v);

struct GgufTensorInfo {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> ne;   // ne[0] is the row length (fastest-varying)
  uint64_t offset = 0;       // relative to the data section
  uint64_t n_bytes = 0;
  const uint8_t* data = nullptr;  // points into the mapping
  int64_t n_elements() const;
};

class GgufFile {
 public:
  static Result<std::unique_ptr<GgufFile>> open(const std::string& path);
  // Parses a buffer (tests and fuzzing); the buffer is copied into the file.
  static Result<std::unique_ptr<GgufFile>> from_bytes(std::span<const uint8_t> bytes);
  // Adopts `bytes` without copying (in-memory models of gigabytes). After
  // parsing, `fill` (when given) is called once per tensor, in file order, with
  // that tensor's bytes writable: a synthetic model writes its weights in place
  // instead of holding a second copy. Tensors are read-only afterwards.
  using TensorFill = std::function<Status(const GgufTensorInfo&, std::span<uint8_t>)>;
  static Result<std::unique_ptr<GgufFile>> from_owned_bytes(std::vector<uint8_t> bytes,
                                                            const TensorFill& fill = nullptr);

  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  const std::string& path() const { return path_; }
  uint64_t file_size() const;

  const std::map<std::string, GgufValue, std::less<>>& metadata() const { return metadata_; }
  const GgufValue* find(std::string_view key) const;
  // Typed getters: nullopt when absent or of an incompatible type.
  std::optional<uint64_t> get_uint(std::string_view key) const;   // any non-negative integer
  std::optional<int64_t> get_int(std::string_view key) const;     // any integer that fits
  std::optional<double> get_float(std::string_view key) const;    // f32/f64 (or integer)
  std::optional<bool> get_bool(std::string_view key) const;
  std::optional<std::string> get_string(std::string_view key) const;
  const StringTable* get_string_array(std::string_view key) const;
  std::optional<std::vector<double>> get_float_array(std::string_view key) const;
  std::optional<std::vector<int64_t>> get_int_array(std::string_view key) const;

  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* find_tensor(std::string_view name) const;
  // Rewrites the named tensor's bytes in place, in this process only (the
  // file is never changed: MappedFile::writable), with rewrite(bytes), and
  // records `layout` as its type from then on (a memory-only layout, which
  // GgufWriter refuses to write). False, and nothing changed, where the
  // tensor is missing or its bytes cannot be made writable.
  bool rewrite_tensor(std::string_view name, DType layout, const std::function<void(uint8_t*)>& rewrite);

 private:
  GgufFile() = default;
  Status parse();

  std::string path_;
  std::unique_ptr<MappedFile> file_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  std::map<std::string, GgufValue, std::less<>> metadata_;
  std::vector<GgufTensorInfo> tensors_;
  std::map<std::string, size_t, std::less<>> tensor_index_;
};

// Metadata values of the common types, for code that assembles key/value
// lists before handing them to a GgufWriter.
GgufValue gguf_u32(int64_t v);
GgufValue gguf_bool(bool v);
GgufValue gguf_string(std::string v);
GgufValue gguf_string_array(const std::vector<std::string>& v);
GgufValue gguf_string_array(StringTable v);
GgufValue gguf_f32_array(const std::vector<float>& v);
GgufValue gguf_i32_array(const std::vector<int32_t>& v);

// Builds a GGUF v3 file. Tensor bytes are borrowed until write() returns, or
// made by a producer when write() reaches the tensor (so a converter holds one
// tensor at a time, not the whole file). write() goes to "<path>.tmp-<pid>" then renames, so a failed write never
// leaves a half-written file at `path`.
class GgufWriter {
 public:
  void set(std::string key, GgufValue value);
  void set_u32(std::string key, uint32_t v);
  void set_i32(std::string key, int32_t v);
  void set_u64(std::string key, uint64_t v);
  void set_f32(std::string key, float v);
  void set_bool(std::string key, bool v);
  void set_string(std::string key, std::string v);
  void set_string_array(std::string key, const std::vector<std::string>& v);
  void set_f32_array(std::string key, std::vector<float> v);
  void set_i32_array(std::string key, std::vector<int32_t> v);
  void set_alignment(uint32_t alignment);

  // ne[0] is the row length. bytes.size() must equal the type's size for ne.
  Status add_tensor(std::string name, DType dtype, std::vector<int64_t> ne,
                    std::span<const uint8_t> bytes);
  // A tensor whose bytes `produce` makes when they are written: called once
  // per write() or to_bytes(), in tensor order; what it returns must stay valid
  // until the next producer is called, and must be the size the shape gives
  // (checked: a mismatch fails the write). An error from it fails the write.
  using Producer = std::function<Result<std::span<const uint8_t>>()>;
  Status add_tensor(std::string name, DType dtype, std::vector<int64_t> ne, Producer produce);

  // Called after each tensor is written with (tensors done, total, bytes written);
  // write() sends the bytes to the file in 4 MiB pieces, so the file may lag the
  // count by up to one piece until write() returns.
  using Progress = std::function<void(size_t, size_t, uint64_t)>;
  Status write(const std::string& path, const Progress& progress = nullptr) const;
  // Serialises into memory (tests); empty when the metadata cannot be encoded
  // (a value whose type field and contents disagree), which write() reports.
  std::vector<uint8_t> to_bytes() const;

 private:
  // Serialises the whole file into `sink` piece by piece; `progress` as in write().
  using Sink = std::function<Status(std::span<const uint8_t>)>;
  Status emit(const Sink& sink, const Progress& progress) const;

  struct PendingTensor {
    std::string name;
    DType dtype;
    std::vector<int64_t> ne;
    uint64_t n_bytes;
    std::span<const uint8_t> bytes;  // when `produce` is empty
    Producer produce;
  };
  // Checks a new tensor's name, type and shape; its byte size on success.
  Result<uint64_t> check_new_tensor(const std::string& name, DType dtype, const std::vector<int64_t>& ne) const;
  // The header (magic to tensor infos, padded to the data section) and each
  // tensor's offset in the data section.
  Status build_head(std::vector<uint8_t>* head, std::vector<uint64_t>* offsets) const;
  std::vector<std::pair<std::string, GgufValue>> metadata_;  // in insertion order
  std::vector<PendingTensor> tensors_;
  uint32_t alignment_ = 32;
};

}  // namespace llmpack
