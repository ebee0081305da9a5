// A bounds-checked little-endian reader over a byte span. Every read checks
// the remaining length first, so a truncated or hostile file yields an error
// naming what was being read, where, and where the file ends.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include "core/status.h"

namespace llmpack {

static_assert(std::endian::native == std::endian::little,
              "file formats are read by memcpy: little-endian hosts only");

class ByteCursor {
 public:
  // `format` prefixes every message ("GGUF").
  ByteCursor(std::span<const uint8_t> bytes, std::string_view format)
      : bytes_(bytes), format_(format) {}

  uint64_t pos() const { return pos_; }
  uint64_t size() const { return bytes_.size(); }
  uint64_t remaining() const { return bytes_.size() - pos_; }

  // Error for a read of `need` bytes that does not fit.
  Status truncated(std::string_view what, uint64_t need) const {
    return Status::error(std::string(format_) + ": file truncated: " + std::string(what) +
                         " at byte " + std::to_string(pos_) + " needs " + std::to_string(need) +
                         " bytes but the file ends at byte " + std::to_string(bytes_.size()));
  }

  template <typename T>
  Status read(T* out, std::string_view what) {
    static_assert(std::is_trivially_copyable_v<T>);
    if (remaining() < sizeof(T)) return truncated(what, sizeof(T));
    std::memcpy(out, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return ok_status();
  }

  // Returns to an earlier position (one this cursor has passed).
  void seek_back_to(uint64_t pos) {
    if (pos <= pos_) pos_ = pos;
  }

  // Borrows `n` bytes (valid as long as the underlying span).
  Status take(uint64_t n, std::span<const uint8_t>* out, std::string_view what) {
    if (remaining() < n) return truncated(what, n);
    *out = bytes_.subspan(static_cast<size_t>(pos_), static_cast<size_t>(n));
    pos_ += n;
    return ok_status();
  }

 private:
  std::span<const uint8_t> bytes_;
  std::string_view format_;
  uint64_t pos_ = 0;
};

}  // namespace llmpack
