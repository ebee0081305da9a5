// StringTable: a list of strings kept as one buffer of bytes and the end of
// each string in it. A vocabulary is 100k-400k short strings; as a
// std::vector<std::string> each takes a 32-byte object (and a heap block past
// 15 bytes), 13 MB for Llama 3's tokens and merges, all of it fresh pages to
// fault in at load. Here the same lists take their bytes plus 8 per string,
// in two allocations.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

namespace llmpack {

class StringTable {
 public:
  class const_iterator {
   public:
    using iterator_category = std::random_access_iterator_tag;
    using value_type = std::string_view;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = std::string_view;

    const_iterator() = default;
    const_iterator(const StringTable* table, size_t i) : table_(table), i_(i) {}
    std::string_view operator*() const { return (*table_)[i_]; }
    std::string_view operator[](difference_type n) const { return (*table_)[i_ + n]; }
    const_iterator& operator++() { ++i_; return *this; }
    const_iterator operator++(int) { const_iterator old = *this; ++i_; return old; }
    const_iterator& operator--() { --i_; return *this; }
    const_iterator operator--(int) { const_iterator old = *this; --i_; return old; }
    const_iterator& operator+=(difference_type n) { i_ += n; return *this; }
    const_iterator& operator-=(difference_type n) { i_ -= n; return *this; }
    friend const_iterator operator+(const_iterator it, difference_type n) { return it += n; }
    friend const_iterator operator+(difference_type n, const_iterator it) { return it += n; }
    friend const_iterator operator-(const_iterator it, difference_type n) { return it -= n; }
    friend difference_type operator-(const_iterator a, const_iterator b) {
      return static_cast<difference_type>(a.i_) - static_cast<difference_type>(b.i_);
    }
    friend bool operator==(const_iterator a, const_iterator b) { return a.i_ == b.i_; }
    friend auto operator<=>(const_iterator a, const_iterator b) { return a.i_ <=> b.i_; }

   private:
    const StringTable* table_ = nullptr;
    size_t i_ = 0;
  };
  using iterator = const_iterator;
  using value_type = std::string_view;
  using size_type = size_t;

  StringTable() = default;
  StringTable(std::initializer_list<std::string_view> strings) {
    for (std::string_view s : strings) push_back(s);
  }
  explicit StringTable(const std::vector<std::string>& strings) {
    size_t bytes = 0;
    for (const std::string& s : strings) bytes += s.size();
    reserve(strings.size(), bytes);
    for (const std::string& s : strings) push_back(s);
  }

  size_t size() const { return ends_.size(); }
  bool empty() const { return ends_.empty(); }
  size_t total_bytes() const { return bytes_.size(); }
  std::string_view operator[](size_t i) const {
    const size_t begin = i == 0 ? 0 : ends_[i - 1];
    return std::string_view(bytes_.data() + begin, ends_[i] - begin);
  }
  std::string_view back() const { return (*this)[size() - 1]; }
  const_iterator begin() const { return const_iterator(this, 0); }
  const_iterator end() const { return const_iterator(this, size()); }

  void reserve(size_t n_strings, size_t n_bytes) {
    ends_.reserve(n_strings);
    bytes_.reserve(n_bytes);
  }
  void push_back(std::string_view s) {
    bytes_.append(s.data(), s.size());
    ends_.push_back(bytes_.size());
  }
  std::vector<std::string> to_vector() const { return std::vector<std::string>(begin(), end()); }

  friend bool operator==(const StringTable& a, const StringTable& b) {
    return a.ends_ == b.ends_ && a.bytes_ == b.bytes_;
  }

 private:
  std::string bytes_;        // every string, back to back
  std::vector<size_t> ends_;  // [size()] where each string ends in bytes_
};

}  // namespace llmpack
