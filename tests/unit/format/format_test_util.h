// Helpers for the format tests: a raw little-endian byte builder (independent
// of GgufWriter, so damaged files can be built field by field) and a
// per-test temporary directory.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

namespace llmpack::testing {

class RawBytes {
 public:
  template <typename T>
  RawBytes& put(T v) {
    const size_t at = bytes_.size();
    bytes_.resize(at + sizeof(T));
    std::memcpy(bytes_.data() + at, &v, sizeof(T));
    return *this;
  }
  RawBytes& u8(uint8_t v) { return put(v); }
  RawBytes& u32(uint32_t v) { return put(v); }
  RawBytes& i32(int32_t v) { return put(v); }
  RawBytes& u64(uint64_t v) { return put(v); }
  RawBytes& f32(float v) { return put(v); }
  // A GGUF string: u64 length then the bytes.
  RawBytes& str(std::string_view s) {
    u64(s.size());
    bytes_.insert(bytes_.end(), s.begin(), s.end());
    return *this;
  }
  RawBytes& zeros(size_t n) {
    bytes_.resize(bytes_.size() + n, 0);
    return *this;
  }
  RawBytes& pad_to(size_t alignment) {
    while (bytes_.size() % alignment != 0) bytes_.push_back(0);
    return *this;
  }
  size_t size() const { return bytes_.size(); }
  std::vector<uint8_t>& bytes() { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
};

inline std::vector<uint8_t> read_file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A fresh directory removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() /
            ("llmpack_format_" + std::string(info ? info->name() : "x") + "_" +
             std::to_string(::getpid()));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace llmpack::testing

namespace llmpack::testing {

// EXPECT_TRUE(HasText(status.message(), "expected words")) with both shown on failure.
inline ::testing::AssertionResult HasText(const std::string& haystack, std::string_view needle) {
  if (haystack.find(needle) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << haystack << "\"\n  does not contain \""
                                       << needle << "\"";
}

}  // namespace llmpack::testing
