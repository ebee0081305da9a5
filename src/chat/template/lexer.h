// Lexer of the Jinja2 subset used by chat templates. Whitespace control is
// resolved here, with HF's settings: trim_blocks (the first newline after a
// block or comment tag is dropped), lstrip_blocks (spaces and tabs before a
// block or comment tag at the start of a line are dropped), `-` on a tag
// strips all whitespace on that side, `+` disables trim/lstrip, and one
// trailing newline of the source is dropped (keep_trailing_newline=False).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace llmpack::jinja {

struct Token {
  enum class Kind {
    kText,        // literal output
    kVarBegin,    // {{
    kVarEnd,      // }}
    kBlockBegin,  // {%
    kBlockEnd,    // %}
    kName,
    kString,      // value already unescaped
    kInt,
    kFloat,
    kOp,          // + - * / // % ** ~ == != < <= > >= = ( ) [ ] { } , . : |
    kEof,
  };
  Kind kind;
  std::string text;
  int line;
};

// Throws TemplateError (with the line) on an unterminated tag, string or
// comment, or a character that starts no token.
std::vector<Token> tokenize(std::string_view source);

}  // namespace llmpack::jinja
