#include "format/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <utility>
#include <vector>

namespace llmpack {
namespace {

Status sys_error(const std::string& what, const std::string& path, int err) {
  return Status::error(what + " '" + path + "': " + std::strerror(err));
}

// Closes a descriptor on every path out of open().
struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0) ::close(fd);
  }
};

// Weights are read once per decoded token, 1.3 GB for a 1B Q8_0 model, so
// every 4 KiB page costs a TLB miss, and on a VM a nested page walk. The
// kernel maps a page-cache folio of 2 MiB with one entry when the address and
// the file offset agree modulo 2 MiB, which a 2 MiB-aligned mapping
// guarantees; MADV_HUGEPAGE makes pages read from disk through the mapping
// arrive as 2 MiB folios where the filesystem allows it (ext4 since Linux
// 6.16, xfs). On the ANCHORS machine kind the same cached file read 1.09x
// faster through 2 MiB entries than through 4 KiB ones (median of 10
// alternated rounds; docs/PERFORMANCE.md section 15).
constexpr uint64_t kHugePage = uint64_t{2} << 20;

// Maps [0, size) of fd read-only at a kHugePage-aligned address when the
// file spans at least one huge page; MAP_FAILED on failure (errno set).
void* map_aligned(int fd, uint64_t size) {
  const size_t length = static_cast<size_t>(size);
  if (size < kHugePage) return ::mmap(nullptr, length, PROT_READ, MAP_PRIVATE, fd, 0);
  // Reserve size + one huge page of address space, then map the file over
  // its first aligned address and give back the slack on both sides.
  const size_t reserved = length + kHugePage;
  void* area = ::mmap(nullptr, reserved, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (area == MAP_FAILED) return ::mmap(nullptr, length, PROT_READ, MAP_PRIVATE, fd, 0);
  const uintptr_t start = reinterpret_cast<uintptr_t>(area);
  const uintptr_t aligned = (start + kHugePage - 1) & ~uintptr_t{kHugePage - 1};
  void* p = ::mmap(reinterpret_cast<void*>(aligned), length, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0);
  if (p == MAP_FAILED) {
    const int err = errno;
    ::munmap(area, reserved);
    errno = err;
    return MAP_FAILED;
  }
  if (aligned > start) ::munmap(area, aligned - start);
  // the mapping ends at a page boundary (4 KiB on x86-64, 16 or 64 KiB on
  // some arm64 kernels); the reservation past it goes back
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t end = aligned + (length + page - 1) / page * page;
  if (end < start + reserved) ::munmap(reinterpret_cast<void*>(end), start + reserved - end);
  // A hint: kernels without transparent huge pages refuse it (EINVAL), and
  // the mapping then simply keeps 4 KiB pages.
  ::madvise(p, length, MADV_HUGEPAGE);
  return p;
}

// The live file mappings, for release_pages() to tell a mapped range from
// heap memory (where MADV_DONTNEED would zero the bytes).
std::mutex& mappings_mutex() {
  static std::mutex m;
  return m;
}
std::vector<const MappedFile*>& live_mappings() {
  static std::vector<const MappedFile*> files;
  return files;
}

}  // namespace

Result<std::unique_ptr<MappedFile>> MappedFile::open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return sys_error("cannot open", path, errno);
  FdCloser closer{fd};

  struct stat st {};
  if (::fstat(fd, &st) != 0) return sys_error("cannot stat", path, errno);
  if (S_ISDIR(st.st_mode)) return Status::error("cannot map '" + path + "': it is a directory");
  if (!S_ISREG(st.st_mode))
    return Status::error("cannot map '" + path + "': not a regular file");

  std::unique_ptr<MappedFile> file(new MappedFile());
  file->path_ = path;
  if (st.st_size == 0) {
    // mmap of length 0 fails; an empty file is a valid, empty view.
    return file;
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size > static_cast<uint64_t>(SIZE_MAX))
    return Status::error("cannot map '" + path + "': file too large for the address space");
  void* p = map_aligned(fd, size);
  if (p == MAP_FAILED) return sys_error("cannot map", path, errno);
  file->mapping_ = p;
  file->data_ = static_cast<const uint8_t*>(p);
  file->size_ = size;
  std::lock_guard lock(mappings_mutex());
  live_mappings().push_back(file.get());
  return file;
}

std::unique_ptr<MappedFile> MappedFile::from_bytes(std::span<const uint8_t> bytes) {
  std::unique_ptr<MappedFile> file(new MappedFile());
  file->owned_.assign(bytes.begin(), bytes.end());
  file->data_ = file->owned_.data();
  file->size_ = file->owned_.size();
  file->path_ = "<memory>";
  return file;
}

std::unique_ptr<MappedFile> MappedFile::from_owned(std::vector<uint8_t> bytes) {
  std::unique_ptr<MappedFile> file(new MappedFile());
  file->owned_ = std::move(bytes);
  file->data_ = file->owned_.data();
  file->size_ = file->owned_.size();
  file->path_ = "<memory>";
  return file;
}

namespace {
// [p, p + n) widened to whole pages, for mprotect.
std::pair<void*, size_t> page_span(const uint8_t* p, uint64_t n) {
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t begin = reinterpret_cast<uintptr_t>(p) / page * page;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + n + page - 1) / page * page;
  return {reinterpret_cast<void*>(begin), end - begin};
}
}  // namespace

uint8_t* MappedFile::writable(const uint8_t* p, uint64_t n) {
  if (p < data_ || n > size_ || static_cast<uint64_t>(p - data_) > size_ - n) return nullptr;
  if (mapping_ == nullptr) return owned_.data() + (p - data_);
  // A private mapping may be made writable though the file was opened
  // read-only: written pages become copies of this process's own (copy on
  // write), and the page-table entries of those addresses point at the copies
  // from then on.
  const auto [start, length] = page_span(p, n);
  {
    std::lock_guard lock(mappings_mutex());
    made_writable_ = true;
  }
  if (::mprotect(start, length, PROT_READ | PROT_WRITE) != 0) return nullptr;
#if defined(MADV_POPULATE_WRITE)
  // The private copies made in one call rather than a write fault a page
  // (kernels before 5.14 refuse it: then the writes fault as usual).
  ::madvise(start, length, MADV_POPULATE_WRITE);
#endif
  return const_cast<uint8_t*>(p);
}

void MappedFile::seal(const uint8_t* p, uint64_t n) {
  if (mapping_ == nullptr || n == 0) return;
  const auto [start, length] = page_span(p, n);
  ::mprotect(start, length, PROT_READ);
}

void MappedFile::release_pages(std::span<const uint8_t> bytes) {
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(bytes.data()) + page - 1) / page * page;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(bytes.data()) + bytes.size()) / page * page;
  if (bytes.empty() || end <= begin) return;
  std::lock_guard lock(mappings_mutex());
  for (const MappedFile* f : live_mappings()) {
    const auto lo = reinterpret_cast<uintptr_t>(f->data_);
    if (f->made_writable_ || begin < lo || end > lo + f->size_) continue;
    // Clean pages of a private file mapping: dropping them loses nothing.
    ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
    return;
  }
}

MappedFile::~MappedFile() {
  if (mapping_ == nullptr) return;
  ::munmap(mapping_, static_cast<size_t>(size_));
  std::lock_guard lock(mappings_mutex());
  auto& files = live_mappings();
  files.erase(std::remove(files.begin(), files.end(), this), files.end());
}

}  // namespace llmpack
