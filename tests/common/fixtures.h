// Locating ../shared/fixtures from tests. Tests that need a fixture skip with
// a visible message when it is absent, so the suite runs on a user's machine.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace llmpack::testing {

inline std::filesystem::path fixtures_dir() {
  if (const char* env = std::getenv("LLMPACK_FIXTURES")) return env;
  return LLMPACK_FIXTURES_DIR;
}

inline std::string fixture_path(const std::string& relative) {
  return (fixtures_dir() / relative).string();
}

}  // namespace llmpack::testing

// Skips the current test (with a message naming the file) when a fixture is absent.
#define LLMPACK_REQUIRE_FIXTURE(var, relative)                                    \
  const std::string var = ::llmpack::testing::fixture_path(relative);            \
  if (!std::filesystem::exists(var)) {                                            \
    GTEST_SKIP() << "fixture not found: " << var << " (../shared/fixtures absent)"; \
  }
