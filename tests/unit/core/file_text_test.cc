// read_file_text: the bytes of a file, or an error a user can act on for a
// missing path, a folder, or a file the process may not read.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/file_text.h"

namespace llmpack {
namespace {

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "/file_text_" + std::to_string(getpid()) + "_" + name;
}

TEST(FileText, ReadsEveryByteOfAFileLargerThanOneBuffer) {
  const std::string path = temp_path("big");
  std::string bytes;
  for (int i = 0; i < 200000; ++i) bytes.push_back(static_cast<char>(i * 7 + (i >> 9)));
  std::ofstream(path, std::ios::binary) << bytes;
  auto text = read_file_text(path);
  ASSERT_TRUE(text.ok()) << text.status().message();
  EXPECT_EQ(*text, bytes);  // NUL and 0xFF bytes included
  std::filesystem::remove(path);
}

TEST(FileText, AnEmptyFileIsAnEmptyTextAndProcFilesAreReadToTheirEnd) {
  const std::string path = temp_path("empty");
  std::ofstream(path, std::ios::binary).flush();
  auto empty = read_file_text(path);
  ASSERT_TRUE(empty.ok()) << empty.status().message();
  EXPECT_TRUE(empty->empty());
  std::filesystem::remove(path);
  // /proc files report size 0 but hold text: read until the end, not by size.
  auto status = read_file_text("/proc/self/status");
  ASSERT_TRUE(status.ok()) << status.status().message();
  EXPECT_NE(status->find("Pid:"), std::string::npos);
}

TEST(FileText, AMissingPathOrAFolderIsAnErrorThatSaysWhich) {
  auto missing = read_file_text("/no/such/file.txt");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(), "cannot read '/no/such/file.txt': No such file or directory");
  const std::string folder = temp_path("folder");
  std::filesystem::create_directory(folder);
  auto dir = read_file_text(folder);
  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(dir.status().message(), "'" + folder + "' is a directory, expected a file");
  std::filesystem::remove(folder);
}

// A read that fails after the open (here /proc/self/mem, whose address 0 is
// unmapped: EIO) is an error with the system's reason, not a short text.
TEST(FileText, AReadThatFailsNamesTheReason) {
  auto mem = read_file_text("/proc/self/mem");
  ASSERT_FALSE(mem.ok());
  EXPECT_EQ(mem.status().message(), "cannot read '/proc/self/mem': Input/output error");
}

TEST(FileText, AFileThisProcessMayNotOpenNamesTheReason) {
  if (geteuid() == 0) GTEST_SKIP() << "running as root: a mode-000 file is still readable";
  const std::string path = temp_path("secret");
  std::ofstream(path) << "x";
  std::filesystem::permissions(path, std::filesystem::perms::none);
  auto text = read_file_text(path);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().message(), "cannot read '" + path + "': Permission denied");
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace llmpack
