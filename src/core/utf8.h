// UTF-8 helpers shared by tokenizers and the streaming decoder.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace llmpack {

// Length of the UTF-8 sequence that starts with `lead` (1..4), or 0 when
// `lead` cannot start a sequence (a continuation byte or 0xF8..0xFF).
inline int utf8_sequence_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead < 0xC0) return 0;
  if (lead < 0xE0) return 2;
  if (lead < 0xF0) return 3;
  if (lead < 0xF8) return 4;
  return 0;
}

// Byte offset of the first invalid UTF-8 sequence in `text`, or npos when valid.
size_t utf8_first_invalid(std::string_view text);

// Appends the UTF-8 bytes of code point `cp`; one above U+10FFFF or a
// surrogate becomes U+FFFD.
void append_utf8(uint32_t cp, std::string* out);

}  // namespace llmpack
