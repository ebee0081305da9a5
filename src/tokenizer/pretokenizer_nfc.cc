#include "tokenizer/pretokenizer_nfc.h"

#include <algorithm>
#include <cstdint>
#include <tuple>
#include <vector>

#include "core/utf8.h"
#include "tokenizer/pretokenizer_nfc_tables.h"

namespace llmpack {
namespace {

// Hangul syllables are composed arithmetically (Unicode 3.12).
constexpr uint32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr uint32_t kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount, kSCount = kLCount * kNCount;
// An invalid byte b is carried as kRawByte | b: class 0, composes with nothing.
constexpr uint32_t kRawByte = 0x80000000u;

uint8_t ccc(uint32_t cp) {
  const nfc::CccEntry* end = nfc::kCcc + nfc::kCccSize;
  const nfc::CccEntry* it = std::lower_bound(nfc::kCcc, end, cp, [](const nfc::CccEntry& e, uint32_t c) { return e.cp < c; });
  return it != end && it->cp == cp ? it->ccc : 0;
}

void decompose(uint32_t cp, std::vector<uint32_t>* out) {
  if (cp >= kSBase && cp < kSBase + kSCount) {
    const uint32_t s = cp - kSBase;
    out->push_back(kLBase + s / kNCount);
    out->push_back(kVBase + (s % kNCount) / kTCount);
    if (s % kTCount != 0) out->push_back(kTBase + s % kTCount);
    return;
  }
  const nfc::DecompEntry* end = nfc::kDecomp + nfc::kDecompSize;
  const nfc::DecompEntry* it =
      std::lower_bound(nfc::kDecomp, end, cp, [](const nfc::DecompEntry& e, uint32_t c) { return e.cp < c; });
  if (it == end || it->cp != cp) {
    out->push_back(cp);
    return;
  }
  for (uint32_t c : it->to) {
    if (c != 0) out->push_back(c);
  }
}

// The primary composite of (a, b), or 0.
uint32_t compose(uint32_t a, uint32_t b) {
  if (a >= kLBase && a < kLBase + kLCount && b >= kVBase && b < kVBase + kVCount) {
    return kSBase + ((a - kLBase) * kVCount + (b - kVBase)) * kTCount;
  }
  if (a >= kSBase && a < kSBase + kSCount && (a - kSBase) % kTCount == 0 && b > kTBase && b < kTBase + kTCount) {
    return a + (b - kTBase);
  }
  const nfc::CompEntry* end = nfc::kComp + nfc::kCompSize;
  const nfc::CompEntry* it = std::lower_bound(nfc::kComp, end, std::pair(a, b), [](const nfc::CompEntry& e, auto key) {
    return e.first < key.first || (e.first == key.first && e.second < key.second);
  });
  return it != end && it->first == a && it->second == b ? it->composite : 0;
}

std::vector<uint32_t> decode_utf8(std::string_view text) {
  std::vector<uint32_t> cps;
  cps.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const auto lead = static_cast<unsigned char>(text[i]);
    const int len = utf8_sequence_length(lead);
    if (len == 0 || i + len > text.size() || utf8_first_invalid(text.substr(i, len)) != std::string_view::npos) {
      cps.push_back(kRawByte | lead);
      ++i;
      continue;
    }
    uint32_t cp = len == 1 ? lead : lead & (0xFF >> (len + 1));
    for (int k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3F);
    cps.push_back(cp);
    i += len;
  }
  return cps;
}

void append_code_or_raw_byte(uint32_t cp, std::string* out) {
  if (cp & kRawByte) {
    *out += static_cast<char>(cp & 0xFF);
  } else {
    append_utf8(cp, out);
  }
}

// One bit per code point: set where the code point may change under NFC or
// change a neighbour: a combining class other than 0 (reordering), the second
// half of a composition (a mark, a Hangul vowel or final, a two-part vowel
// sign), or a decomposition that does not compose back to the code point
// (singletons, exclusions). Text of unflagged code points is its own NFC.
class MaybeChanges {
 public:
  MaybeChanges() : bits_((0x110000 + 63) / 64, 0) {
    for (size_t i = 0; i < nfc::kCccSize; ++i) set(nfc::kCcc[i].cp);
    std::vector<uint64_t> composite(bits_.size(), 0);
    for (size_t i = 0; i < nfc::kCompSize; ++i) {
      set(nfc::kComp[i].second);
      composite[nfc::kComp[i].composite >> 6] |= uint64_t{1} << (nfc::kComp[i].composite & 63);
    }
    for (uint32_t cp = kVBase; cp < kVBase + kVCount; ++cp) set(cp);
    for (uint32_t cp = kTBase + 1; cp < kTBase + kTCount; ++cp) set(cp);
    for (size_t i = 0; i < nfc::kDecompSize; ++i) {
      const uint32_t cp = nfc::kDecomp[i].cp;
      if (!((composite[cp >> 6] >> (cp & 63)) & 1)) set(cp);
    }
  }
  bool operator()(uint32_t cp) const { return (bits_[cp >> 6] >> (cp & 63)) & 1; }

