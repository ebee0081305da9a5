#include "core/file_text.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

namespace llmpack {

Result<std::string> read_file_text(const std::string& path) {
  const auto os_error = [&](int err) {
    return error_status("cannot read '" + path + "': " + std::strerror(err));
  };
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return os_error(errno);
  if (S_ISDIR(st.st_mode)) return error_status("'" + path + "' is a directory, expected a file");
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"), std::fclose);
  if (!file) return os_error(errno);
  std::string text;
  errno = 0;
  char buffer[1 << 16];
  for (;;) {
    const size_t n = std::fread(buffer, 1, sizeof buffer, file.get());
    text.append(buffer, n);
    if (n < sizeof buffer) break;
  }
  if (std::ferror(file.get())) return os_error(errno != 0 ? errno : EIO);
  return text;
}

}  // namespace llmpack
