#include "tokenizer/bpe_tokenizer.h"

#include <algorithm>
#include <bit>
#include <queue>

#include "tokenizer/pretokenizer_nfc.h"

namespace llmpack {
namespace {

// Inverse of byte_to_unicode for code points below 0x144 (the largest it
// produces), -1 elsewhere.
std::array<int16_t, 0x144> make_unicode_to_byte() {
  std::array<int16_t, 0x144> inv;
  inv.fill(-1);
  for (int b = 0; b < 256; ++b) inv[byte_to_unicode(static_cast<uint8_t>(b))] = static_cast<int16_t>(b);
  return inv;
}

// The raw bytes a byte-level piece stands for; characters outside the
// mapping (not byte-level text) are kept as they are.
std::string byte_level_to_raw(std::string_view piece) {
  static const std::array<int16_t, 0x144> inv = make_unicode_to_byte();
  std::string out;
  out.reserve(piece.size());
  for (size_t i = 0; i < piece.size();) {
    const auto c0 = static_cast<unsigned char>(piece[i]);
    uint32_t cp = c0;
    size_t len = 1;
    if (c0 >= 0xC0 && c0 < 0xE0 && i + 1 < piece.size()) {
      cp = ((c0 & 0x1Fu) << 6) | (static_cast<unsigned char>(piece[i + 1]) & 0x3Fu);
      len = 2;
    }
    if (cp < inv.size() && inv[cp] >= 0 && (len == 2 || cp < 0x80)) {
      out += static_cast<char>(inv[cp]);
    } else {
      out.append(piece.substr(i, len));
    }
    i += len;
  }
  return out;
}

bool is_added(TokenType t) { return t == TokenType::kControl || t == TokenType::kUserDefined; }

}  // namespace

uint32_t byte_to_unicode(uint8_t b) {
  // Printable bytes ('!'..'~', '¡'..'¬', '®'..'ÿ') stand for themselves; the
  // other 68 bytes take U+0100.. in byte order.
  const auto printable = [](unsigned x) { return (x >= 33 && x <= 126) || (x >= 161 && x <= 172) || x >= 174; };
  if (printable(b)) return b;
  uint32_t n = 0;
  for (unsigned x = 0; x < b; ++x) n += printable(x) ? 0 : 1;
  return 256 + n;
}

// One symbol of a word being merged; a merged-away symbol has id -1.
struct BpeTokenizer::Symbol {
  int32_t id;
  int32_t prev;
  int32_t next;
};

Result<std::unique_ptr<BpeTokenizer>> BpeTokenizer::create(BpeVocab vocab) {
  static const StringTable kNoMerges;
  return create(std::move(vocab), kNoMerges);
}

Result<std::unique_ptr<BpeTokenizer>> BpeTokenizer::create(BpeVocab vocab,
                                                          const StringTable& joined_merges) {
  if (!joined_merges.empty() && !vocab.merges.empty())
    return Status::error("BPE vocabulary: merges given both as pairs and joined; expected one form");
  if (!joined_merges.empty() && vocab.merges_from_ranks)
    return Status::error("BPE vocabulary: a merge list given to a vocabulary whose merges come from its ranks");
  std::unique_ptr<BpeTokenizer> tok(new BpeTokenizer(std::move(vocab)));
  LLMPACK_RETURN_IF_ERROR(tok->build(joined_merges));
  return tok;
}

Status BpeTokenizer::build(const StringTable& joined_merges) {
  const size_t n = vocab_.tokens.size();
  if (n == 0) return Status::error("BPE vocabulary: expected at least one token, found none");
  if (n > static_cast<size_t>(INT32_MAX)) return Status::error("BPE vocabulary: too many tokens");
  if (vocab_.types.empty()) vocab_.types.assign(n, TokenType::kNormal);
  if (vocab_.types.size() != n) {
    return Status::error("BPE vocabulary: " + std::to_string(n) + " tokens but " +
                         std::to_string(vocab_.types.size()) + " token types");
  }
  const auto check_id = [&](int32_t id, const std::string& what) -> Status {
    if (id < -1 || id >= static_cast<int32_t>(n)) {
      return Status::error("BPE vocabulary: " + what + " id " + std::to_string(id) +
                           " is outside the vocabulary of " + std::to_string(n) + " tokens");
    }
    return ok_status();
  };
  LLMPACK_RETURN_IF_ERROR(check_id(vocab_.bos_id, "BOS"));
  LLMPACK_RETURN_IF_ERROR(check_id(vocab_.eos_id, "EOS"));
  for (int32_t id : vocab_.eot_ids) LLMPACK_RETURN_IF_ERROR(check_id(id, "end-of-turn"));

  text_to_id_.insert_range(0, static_cast<int32_t>(n));  // the lowest id wins for duplicates
  for (size_t i = 0; i < n; ++i) {
    if (is_added(vocab_.types[i])) {
      const std::string t(vocab_.tokens[i]);
      all_added_.add(t, static_cast<int32_t>(i));
      if (vocab_.types[i] == TokenType::kUserDefined) always_added_.add(t, static_cast<int32_t>(i));
    }
  }
  // A byte's symbol is the token spelled like it (any type, as llama.cpp
  // looks tokens up by text); a vocabulary without one (Falcon lacks some
  // control bytes) drops that byte, as llama.cpp does.
  for (int b = 0; b < 256; ++b) {
    byte_to_id_[b] = text_to_id_.find(stored_form(std::string(1, static_cast<char>(b))));
  }
  LLMPACK_RETURN_IF_ERROR(build_merges(joined_merges));
  auto pre = Pretokenizer::create(vocab_.pretokenizer_regexes);
  if (!pre.ok()) return pre.status();
  pretokenizer_ = std::move(*pre);
  return ok_status();
}

void BpeTokenizer::TokenIndex::reserve(size_t n) {
  size_t cap = 16;
  while (cap < 2 * n) cap *= 2;
  if (cap <= slots_.size()) return;
  ZeroedVector<Slot> old = std::move(slots_);
  slots_ = ZeroedVector<Slot>();
  slots_.resize(cap);  // all tags 0: empty
  populate_for_writing(slots_.data(), cap * sizeof(Slot));  // inserts touch every page
  size_ = 0;
  for (const Slot& s : old) {
    if (s.tag != 0) insert_hashed(std::hash<std::string_view>{}((*keys_)[s.id]), s.id);
  }
}

void BpeTokenizer::TokenIndex::insert(int32_t id) {
  if (2 * (size_ + 1) > slots_.size()) reserve(size_ + 1);
  insert_hashed(std::hash<std::string_view>{}((*keys_)[id]), id);
}

void BpeTokenizer::TokenIndex::insert_hashed(size_t hash, int32_t id) {
  const uint32_t tag = static_cast<uint32_t>(hash >> 32) | 1u;
  const std::string_view key = (*keys_)[id];
  const size_t mask = slots_.size() - 1;
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    Slot& s = slots_[i];
    if (s.tag == 0) {
      s = Slot{tag, id};
      ++size_;
      return;
    }
    if (s.tag == tag && (*keys_)[s.id] == key) return;
  }
}

