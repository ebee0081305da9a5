// Regex pre-tokenization for byte-level BPE: text -> pieces ("words") that
// BPE merges independently. A pre-tokenizer is a list of regexes applied in
// turn, each to every piece the previous one produced; both the matches and
// the text between them become pieces (HF Split with behavior "Isolated",
// llama.cpp's unicode_regex_split). Regexes run with PCRE2 (UTF, UCP, JIT);
// invalid UTF-8 never matches, so such bytes end up in pieces of their own
// and still round-trip through byte-level BPE.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace llmpack {

// The regexes for a GGUF tokenizer.ggml.pre kind ("llama-bpe", "qwen2",
// "gpt-2", ...); an error naming the kind when it is not one we know.
Result<std::vector<std::string>> pretokenizer_regexes(std::string_view pre_kind);
// The kinds pretokenizer_regexes knows, for messages and tests.
std::vector<std::string> known_pretokenizer_kinds();

class Pretokenizer {
 public:
  // Compiles `regexes`; an error names the regex and PCRE2's message.
  static Result<std::unique_ptr<Pretokenizer>> create(std::vector<std::string> regexes);
  ~Pretokenizer();
  Pretokenizer(const Pretokenizer&) = delete;
  Pretokenizer& operator=(const Pretokenizer&) = delete;

  // The pieces of `text` as [offset, length) ranges that cover it in order,
  // none empty. Thread-safe (per-call match data).
  Result<std::vector<std::string_view>> split(std::string_view text) const;

  const std::vector<std::string>& regexes() const { return regexes_; }

 private:
  struct Compiled;
  Pretokenizer() = default;
  std::vector<std::string> regexes_;
  std::vector<Compiled> compiled_;
};

}  // namespace llmpack
