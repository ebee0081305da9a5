// Unicode tables for NFC (see pretokenizer_nfc_tables.cc), each sorted by its
// first field for binary search.
#pragma once

#include <cstddef>
#include <cstdint>

namespace llmpack::nfc {

struct CccEntry {
  uint32_t cp;
  uint8_t ccc;
};
struct DecompEntry {
  uint32_t cp;
  uint32_t to[4];  // 0-padded
};
struct CompEntry {
  uint32_t first;
  uint32_t second;
  uint32_t composite;
};

extern const CccEntry kCcc[];
extern const size_t kCccSize;
extern const DecompEntry kDecomp[];
extern const size_t kDecompSize;
extern const CompEntry kComp[];
extern const size_t kCompSize;

}  // namespace llmpack::nfc