void BpeTokenizer::TokenIndex::insert_range(int32_t first, int32_t last) {
  if (last <= first) return;
  reserve(size_ + static_cast<size_t>(last - first));
  size_t hashes[kBatch];
  for (int32_t b = first; b < last; b += static_cast<int32_t>(kBatch)) {
    const int32_t e = std::min(last, b + static_cast<int32_t>(kBatch));
    for (int32_t id = b; id < e; ++id) {
      hashes[id - b] = std::hash<std::string_view>{}((*keys_)[id]);
      prefetch_slot(hashes[id - b]);
    }
    for (int32_t id = b; id < e; ++id) insert_hashed(hashes[id - b], id);
  }
}

void BpeTokenizer::TokenIndex::find_batch(const std::string_view* keys, size_t n, int32_t* ids) const {
  size_t hashes[kBatch];
  for (size_t b = 0; b < n; b += kBatch) {
    const size_t m = std::min(kBatch, n - b);
    for (size_t i = 0; i < m; ++i) {
      hashes[i] = std::hash<std::string_view>{}(keys[b + i]);
      if (!slots_.empty()) prefetch_slot(hashes[i]);
    }
    for (size_t i = 0; i < m; ++i) ids[b + i] = find_hashed(keys[b + i], hashes[i]);
  }
}

