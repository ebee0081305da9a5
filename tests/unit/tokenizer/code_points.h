// Text from code points, for tests.
#pragma once

#include <cstdint>
#include <sstream>
#include <string>

#include "core/utf8.h"

namespace llmpack::testing {

// UTF-8 bytes of code point `cp`.
inline std::string utf8_of(uint32_t cp) {
  std::string s;
  append_utf8(cp, &s);
  return s;
}

// The text of code points written in hex and separated by spaces ("41 300").
inline std::string utf8_of_hexes(const std::string& field) {
  std::istringstream in(field);
  std::string out, hex;
  while (in >> hex) append_utf8(static_cast<uint32_t>(std::stoul(hex, nullptr, 16)), &out);
  return out;
}

}  // namespace llmpack::testing
