// Zip archives as torch.save writes them (PyTorch .pt/.pth): a central
// directory at the end, entries stored (method 0, read zero-copy from the
// mapping) or deflated (method 8, inflated with zlib into owned memory).
// Every offset and size is checked against the file; zip64 archives (over
// 4 GiB) are refused with a clear error.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "format/mapped_file.h"

namespace llmpack {

struct ZipEntry {
  std::string name;
  uint16_t method = 0;          // 0 stored, 8 deflate
  uint64_t compressed_size = 0;
  uint64_t size = 0;            // uncompressed
  uint64_t data_offset = 0;     // start of the entry's (compressed) bytes in the file
};

class ZipArchive {
 public:
  static Result<std::unique_ptr<ZipArchive>> open(const std::string& path);
  static Result<std::unique_ptr<ZipArchive>> from_file(std::unique_ptr<MappedFile> file);

  const std::vector<ZipEntry>& entries() const { return entries_; }
  const ZipEntry* find(std::string_view name) const;
  // The entry's bytes: a view into the mapping when stored, else inflated
  // once and kept (valid as long as the archive).
  Result<std::span<const uint8_t>> read(const ZipEntry& entry);
  const std::string& path() const { return file_->path(); }

 private:
  ZipArchive() = default;
  Status parse();
  Status parse_central_entry(std::span<const uint8_t> bytes, uint64_t* pos);

  std::unique_ptr<MappedFile> file_;
  std::vector<ZipEntry> entries_;
  std::map<std::string, size_t, std::less<>> index_;
  std::map<std::string, std::vector<uint8_t>, std::less<>> inflated_;
};

}  // namespace llmpack