int32_t BpeTokenizer::TokenIndex::find(std::string_view key) const {
  return find_hashed(key, std::hash<std::string_view>{}(key));
}

int32_t BpeTokenizer::TokenIndex::find_hashed(std::string_view key, size_t h) const {
  if (slots_.empty()) return -1;
  const uint32_t tag = static_cast<uint32_t>(h >> 32) | 1u;
  const size_t mask = slots_.size() - 1;
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    const Slot& s = slots_[i];
    if (s.tag == 0) return -1;
    if (s.tag == tag && (*keys_)[s.id] == key) return s.id;
  }
}

void BpeTokenizer::MergeTable::reserve(size_t n) {
  size_t cap = 16;
  while (cap * 3 < n * 5) cap *= 2;  // at most 60% full
  if (cap <= slots_.size()) return;
  ZeroedVector<Slot> old = std::move(slots_);
  slots_ = ZeroedVector<Slot>();
  slots_.resize(cap);  // all inverted keys 0: empty
  populate_for_writing(slots_.data(), cap * sizeof(Slot));  // inserts touch every page
  shift_ = 64 - std::countr_zero(cap);
  size_ = 0;
  for (const Slot& s : old) {
    if (s.inverted_key != 0) insert(~s.inverted_key, s.merge);
  }
}

void BpeTokenizer::MergeTable::insert(uint64_t key, Merge merge) {
  if ((size_ + 1) * 5 > slots_.size() * 3) reserve(2 * (size_ + 1));
  const size_t mask = slots_.size() - 1;
  for (size_t i = slot(key);; i = (i + 1) & mask) {
    Slot& s = slots_[i];
    if (s.inverted_key == ~key) return;  // the first (best) rank wins
    if (s.inverted_key == 0) {
      s = Slot{~key, merge};
      ++size_;
      return;
    }
  }
}

const BpeTokenizer::Merge* BpeTokenizer::MergeTable::find(uint64_t key) const {
  if (slots_.empty()) return nullptr;
  const size_t mask = slots_.size() - 1;
  for (size_t i = slot(key);; i = (i + 1) & mask) {
    const Slot& s = slots_[i];
    if (s.inverted_key == ~key) return &s.merge;
    if (s.inverted_key == 0) return nullptr;
  }
}

void BpeTokenizer::add_merge(int32_t left, int32_t right, int32_t result, int32_t rank) {
  merge_rank_.insert(pair_key(left, right), Merge{rank, result});
}

Status BpeTokenizer::build_merges(const StringTable& joined_merges) {
  if (vocab_.merges_from_ranks) {
    // tiktoken: tokens are raw bytes (no byte-level spelling), so a split's
    // halves are looked up by their text; added tokens take no part.
    const size_t n = vocab_.tokens.size();
    const auto plain_token = [&](std::string_view text) {
      const int32_t id = text_to_id_.find(text);
      return id >= 0 && !is_added(vocab_.types[id]) ? id : -1;
    };
    // Every split of a token into two tokens is a merge ranked by the token.
    for (size_t t = 0; t < n; ++t) {
      if (is_added(vocab_.types[t])) continue;
      const std::string_view raw = vocab_.tokens[t];
      for (size_t k = 1; k < raw.size(); ++k) {
        const int32_t a = plain_token(raw.substr(0, k));
        if (a < 0) continue;
        const int32_t b = plain_token(raw.substr(k));
        if (b < 0) continue;
        add_merge(a, b, static_cast<int32_t>(t), static_cast<int32_t>(t));
      }
    }
    return ok_status();
  }
  const size_t n_merges = joined_merges.empty() ? vocab_.merges.size() : joined_merges.size();
  if (n_merges > static_cast<size_t>(INT32_MAX)) return Status::error("BPE vocabulary: too many merges");
  // Merges name tokens by their stored text. One whose parts or result are
  // not tokens can never apply to token symbols; it is skipped (counted).
  merge_rank_.reserve(n_merges);
  MergeBatch batch;
  for (size_t r = 0; r < vocab_.merges.size(); ++r) {
    batch.add(vocab_.merges[r].first, vocab_.merges[r].second);
    if (batch.full()) add_merges_by_text(batch, static_cast<int32_t>(r + 1));
  }
  add_merges_by_text(batch, static_cast<int32_t>(vocab_.merges.size()));
  for (size_t r = 0; r < joined_merges.size(); ++r) {
    const std::string_view m = joined_merges[r];
    const size_t space = m.find(' ', 1);  // a part may itself start with a space
    if (space == std::string_view::npos) {
      return Status::error("merge " + std::to_string(r) + " \"" + std::string(m) +
                           "\" is not two tokens separated by a space");
    }
    batch.add(m.substr(0, space), m.substr(space + 1));
    if (batch.full()) add_merges_by_text(batch, static_cast<int32_t>(r + 1));
  }
  add_merges_by_text(batch, static_cast<int32_t>(joined_merges.size()));
  return ok_status();
}

