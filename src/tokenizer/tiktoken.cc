#include "tokenizer/tiktoken.h"

#include <charconv>

#include "format/mapped_file.h"
#include "tokenizer/pretokenizer.h"

namespace llmpack {
namespace {

constexpr size_t kLlama3BaseTokens = 128000;
constexpr int kLlama3NumSpecial = 256;
// Token counts far above any real tiktoken file; stops a hostile file from
// claiming ranks in the billions.
constexpr int64_t kMaxRank = int64_t{1} << 21;

int base64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

// Standard base64 with '=' padding; false on anything else.
bool decode_base64(std::string_view in, std::string* out) {
  out->clear();
  if (in.empty() || in.size() % 4 != 0) return false;
  size_t pad = 0;
  while (pad < 2 && in.size() > pad && in[in.size() - 1 - pad] == '=') ++pad;
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < in.size() - pad; ++i) {
    const int v = base64_value(in[i]);
    if (v < 0) return false;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      *out += static_cast<char>((acc >> bits) & 0xFF);
    }
  }
  return true;
}

}  // namespace

std::vector<std::string> llama3_special_tokens() {
  std::vector<std::string> names = {
      "<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>", "<|reserved_special_token_1|>",
      "<|reserved_special_token_2|>", "<|reserved_special_token_3|>", "<|start_header_id|>", "<|end_header_id|>",
      "<|reserved_special_token_4|>", "<|eot_id|>"};
  for (int i = 5; names.size() < kLlama3NumSpecial; ++i) names.push_back("<|reserved_special_token_" + std::to_string(i) + "|>");
  return names;
}

Result<std::vector<std::string>> parse_tiktoken_ranks(std::string_view text) {
  std::vector<std::string> tokens;
  std::vector<bool> seen;
  size_t line_no = 0;
  std::string bytes;
  for (size_t pos = 0; pos < text.size();) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    const std::string where = "tiktoken: line " + std::to_string(line_no);
    const size_t space = line.find(' ');
    if (space == std::string_view::npos) return Status::error(where + ": expected \"<base64> <rank>\", found no space");
    if (!decode_base64(line.substr(0, space), &bytes) || bytes.empty()) {
      return Status::error(where + ": \"" + std::string(line.substr(0, std::min<size_t>(space, 40))) +
                           "\" is not base64 of a non-empty token");
    }
    const std::string_view rank_text = line.substr(space + 1);
    int64_t rank = -1;
    const auto [ptr, ec] = std::from_chars(rank_text.data(), rank_text.data() + rank_text.size(), rank);
    if (ec != std::errc() || ptr != rank_text.data() + rank_text.size() || rank < 0 || rank >= kMaxRank) {
      return Status::error(where + ": expected a rank 0.." + std::to_string(kMaxRank - 1) + ", found \"" +
                           std::string(rank_text.substr(0, 40)) + "\"");
    }
    if (static_cast<size_t>(rank) >= tokens.size()) {
      tokens.resize(static_cast<size_t>(rank) + 1);
      seen.resize(static_cast<size_t>(rank) + 1, false);
    }
    if (seen[rank]) return Status::error(where + ": rank " + std::to_string(rank) + " appears twice");
    seen[rank] = true;
    tokens[rank] = bytes;
  }
  if (tokens.empty()) return Status::error("tiktoken: no tokens");
  for (size_t i = 0; i < seen.size(); ++i) {
    if (!seen[i]) return Status::error("tiktoken: rank " + std::to_string(i) + " is missing (ranks must be 0..n-1)");
  }
  return tokens;
}

Result<BpeVocab> parse_tiktoken(std::string_view text) {
  LLMPACK_ASSIGN_OR_RETURN(std::vector<std::string> tokens, parse_tiktoken_ranks(text));
  BpeVocab vocab;
  const size_t n = tokens.size();
  vocab.tokens = StringTable(tokens);
  vocab.types.assign(n, TokenType::kNormal);
  vocab.byte_level_pieces = false;
  vocab.merges_from_ranks = true;
  vocab.ignore_merges = true;
  LLMPACK_ASSIGN_OR_RETURN(vocab.pretokenizer_regexes, pretokenizer_regexes("llama-bpe"));
  if (n == kLlama3BaseTokens) {
    for (std::string& name : llama3_special_tokens()) {
      vocab.tokens.push_back(std::move(name));
      vocab.types.push_back(TokenType::kControl);
    }
    vocab.bos_id = 128000;
    vocab.eos_id = 128001;
    vocab.eot_ids = {128009};
    vocab.add_bos = true;
  }
  return vocab;
}

Result<std::unique_ptr<BpeTokenizer>> load_tiktoken(const std::string& path) {
  const std::string context = "loading tokenizer " + path;
  auto file = MappedFile::open(path);
  if (!file.ok()) return file.status().with_context(context);
  const std::span<const uint8_t> bytes = (*file)->bytes();
  auto vocab = parse_tiktoken(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  if (!vocab.ok()) return vocab.status().with_context(context);
  return BpeTokenizer::create(std::move(*vocab)).with_context(context);
}

bool looks_like_tiktoken(std::span<const uint8_t> bytes) {
  size_t i = 0;
  while (i < bytes.size() && (base64_value(static_cast<char>(bytes[i])) >= 0 || bytes[i] == '=')) ++i;
  if (i == 0 || i >= bytes.size() || bytes[i] != ' ') return false;
  size_t j = i + 1;
  while (j < bytes.size() && bytes[j] >= '0' && bytes[j] <= '9') ++j;
  return j > i + 1 && (j == bytes.size() || bytes[j] == '\n' || bytes[j] == '\r');
}

}  // namespace llmpack
