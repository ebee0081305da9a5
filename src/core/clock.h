// Wall-clock milliseconds since the Unix epoch (the unit of the stats report).
#pragma once

#include <chrono>
#include <cstdint>

namespace llmpack {

inline int64_t time_in_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace llmpack
