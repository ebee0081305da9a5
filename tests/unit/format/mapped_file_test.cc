// MappedFile: read-only mappings of real files, empty files, copies of buffers.
#include "format/mapped_file.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <vector>

#include "unit/format/format_test_util.h"

namespace llmpack {
namespace {

using testing::HasText;
using testing::TempDir;

TEST(MappedFile, MapsFileContents) {
  TempDir dir;
  const std::string path = dir.file("data.bin");
  {
    std::ofstream out(path, std::ios::binary);
    out << "hello mapped world";
  }
  auto f = MappedFile::open(path);
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ((*f)->size(), 18u);
  EXPECT_EQ((*f)->path(), path);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>((*f)->data()), 18), "hello mapped world");
  EXPECT_EQ((*f)->bytes().size(), 18u);
}

// Files of a 2 MiB page or more are mapped at a 2 MiB-aligned address, so the
// kernel can map the page cache's 2 MiB folios with one TLB entry each; the
// view must still hold exactly the file, up to its last byte. (Kernels that
// align large file mappings by themselves, Linux 6.18 on ext4 among them,
// pass the alignment check either way; the contents check covers the
// reserve-and-trim that map_aligned does.)
TEST(MappedFile, LargeFileMapsAtA2MiBAlignedAddressWithAllItsBytes) {
  TempDir dir;
  const std::string path = dir.file("large.bin");
  const size_t size = (size_t{5} << 20) + 123;  // not a whole number of pages
  std::vector<uint8_t> content(size);
  for (size_t i = 0; i < size; ++i) content[i] = static_cast<uint8_t>((i * 131) ^ (i >> 12));
  {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(content.data()), static_cast<std::streamsize>(size));
  }
  for (int again = 0; again < 2; ++again) {  // a second mapping while the first is gone
    auto f = MappedFile::open(path);
    ASSERT_TRUE(f.ok()) << f.status().message();
    ASSERT_EQ((*f)->size(), size);
    EXPECT_EQ(reinterpret_cast<uintptr_t>((*f)->data()) % (uintptr_t{2} << 20), 0u);
    EXPECT_TRUE(std::equal(content.begin(), content.end(), (*f)->data()));
  }
}

// Resident bytes of this process (VmRSS), 0 where unreadable.
uint64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  if (!(statm >> size >> resident)) return 0;
  return resident * 4096;
}

// `size` bytes of a pattern (byte i = i * mul + (i >> shift)) written to
// `path`; the bytes.
std::vector<uint8_t> write_pattern_file(const std::string& path, size_t size, unsigned mul, unsigned shift) {
  std::vector<uint8_t> content(size);
  for (size_t i = 0; i < size; ++i) content[i] = static_cast<uint8_t>(i * mul + (i >> shift));
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(content.data()), static_cast<std::streamsize>(size));
  return content;
}

// A loader that regroups a tensor rewrites its bytes in place: this process
// reads the new bytes, the file keeps its own, and the rewritten pages take
// the file pages' place in memory instead of adding to them. Owned
// (in-memory) bytes change in place; ranges outside the view are refused.
TEST(MappedFile, WritableRangesChangeOnlyThisProcessView) {
  TempDir dir;
  const std::string path = dir.file("weights.bin");
  const size_t size = size_t{6} << 20;
  const std::vector<uint8_t> content = write_pattern_file(path, size, 7, 9);
  auto f = MappedFile::open(path);
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_TRUE(std::equal(content.begin(), content.end(), (*f)->data()));  // every page touched
  const uint64_t before = resident_bytes();
  const size_t at = 100, n = size - 200;  // not page-aligned
  uint8_t* w = (*f)->writable((*f)->data() + at, n);
  ASSERT_NE(w, nullptr);
  for (size_t i = 0; i < n; ++i) w[i] = static_cast<uint8_t>(~content[at + i]);
  (*f)->seal((*f)->data() + at, n);
  const uint64_t after = resident_bytes();
  if (before > 0) {
    EXPECT_LE(after, before + (size_t{1} << 20)) << before << " -> " << after;
  }
  for (size_t i = 0; i < size; ++i)
    ASSERT_EQ((*f)->data()[i], i < at || i >= at + n ? content[i] : static_cast<uint8_t>(~content[i])) << i;
  auto again = MappedFile::open(path);  // the file itself is unchanged
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(std::equal(content.begin(), content.end(), (*again)->data()));
  EXPECT_EQ((*f)->writable((*f)->data(), size + 1), nullptr);
  EXPECT_EQ((*f)->writable(content.data(), 10), nullptr);

  auto owned = MappedFile::from_bytes(content);
  uint8_t* o = owned->writable(owned->data() + 5, 3);
  ASSERT_EQ(o, owned->data() + 5);
  o[0] = static_cast<uint8_t>(content[5] + 1);
  EXPECT_EQ(owned->data()[5], static_cast<uint8_t>(content[5] + 1));
}