void BpeTokenizer::MergeBatch::add(std::string_view a, std::string_view b) {
  joined[count].assign(a).append(b);
  keys[3 * count] = a;
  keys[3 * count + 1] = b;
  keys[3 * count + 2] = joined[count];
  ++count;
}

void BpeTokenizer::add_merges_by_text(MergeBatch& batch, int32_t end_rank) {
  std::array<int32_t, 3 * MergeBatch::kMerges> ids;
  text_to_id_.find_batch(batch.keys.data(), 3 * batch.count, ids.data());
  const int32_t first_rank = end_rank - static_cast<int32_t>(batch.count);
  const auto known = [&](size_t k) { return ids[3 * k] >= 0 && ids[3 * k + 1] >= 0 && ids[3 * k + 2] >= 0; };
  for (size_t k = 0; k < batch.count; ++k) {  // the merge table's slots, as the index's were
    if (known(k)) merge_rank_.prefetch(pair_key(ids[3 * k], ids[3 * k + 1]));
  }
  for (size_t k = 0; k < batch.count; ++k) {
    if (!known(k)) {
      ++skipped_merges_;
      continue;
    }
    add_merge(ids[3 * k], ids[3 * k + 1], ids[3 * k + 2], first_rank + static_cast<int32_t>(k));
  }
  batch.count = 0;
}

std::string BpeTokenizer::raw_bytes(int32_t id) const {
  const std::string_view t = vocab_.tokens[id];
  if (vocab_.byte_level_pieces && !is_added(vocab_.types[id])) return byte_level_to_raw(t);
  return std::string(t);
}

std::string BpeTokenizer::piece(int32_t id) const {
  if (id < 0 || id >= vocab_size()) return {};
  return std::string(vocab_.tokens[id]);
}

std::vector<int32_t> BpeTokenizer::special_token_ids() const {
  std::vector<int32_t> ids;
  for (size_t i = 0; i < vocab_.types.size(); ++i) {
    if (is_added(vocab_.types[i])) ids.push_back(static_cast<int32_t>(i));
  }
  return ids;
}

std::vector<int32_t> BpeTokenizer::end_of_turn_ids() const {
  std::vector<int32_t> ids = vocab_.eot_ids;
  for (int32_t id : Tokenizer::end_of_turn_ids()) {
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  }
  ids.erase(std::remove(ids.begin(), ids.end(), vocab_.eos_id), ids.end());
  return ids;
}

Result<std::string> BpeTokenizer::decode(int32_t prev_id, int32_t id) const {
  if (id < 0 || id >= vocab_size()) {
    return Status::error("decode: token id " + std::to_string(id) + " is outside the vocabulary of " +
                         std::to_string(vocab_size()) + " tokens");
  }
  if (vocab_.types[id] == TokenType::kControl) return std::string();
  return raw_bytes(id);
}

Result<std::vector<int32_t>> BpeTokenizer::encode(std::string_view text, int n_bos, int n_eos) const {
  EncodeOptions options;
  options.n_bos = n_bos;
  options.n_eos = n_eos;
  return encode_impl(text, options);
}

Result<std::vector<int32_t>> BpeTokenizer::encode(std::string_view text, const EncodeOptions& options) const {
  return encode_impl(text, options);
}

