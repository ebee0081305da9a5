#include "tokenizer/tokenizer_loader.h"

#include <cstring>

#include "format/byte_cursor.h"
#include "format/mapped_file.h"
#include "tokenizer/hf_tokenizer_json.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/tiktoken.h"

namespace llmpack {
namespace {

// llama2.c keeps pieces in buffers of 2 * max_token_length + 3 bytes; a
// bound far above any real vocabulary (27 for Llama 2) that stops a hostile
// header from claiming gigabyte pieces.
constexpr int32_t kMaxPieceLength = 1 << 16;

Status read_llama2c_vocab(std::span<const uint8_t> bytes, SpmVocab* vocab) {
  ByteCursor cur(bytes, "llama2.c tokenizer");
  int32_t max_len = 0;
  LLMPACK_RETURN_IF_ERROR(cur.read(&max_len, "max_token_length"));
  if (max_len <= 0 || max_len > kMaxPieceLength) {
    return Status::error("llama2.c tokenizer: expected max_token_length in 1.." + std::to_string(kMaxPieceLength) +
                         ", found " + std::to_string(max_len));
  }
  // Each token takes at least 8 bytes, which bounds the reservation.
  vocab->pieces.reserve(cur.remaining() / 8);
  vocab->scores.reserve(cur.remaining() / 8);
  while (cur.remaining() > 0) {
    const size_t id = vocab->pieces.size();
    const std::string what = "token " + std::to_string(id);
    float score = 0;
    int32_t len = 0;
    LLMPACK_RETURN_IF_ERROR(cur.read(&score, what + " score"));
    LLMPACK_RETURN_IF_ERROR(cur.read(&len, what + " length"));
    if (len < 0 || len > max_len) {
      return Status::error("llama2.c tokenizer: " + what + " has length " + std::to_string(len) +
                           ", expected 0.." + std::to_string(max_len) + " (max_token_length)");
    }
    std::span<const uint8_t> text;
    LLMPACK_RETURN_IF_ERROR(cur.take(static_cast<uint64_t>(len), &text, what + " text"));
    vocab->pieces.emplace_back(reinterpret_cast<const char*>(text.data()), text.size());
    vocab->scores.push_back(score);
  }
  return ok_status();
}

// Token types llama2.c leaves implicit: 0 <unk>, 1 BOS and 2 EOS are special,
// "<0xHH>" pieces are bytes.
void infer_llama2c_types(SpmVocab* vocab) {
  const size_t n = vocab->pieces.size();
  vocab->types.assign(n, TokenType::kNormal);
  for (size_t i = 0; i < n; ++i) {
    if (byte_piece_value(vocab->pieces[i]) >= 0) vocab->types[i] = TokenType::kByte;
  }
  if (n > 0) {
    vocab->types[0] = TokenType::kUnknown;
    vocab->unk_id = 0;
  }
  if (n > 1) {
    vocab->types[1] = TokenType::kControl;
    vocab->bos_id = 1;
  }
  if (n > 2) {
    vocab->types[2] = TokenType::kControl;
    vocab->eos_id = 2;
  }
  vocab->add_bos = true;
  vocab->add_dummy_prefix = true;
}

// A special-token id from GGUF metadata: absent gives `fallback` (when it is
// in range), u32 max / negative mean "none".
Result<int32_t> gguf_special_id(const GgufFile& gguf, std::string_view key, int32_t fallback, size_t n_vocab) {
  const GgufValue* v = gguf.find(key);
  if (v == nullptr) return fallback < static_cast<int64_t>(n_vocab) ? fallback : -1;
  const std::optional<int64_t> id = gguf.get_int(key);
  if (!id) return Status::error(std::string(key) + ": expected an integer token id");
  if (*id < 0 || *id == 0xFFFFFFFFll) return -1;
  if (*id >= static_cast<int64_t>(n_vocab)) {
    return Status::error(std::string(key) + " is " + std::to_string(*id) + ", outside the vocabulary of " +
                         std::to_string(n_vocab) + " tokens");
  }
  return static_cast<int32_t>(*id);
}

Status read_gguf_types(const GgufFile& gguf, size_t n, SpmVocab* vocab) {
  const GgufValue* value = gguf.find("tokenizer.ggml.token_type");
  if (value == nullptr) return ok_status();  // all normal
  // The file's signed array read in place; any other integer array through
  // a copy (get_int_array), which a vocabulary's 1 MB need not pay.
  std::optional<std::vector<int64_t>> copied;
  const auto* types = std::get_if<std::vector<int64_t>>(&value->value);
  if (types == nullptr) {
    copied = gguf.get_int_array("tokenizer.ggml.token_type");
    if (!copied) return Status::error("tokenizer.ggml.token_type: expected an array of integers");
    types = &*copied;
  }
  if (types->size() != n) {
    return Status::error("tokenizer.ggml.token_type has " + std::to_string(types->size()) +
                         " entries, expected one per token (" + std::to_string(n) + ")");
  }
  vocab->types.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t t = (*types)[i];
    if (t < 0 || t > 6) {
      return Status::error("tokenizer.ggml.token_type of token " + std::to_string(i) + " is " + std::to_string(t) +
                           ", expected 1..6 (normal, unknown, control, user-defined, unused, byte)");
    }
    vocab->types[i] = t == 0 ? TokenType::kNormal : static_cast<TokenType>(t);  // 0: undefined
  }
  return ok_status();
}

}  // namespace

