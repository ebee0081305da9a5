#include "tokenizer/pretokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <utility>

#include "core/utf8.h"

namespace llmpack {
namespace {

// GPT-2's pattern: contractions, letters, digits, other symbols, each with an
// optional leading space; runs of spaces keep their last space for the next word.
constexpr const char* kGpt2 =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";
// Llama 3 (tiktoken cl100k-style): case-insensitive contractions spelled out
// as classes (as llama.cpp does, so no Unicode case folding of 's'), one
// optional non-letter before letters, digits in groups of up to three,
// newlines kept together.
constexpr const char* kLlama3 =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}|"
    " ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
// Qwen2: Llama 3's pattern with single digits.
constexpr const char* kQwen2 =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}|"
    " ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr const char* kCjk = "[\u4e00-\u9fa5\u0800-\u4e00\uac00-\ud7ff]+";

struct Kind {
  std::vector<std::string_view> names;
  std::vector<std::string> regexes;
};

const std::vector<Kind>& kinds() {
  static const std::vector<Kind> k = {
      {{"gpt-2", "gpt2", "mpt", "olmo", "jais"}, {kGpt2}},
      {{"llama-bpe", "llama3", "dbrx", "smaug-bpe"}, {kLlama3}},
      {{"qwen2", "deepseek-r1-qwen"}, {kQwen2}},
      {{"starcoder", "refact", "command-r", "smollm", "codeshell"}, {"\\p{N}", kGpt2}},
      {{"falcon"}, {"[\\p{P}\\$\\+<=>\\^~\\|`]+", kGpt2, "[0-9][0-9][0-9]"}},
      {{"deepseek-coder"}, {"[\\r\\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", kCjk, "\\p{N}"}},
      {{"deepseek-llm"},
       {"[\\r\\n]",
        // Cased letters of Latin, Greek, Cyrillic, Armenian, Georgian,
        // Cherokee, Glagolitic, Coptic, Deseret, Osage, ... (DeepSeek's list).
        "\\s?[A-Za-z\u00b5\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u01ba\u01bc-\u01bf\u01c4-\u0293\u0295-\u02af"
        "\u0370-\u0373\u0376\u0377\u037b-\u037d\u037f\u0386\u0388-\u038a\u038c\u038e-\u03a1\u03a3-\u03f5"
        "\u03f7-\u0481\u048a-\u052f\u0531-\u0556\u10a0-\u10c5\u13a0-\u13f5\u13f8-\u13fd\u1c90-\u1cba"
        "\u1cbd-\u1cbf\u1d00-\u1d2b\u1d6b-\u1d77\u1d79-\u1d9a\u1e00-\u1f15\u1f18-\u1f1d\u1f20-\u1f45"
        "\u1f48-\u1f4d\u1f50-\u1f57\u1f59\u1f5b\u1f5d\u1f5f-\u1f7d\u1f80-\u1fb4\u1fb6-\u1fbc\u1fbe"
        "\u1fc2-\u1fc4\u1fc6-\u1fcc\u1fd0-\u1fd3\u1fd6-\u1fdb\u1fe0-\u1fec\u1ff2-\u1ff4\u1ff6-\u1ffc"
        "\u2102\u2107\u210a-\u2113\u2115\u2119-\u211d\u2124\u2126\u2128\u212a-\u212d\u212f-\u2134\u2139"
        "\u213c-\u213f\u2145-\u2149\u214e\u2183\u2184\u2c00-\u2c7b\u2c7e-\u2ce4\u2ceb-\u2cee\u2cf2\u2cf3"
        "\ua640-\ua66d\ua680-\ua69b\ua722-\ua76f\ua771-\ua787\ua78b-\ua78e\uab70-\uabbf\ufb00-\ufb06"
        "\ufb13-\ufb17\uff21-\uff3a\uff41-\uff5a\U00010400-\U0001044f\U000104b0-\U000104d3"
        "\U000104d8-\U000104fb\U00010c80-\U00010cb2\U00010cc0-\U00010cf2\U000118a0-\U000118df"
        "\U0001e900-\U0001e943]+",
        "\\s?[!-/:-~\uff01-\uff0f\uff1a-\uff5e\u2018-\u201f\u3000-\u3002]+", "\\s+$", kCjk, "\\p{N}+"}},
      // llama.cpp's fallback for BPE vocabularies without a known kind.
      {{"default"}, {"[\\p{P}\\$\\+<=>\\^~\\|]+", kGpt2, "\\p{N}+", "[0-9][0-9][0-9]"}},
  };
  return k;
}

