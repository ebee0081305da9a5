#include "tokenizer/streaming_decoder.h"

#include "core/utf8.h"

namespace llmpack {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Whether `b` may be byte `k` (1-based after the lead) of a character that
// starts with `lead`: the second byte's range excludes overlong forms,
// surrogates and values past U+10FFFF (Unicode table 3-7).
bool continuation_ok(unsigned char lead, size_t k, unsigned char b) {
  if (k == 1) {
    switch (lead) {
      case 0xE0: return b >= 0xA0 && b <= 0xBF;
      case 0xED: return b >= 0x80 && b <= 0x9F;
      case 0xF0: return b >= 0x90 && b <= 0xBF;
      case 0xF4: return b >= 0x80 && b <= 0x8F;
      default: break;
    }
  }
  return (b & 0xC0) == 0x80;
}

// Lead bytes that can never start a valid character.
bool bad_lead(unsigned char lead) {
  return utf8_sequence_length(lead) == 0 || lead == 0xC0 || lead == 0xC1 || lead > 0xF4;
}

}  // namespace

Result<std::string> StreamingDecoder::push(int32_t prev_id, int32_t id) {
  Result<std::string> piece = tokenizer_.decode(prev_id, id);
  if (!piece.ok()) return piece.status();
  pending_ += *piece;
  std::string out;
  size_t i = 0;
  const auto* s = reinterpret_cast<const unsigned char*>(pending_.data());
  const size_t n = pending_.size();
  while (i < n) {
    const unsigned char lead = s[i];
    if (lead < 0x80) {
      out += static_cast<char>(lead);
      ++i;
      continue;
    }
    if (bad_lead(lead)) {
      out += kReplacement;
      ++i;
      continue;
    }
    const size_t len = static_cast<size_t>(utf8_sequence_length(lead));
    size_t k = 1;
    while (k < len && i + k < n && continuation_ok(lead, k, s[i + k])) ++k;
    if (k == len) {
      out.append(pending_, i, len);
      i += len;
    } else if (i + k == n) {
      break;  // a valid start of a character: wait for its remaining bytes
    } else {
      out += kReplacement;  // one U+FFFD for the maximal invalid subpart
      i += k;
    }
  }
  pending_.erase(0, i);
  return out;
}

std::string StreamingDecoder::flush() {
  if (pending_.empty()) return {};
  pending_.clear();
  return std::string(kReplacement);
}

}  // namespace llmpack