Result<std::unique_ptr<SpmTokenizer>> parse_llama2c_tokenizer(std::span<const uint8_t> bytes, int32_t vocab_size) {
  SpmVocab vocab;
  LLMPACK_RETURN_IF_ERROR(read_llama2c_vocab(bytes, &vocab));
  const size_t n = vocab.pieces.size();
  if (vocab_size > 0 && n != static_cast<size_t>(vocab_size)) {
    return Status::error("llama2.c tokenizer: tokenizer has " + std::to_string(n) + " tokens, the model expects " +
                         std::to_string(vocab_size));
  }
  if (n == 0) return Status::error("llama2.c tokenizer: expected at least one token, the file has none");
  infer_llama2c_types(&vocab);
  return SpmTokenizer::create(std::move(vocab));
}

Result<std::unique_ptr<SpmTokenizer>> load_llama2c_tokenizer(const std::string& path, int32_t vocab_size) {
  auto file = MappedFile::open(path);
  if (!file.ok()) return file.status().with_context("loading tokenizer " + path);
  return parse_llama2c_tokenizer((*file)->bytes(), vocab_size).with_context("loading tokenizer " + path);
}

Result<std::unique_ptr<SpmTokenizer>> load_spm_from_gguf(const GgufFile& gguf) {
  const std::optional<std::string> model = gguf.get_string("tokenizer.ggml.model");
  if (!model) return Status::error("GGUF tokenizer: tokenizer.ggml.model is missing (expected \"llama\")");
  if (*model != "llama") {
    return Status::error("GGUF tokenizer: tokenizer.ggml.model \"" + *model +
                         "\" is not supported (only \"llama\", SentencePiece BPE, so far)");
  }
  const StringTable* tokens = gguf.get_string_array("tokenizer.ggml.tokens");
  if (tokens == nullptr) return Status::error("GGUF tokenizer: tokenizer.ggml.tokens is missing or not a string array");
  const size_t n = tokens->size();
  if (n == 0) return Status::error("GGUF tokenizer: tokenizer.ggml.tokens is empty");
  SpmVocab vocab;
  vocab.pieces = tokens->to_vector();
  if (gguf.find("tokenizer.ggml.scores") != nullptr) {
    const std::optional<std::vector<double>> scores = gguf.get_float_array("tokenizer.ggml.scores");
    if (!scores) return Status::error("GGUF tokenizer: tokenizer.ggml.scores: expected an array of floats");
    if (scores->size() != n) {
      return Status::error("GGUF tokenizer: tokenizer.ggml.scores has " + std::to_string(scores->size()) +
                           " entries, expected one per token (" + std::to_string(n) + ")");
    }
    vocab.scores.assign(scores->begin(), scores->end());
  }
  Status st = read_gguf_types(gguf, n, &vocab);
  if (!st.ok()) return st.with_context("GGUF tokenizer");
  // Defaults are llama.cpp's for SentencePiece vocabularies.
  auto bos = gguf_special_id(gguf, "tokenizer.ggml.bos_token_id", 1, n);
  auto eos = gguf_special_id(gguf, "tokenizer.ggml.eos_token_id", 2, n);
  auto unk = gguf_special_id(gguf, "tokenizer.ggml.unknown_token_id", 0, n);
  for (auto* r : {&bos, &eos, &unk}) {
    if (!r->ok()) return r->status().with_context("GGUF tokenizer");
  }
  vocab.bos_id = *bos;
  vocab.eos_id = *eos;
  vocab.unk_id = *unk;
  const auto flag = [&](std::string_view key, bool fallback) -> Result<bool> {
    if (gguf.find(key) == nullptr) return fallback;
    const std::optional<bool> b = gguf.get_bool(key);
    if (!b) return Status::error("GGUF tokenizer: " + std::string(key) + ": expected a bool");
    return *b;
  };
  LLMPACK_ASSIGN_OR_RETURN(vocab.add_bos, flag("tokenizer.ggml.add_bos_token", true));
  LLMPACK_ASSIGN_OR_RETURN(vocab.add_dummy_prefix, flag("tokenizer.ggml.add_space_prefix", true));
  LLMPACK_ASSIGN_OR_RETURN(vocab.remove_extra_whitespaces, flag("tokenizer.ggml.remove_extra_whitespaces", false));
  return SpmTokenizer::create(std::move(vocab)).with_context("GGUF tokenizer");
}

