// safetensors files: u64 LE header length N, N bytes of JSON
// {name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}},
// then the data (offsets relative to byte 8 + N). Every offset, shape and
// dtype is validated against the file; tensors are views into the mapping.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "format/mapped_file.h"

namespace llmpack {

enum class SafetensorsDType { kF32, kF16, kBF16 };
int64_t safetensors_dtype_size(SafetensorsDType t);

struct SafetensorsTensor {
  std::string name;
  SafetensorsDType dtype = SafetensorsDType::kF32;
  std::vector<int64_t> shape;        // row-major, outermost first
  std::span<const uint8_t> bytes;    // into the mapping
};

class SafetensorsFile {
 public:
  static Result<std::unique_ptr<SafetensorsFile>> open(const std::string& path);
  static Result<std::unique_ptr<SafetensorsFile>> from_file(std::unique_ptr<MappedFile> file);

  const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }
  const SafetensorsTensor* find(std::string_view name) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  SafetensorsFile() = default;
  Status parse();

  std::unique_ptr<MappedFile> file_;
  std::vector<SafetensorsTensor> tensors_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace llmpack
