// Helpers for the export tests: scratch folders, greedy decoding from a
// package, the stories260K golden ids, and a tiny zip writer for hand-made
// PyTorch checkpoints.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "common/fixtures.h"
#include "engine/llama_program.h"
#include "export/exporter.h"

namespace llmpack::testing {

// A folder removed at the end of the test.
class ScratchDir {
 public:
  ScratchDir() {
    path_ = std::filesystem::temp_directory_path() /
            ("llmpack-export-" + std::to_string(getpid()) + "-" + std::to_string(counter()++));
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }
  size_t n_files() const {
    return static_cast<size_t>(std::distance(std::filesystem::directory_iterator(path_), {}));
  }

 private:
  static int& counter() {
    static int c = 0;
    return c;
  }
  std::filesystem::path path_;
};

inline void write_file(const std::string& path, std::span<const uint8_t> bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}
inline void write_text(const std::string& path, const std::string& text) {
  write_file(path, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

inline int64_t argmax(std::span<const float> v) { return std::max_element(v.begin(), v.end()) - v.begin(); }

// Greedy from BOS at position 0 (run.c semantics: stop on BOS).
inline std::vector<int64_t> greedy(Program& program, int64_t steps) {
  std::vector<int64_t> out;
  int64_t token = 1;
  for (int64_t pos = 0; pos < steps; ++pos) {
    auto logits = program.forward(std::span<const int64_t>(&token, 1), pos);
    EXPECT_TRUE(logits.ok()) << logits.status().message();
    if (!logits.ok()) break;
    token = argmax(logits->last());
    if (token == 1) break;
    out.push_back(token);
  }
  return out;
}

// Logits after BOS at position 0.
inline std::vector<float> first_logits(Program& program) {
  int64_t token = 1;
  auto logits = program.forward(std::span<const int64_t>(&token, 1), 0);
  EXPECT_TRUE(logits.ok()) << logits.status().message();
  if (!logits.ok()) return {};
  return {logits->last().begin(), logits->last().end()};
}

inline float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  float m = a.size() == b.size() ? 0.0f : 1e30f;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

inline std::vector<int64_t> golden_ids(size_t n) {
  std::ifstream in(fixture_path("llama2c/stories260K_greedy_256.json"));
  auto j = nlohmann::json::parse(in);
  auto ids = j["generated_ids"].get<std::vector<int64_t>>();
  ids.resize(std::min(n, ids.size()));
  return ids;
}

inline Result<LoadedPackage> load(const std::string& path) { return load_package(path, "", ProgramOptions{}); }

// A zip archive with stored entries (what torch.save writes).
class ZipBuilder {
 public:
  void add(const std::string& name, std::span<const uint8_t> data) {
    Entry e{name, static_cast<uint32_t>(out_.size()), static_cast<uint32_t>(data.size())};
    put32(0x04034b50); put16(20); put16(0); put16(0); put16(0); put16(0); put32(0);
    put32(e.size); put32(e.size); put16(static_cast<uint16_t>(name.size())); put16(0);
    out_.insert(out_.end(), name.begin(), name.end());
    out_.insert(out_.end(), data.begin(), data.end());
    entries_.push_back(e);
  }
  void add(const std::string& name, const std::string& data) {
    add(name, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(data.data()), data.size()));
  }
  std::vector<uint8_t> finish() {
    const uint32_t cd = static_cast<uint32_t>(out_.size());
    for (const auto& e : entries_) {
      put32(0x02014b50); put16(20); put16(20); put16(0); put16(0); put16(0); put16(0); put32(0);
      put32(e.size); put32(e.size); put16(static_cast<uint16_t>(e.name.size())); put16(0); put16(0);
      put16(0); put16(0); put32(0); put32(e.offset);
      out_.insert(out_.end(), e.name.begin(), e.name.end());
    }
    const uint32_t cd_size = static_cast<uint32_t>(out_.size()) - cd;
    put32(0x06054b50); put16(0); put16(0); put16(static_cast<uint16_t>(entries_.size()));
    put16(static_cast<uint16_t>(entries_.size())); put32(cd_size); put32(cd); put16(0);
    return out_;
  }

 private:
  struct Entry {
    std::string name;
    uint32_t offset, size;
  };
  void put16(uint16_t v) { out_.push_back(v & 0xFF); out_.push_back(v >> 8); }
  void put32(uint32_t v) { put16(v & 0xFFFF); put16(v >> 16); }
  std::vector<uint8_t> out_;
  std::vector<Entry> entries_;
};

}  // namespace llmpack::testing