Result<std::unique_ptr<BpeTokenizer>> load_bpe_from_gguf(const GgufFile& gguf) {
  const std::optional<std::string> model = gguf.get_string("tokenizer.ggml.model");
  if (model != "gpt2") {
    return Status::error("GGUF tokenizer: expected tokenizer.ggml.model \"gpt2\", found " +
                         (model ? "\"" + *model + "\"" : std::string("none")));
  }
  const StringTable* tokens = gguf.get_string_array("tokenizer.ggml.tokens");
  if (tokens == nullptr) return Status::error("GGUF tokenizer: tokenizer.ggml.tokens is missing or not a string array");
  const size_t n = tokens->size();
  if (n == 0) return Status::error("GGUF tokenizer: tokenizer.ggml.tokens is empty");
  BpeVocab vocab;
  vocab.tokens = *tokens;  // shares the file's storage (copy on write)
  SpmVocab types_holder;
  Status st = read_gguf_types(gguf, n, &types_holder);
  if (!st.ok()) return st.with_context("GGUF tokenizer");
  vocab.types = std::move(types_holder.types);
  const StringTable* merges = gguf.get_string_array("tokenizer.ggml.merges");
  if (merges == nullptr) return Status::error("GGUF tokenizer: tokenizer.ggml.merges is missing or not a string array");
  const std::string pre = gguf.get_string("tokenizer.ggml.pre").value_or("default");
  auto regexes = pretokenizer_regexes(pre);
  if (!regexes.ok()) return regexes.status().with_context("GGUF tokenizer (tokenizer.ggml.pre)");
  vocab.pretokenizer_regexes = std::move(*regexes);
  // llama.cpp's rule: only Llama 3 maps whole pre-tokens that are tokens.
  vocab.ignore_merges = pre == "llama-bpe" || pre == "llama3";
  // llmpack export writes this for tokenizer.json files with an NFC
  // normalizer (Qwen2/3); llama.cpp GGUFs have no such key and no NFC.
  if (gguf.find("tokenizer.llmpack.nfc") != nullptr) {
    const std::optional<bool> nfc = gguf.get_bool("tokenizer.llmpack.nfc");
    if (!nfc) return Status::error("GGUF tokenizer: tokenizer.llmpack.nfc: expected a bool");
    vocab.nfc = *nfc;
  }
  auto bos = gguf_special_id(gguf, "tokenizer.ggml.bos_token_id", -1, n);
  auto eos = gguf_special_id(gguf, "tokenizer.ggml.eos_token_id", -1, n);
  auto eot = gguf_special_id(gguf, "tokenizer.ggml.eot_token_id", -1, n);
  auto eom = gguf_special_id(gguf, "tokenizer.ggml.eom_token_id", -1, n);
  for (auto* r : {&bos, &eos, &eot, &eom}) {
    if (!r->ok()) return r->status().with_context("GGUF tokenizer");
  }
  vocab.bos_id = *bos;
  vocab.eos_id = *eos;
  for (int32_t id : {*eot, *eom}) {
    if (id >= 0 && id != vocab.eos_id) vocab.eot_ids.push_back(id);
  }
  if (gguf.find("tokenizer.ggml.add_bos_token") != nullptr) {
    const std::optional<bool> b = gguf.get_bool("tokenizer.ggml.add_bos_token");
    if (!b) return Status::error("GGUF tokenizer: tokenizer.ggml.add_bos_token: expected a bool");
    vocab.add_bos = *b && vocab.bos_id >= 0;
  }
  return BpeTokenizer::create(std::move(vocab), *merges).with_context("GGUF tokenizer");
}

