// Runs the llmpack binary as a user would, capturing stdout, stderr and the
// exit code. Temp files are unique per process, test and call, because ctest
// runs the tests of one binary in parallel processes.
#pragma once

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

namespace llmpack::testing {

struct CliOutcome {
  int exit_code = -1;  // -1: killed by a signal (a crash)
  std::string out;
  std::string err;
};

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A unique path prefix in the test temp dir, e.g. for files a test writes.
inline std::string temp_stem(const std::string& tag) {
  static int call = 0;
  const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
  return ::testing::TempDir() + "/llmpack_" + tag + "_" + std::to_string(getpid()) + "_" +
         (test ? test->name() : "x") + "_" + std::to_string(call++);
}

// `llmpack ARGS` (ARGS go through the shell) with `input` on stdin.
inline CliOutcome run_llmpack(const std::string& args, const std::string& input = "") {
  const std::string stem = temp_stem("cli");
  const std::string in = stem + ".in", out = stem + ".out", err = stem + ".err";
  std::ofstream(in, std::ios::binary) << input;
  const std::string cmd = std::string(LLMPACK_BINARY_PATH) + " " + args + " <" + in + " >" + out + " 2>" + err;
  const int status = std::system(cmd.c_str());
  CliOutcome o;
  o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  o.out = slurp(out);
  o.err = slurp(err);
  for (const auto& p : {in, out, err}) std::remove(p.c_str());
  return o;
}

}  // namespace llmpack::testing
