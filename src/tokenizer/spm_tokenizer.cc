#include "tokenizer/spm_tokenizer.h"

#include <cmath>
#include <queue>

#include "core/utf8.h"

namespace llmpack {
namespace {

constexpr std::string_view kMetaSpace = "\xE2\x96\x81";  // U+2581 '▁'
// llama2.c starts its best-pair search at -1e10 with a strict '>', so pieces
// scoring -1e10 or less (or NaN) never merge; we keep that rule.
constexpr float kMinMergeScore = -1e10f;

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// Length of the valid UTF-8 character at text[i], or 0 when the bytes there
// do not form one (stray continuation byte, truncated or overlong sequence).
size_t valid_char_length(std::string_view text, size_t i) {
  const int len = utf8_sequence_length(static_cast<unsigned char>(text[i]));
  if (len == 0 || i + len > text.size()) return 0;
  if (utf8_first_invalid(text.substr(i, len)) != std::string_view::npos) return 0;
  return static_cast<size_t>(len);
}

// A key for a pair of adjacent UTF-8 characters (each at most 4 bytes).
uint64_t char_pair_key(std::string_view a, std::string_view b) {
  uint64_t ka = 0;
  uint64_t kb = 0;
  for (char c : a) ka = (ka << 8) | static_cast<unsigned char>(c);
  for (char c : b) kb = (kb << 8) | static_cast<unsigned char>(c);
  return (ka << 32) | kb;
}

// Calls f(offset, length) for each character of `piece`; invalid bytes
// count as one-byte characters (as encode treats them).
template <typename F>
void for_each_char(std::string_view piece, F&& f) {
  for (size_t i = 0; i < piece.size();) {
    size_t len = valid_char_length(piece, i);
    if (len == 0) len = 1;
    f(i, len);
    i += len;
  }
}

std::string hex_byte(unsigned char b) {
  static const char* kDigits = "0123456789ABCDEF";
  return std::string("0x") + kDigits[b >> 4] + kDigits[b & 15];
}

}  // namespace

int byte_piece_value(std::string_view piece) {
  if (piece.size() != 6 || piece.substr(0, 3) != "<0x" || piece[5] != '>') return -1;
  const int hi = hex_digit(piece[3]);
  const int lo = hex_digit(piece[4]);
  if (hi < 0 || lo < 0) return -1;
  return hi * 16 + lo;
}

// One symbol of the text being merged: a byte range of the normalized text,
// linked to its neighbours. A merged-away symbol has len 0.
struct SpmTokenizer::Symbol {
  size_t start = 0;
  size_t len = 0;
  int32_t prev = -1;
  int32_t next = -1;
  int32_t id = -1;        // piece id of the text (or the unknown id)
  bool fallback = false;  // no piece: emitted as byte tokens, never merged
};

Result<std::unique_ptr<SpmTokenizer>> SpmTokenizer::create(SpmVocab vocab) {
  std::unique_ptr<SpmTokenizer> tok(new SpmTokenizer(std::move(vocab)));
  LLMPACK_RETURN_IF_ERROR(tok->build());
  return tok;
}

Status SpmTokenizer::build() {
  const size_t n = vocab_.pieces.size();
  if (n == 0) return Status::error("SentencePiece vocabulary: expected at least one piece, found none");
  if (n > static_cast<size_t>(INT32_MAX)) return Status::error("SentencePiece vocabulary: too many pieces");
  if (vocab_.scores.empty()) vocab_.scores.assign(n, 0.0f);
  if (vocab_.types.empty()) vocab_.types.assign(n, TokenType::kNormal);
  if (vocab_.scores.size() != n || vocab_.types.size() != n) {
    return Status::error("SentencePiece vocabulary: " + std::to_string(n) + " pieces but " +
                         std::to_string(vocab_.scores.size()) + " scores and " +
                         std::to_string(vocab_.types.size()) + " token types");
  }
  const auto check_id = [&](int32_t id, const char* what) -> Status {
    if (id < -1 || id >= static_cast<int32_t>(n)) {
      return Status::error(std::string("SentencePiece vocabulary: ") + what + " id " + std::to_string(id) +
                           " is outside the vocabulary of " + std::to_string(n) + " pieces");
    }
    return ok_status();
  };
  LLMPACK_RETURN_IF_ERROR(check_id(vocab_.bos_id, "BOS"));
  LLMPACK_RETURN_IF_ERROR(check_id(vocab_.eos_id, "EOS"));
  LLMPACK_RETURN_IF_ERROR(check_id(vocab_.unk_id, "unknown-token"));

  piece_to_id_.reserve(n);
  byte_to_id_.fill(-1);
  bool any_meta = false;
  bool any_space = false;
  for (size_t i = 0; i < n; ++i) {
    const std::string& p = vocab_.pieces[i];
    piece_to_id_.emplace(p, static_cast<int32_t>(i));  // the lowest id wins for duplicates
    if (vocab_.types[i] == TokenType::kByte) {
      const int b = byte_piece_value(p);
      if (b >= 0 && byte_to_id_[b] < 0) byte_to_id_[b] = static_cast<int32_t>(i);
    } else if (vocab_.types[i] == TokenType::kNormal || vocab_.types[i] == TokenType::kUserDefined) {
      any_meta = any_meta || p.find(kMetaSpace) != std::string::npos;
      any_space = any_space || p.find(' ') != std::string::npos;
    }
  }
  // llama2.c tokenizer.bin stores ' ' where SentencePiece has '▁'.
  meta_space_ = any_meta || !any_space;
  pair_keys_.reserve(n * 4);
  for (const std::string& p : vocab_.pieces) {
    const std::string_view piece = p;
    size_t prev_at = 0;
    size_t prev_len = 0;
    for_each_char(piece, [&](size_t at, size_t len) {
      if (prev_len > 0) pair_keys_.insert(char_pair_key(piece.substr(prev_at, prev_len), piece.substr(at, len)));
      prev_at = at;
      prev_len = len;
    });
  }
  return ok_status();
}

int32_t SpmTokenizer::find_piece(std::string_view text) const {
  const auto it = piece_to_id_.find(text);
  return it == piece_to_id_.end() ? -1 : it->second;
}

std::string SpmTokenizer::piece(int32_t id) const {
  if (id < 0 || id >= vocab_size()) return {};
  return vocab_.pieces[id];
}

namespace {

// SentencePiece's remove_extra_whitespaces with its identity normalizer,
// where only ' ' is a space: no leading spaces, one space for each run, and
// no trailing space or U+2581 (SentencePiece trims its escaped text, in which
// both read U+2581, so a literal U+2581 goes too, at the end only).
std::string without_extra_spaces(std::string_view text, bool meta_space) {
  std::string out;
  out.reserve(text.size());
  bool after_space = true;  // drops leading spaces
  for (char c : text) {
    if (c == ' ' && after_space) continue;
    out += c;
    after_space = c == ' ';
  }
  while (true) {
    if (!out.empty() && out.back() == ' ') {
      out.pop_back();
    } else if (meta_space && out.ends_with(kMetaSpace)) {
      out.resize(out.size() - kMetaSpace.size());
    } else {
      return out;
    }
  }
}

}  // namespace

std::string SpmTokenizer::normalize(std::string_view raw) const {
  std::string out;
  const std::string cleaned = vocab_.remove_extra_whitespaces ? without_extra_spaces(raw, meta_space_) : std::string();
  const std::string_view text = vocab_.remove_extra_whitespaces ? std::string_view(cleaned) : raw;
  if (text.empty()) return out;
  const std::string_view space = meta_space_ ? kMetaSpace : std::string_view(" ");
  out.reserve(text.size() + 8);
  if (vocab_.add_dummy_prefix) out += space;
  for (char c : text) {
    if (c == ' ') {
      out += space;
    } else {
      out += c;
    }
  }
  return out;
}

Result<std::vector<int32_t>> SpmTokenizer::encode(std::string_view text, int n_bos, int n_eos) const {
  if (n_bos < 0 || n_eos < 0) {
    return Status::error("encode: expected n_bos >= 0 and n_eos >= 0, found " + std::to_string(n_bos) +
                         " and " + std::to_string(n_eos));
  }
  if (n_bos > 0 && vocab_.bos_id < 0) return Status::error("encode: BOS requested but the vocabulary has no BOS token");
  if (n_eos > 0 && vocab_.eos_id < 0) return Status::error("encode: EOS requested but the vocabulary has no EOS token");
  std::vector<int32_t> ids(static_cast<size_t>(n_bos), vocab_.bos_id);
  if (vocab_.remove_extra_whitespaces) {
    LLMPACK_RETURN_IF_ERROR(encode_text(without_extra_spaces(text, meta_space_), &ids));
  } else {
    LLMPACK_RETURN_IF_ERROR(encode_text(text, &ids));
  }
  ids.insert(ids.end(), static_cast<size_t>(n_eos), vocab_.eos_id);
  return ids;
}

// Builds the normalized text and its first symbols (one per UTF-8 character)
// in one pass over the caller's text, so errors name offsets in that text.
Status SpmTokenizer::initial_symbols(std::string_view text, std::string* norm,
                                     std::vector<Symbol>* symbols) const {
  const std::string_view space = meta_space_ ? kMetaSpace : std::string_view(" ");
  const int32_t space_id = find_piece(space);
  norm->reserve(text.size() + 8);
  symbols->reserve(text.size() + 1);
  const auto add_space = [&]() {
    Symbol s;
    s.start = norm->size();
    s.len = space.size();
    s.id = space_id;
    s.fallback = space_id < 0;
    *norm += space;
    symbols->push_back(s);
  };
  if (!text.empty() && vocab_.add_dummy_prefix) add_space();
  for (size_t i = 0; i < text.size();) {
    if (text[i] == ' ') {
      add_space();
      ++i;
      continue;
    }
    Symbol s;
    s.start = norm->size();
    const size_t len = valid_char_length(text, i);
    if (len == 0) {  // an invalid byte: only byte fallback can carry it
      const unsigned char b = static_cast<unsigned char>(text[i]);
      if (byte_to_id_[b] < 0) {
        return Status::error("encode: invalid UTF-8 at byte " + std::to_string(i) + " (" + hex_byte(b) +
                             ") and the vocabulary has no byte-fallback piece <" + hex_byte(b) + ">");
      }
      s.len = 1;
      s.fallback = true;
    } else {
      s.len = len;
      s.id = find_piece(text.substr(i, len));
      s.fallback = s.id < 0;
    }
    norm->append(text.substr(i, s.len));
    i += s.len;
    symbols->push_back(s);
  }
  // Characters without a piece: their bytes' fallback pieces, else <unk>.
  for (Symbol& s : *symbols) {
    if (!s.fallback || s.id >= 0) continue;
    bool bytes_ok = true;
    for (size_t k = 0; k < s.len; ++k) bytes_ok = bytes_ok && byte_to_id_[static_cast<unsigned char>((*norm)[s.start + k])] >= 0;
    if (bytes_ok) continue;
    if (vocab_.unk_id < 0) {
      return Status::error("encode: the character '" + norm->substr(s.start, s.len) +
                           "' is not in the vocabulary, which has neither byte fallback nor an unknown token");
    }
    s.id = vocab_.unk_id;  // still never merged
  }
  for (size_t k = 0; k < symbols->size(); ++k) {
    (*symbols)[k].prev = static_cast<int32_t>(k) - 1;
    (*symbols)[k].next = k + 1 < symbols->size() ? static_cast<int32_t>(k) + 1 : -1;
  }
  return ok_status();
}

void SpmTokenizer::merge_symbols(std::string_view norm, std::vector<Symbol>* symbols_ptr, size_t begin,
                                 size_t end) const {
  std::vector<Symbol>& sym = *symbols_ptr;
  // The right symbol is sym[left].next: it changes only when left merges,
  // which changes left's length, so `size` detects every stale pair.
  struct Pair {
    float score;
    int32_t left;
    uint32_t size;  // bytes of both symbols when queued
    int32_t id;
  };
  // Highest score first; on ties the leftmost pair (llama2.c scans left to
  // right and keeps the first best). Symbol indices keep text order.
  const auto lower = [](const Pair& a, const Pair& b) {
    if (a.score != b.score) return a.score < b.score;
    return a.left > b.left;
  };
  std::vector<Pair> storage;
  storage.reserve(end - begin);
  std::priority_queue<Pair, std::vector<Pair>, decltype(lower)> queue(lower, std::move(storage));
  const auto try_pair = [&](int32_t l, int32_t r) {
    if (l < 0 || r < 0 || sym[l].fallback || sym[r].fallback) return;
    const size_t size = sym[l].len + sym[r].len;
    const int32_t id = find_piece(norm.substr(sym[l].start, size));
    if (id < 0) return;
    const float score = vocab_.scores[id];
    if (!(score > kMinMergeScore)) return;
    queue.push(Pair{score, l, static_cast<uint32_t>(size), id});
  };
  for (size_t k = begin + 1; k < end; ++k) try_pair(static_cast<int32_t>(k) - 1, static_cast<int32_t>(k));
  while (!queue.empty()) {
    const Pair p = queue.top();
    queue.pop();
    Symbol& l = sym[p.left];
    if (l.len == 0 || l.next < 0) continue;
    Symbol& r = sym[l.next];
    if (l.len + r.len != p.size) continue;  // stale: one side has merged since
    l.len += r.len;
    l.id = p.id;
    l.next = r.next;
    if (r.next >= 0) sym[r.next].prev = p.left;
    r.len = 0;
    try_pair(l.prev, p.left);
    try_pair(p.left, l.next);
  }
}

Status SpmTokenizer::encode_text(std::string_view text, std::vector<int32_t>* out) const {
  if (text.empty()) return ok_status();
  std::string norm;
  std::vector<Symbol> symbols;
  LLMPACK_RETURN_IF_ERROR(initial_symbols(text, &norm, &symbols));
  // Segments end where two neighbouring characters never meet inside a piece.
  size_t begin = 0;
  for (size_t k = 1; k <= symbols.size(); ++k) {
    if (k < symbols.size()) {
      const Symbol& a = symbols[k - 1];
      const Symbol& b = symbols[k];
      const bool cut = a.fallback || b.fallback ||
                       !pair_keys_.contains(char_pair_key(norm.substr(a.start, a.len), norm.substr(b.start, b.len)));
      if (!cut) continue;
    }
    merge_symbols(norm, &symbols, begin, k);
    begin = k;
  }
  for (int32_t k = 0; k >= 0; k = symbols[k].next) {
    const Symbol& s = symbols[k];
    if (s.fallback && s.id < 0) {
      for (size_t b = 0; b < s.len; ++b) out->push_back(byte_to_id_[static_cast<unsigned char>(norm[s.start + b])]);
    } else {
      out->push_back(s.id);
    }
  }
  return ok_status();
}

Result<std::string> SpmTokenizer::decode(int32_t prev_id, int32_t id) const {
  if (id < 0 || id >= vocab_size()) {
    return Status::error("decode: token id " + std::to_string(id) + " is outside the vocabulary of " +
                         std::to_string(vocab_size()) + " pieces");
  }
  const TokenType type = vocab_.types[id];
  if (type == TokenType::kControl) return std::string();
  const std::string& p = vocab_.pieces[id];
  if (type == TokenType::kByte) {
    const int b = byte_piece_value(p);
    if (b >= 0) return std::string(1, static_cast<char>(b));
  }
  std::string text;
  if (meta_space_) {
    text.reserve(p.size());
    for (size_t i = 0; i < p.size();) {
      if (p.compare(i, kMetaSpace.size(), kMetaSpace) == 0) {
        text += ' ';
        i += kMetaSpace.size();
      } else {
        text += p[i++];
      }
    }
  } else {
    text = p;
  }
  // The dummy prefix space of the first piece is not part of the text
  // (llama2.c: a piece right after BOS loses its leading space).
  const bool at_start = prev_id < 0 || (vocab_.bos_id >= 0 && prev_id == vocab_.bos_id);
  if (at_start && vocab_.add_dummy_prefix && !text.empty() && text[0] == ' ') text.erase(0, 1);
  return text;
}

}  // namespace llmpack
