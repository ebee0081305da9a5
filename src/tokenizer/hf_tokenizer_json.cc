#include "tokenizer/hf_tokenizer_json.h"

#include <zlib.h>

#include <filesystem>
#include <unordered_map>

#include "format/mapped_file.h"
#include "tokenizer/hf_tokenizer_json_parser.h"
#include "tokenizer/pretokenizer.h"

namespace llmpack {
namespace {

// Far above any real tokenizer.json (Qwen3's is 11 MB); stops gzip bombs.
constexpr size_t kMaxInflated = size_t{1} << 30;

constexpr const char* kGpt2Regex =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";

struct AddedToken {
  int64_t id = -1;
  std::string content;
  bool special = false;
};

// What the reader collects before assembling a BpeVocab.
struct RawTokenizer {
  std::string model_type;
  bool has_model = false;
  std::vector<std::pair<std::string, int64_t>> vocab;
  std::vector<std::pair<std::string, std::string>> merges;
  bool ignore_merges = false;
  bool byte_fallback = false;
  std::string continuing_subword_prefix;
  std::vector<AddedToken> added;
  JsonValue normalizer, pre_tokenizer, decoder, post_processor;
};

Status read_merge(JsonReader& r, size_t index, RawTokenizer* raw) {
  LLMPACK_ASSIGN_OR_RETURN(const JsonValue::Kind kind, r.peek());
  std::pair<std::string, std::string> merge;
  if (kind == JsonValue::Kind::kString) {
    std::string s;
    LLMPACK_RETURN_IF_ERROR(r.read_string(&s));
    const size_t space = s.find(' ', 1);
    if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos) {
      return Status::error("tokenizer.json: merge " + std::to_string(index) + " \"" + s +
                           "\" is not two tokens separated by one space");
    }
    merge = {s.substr(0, space), s.substr(space + 1)};
  } else {
    size_t n = 0;
    LLMPACK_RETURN_IF_ERROR(r.read_array([&](size_t i) -> Status {
      ++n;
      if (i > 1) return r.error("a merge pair of exactly two strings");
      return r.read_string(i == 0 ? &merge.first : &merge.second);
    }));
    if (n != 2) return Status::error("tokenizer.json: merge " + std::to_string(index) + " has " + std::to_string(n) +
                                     " parts, expected 2");
  }
  raw->merges.push_back(std::move(merge));
  return ok_status();
}

Status read_model(JsonReader& r, RawTokenizer* raw) {
  raw->has_model = true;
  return r.read_object([&](const std::string& key) -> Status {
    if (key == "type") return r.read_string(&raw->model_type);
    if (key == "vocab") {
      raw->vocab.reserve(1 << 17);
      return r.read_object([&](const std::string& token) -> Status {
        int64_t id = 0;
        LLMPACK_RETURN_IF_ERROR(r.read_int(&id));
        raw->vocab.emplace_back(token, id);
        return ok_status();
      });
    }
    if (key == "merges") {
      raw->merges.reserve(1 << 18);
      return r.read_array([&](size_t i) { return read_merge(r, i, raw); });
    }
    if (key == "ignore_merges" || key == "byte_fallback") {
      LLMPACK_ASSIGN_OR_RETURN(const JsonValue::Kind kind, r.peek());
      if (kind == JsonValue::Kind::kNull) return r.skip_value();
      return r.read_bool(key == "ignore_merges" ? &raw->ignore_merges : &raw->byte_fallback);
    }
    if (key == "continuing_subword_prefix") {
      LLMPACK_ASSIGN_OR_RETURN(const JsonValue::Kind kind, r.peek());
      if (kind == JsonValue::Kind::kNull) return r.skip_value();
      return r.read_string(&raw->continuing_subword_prefix);
    }
    return r.skip_value();
  });
}

Status read_added(JsonReader& r, RawTokenizer* raw) {
  return r.read_array([&](size_t) -> Status {
    AddedToken t;
    LLMPACK_RETURN_IF_ERROR(r.read_object([&](const std::string& key) -> Status {
      if (key == "id") return r.read_int(&t.id);
      if (key == "content") return r.read_string(&t.content);
      if (key == "special") return r.read_bool(&t.special);
      return r.skip_value();
    }));
    if (t.content.empty()) return Status::error("tokenizer.json: added token " + std::to_string(t.id) + " has no content");
    raw->added.push_back(std::move(t));
    return ok_status();
  });
}

Status read_document(std::string_view json, RawTokenizer* raw) {
  JsonReader r(json);
  const auto small = [&](JsonValue* out) -> Status {
    auto v = r.read_value();
    if (!v.ok()) return v.status();
    *out = std::move(*v);
    return ok_status();
  };
  LLMPACK_RETURN_IF_ERROR(r.read_object([&](const std::string& key) -> Status {
    if (key == "model") return read_model(r, raw);
    if (key == "added_tokens") return read_added(r, raw);
    if (key == "normalizer") return small(&raw->normalizer);
    if (key == "pre_tokenizer") return small(&raw->pre_tokenizer);
    if (key == "decoder") return small(&raw->decoder);
    if (key == "post_processor") return small(&raw->post_processor);
    return r.skip_value();
  }));
  return r.expect_end();
}

// A literal string as a PCRE2 pattern.
std::string quote_regex(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (std::string_view("\\^$.|?*+()[]{}").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

// One pre-tokenizer step into `regexes`; `byte_level` set when a ByteLevel step is seen.
Status add_pre_tokenizer(const JsonValue& p, std::vector<std::string>* regexes, bool* byte_level) {
  const std::string type = p.get_string("type");
  if (type == "Sequence") {
    const JsonValue* list = p.get("pretokenizers");
    if (list == nullptr || list->kind != JsonValue::Kind::kArray) {
      return Status::error("pre_tokenizer Sequence: expected a \"pretokenizers\" array");
    }
    for (const JsonValue& item : list->items) LLMPACK_RETURN_IF_ERROR(add_pre_tokenizer(item, regexes, byte_level));
    return ok_status();
  }
  if (type == "ByteLevel") {
    const JsonValue* prefix = p.get("add_prefix_space");
    if (prefix != nullptr && prefix->kind == JsonValue::Kind::kBool && prefix->boolean) {
      return Status::error("pre_tokenizer ByteLevel with add_prefix_space true is not supported");
    }
    const JsonValue* use_regex = p.get("use_regex");
    // use_regex defaults to true: the GPT-2 pattern.
    if (use_regex == nullptr || (use_regex->kind == JsonValue::Kind::kBool && use_regex->boolean)) {
      regexes->push_back(kGpt2Regex);
    }
    *byte_level = true;
    return ok_status();
  }
  if (type == "Split") {
    const std::string behavior = p.get_string("behavior", "Isolated");
    if (behavior != "Isolated") {
      return Status::error("pre_tokenizer Split with behavior \"" + behavior + "\" is not supported (only Isolated)");
    }
    const JsonValue* invert = p.get("invert");
    if (invert != nullptr && invert->kind == JsonValue::Kind::kBool && invert->boolean) {
      return Status::error("pre_tokenizer Split with invert true is not supported");
    }
    const JsonValue* pattern = p.get("pattern");
    if (pattern != nullptr && pattern->get("Regex") != nullptr && pattern->get("Regex")->is_string()) {
      regexes->push_back(pattern->get("Regex")->string);
    } else if (pattern != nullptr && pattern->get("String") != nullptr && pattern->get("String")->is_string()) {
      regexes->push_back(quote_regex(pattern->get("String")->string));
    } else {
      return Status::error("pre_tokenizer Split: expected a pattern {\"Regex\": ...} or {\"String\": ...}");
    }
    return ok_status();
  }
  if (type == "Digits") {
    // HF splits off numeric characters (char::is_numeric: \p{N}), each on its
    // own with individual_digits (SmolLM, StarCoder), else runs of them.
    const JsonValue* individual = p.get("individual_digits");
    const bool each = individual != nullptr && individual->kind == JsonValue::Kind::kBool && individual->boolean;
    regexes->push_back(each ? "\\p{N}" : "\\p{N}+");
    return ok_status();
  }
  return Status::error("pre_tokenizer type \"" + (type.empty() ? json_kind_name(p.kind) : type) +
                       "\" is not supported (ByteLevel, Split, Digits, Sequence)");
}

Status read_normalizer(const JsonValue& n, bool* nfc) {
  if (n.is_null()) return ok_status();
  const std::string type = n.get_string("type");
  if (type == "NFC") {
    *nfc = true;
    return ok_status();
  }
  if (type == "Sequence") {
    const JsonValue* list = n.get("normalizers");
    if (list != nullptr && list->kind == JsonValue::Kind::kArray) {
      for (const JsonValue& item : list->items) LLMPACK_RETURN_IF_ERROR(read_normalizer(item, nfc));
      return ok_status();
    }
  }
  return Status::error("normalizer type \"" + (type.empty() ? json_kind_name(n.kind) : type) +
                       "\" is not supported (only NFC or none)");
}

Status check_decoder(const JsonValue& d) {
  if (d.is_null()) return ok_status();
  const std::string type = d.get_string("type");
  if (type == "ByteLevel") return ok_status();
  return Status::error("decoder type \"" + (type.empty() ? json_kind_name(d.kind) : type) +
                       "\" is not supported (only ByteLevel)");
}

// The first SpecialToken of post_processor's "single" template (the BOS a
// TemplateProcessing adds), or "".
std::string template_bos(const JsonValue& post) {
  const JsonValue* list = nullptr;
  if (post.get_string("type") == "TemplateProcessing") {
    list = post.get("single");
  } else if (const JsonValue* procs = post.get("processors"); procs != nullptr) {
    for (const JsonValue& p : procs->items) {
      if (p.get_string("type") == "TemplateProcessing") list = p.get("single");
    }
  }
  if (list == nullptr || list->items.empty()) return {};
  const JsonValue* special = list->items[0].get("SpecialToken");
  return special != nullptr ? special->get_string("id") : std::string();
}

Status fill_vocab(RawTokenizer& raw, BpeVocab* vocab) {
  int64_t max_id = -1;
  for (const auto& [token, id] : raw.vocab) max_id = std::max(max_id, id);
  for (const AddedToken& t : raw.added) max_id = std::max(max_id, t.id);
  if (max_id < 0) return Status::error("tokenizer.json: model.vocab is empty");
  if (max_id >= (int64_t{1} << 24)) {
    return Status::error("tokenizer.json: token id " + std::to_string(max_id) + " is implausibly large");
  }
  const auto n = static_cast<size_t>(max_id + 1);
  std::vector<std::string> tokens(n);  // by id, then into the vocabulary's table
  vocab->types.assign(n, TokenType::kUnused);
  std::vector<bool> seen(n, false);
  for (auto& [token, id] : raw.vocab) {
    if (id < 0) return Status::error("tokenizer.json: token \"" + token + "\" has negative id " + std::to_string(id));
    if (seen[id]) return Status::error("tokenizer.json: id " + std::to_string(id) + " is given to two tokens");
    seen[id] = true;
    tokens[id] = std::move(token);
    vocab->types[id] = TokenType::kNormal;
  }
  for (AddedToken& t : raw.added) {
    if (t.id < 0) return Status::error("tokenizer.json: added token \"" + t.content + "\" has a negative id");
    seen[t.id] = true;
    tokens[t.id] = std::move(t.content);
    vocab->types[t.id] = t.special ? TokenType::kControl : TokenType::kUserDefined;
  }
  for (size_t i = 0; i < n; ++i) {
    if (!seen[i]) return Status::error("tokenizer.json: no token has id " + std::to_string(i) + " (ids must be dense)");
  }
  vocab->tokens = StringTable(tokens);
  return ok_status();
}

int32_t id_of(const BpeVocab& vocab, const std::string& text) {
  if (text.empty()) return -1;
  for (size_t i = 0; i < vocab.tokens.size(); ++i) {
    if (vocab.types[i] != TokenType::kNormal && vocab.tokens[i] == text) return static_cast<int32_t>(i);
  }
  for (size_t i = 0; i < vocab.tokens.size(); ++i) {
    if (vocab.tokens[i] == text) return static_cast<int32_t>(i);
  }
  return -1;
}

// BOS / EOS / end-of-turn ids: generation_config.json, then
// tokenizer_config.json, then the post-processor template.
void fill_special_ids(const RawTokenizer& raw, const HfTokenizerConfig& config, BpeVocab* vocab) {
  const auto in_range = [&](int64_t id) { return id >= 0 && id < static_cast<int64_t>(vocab->tokens.size()); };
  const std::string tmpl_bos = template_bos(raw.post_processor);
  vocab->bos_id = id_of(*vocab, config.bos_token.empty() ? tmpl_bos : config.bos_token);
  if (in_range(config.generation_bos_id)) vocab->bos_id = static_cast<int32_t>(config.generation_bos_id);
  vocab->eos_id = id_of(*vocab, config.eos_token);
  for (size_t i = 0; i < config.generation_eos_ids.size(); ++i) {
    const int64_t id = config.generation_eos_ids[i];
    if (!in_range(id)) continue;
    if (vocab->eos_id < 0) {
      vocab->eos_id = static_cast<int32_t>(id);
    } else if (id != vocab->eos_id) {
      vocab->eot_ids.push_back(static_cast<int32_t>(id));
    }
  }
  if (config.add_bos >= 0) {
    vocab->add_bos = config.add_bos == 1 && vocab->bos_id >= 0;
  } else {
    vocab->add_bos = !tmpl_bos.empty() && vocab->bos_id >= 0 && vocab->tokens[vocab->bos_id] == tmpl_bos;
  }
}

Status special_token_text(JsonReader& r, std::string* out) {
  LLMPACK_ASSIGN_OR_RETURN(const JsonValue::Kind kind, r.peek());
  if (kind == JsonValue::Kind::kString) return r.read_string(out);
  if (kind == JsonValue::Kind::kObject) {
    return r.read_object([&](const std::string& key) { return key == "content" ? r.read_string(out) : r.skip_value(); });
  }
  return r.skip_value();  // null: none
}

}  // namespace

Result<BpeVocab> parse_hf_tokenizer_json(std::string_view json, const HfTokenizerConfig& config) {
  RawTokenizer raw;
  Status st = read_document(json, &raw);
  if (!st.ok()) return st.with_context("tokenizer.json");
  if (!raw.has_model) return Status::error("tokenizer.json: no \"model\" object");
  if (raw.model_type != "BPE") {
    return Status::error("tokenizer.json: model type \"" + raw.model_type + "\" is not supported (only BPE)");
  }
  if (raw.byte_fallback) {
    return Status::error("tokenizer.json: BPE with byte_fallback (SentencePiece-style) is not supported, only byte-level BPE");
  }
  if (!raw.continuing_subword_prefix.empty()) {
    return Status::error("tokenizer.json: continuing_subword_prefix \"" + raw.continuing_subword_prefix +
                         "\" is not supported");
  }
  BpeVocab vocab;
  bool byte_level = false;
  if (!raw.pre_tokenizer.is_null()) {
    st = add_pre_tokenizer(raw.pre_tokenizer, &vocab.pretokenizer_regexes, &byte_level);
    if (!st.ok()) return st.with_context("tokenizer.json");
  }
  if (!byte_level) {
    return Status::error("tokenizer.json: the pre_tokenizer has no ByteLevel step; only byte-level BPE is supported");
  }
  st = read_normalizer(raw.normalizer, &vocab.nfc);
  if (!st.ok()) return st.with_context("tokenizer.json");
  st = check_decoder(raw.decoder);
  if (!st.ok()) return st.with_context("tokenizer.json");
  st = fill_vocab(raw, &vocab);
  if (!st.ok()) return st;
  vocab.merges = std::move(raw.merges);
  vocab.ignore_merges = raw.ignore_merges;
  vocab.byte_level_pieces = true;
  fill_special_ids(raw, config, &vocab);
  return vocab;
}

Status parse_hf_tokenizer_config(std::string_view json, HfTokenizerConfig* config) {
  JsonReader r(json);
  LLMPACK_RETURN_IF_ERROR(r.read_object([&](const std::string& key) -> Status {
    if (key == "bos_token") return special_token_text(r, &config->bos_token);
    if (key == "eos_token") return special_token_text(r, &config->eos_token);
    if (key == "add_bos_token") {
      LLMPACK_ASSIGN_OR_RETURN(const JsonValue::Kind kind, r.peek());
      if (kind != JsonValue::Kind::kBool) return r.skip_value();
      bool b = false;
      LLMPACK_RETURN_IF_ERROR(r.read_bool(&b));
      config->add_bos = b ? 1 : 0;
      return ok_status();
    }
    return r.skip_value();
  }));
  return r.expect_end();
}

Status parse_hf_generation_config(std::string_view json, HfTokenizerConfig* config) {
  JsonReader r(json);
  LLMPACK_RETURN_IF_ERROR(r.read_object([&](const std::string& key) -> Status {
    if (key != "eos_token_id" && key != "bos_token_id") return r.skip_value();
    LLMPACK_ASSIGN_OR_RETURN(const JsonValue::Kind kind, r.peek());
    std::vector<int64_t> ids;
    if (kind == JsonValue::Kind::kNumber) {
      int64_t id = 0;
      LLMPACK_RETURN_IF_ERROR(r.read_int(&id));
      ids.push_back(id);
    } else if (kind == JsonValue::Kind::kArray) {
      LLMPACK_RETURN_IF_ERROR(r.read_array([&](size_t) -> Status {
        int64_t id = 0;
        LLMPACK_RETURN_IF_ERROR(r.read_int(&id));
        ids.push_back(id);
        return ok_status();
      }));
    } else {
      return r.skip_value();
    }
    if (key == "eos_token_id") {
      config->generation_eos_ids = ids;
    } else if (!ids.empty()) {
      config->generation_bos_id = ids[0];
    }
    return ok_status();
  }));
  return r.expect_end();
}

Result<std::string> gunzip(std::span<const uint8_t> bytes) {
  z_stream zs{};
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) return Status::error("gzip: zlib would not start");
  std::string out;
  out.resize(std::min(kMaxInflated, std::max<size_t>(bytes.size() * 4, 1 << 16)));
  zs.next_in = const_cast<Bytef*>(bytes.data());
  zs.avail_in = static_cast<uInt>(std::min<size_t>(bytes.size(), UINT32_MAX));
  size_t produced = 0;
  int rc = Z_OK;
  while (true) {
    if (produced == out.size()) {
      if (out.size() >= kMaxInflated) {
        inflateEnd(&zs);
        return Status::error("gzip: inflates to more than " + std::to_string(kMaxInflated >> 20) + " MiB");
      }
      out.resize(std::min(kMaxInflated, out.size() * 2));
    }
    zs.next_out = reinterpret_cast<Bytef*>(out.data() + produced);
    zs.avail_out = static_cast<uInt>(std::min<size_t>(out.size() - produced, UINT32_MAX));
    const uInt before = zs.avail_out;
    rc = inflate(&zs, Z_NO_FLUSH);
    produced += before - zs.avail_out;
    if (rc == Z_STREAM_END) break;
    if (rc != Z_OK && rc != Z_BUF_ERROR) break;
    if (rc == Z_BUF_ERROR && zs.avail_in == 0) break;  // truncated input
  }
  const std::string msg = zs.msg != nullptr ? zs.msg : "";
  inflateEnd(&zs);
  if (rc != Z_STREAM_END) {
    return Status::error("gzip: " + (msg.empty() ? std::string("the compressed data ends early") : msg) +
                         " (after " + std::to_string(produced) + " bytes out)");
  }
  out.resize(produced);
  return out;
}

Result<std::string> read_maybe_gzip(const std::string& path) {
  auto file = MappedFile::open(path);
  if (!file.ok()) return file.status();
  const std::span<const uint8_t> bytes = (*file)->bytes();
  if (bytes.size() >= 2 && bytes[0] == 0x1F && bytes[1] == 0x8B) return gunzip(bytes);
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

Result<std::unique_ptr<BpeTokenizer>> load_hf_tokenizer_json(const std::string& path) {
  const std::string context = "loading tokenizer " + path;
  auto json = read_maybe_gzip(path);
  if (!json.ok()) return json.status().with_context(context);
  HfTokenizerConfig config;
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  const auto side = [&](const char* name, Status (*parse)(std::string_view, HfTokenizerConfig*)) -> Status {
    const std::filesystem::path p = dir / name;
    std::error_code ec;
    if (!std::filesystem::exists(p, ec)) return ok_status();
    auto text = read_maybe_gzip(p.string());
    if (!text.ok()) return text.status();
    return parse(*text, &config).with_context(p.string());
  };
  Status st = side("tokenizer_config.json", parse_hf_tokenizer_config);
  if (st.ok()) st = side("generation_config.json", parse_hf_generation_config);
  if (!st.ok()) return st.with_context(context);
  auto vocab = parse_hf_tokenizer_json(*json, config);
  if (!vocab.ok()) return vocab.status().with_context(context);
  return BpeTokenizer::create(std::move(*vocab)).with_context(context);
}

}  // namespace llmpack
