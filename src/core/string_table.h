// StringTable: a list of strings kept as one buffer of bytes and the end of
// each string in it. A vocabulary is 100k-400k short strings; as a
// std::vector<std::string> each takes a 32-byte object (and a heap block past
// 15 bytes), 13 MB for Llama 3's tokens and merges, all of it fresh pages to
// fault in at load. Here the same lists take their bytes plus 4 per string,
// in two allocations (so a table holds at most kMaxBytes bytes in all).
//
// Copies share the storage until one of them is changed (copy on write): a
// tokenizer takes its vocabulary from a GGUF file's table without a second
// 2 MB of fresh pages. A table is not safe to change while another thread
// copies it (as with any non-const use of an object).
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "core/zero_pages.h"

namespace llmpack {

class StringTable {
 public:
  static constexpr size_t kMaxBytes = UINT32_MAX;
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

  size_t size() const { return data_ ? data_->ends.size() : 0; }
  bool empty() const { return size() == 0; }
  size_t total_bytes() const { return data_ ? data_->bytes.size() : 0; }
  std::string_view operator[](size_t i) const {
    const Data& d = *data_;
    const size_t begin = i == 0 ? 0 : d.ends[i - 1];
    return std::string_view(d.bytes.data() + begin, d.ends[i] - begin);
  }
  std::string_view back() const { return (*this)[size() - 1]; }
  const_iterator begin() const { return const_iterator(this, 0); }
  const_iterator end() const { return const_iterator(this, size()); }

  // Room for n_strings strings of n_bytes in all; the pages are mapped in
  // at once (populate_for_writing), as the caller is about to fill them.
  void reserve(size_t n_strings, size_t n_bytes) {
    Data& d = own();
    const size_t old_ends = d.ends.capacity(), old_bytes = d.bytes.capacity();
    d.ends.reserve(n_strings);
    d.bytes.reserve(n_bytes);
    if (d.ends.capacity() != old_ends) populate_for_writing(d.ends.data(), d.ends.capacity() * sizeof(uint32_t));
    if (d.bytes.capacity() != old_bytes) populate_for_writing(d.bytes.data(), d.bytes.capacity());
  }
  // Throws std::length_error past kMaxBytes in all (readers of untrusted
  // files check the total first and report it as an error).
  void push_back(std::string_view s) {
    Data& d = own();
    if (s.size() > kMaxBytes - d.bytes.size())
      throw std::length_error("StringTable: more than 4 GiB of strings");
    d.bytes.append(s.data(), s.size());
    d.ends.push_back(static_cast<uint32_t>(d.bytes.size()));
  }
  std::vector<std::string> to_vector() const { return std::vector<std::string>(begin(), end()); }
  // Whether this table and `other` hold the same storage (a copy not changed since).
  bool shares_storage_with(const StringTable& other) const { return data_ && data_ == other.data_; }

  friend bool operator==(const StringTable& a, const StringTable& b) {
    if (a.size() != b.size()) return false;
    if (a.empty() || a.data_ == b.data_) return true;
    return a.data_->ends == b.data_->ends && a.data_->bytes == b.data_->bytes;
  }

 private:
  struct Data {
    std::string bytes;        // every string, back to back
    std::vector<uint32_t> ends;  // [size()] where each string ends in bytes
  };
  // The storage, made this table's own before a change.
  Data& own() {
    if (!data_) {
      data_ = std::make_shared<Data>();
    } else if (data_.use_count() > 1) {
      data_ = std::make_shared<Data>(*data_);
    }
    return *data_;
  }

  std::shared_ptr<Data> data_;  // null while empty
};

}  // namespace llmpack
