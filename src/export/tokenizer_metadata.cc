// Tokenizer files -> the tokenizer.* GGUF keys of a SentencePiece-style
// vocabulary (tokenizer.ggml.model "llama") or a byte-level BPE one ("gpt2",
// tokenizer_metadata_bpe.h), so the tokenizer travels inside the package (E4).
#include <cstring>
#include <filesystem>

#include "export/model_source.h"
#include "export/tokenizer_metadata_bpe.h"
#include "format/mapped_file.h"
#include "format/sentencepiece_model.h"
#include "tokenizer/hf_tokenizer_json.h"
#include "tokenizer/hf_tokenizer_json_parser.h"
#include "tokenizer/tiktoken.h"
#include "tokenizer/tokenizer_loader.h"

namespace llmpack {
namespace {

TokenizerMetadata spm_metadata(std::vector<std::string> pieces, const std::vector<float>& scores,
                               const std::vector<int32_t>& types, int64_t bos, int64_t eos, int64_t unk,
                               bool add_space_prefix, bool remove_extra_whitespaces = false) {
  TokenizerMetadata m;
  m.vocab_size = static_cast<int64_t>(pieces.size());
  m.bos_id = bos;
  m.eos_id = eos;
  m.keys.emplace_back("tokenizer.ggml.model", gguf_string("llama"));
  m.keys.emplace_back("tokenizer.ggml.tokens", gguf_string_array(std::move(pieces)));
  m.keys.emplace_back("tokenizer.ggml.scores", gguf_f32_array(scores));
  m.keys.emplace_back("tokenizer.ggml.token_type", gguf_i32_array(types));
  if (bos >= 0) m.keys.emplace_back("tokenizer.ggml.bos_token_id", gguf_u32(bos));
  if (eos >= 0) m.keys.emplace_back("tokenizer.ggml.eos_token_id", gguf_u32(eos));
  if (unk >= 0) m.keys.emplace_back("tokenizer.ggml.unknown_token_id", gguf_u32(unk));
  m.keys.emplace_back("tokenizer.ggml.add_bos_token", gguf_bool(true));
  m.keys.emplace_back("tokenizer.ggml.add_eos_token", gguf_bool(false));
  m.keys.emplace_back("tokenizer.ggml.add_space_prefix", gguf_bool(add_space_prefix));
  // llama.cpp reads this key for its unigram vocabularies only; we follow it
  // for SentencePiece BPE too, as SentencePiece does.
  if (remove_extra_whitespaces) m.keys.emplace_back("tokenizer.ggml.remove_extra_whitespaces", gguf_bool(true));
  return m;
}

// llama2.c tokenizer.bin spells a space ' ' and BOS/EOS "\n<s>\n"; GGUF
// vocabularies use SentencePiece's '▁' and "<s>", "</s>".
Result<TokenizerMetadata> from_llama2c(std::span<const uint8_t> bytes) {
  LLMPACK_ASSIGN_OR_RETURN(auto tok, parse_llama2c_tokenizer(bytes, -1));
  const SpmVocab& v = tok->vocab();
  std::vector<std::string> pieces;
  std::vector<int32_t> types;
  for (size_t i = 0; i < v.pieces.size(); ++i) {
    std::string p = v.pieces[i];
    if (static_cast<int32_t>(i) == v.bos_id) p = "<s>";
    else if (static_cast<int32_t>(i) == v.eos_id) p = "</s>";
    else if (static_cast<int32_t>(i) == v.unk_id) p = "<unk>";
    else if (v.types[i] != TokenType::kByte) {
      std::string out;
      for (char c : p) out += c == ' ' ? std::string("\xE2\x96\x81") : std::string(1, c);
      p = std::move(out);
    }
    pieces.push_back(std::move(p));
    types.push_back(static_cast<int32_t>(v.types[i]));
  }
  auto m = spm_metadata(std::move(pieces), v.scores, types, v.bos_id, v.eos_id, v.unk_id, true);
  m.description = "llama2.c tokenizer.bin (" + std::to_string(m.vocab_size) + " tokens)";
  return m;
}

Result<TokenizerMetadata> from_sentencepiece(const SentencePieceModel& spm) {
  if (spm.model_type != 2)
    return error_status("SentencePiece model type " + std::to_string(spm.model_type) +
                        " is not supported (only BPE, type 2, runs here)");
  auto m = spm_metadata(spm.pieces, spm.scores, spm.types, spm.bos_id, spm.eos_id, spm.unk_id, spm.add_dummy_prefix,
                        spm.remove_extra_whitespaces);
  m.description = "SentencePiece BPE model (" + std::to_string(m.vocab_size) + " pieces)";
  // Only the identity normalizer is ours to apply (with its space rules);
  // the others' character maps are not read.
  if (!spm.normalizer_name.empty() && spm.normalizer_name != "identity") {
    m.description += "; its normalizer \"" + spm.normalizer_name +
                     "\" is not applied, so text that normalizer would change tokenizes otherwise than in "
                     "SentencePiece";
  }
  return m;
}

Result<TokenizerMetadata> from_gguf(const std::string& path) {
  auto gguf = GgufFile::open(path);
  if (!gguf.ok()) return gguf.status();
  TokenizerMetadata m;
  for (const auto& [key, value] : (*gguf)->metadata())
    if (key.rfind("tokenizer.", 0) == 0 && key != "tokenizer.chat_template") m.keys.emplace_back(key, value);
  const auto* tokens = (*gguf)->get_string_array("tokenizer.ggml.tokens");
  if (!tokens) return error_status("GGUF has no tokenizer.ggml.tokens");
  m.vocab_size = static_cast<int64_t>(tokens->size());
  m.bos_id = (*gguf)->get_int("tokenizer.ggml.bos_token_id").value_or(-1);
  m.eos_id = (*gguf)->get_int("tokenizer.ggml.eos_token_id").value_or(-1);
  m.description = "GGUF vocabulary (" + std::to_string(m.vocab_size) + " tokens)";
  return m;
}

// tokenizer_config.json's chat_template beside `tokenizer_path`: a string,
// or a list of {name, template} (the "default" one, else the first).
std::optional<std::string> chat_template_beside(const std::string& tokenizer_path) {
  const auto config = std::filesystem::path(tokenizer_path).parent_path() / "tokenizer_config.json";
  auto text = read_maybe_gzip(config.string());
  if (!text.ok()) return std::nullopt;
  JsonReader r(*text);
  auto root = r.read_value();
  if (!root.ok()) return std::nullopt;
  const JsonValue* t = root->get("chat_template");
  if (t == nullptr) return std::nullopt;
  if (t->is_string()) return t->string;
  std::optional<std::string> out;
  if (t->kind == JsonValue::Kind::kArray) {
    for (const JsonValue& item : t->items) {
      const JsonValue* body = item.get("template");
      if (body == nullptr || !body->is_string()) continue;
      if (!out || item.get_string("name") == "default") out = body->string;
    }
  }
  return out;
}

// HF tokenizer.json (plain: starts with '{'; or gzip) or a tiktoken file.
bool looks_like_json_or_gzip(std::span<const uint8_t> bytes) {
  size_t i = 0;
  while (i < bytes.size() && (bytes[i] == ' ' || bytes[i] == '\n' || bytes[i] == '\r' || bytes[i] == '\t')) ++i;
  if (i < bytes.size() && bytes[i] == '{') return true;
  return bytes.size() >= 2 && bytes[0] == 0x1F && bytes[1] == 0x8B;
}

Result<TokenizerMetadata> from_byte_level_bpe(const std::string& path, bool json) {
  if (json) {
    LLMPACK_ASSIGN_OR_RETURN(auto tok, load_hf_tokenizer_json(path));
    auto m = bpe_tokenizer_metadata(*tok, chat_template_beside(path));
    if (m.ok()) m->description = "HF tokenizer.json, " + m->description;
    return m;
  }
  LLMPACK_ASSIGN_OR_RETURN(auto tok, load_tiktoken(path));
  auto m = bpe_tokenizer_metadata(*tok, std::nullopt);
  if (m.ok()) m->description = "tiktoken, " + m->description;
  return m;
}

}  // namespace

Result<TokenizerMetadata> read_tokenizer_metadata(const std::string& path) {
  const std::string context = "reading tokenizer " + path;
  auto file = MappedFile::open(path);
  if (!file.ok()) return file.status().with_context(context);
  const auto bytes = (*file)->bytes();
  if (bytes.size() >= 4 && std::memcmp(bytes.data(), "GGUF", 4) == 0) return from_gguf(path).with_context(context);
  if (looks_like_json_or_gzip(bytes)) {
    auto json = from_byte_level_bpe(path, true);
    if (json.ok()) return json;
    // A tokenizer.bin whose max_token_length is 123 also starts with '{'.
    auto bin = bytes[0] == '{' ? from_llama2c(bytes) : Result<TokenizerMetadata>(error_status("not one"));
    return bin.ok() ? std::move(bin) : std::move(json).with_context(context);
  }
  if (looks_like_tiktoken(bytes)) return from_byte_level_bpe(path, false).with_context(context);
  // A SentencePiece protobuf parses cleanly only when it is one; a
  // tokenizer.bin fails at once (its first bytes are not a valid field).
  auto spm = parse_sentencepiece_model(bytes);
  if (spm.ok()) return from_sentencepiece(*spm).with_context(context);
  auto bin = from_llama2c(bytes);
  if (bin.ok()) return bin;
  return error_status(context + ": neither a SentencePiece model (" + spm.status().message() +
                      ") nor a llama2.c tokenizer.bin (" + bin.status().message() + ")");
}

}  // namespace llmpack