// release_pages() (the exporter, after each tensor is written) takes a read
// mapping's pages out of the resident set and the bytes read the same after;
// it must leave heap memory and rewritten (private) pages alone, where
// MADV_DONTNEED would zero them or bring the file's bytes back.
TEST(MappedFile, ReleasedPagesLeaveTheResidentSetAndReadTheSame) {
  TempDir dir;
  const std::string path = dir.file("source.bin");
  const size_t size = size_t{8} << 20;
  const std::vector<uint8_t> content = write_pattern_file(path, size, 13, 11);
  auto f = MappedFile::open(path);
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_TRUE(std::equal(content.begin(), content.end(), (*f)->data()));  // every page resident
  const uint64_t before = resident_bytes();
  MappedFile::release_pages((*f)->bytes());
  const uint64_t after = resident_bytes();
  if (before > 0) {
    EXPECT_LE(after + (size_t{6} << 20), before) << before << " -> " << after;
  }
  EXPECT_TRUE(std::equal(content.begin(), content.end(), (*f)->data()));  // read again from the file

  std::vector<uint8_t> heap = content;
  MappedFile::release_pages(heap);
  EXPECT_EQ(heap, content);
  auto owned = MappedFile::from_bytes(content);
  MappedFile::release_pages(owned->bytes());
  EXPECT_TRUE(std::equal(content.begin(), content.end(), owned->data()));

  uint8_t* w = (*f)->writable((*f)->data(), size);
  ASSERT_NE(w, nullptr);
  for (size_t i = 0; i < size; ++i) w[i] = static_cast<uint8_t>(~content[i]);
  (*f)->seal((*f)->data(), size);
  MappedFile::release_pages((*f)->bytes());
  for (size_t i = 0; i < size; i += 4093) ASSERT_EQ((*f)->data()[i], static_cast<uint8_t>(~content[i])) << i;
}

TEST(MappedFile, EmptyFileIsAnEmptyView) {
  TempDir dir;
  const std::string path = dir.file("empty.bin");
  { std::ofstream out(path, std::ios::binary); }
  auto f = MappedFile::open(path);
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ((*f)->size(), 0u);
  EXPECT_TRUE((*f)->bytes().empty());
}

TEST(MappedFile, MissingFileNamesPathAndReason) {
  auto f = MappedFile::open("/nonexistent_llmpack/x.bin");
  ASSERT_FALSE(f.ok());
  EXPECT_TRUE(HasText(f.status().message(), "'/nonexistent_llmpack/x.bin'"));
  EXPECT_TRUE(HasText(f.status().message(), "No such file or directory"));
}

TEST(MappedFile, DirectoryRefused) {
  TempDir dir;
  auto f = MappedFile::open(dir.path().string());
  ASSERT_FALSE(f.ok());
  EXPECT_TRUE(HasText(f.status().message(), dir.path().string()));
}

TEST(MappedFile, FromBytesCopies) {
  std::vector<uint8_t> src = {1, 2, 3, 4};
  auto f = MappedFile::from_bytes(src);
  src[0] = 9;  // the copy does not follow
  ASSERT_EQ(f->size(), 4u);
  EXPECT_EQ(f->data()[0], 1);
  EXPECT_NE(f->data(), src.data());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(f->data()) % alignof(float), 0u);
  EXPECT_EQ(MappedFile::from_bytes({})->size(), 0u);
}

}  // namespace
}  // namespace llmpack
