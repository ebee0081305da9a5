// A minimal GGUF reader for the kernel tests (test_kernels links only the
// kernels layer, not format/): header, metadata skipped by type, tensor
// infos, data offset. Returns nullopt on anything unexpected.
#pragma once

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace llmpack::kernels::testing {

struct MiniTensor {
  uint32_t type = 0;
  std::vector<int64_t> ne;
  const uint8_t* data = nullptr;
};

class MiniGguf {
 public:
  bool load(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) return false;
    bytes_.assign(std::istreambuf_iterator<char>(f), {});
    return parse();
  }
  const MiniTensor* find(const std::string& name) const {
    auto it = tensors_.find(name);
    return it == tensors_.end() ? nullptr : &it->second;
  }

 private:
  template <typename T>
  bool read(T* v) {
    if (pos_ + sizeof(T) > bytes_.size()) return false;
    std::memcpy(v, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool read_string(std::string* s) {
    uint64_t n;
    if (!read(&n) || n > bytes_.size() - pos_) return false;
    s->assign(reinterpret_cast<const char*>(bytes_.data() + pos_), n);
    pos_ += n;
    return true;
  }
  bool skip_value(uint32_t type, std::string* as_string, uint64_t* as_uint) {
    static const int kSizes[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    if (type > 12) return false;
    if (type == 8) {
      std::string s;
      if (!read_string(&s)) return false;
      if (as_string) *as_string = s;
      return true;
    }
    if (type == 9) {
      uint32_t et;
      uint64_t n;
      if (!read(&et) || !read(&n)) return false;
      for (uint64_t i = 0; i < n; ++i)
        if (!skip_value(et, nullptr, nullptr)) return false;
      return true;
    }
    if (pos_ + kSizes[type] > bytes_.size()) return false;
    if (as_uint && type == 4) std::memcpy(as_uint, bytes_.data() + pos_, 4);
    pos_ += kSizes[type];
    return true;
  }
  bool parse() {
    uint32_t magic, version;
    uint64_t n_tensors, n_kv;
    if (!read(&magic) || std::memcmp(&magic, "GGUF", 4) != 0) return false;
    if (!read(&version) || !read(&n_tensors) || !read(&n_kv)) return false;
    uint64_t alignment = 32;
    for (uint64_t i = 0; i < n_kv; ++i) {
      std::string key;
      uint32_t type;
      uint64_t u = 0;
      if (!read_string(&key) || !read(&type) || !skip_value(type, nullptr, &u)) return false;
      if (key == "general.alignment" && u) alignment = u;
    }
    std::vector<std::pair<std::string, uint64_t>> offsets;
    for (uint64_t i = 0; i < n_tensors; ++i) {
      std::string name;
      uint32_t n_dims, type;
      MiniTensor t;
      uint64_t off;
      if (!read_string(&name) || !read(&n_dims) || n_dims > 4) return false;
      for (uint32_t d = 0; d < n_dims; ++d) {
        uint64_t v;
        if (!read(&v)) return false;
        t.ne.push_back(static_cast<int64_t>(v));
      }
      if (!read(&type) || !read(&off)) return false;
      t.type = type;
      tensors_[name] = t;
      offsets.emplace_back(name, off);
    }
    const uint64_t data_start = (pos_ + alignment - 1) / alignment * alignment;
    for (auto& [name, off] : offsets) {
      if (data_start + off > bytes_.size()) return false;
      tensors_[name].data = bytes_.data() + data_start + off;
    }
    return true;
  }

  std::vector<uint8_t> bytes_;
  size_t pos_ = 0;
  std::map<std::string, MiniTensor> tensors_;
};

}  // namespace llmpack::kernels::testing