 private:
  void set(uint32_t cp) { bits_[cp >> 6] |= uint64_t{1} << (cp & 63); }
  std::vector<uint64_t> bits_;  // [0x110000 / 64]
};

// True when `text` is valid UTF-8 with no code point MaybeChanges flags:
// NFC leaves it as it is. (CJK, kana, Hangul syllables and most precomposed
// letters pass; text with a combining mark takes the full path.)
bool already_nfc(std::string_view text) {
  static const MaybeChanges maybe_changes;
  for (size_t i = 0; i < text.size();) {
    const auto lead = static_cast<unsigned char>(text[i]);
    if (lead < 0x80) {
      ++i;
      continue;
    }
    const int len = utf8_sequence_length(lead);
    if (len == 0 || i + len > text.size() || utf8_first_invalid(text.substr(i, len)) != std::string_view::npos) {
      return false;
    }
    uint32_t cp = lead & (0xFF >> (len + 1));
    for (int k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3F);
    if (cp >= 0x300 && maybe_changes(cp)) return false;
    i += len;
  }
  return true;
}

}  // namespace

std::string nfc_normalize(std::string_view text) {
  // Code points below U+0300 are all NFC-stable and never combine with each
  // other: their UTF-8 bytes are all below 0xCC.
  if (std::all_of(text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) < 0xCC; })) {
    return std::string(text);
  }
  if (already_nfc(text)) return std::string(text);
  std::vector<uint32_t> d;
  d.reserve(text.size());
  for (uint32_t cp : decode_utf8(text)) {
    if (cp & kRawByte) {
      d.push_back(cp);
    } else {
      decompose(cp, &d);
    }
  }
  // Canonical ordering: stable sort each run of non-starters by class.
  std::vector<uint8_t> cls(d.size());
  for (size_t i = 0; i < d.size(); ++i) cls[i] = (d[i] & kRawByte) ? 0 : ccc(d[i]);
  for (size_t i = 0; i < d.size();) {
    if (cls[i] == 0) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < d.size() && cls[j] != 0) ++j;
    std::vector<std::pair<uint8_t, uint32_t>> run;
    for (size_t k = i; k < j; ++k) run.emplace_back(cls[k], d[k]);
    std::stable_sort(run.begin(), run.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    for (size_t k = i; k < j; ++k) std::tie(cls[k], d[k]) = run[k - i];
    i = j;
  }
  // Canonical composition: each character joins the last starter unless a
  // character of the same or higher class (or a starter) stands between.
  std::vector<uint32_t> out;
  std::vector<uint8_t> out_cls;
  out.reserve(d.size());
  int64_t starter = -1;
  for (size_t i = 0; i < d.size(); ++i) {
    const uint32_t c = d[i];
    const uint8_t k = cls[i];
    if (starter >= 0 && !(c & kRawByte)) {
      const uint8_t last = out_cls.back();
      const bool blocked = static_cast<size_t>(starter) + 1 < out.size() && (last == 0 || last >= k);
      const bool adjacent_starter = static_cast<size_t>(starter) + 1 == out.size();
      if (!blocked || adjacent_starter) {
        const uint32_t comp = (out[starter] & kRawByte) ? 0 : compose(out[starter], c);
        if (comp != 0) {
          out[starter] = comp;
          continue;
        }
      }
    }
    out.push_back(c);
    out_cls.push_back(k);
    if (k == 0) starter = static_cast<int64_t>(out.size()) - 1;
  }
  std::string result;
  result.reserve(text.size());
  for (uint32_t cp : out) append_code_or_raw_byte(cp, &result);
  return result;
}

}  // namespace llmpack