Result<std::unique_ptr<Tokenizer>> load_tokenizer_from_gguf(const GgufFile& gguf) {
  const std::optional<std::string> model = gguf.get_string("tokenizer.ggml.model");
  if (model == "gpt2") {
    auto tok = load_bpe_from_gguf(gguf);
    if (!tok.ok()) return tok.status();
    return std::unique_ptr<Tokenizer>(std::move(*tok));
  }
  if (model && *model != "llama") {
    return Status::error("GGUF tokenizer: tokenizer.ggml.model \"" + *model +
                         "\" is not supported (\"llama\" SentencePiece BPE or \"gpt2\" byte-level BPE)");
  }
  auto tok = load_spm_from_gguf(gguf);
  if (!tok.ok()) return tok.status();
  return std::unique_ptr<Tokenizer>(std::move(*tok));
}

Result<std::unique_ptr<SpmTokenizer>> spm_from_sentencepiece_model(const SentencePieceModel& model) {
  if (model.model_type != 2) {
    return Status::error("SentencePiece model: model_type " + std::to_string(model.model_type) +
                         (model.model_type == 1 ? " (unigram)" : "") + " is not supported (only 2, BPE)");
  }
  const size_t n = model.pieces.size();
  SpmVocab vocab;
  vocab.pieces = model.pieces;
  vocab.scores = model.scores;
  vocab.types.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const int32_t t = i < model.types.size() ? model.types[i] : 1;
    vocab.types[i] = t >= 1 && t <= 6 ? static_cast<TokenType>(t) : TokenType::kNormal;
  }
  const auto id = [&](int32_t v) { return v >= 0 && static_cast<size_t>(v) < n ? v : -1; };
  vocab.bos_id = id(model.bos_id);
  vocab.eos_id = id(model.eos_id);
  vocab.unk_id = id(model.unk_id);
  vocab.add_bos = vocab.bos_id >= 0;
  vocab.add_dummy_prefix = model.add_dummy_prefix;
  vocab.remove_extra_whitespaces = model.remove_extra_whitespaces;
  return SpmTokenizer::create(std::move(vocab)).with_context("SentencePiece model");
}

namespace {

template <typename T>
Result<std::unique_ptr<Tokenizer>> as_tokenizer(Result<std::unique_ptr<T>> r, const std::string& context) {
  if (!r.ok()) return context.empty() ? r.status() : r.status().with_context(context);
  return std::unique_ptr<Tokenizer>(std::move(*r));
}

}  // namespace

Result<std::unique_ptr<Tokenizer>> load_tokenizer(const std::string& path) {
  const std::string context = "loading tokenizer " + path;
  auto file = MappedFile::open(path);
  if (!file.ok()) return file.status().with_context(context);
  const std::span<const uint8_t> bytes = (*file)->bytes();
  if (bytes.size() >= 4 && std::memcmp(bytes.data(), "GGUF", 4) == 0) {
    auto gguf = GgufFile::open(path);
    if (!gguf.ok()) return gguf.status().with_context(context);
    return as_tokenizer(load_tokenizer_from_gguf(**gguf), context);
  }
  size_t first = 0;
  while (first < bytes.size() && (bytes[first] == ' ' || bytes[first] == '\n' || bytes[first] == '\r' ||
                                  bytes[first] == '\t')) {
    ++first;
  }
  if ((bytes.size() >= 2 && bytes[0] == 0x1F && bytes[1] == 0x8B) || (first < bytes.size() && bytes[first] == '{')) {
    // load_hf_tokenizer_json adds the path to its messages itself.
    return as_tokenizer(load_hf_tokenizer_json(path), "");
  }
  if (looks_like_tiktoken(bytes)) return as_tokenizer(load_tiktoken(path), "");
  // A SentencePiece ModelProto starts with field 1 (a piece), wire type 2.
  if (!bytes.empty() && bytes[0] == 0x0A) {
    auto model = parse_sentencepiece_model(bytes);
    if (model.ok()) return as_tokenizer(spm_from_sentencepiece_model(*model), context);
  }
  auto tok = parse_llama2c_tokenizer(bytes, -1);
  if (!tok.ok()) {
    return tok.status().with_context(context +
                                     " (not GGUF, tokenizer.json, tiktoken or SentencePiece, so read as a llama2.c "
                                     "tokenizer.bin)");
  }
  return std::unique_ptr<Tokenizer>(std::move(*tok));
}

}  // namespace llmpack