Result<std::vector<int32_t>> BpeTokenizer::encode_impl(std::string_view text, const EncodeOptions& options) const {
  if (options.n_bos < 0 || options.n_eos < 0) {
    return Status::error("encode: expected n_bos >= 0 and n_eos >= 0, found " + std::to_string(options.n_bos) +
                         " and " + std::to_string(options.n_eos));
  }
  if (options.n_bos > 0 && vocab_.bos_id < 0) {
    return Status::error("encode: BOS requested but the vocabulary has no BOS token");
  }
  if (options.n_eos > 0 && vocab_.eos_id < 0) {
    return Status::error("encode: EOS requested but the vocabulary has no EOS token");
  }
  std::vector<int32_t> ids(static_cast<size_t>(options.n_bos), vocab_.bos_id);
  ids.reserve(text.size() / 3 + 8);
  const SpecialTokenMatcher& matcher = options.parse_special ? all_added_ : always_added_;
  if (matcher.empty()) {
    LLMPACK_RETURN_IF_ERROR(encode_plain(text, &ids));
  } else {
    for (const SpecialTokenMatcher::Segment& seg : matcher.split(text)) {
      if (seg.id >= 0) {
        ids.push_back(seg.id);
      } else {
        LLMPACK_RETURN_IF_ERROR(encode_plain(seg.text, &ids));
      }
    }
  }
  ids.insert(ids.end(), static_cast<size_t>(options.n_eos), vocab_.eos_id);
  return ids;
}

Status BpeTokenizer::encode_plain(std::string_view text, std::vector<int32_t>* out) const {
  std::string normalized;
  if (vocab_.nfc) {
    normalized = nfc_normalize(text);
    text = normalized;
  }
  auto words = pretokenizer_->split(text);
  if (!words.ok()) return words.status();
  for (std::string_view w : *words) encode_word(w, out);
  return ok_status();
}

std::string BpeTokenizer::stored_form(std::string_view raw) const {
  if (!vocab_.byte_level_pieces) return std::string(raw);
  std::string out;
  out.reserve(raw.size() * 2);
  for (char c : raw) {
    const uint32_t cp = byte_to_unicode(static_cast<uint8_t>(c));
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  return out;
}

void BpeTokenizer::encode_word(std::string_view word, std::vector<int32_t>* out) const {
  if (word.size() == 1) {
    const int32_t id = byte_to_id_[static_cast<unsigned char>(word[0])];
    if (id >= 0) out->push_back(id);
    return;
  }
  if (vocab_.ignore_merges) {
    if (const int32_t id = text_to_id_.find(stored_form(word)); id >= 0) {
      out->push_back(id);
      return;
    }
  }
  const auto n = static_cast<int32_t>(word.size());
  std::vector<Symbol> sym(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) sym[i] = {byte_to_id_[static_cast<unsigned char>(word[i])], i - 1, i + 1};
  sym[n - 1].next = -1;
  struct Candidate {
    int32_t rank, left, right, left_id, right_id, result;
  };
  // Lowest rank first, then leftmost.
  const auto worse = [](const Candidate& x, const Candidate& y) {
    return x.rank > y.rank || (x.rank == y.rank && x.left > y.left);
  };
  std::priority_queue<Candidate, std::vector<Candidate>, decltype(worse)> queue(worse);
  const auto try_pair = [&](int32_t l, int32_t r) {
    if (l < 0 || r < 0 || sym[l].id < 0 || sym[r].id < 0) return;
    const Merge* m = merge_rank_.find(pair_key(sym[l].id, sym[r].id));
    if (m != nullptr) queue.push({m->rank, l, r, sym[l].id, sym[r].id, m->result});
  };
  for (int32_t i = 0; i + 1 < n; ++i) try_pair(i, i + 1);
  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    // Stale when either side merged since the pair was queued.
    if (sym[c.left].id != c.left_id || sym[c.right].id != c.right_id || sym[c.left].next != c.right) continue;
    sym[c.left].id = c.result;
    sym[c.right].id = -1;
    sym[c.left].next = sym[c.right].next;
    if (sym[c.right].next >= 0) sym[sym[c.right].next].prev = c.left;
    try_pair(sym[c.left].prev, c.left);
    try_pair(c.left, sym[c.left].next);
  }
  for (int32_t i = 0; i >= 0; i = sym[i].next) {
    if (sym[i].id >= 0) out->push_back(sym[i].id);  // -1: a byte without a token
  }
}

}  // namespace llmpack