// PCRE2's \s (with UCP) also matches U+180E MONGOLIAN VOWEL SEPARATOR,
// which PCRE2 keeps in its list of horizontal spaces although Unicode 6.3
// took it out of White_Space; Hugging Face's regex engine and llama.cpp follow
// White_Space, so text holding U+180E split differently. \s and \S become
// \p{White_Space} and \P{White_Space} (both valid inside a class too); text
// quoted by \Q...\E is left as it is.
std::string with_white_space_property(std::string_view re) {
  std::string out;
  out.reserve(re.size() + 16);
  for (size_t i = 0; i < re.size(); ++i) {
    if (re[i] != '\\' || i + 1 == re.size()) {
      out += re[i];
      continue;
    }
    const char next = re[++i];
    if (next == 's') {
      out += "\\p{White_Space}";
    } else if (next == 'S') {
      out += "\\P{White_Space}";
    } else if (next == 'Q') {
      const size_t end = re.find("\\E", i + 1);
      const size_t stop = end == std::string_view::npos ? re.size() : end + 2;
      out += re.substr(i - 1, stop - (i - 1));
      i = stop - 1;
    } else {
      out += '\\';
      out += next;
    }
  }
  return out;
}

std::string pcre2_message(int code) {
  PCRE2_UCHAR buf[256];
  const int n = pcre2_get_error_message(code, buf, sizeof(buf));
  return n < 0 ? "PCRE2 error " + std::to_string(code) : std::string(reinterpret_cast<char*>(buf), n);
}

}  // namespace

Result<std::vector<std::string>> pretokenizer_regexes(std::string_view pre_kind) {
  for (const Kind& k : kinds()) {
    for (std::string_view name : k.names) {
      if (name == pre_kind) return k.regexes;
    }
  }
  std::string known;
  for (const std::string& n : known_pretokenizer_kinds()) known += (known.empty() ? "" : ", ") + n;
  return Status::error("pre-tokenizer \"" + std::string(pre_kind) + "\" is not supported (known: " + known + ")");
}

std::vector<std::string> known_pretokenizer_kinds() {
  std::vector<std::string> out;
  for (const Kind& k : kinds()) {
    for (std::string_view name : k.names) out.emplace_back(name);
  }
  return out;
}

struct Pretokenizer::Compiled {
  pcre2_code* code = nullptr;
};

Pretokenizer::~Pretokenizer() {
  for (Compiled& c : compiled_) pcre2_code_free(c.code);
}

Result<std::unique_ptr<Pretokenizer>> Pretokenizer::create(std::vector<std::string> regexes) {
  std::unique_ptr<Pretokenizer> p(new Pretokenizer());
  p->regexes_ = std::move(regexes);
  // DOLLAR_ENDONLY: '$' is the end of the piece, as in Rust's regex and
  // std::regex, never "before a final newline".
  const uint32_t options = PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF | PCRE2_DOLLAR_ENDONLY;
  for (const std::string& re : p->regexes_) {
    const std::string pattern = with_white_space_property(re);
    int err = 0;
    PCRE2_SIZE err_at = 0;
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), options, &err,
                                     &err_at, nullptr);
    if (code == nullptr) {
      return Status::error("pre-tokenizer regex /" + re + "/ does not compile (as /" + pattern + "/, at offset " +
                           std::to_string(err_at) + "): " + pcre2_message(err));
    }
    p->compiled_.push_back({code});
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // the interpreter runs it when JIT is unavailable
  }
  return p;
}

Result<std::vector<std::string_view>> Pretokenizer::split(std::string_view text) const {
  std::vector<std::string_view> pieces;
  if (text.empty()) return pieces;
  pieces.push_back(text);
  // Backtracking over long runs of spaces needs more than the default 32 KiB.
  pcre2_jit_stack* stack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr);
  pcre2_match_context* mctx = pcre2_match_context_create(nullptr);
  if (stack != nullptr && mctx != nullptr) pcre2_jit_stack_assign(mctx, nullptr, stack);
  Status status;
  for (const Compiled& c : compiled_) {
    pcre2_match_data* md = pcre2_match_data_create_from_pattern(c.code, nullptr);
    std::vector<std::string_view> next;
    next.reserve(pieces.size() * 2);
    for (std::string_view piece : pieces) {
      const auto* subject = reinterpret_cast<PCRE2_SPTR>(piece.data());
      size_t gap = 0;  // start of text not yet emitted
      size_t pos = 0;  // where the next search starts
      while (pos <= piece.size()) {
        const int rc = pcre2_match(c.code, subject, piece.size(), pos, 0, md, mctx);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) {
          status = Status::error("pre-tokenizer regex failed: " + pcre2_message(rc));
          break;
        }
        const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
        const size_t s = ov[0];
        const size_t e = ov[1];
        if (e <= s) {  // an empty match splits nothing; step over one character
          if (s >= piece.size()) break;
          const int len = utf8_sequence_length(static_cast<unsigned char>(piece[s]));
          pos = s + (len > 0 ? static_cast<size_t>(len) : 1);
          continue;
        }
        if (s > gap) next.push_back(piece.substr(gap, s - gap));
        next.push_back(piece.substr(s, e - s));
        gap = pos = e;
      }
      if (!status.ok()) break;
      if (gap < piece.size()) next.push_back(piece.substr(gap));
    }
    pcre2_match_data_free(md);
    if (!status.ok()) break;
    pieces = std::move(next);
  }
  pcre2_match_context_free(mctx);
  pcre2_jit_stack_free(stack);
  if (!status.ok()) return status;
  return pieces;
}

}  // namespace llmpack
