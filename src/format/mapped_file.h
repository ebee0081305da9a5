// A read-only memory mapping of a whole file (zero-copy weights).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"

namespace llmpack {

class MappedFile {
 public:
  // Errors name the path and the system's reason ("No such file or directory").
  static Result<std::unique_ptr<MappedFile>> open(const std::string& path);
  // Owns a copy of `bytes` (tests, fuzzing, in-memory models).
  static std::unique_ptr<MappedFile> from_bytes(std::span<const uint8_t> bytes);
  // Takes `bytes` over without copying.
  static std::unique_ptr<MappedFile> from_owned(std::vector<uint8_t> bytes);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  const uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // Lets the caller rewrite [p, p + n) in place (a loader regrouping a
  // tensor's blocks): the pages of a mapped file turn into private copies as
  // they are written, so the file itself never changes and the rewritten
  // bytes are in memory once; owned bytes change in place. Returns null
  // where the range is not in the view or the system refuses. seal() makes a
  // mapped range read-only again.
  uint8_t* writable(const uint8_t* p, uint64_t n);
  void seal(const uint8_t* p, uint64_t n);

  // Drops this process's resident copies of the whole pages inside `bytes`
  // where they belong to a live file mapping that was never made writable
  // (touched again, they come back from the page cache or the disk), and does
  // nothing for any other memory. The exporter calls it after a tensor is
  // written, so converting a source of gigabytes does not keep every page of
  // it in the process's resident set.
  static void release_pages(std::span<const uint8_t> bytes);

 private:
  MappedFile() = default;
  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
  void* mapping_ = nullptr;  // non-null when mmap'd
  bool made_writable_ = false;  // some page may be a private copy
  std::vector<uint8_t> owned_;
  std::string path_;
};

}  // namespace llmpack
