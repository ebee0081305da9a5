#include "format/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

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
  void* p = ::mmap(nullptr, static_cast<size_t>(size), PROT_READ, MAP_PRIVATE, fd, 0);
  if (p == MAP_FAILED) return sys_error("cannot map", path, errno);
  file->mapping_ = p;
  file->data_ = static_cast<const uint8_t*>(p);
  file->size_ = size;
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

MappedFile::~MappedFile() {
  if (mapping_ != nullptr) ::munmap(mapping_, static_cast<size_t>(size_));
}

}  // namespace llmpack
