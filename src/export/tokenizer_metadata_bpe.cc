#include "export/tokenizer_metadata_bpe.h"

#include <algorithm>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/utf8.h"
#include "tokenizer/pretokenizer.h"

namespace llmpack {
namespace {

// Raw bytes spelled with GPT-2's byte-level characters ("Ġthe").
std::string byte_level(std::string_view raw) {
  std::string out;
  for (char c : raw) append_utf8(byte_to_unicode(static_cast<uint8_t>(c)), &out);
  return out;
}

TokenType type_of(const BpeVocab& v, size_t id) { return id < v.types.size() ? v.types[id] : TokenType::kNormal; }

// Texts that tell the known pre-tokenizers apart: contractions in both
// cases, digit runs, whitespace and newline runs, scripts without spaces,
// symbols and emoji.
const std::vector<std::string_view>& probe_texts() {
  static const std::vector<std::string_view> t = {
      "Hello World! It's a test. HOW'S IT GOING? we'Ll, they'RE, I'M, don't 'd 'T",
      "   leading spaces\tand\ttabs\n\n\nnewlines \n  \n  trailing   ",
      "numbers 1 12 123 1234 12345 3.14159 1,000,000 x2y34z",
      "\xC3\x80\xC3\x89\xC3\x8E \xC3\xB1 \xC3\x9F \xD0\x9F\xD1\x80\xD0\xB8\xD0\xB2\xD0\xB5\xD1\x82 "
      "\xE4\xBD\xA0\xE5\xA5\xBD\xE4\xB8\x96\xE7\x95\x8C \xE3\x81\x93\xE3\x82\x93 \xEC\x95\x88\xEB\x85\x95 "
      "\xF0\x9F\xA6\x99\xF0\x9F\xA6\x99 \xE2\x88\x91",
      "symbols !!! ??? ... --- ___ +++ === <<>> ${var} @user #tag `code` ~^|",
      "mixed\r\nline\rendings\x0b\x0c x  \t  y\n\t\n",
  };
  return t;
}

Result<std::vector<std::vector<std::string>>> splits(const std::vector<std::string>& regexes) {
  LLMPACK_ASSIGN_OR_RETURN(auto pre, Pretokenizer::create(regexes));
  std::vector<std::vector<std::string>> out;
  for (std::string_view t : probe_texts()) {
    LLMPACK_ASSIGN_OR_RETURN(auto words, pre->split(t));
    out.emplace_back(words.begin(), words.end());
  }
  return out;
}

// tiktoken has no merge list: any adjacent pair whose bytes join into a
// token merges, with that token's rank. A merge list says the same when it
// holds every split (a, b) of every token t into two tokens, in t's rank
// order (within a token by the ranks of a, then b: the order Hugging Face's
// converter writes, so Llama 3's tokenizer.json comes out again). Ranks are
// ids; tokens are raw bytes.
std::vector<std::string> merges_from_ranks(const BpeVocab& v) {
  std::unordered_map<std::string_view, int32_t> rank;
  for (size_t i = 0; i < v.tokens.size(); ++i)
    if (type_of(v, i) == TokenType::kNormal) rank.emplace(v.tokens[i], static_cast<int32_t>(i));
  std::vector<std::string> merges;
  std::vector<std::pair<std::pair<int32_t, int32_t>, size_t>> splits;  // ((rank a, rank b), length of a)
  for (size_t id = 0; id < v.tokens.size(); ++id) {
    const std::string_view raw = v.tokens[id];
    if (raw.size() < 2 || type_of(v, id) != TokenType::kNormal) continue;
    splits.clear();
    for (size_t cut = 1; cut < raw.size(); ++cut) {
      auto a = rank.find(raw.substr(0, cut));
      if (a == rank.end()) continue;
      auto b = rank.find(raw.substr(cut));
      if (b != rank.end()) splits.push_back({{a->second, b->second}, cut});
    }
    std::sort(splits.begin(), splits.end());
    for (const auto& [ranks, cut] : splits)
      merges.push_back(byte_level(raw.substr(0, cut)) + " " + byte_level(raw.substr(cut)));
  }
  return merges;
}

}  // namespace

Result<std::string> gguf_pre_kind(const BpeVocab& vocab) {
  const std::vector<std::string> kinds = known_pretokenizer_kinds();
  for (const std::string& kind : kinds) {
    auto r = pretokenizer_regexes(kind);
    if (r.ok() && *r == vocab.pretokenizer_regexes) return kind;
  }
  LLMPACK_ASSIGN_OR_RETURN(const auto want, splits(vocab.pretokenizer_regexes));
  for (const std::string& kind : kinds) {
    auto r = pretokenizer_regexes(kind);
    if (!r.ok()) continue;
    auto got = splits(*r);
    if (got.ok() && *got == want) return kind;
  }
  std::string regexes;
  for (const auto& r : vocab.pretokenizer_regexes) regexes += (regexes.empty() ? "" : ", ") + ("/" + r + "/");
  return error_status("the tokenizer's pre-tokenizer (" + regexes +
                      ") splits text like none of the GGUF tokenizer.ggml.pre kinds llmpack knows");
}

Result<TokenizerMetadata> bpe_tokenizer_metadata(const BpeTokenizer& tok,
                                                 const std::optional<std::string>& chat_template) {
  const BpeVocab& v = tok.vocab();
  LLMPACK_ASSIGN_OR_RETURN(const std::string pre, gguf_pre_kind(v));
  // The GGUF loader turns ignore_merges on for Llama 3's kinds only.
  const bool gguf_ignore_merges = pre == "llama-bpe" || pre == "llama3";
  if (gguf_ignore_merges != v.ignore_merges)
    return error_status("the tokenizer " + std::string(v.ignore_merges ? "maps" : "does not map") +
                        " whole pre-tokens straight to tokens, which a GGUF with tokenizer.ggml.pre \"" + pre +
                        "\" cannot say");
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  tokens.reserve(v.tokens.size());
  types.reserve(v.tokens.size());
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    const TokenType t = type_of(v, i);
    const bool spell = !v.byte_level_pieces && (t == TokenType::kNormal || t == TokenType::kByte);
    tokens.push_back(spell ? byte_level(v.tokens[i]) : std::string(v.tokens[i]));
    types.push_back(static_cast<int32_t>(t));
  }
  std::vector<std::string> merges;
  if (v.merges_from_ranks) {
    merges = merges_from_ranks(v);
  } else {
    merges.reserve(v.merges.size());
    for (const auto& [a, b] : v.merges) merges.push_back(a + " " + b);
  }
  TokenizerMetadata m;
  m.vocab_size = static_cast<int64_t>(tokens.size());
  m.bos_id = v.bos_id;
  m.eos_id = v.eos_id;
  // End-of-turn ids: "<|eom_id|>" is Llama 3.1's end-of-message, the first
  // other one is the end of turn.
  int64_t eot = -1, eom = -1;
  for (int32_t id : v.eot_ids) {
    if (id < 0 || id == v.eos_id || static_cast<size_t>(id) >= v.tokens.size()) continue;
    if (v.tokens[id] == "<|eom_id|>" && eom < 0) eom = id;
    else if (eot < 0) eot = id;
    else if (eom < 0) eom = id;
  }
  const size_t n_merges = merges.size();
  m.keys.emplace_back("tokenizer.ggml.model", gguf_string("gpt2"));
  m.keys.emplace_back("tokenizer.ggml.pre", gguf_string(pre));
  m.keys.emplace_back("tokenizer.ggml.tokens", gguf_string_array(std::move(tokens)));
  m.keys.emplace_back("tokenizer.ggml.token_type", gguf_i32_array(types));
  m.keys.emplace_back("tokenizer.ggml.merges", gguf_string_array(std::move(merges)));
  if (v.bos_id >= 0) m.keys.emplace_back("tokenizer.ggml.bos_token_id", gguf_u32(v.bos_id));
  if (v.eos_id >= 0) m.keys.emplace_back("tokenizer.ggml.eos_token_id", gguf_u32(v.eos_id));
  if (eot >= 0) m.keys.emplace_back("tokenizer.ggml.eot_token_id", gguf_u32(eot));
  if (eom >= 0) m.keys.emplace_back("tokenizer.ggml.eom_token_id", gguf_u32(eom));
  m.keys.emplace_back("tokenizer.ggml.add_bos_token", gguf_bool(v.add_bos && v.bos_id >= 0));
  m.keys.emplace_back("tokenizer.ggml.add_eos_token", gguf_bool(false));
  // No llama.cpp key says "normalize to NFC first" (Qwen2/3's tokenizer.json
  // does); the loader reads this one.
  if (v.nfc) m.keys.emplace_back("tokenizer.llmpack.nfc", gguf_bool(true));
  if (chat_template) m.keys.emplace_back("tokenizer.chat_template", gguf_string(*chat_template));
  m.description = "byte-level BPE (" + std::to_string(m.vocab_size) + " tokens, " + std::to_string(n_merges) +
                  " merges, pre-tokenizer " + pre + ")";
  return m;
}

bool pad_bpe_tokenizer_metadata(TokenizerMetadata* m, int64_t model_vocab) {
  if (m->vocab_size >= model_vocab) return false;
  StringTable* tokens = nullptr;
  std::vector<int64_t>* types = nullptr;
  bool gpt2 = false;
  for (auto& [key, value] : m->keys) {
    if (key == "tokenizer.ggml.model") gpt2 = std::get_if<std::string>(&value.value) != nullptr &&
                                              std::get<std::string>(value.value) == "gpt2";
    if (key == "tokenizer.ggml.tokens") tokens = std::get_if<StringTable>(&value.value);
    if (key == "tokenizer.ggml.token_type") types = std::get_if<std::vector<int64_t>>(&value.value);
  }
  if (!gpt2 || tokens == nullptr || types == nullptr || tokens->size() != types->size()) return false;
  for (int64_t id = static_cast<int64_t>(tokens->size()); id < model_vocab; ++id) {
    tokens->push_back("[PAD" + std::to_string(id) + "]");
    types->push_back(static_cast<int64_t>(TokenType::kUnused));
  }
  m->vocab_size = model_vocab;
  return true;
}

}  // namespace llmpack
