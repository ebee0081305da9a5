#include "chat/template/lexer.h"

#include <cctype>
#include <cstdint>

#include "chat/template/value.h"
#include "core/utf8.h"

namespace llmpack::jinja {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool is_name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// \r\n and \r become \n (jinja2's newline_sequence), then one trailing
// newline goes (keep_trailing_newline=False).
std::string normalize_newlines(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

class Lexer {
 public:
  explicit Lexer(std::string src) : src_(std::move(src)) {}

  std::vector<Token> run() {
    while (pos_ < src_.size()) {
      size_t tag = find_tag(pos_);
      lex_text(tag);
      if (tag >= src_.size()) break;
      const char kind = src_[tag + 1];
      pos_ = tag + 2;
      if (pos_ < src_.size() && (src_[pos_] == '-' || src_[pos_] == '+')) ++pos_;
      if (kind == '#') {
        lex_comment();
      } else if (kind == '%' && try_raw()) {
        continue;
      } else {
        lex_tag(kind);
      }
    }
    tokens_.push_back({Token::Kind::kEof, "", line_});
    return std::move(tokens_);
  }

 private:
  size_t find_tag(size_t from) const {
    for (size_t i = from; i + 1 < src_.size(); ++i) {
      if (src_[i] == '{' && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
    }
    return src_.size();
  }

  void advance_to(size_t to) {
    for (size_t i = pos_; i < to && i < src_.size(); ++i) {
      if (src_[i] == '\n') ++line_;
    }
    pos_ = to;
  }

  // Literal text from pos_ up to the tag at `tag`, with the tag's left-side
  // whitespace control applied.
  void lex_text(size_t tag) {
    std::string text = src_.substr(pos_, tag - pos_);
    const int text_line = line_;
    const bool at_line_start = pos_ == 0 || src_[pos_ - 1] == '\n';
    if (tag < src_.size()) {
      const char kind = src_[tag + 1];
      const char modifier = tag + 2 < src_.size() ? src_[tag + 2] : '\0';
      if (modifier == '-') {
        while (!text.empty() && is_space(text.back())) text.pop_back();
      } else if ((kind == '%' || kind == '#') && modifier != '+') {
        const size_t nl = text.rfind('\n');
        const size_t start = nl == std::string::npos ? 0 : nl + 1;
        if (nl != std::string::npos || at_line_start) {
          bool blank = true;
          for (size_t i = start; i < text.size(); ++i) blank = blank && (text[i] == ' ' || text[i] == '\t');
          if (blank) text.erase(start);
        }
      }
    }
    advance_to(tag);
    if (!text.empty()) tokens_.push_back({Token::Kind::kText, std::move(text), text_line});
  }

  // After a closing tag at `close_end` (one past it): `-` strips all
  // following whitespace, otherwise trim_blocks drops one newline.
  void after_close(bool minus, bool plus, bool trim_applies) {
    if (minus) {
      size_t p = pos_;
      while (p < src_.size() && is_space(src_[p])) ++p;
      advance_to(p);
    } else if (trim_applies && !plus && pos_ < src_.size() && src_[pos_] == '\n') {
      advance_to(pos_ + 1);
    }
  }

  void lex_comment() {
    const size_t end = src_.find("#}", pos_);
    if (end == std::string::npos) throw TemplateError("unclosed comment: expected '#}'", line_);
    const bool minus = end > pos_ && src_[end - 1] == '-';
    const bool plus = end > pos_ && src_[end - 1] == '+';
    advance_to(end + 2);
    after_close(minus, plus, true);
  }

  // {% raw %}...{% endraw %}: the body is literal text.
  bool try_raw() {
    size_t p = pos_;
    while (p < src_.size() && is_space(src_[p])) ++p;
    if (src_.compare(p, 3, "raw") != 0) return false;
    p += 3;
    while (p < src_.size() && is_space(src_[p])) ++p;
    bool minus = false;
    if (p < src_.size() && src_[p] == '-') { minus = true; ++p; }
    if (src_.compare(p, 2, "%}") != 0) return false;
    advance_to(p + 2);
    after_close(minus, false, true);
    size_t search = pos_;
    while (true) {
      const size_t open = src_.find("{%", search);
      if (open == std::string::npos) throw TemplateError("unclosed raw block: expected '{% endraw %}'", line_);
      size_t q = open + 2;
      if (q < src_.size() && (src_[q] == '-' || src_[q] == '+')) ++q;
      while (q < src_.size() && is_space(src_[q])) ++q;
      if (src_.compare(q, 6, "endraw") == 0) {
        lex_text(open);
        q += 6;
        while (q < src_.size() && is_space(src_[q])) ++q;
        bool end_minus = false;
        if (q < src_.size() && src_[q] == '-') { end_minus = true; ++q; }
        if (src_.compare(q, 2, "%}") != 0) throw TemplateError("malformed endraw tag", line_);
        advance_to(q + 2);
        after_close(end_minus, false, true);
        return true;
      }
      search = open + 2;
    }
  }

  void lex_tag(char kind) {
    const std::string close = kind == '{' ? "}}" : "%}";
    tokens_.push_back({kind == '{' ? Token::Kind::kVarBegin : Token::Kind::kBlockBegin, "", line_});
    int nesting = 0;  // open ( [ { inside the tag, so that "}}" of a dict is not the end
    while (true) {
      while (pos_ < src_.size() && is_space(src_[pos_])) advance_to(pos_ + 1);
      if (pos_ >= src_.size()) {
        throw TemplateError("unclosed tag: expected '" + close + "' before the end of the template", line_);
      }
      if (nesting == 0) {
        const bool minus = src_[pos_] == '-' && src_.compare(pos_ + 1, 2, close) == 0;
        const bool plus = src_[pos_] == '+' && src_.compare(pos_ + 1, 2, close) == 0;
        if (minus || plus || src_.compare(pos_, 2, close) == 0) {
          tokens_.push_back({kind == '{' ? Token::Kind::kVarEnd : Token::Kind::kBlockEnd, "", line_});
          advance_to(pos_ + (minus || plus ? 3 : 2));
          after_close(minus, plus, kind == '%');
          return;
        }
      }
      lex_expression_token(nesting);
    }
  }

  void lex_expression_token(int& nesting) {
    const char c = src_[pos_];
    if (is_name_start(c)) {
      size_t p = pos_;
      while (p < src_.size() && is_name_char(src_[p])) ++p;
      tokens_.push_back({Token::Kind::kName, src_.substr(pos_, p - pos_), line_});
      pos_ = p;
      return;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      lex_number();
      return;
    }
    if (c == '\'' || c == '"') {
      lex_string(c);
      return;
    }
    static const char* const kTwoChar[] = {"//", "**", "==", "!=", "<=", ">="};
    for (const char* op : kTwoChar) {
      if (src_.compare(pos_, 2, op) == 0) {
        tokens_.push_back({Token::Kind::kOp, op, line_});
        pos_ += 2;
        return;
      }
    }
    if (std::string_view("+-*/%~<>=()[]{},.:|").find(c) == std::string_view::npos) {
      throw TemplateError(std::string("unexpected character '") + c + "' in tag", line_);
    }
    if (c == '(' || c == '[' || c == '{') ++nesting;
    if ((c == ')' || c == ']' || c == '}') && nesting > 0) --nesting;
    tokens_.push_back({Token::Kind::kOp, std::string(1, c), line_});
    ++pos_;
  }

  void lex_number() {
    size_t p = pos_;
    bool is_float = false;
    auto digits = [&] {
      while (p < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[p])) || src_[p] == '_')) ++p;
    };
    digits();
    if (p + 1 < src_.size() && src_[p] == '.' && std::isdigit(static_cast<unsigned char>(src_[p + 1]))) {
      is_float = true;
      ++p;
      digits();
    }
    if (p < src_.size() && (src_[p] == 'e' || src_[p] == 'E')) {
      size_t q = p + 1;
      if (q < src_.size() && (src_[q] == '+' || src_[q] == '-')) ++q;
      if (q < src_.size() && std::isdigit(static_cast<unsigned char>(src_[q]))) {
        is_float = true;
        p = q;
        digits();
      }
    }
    std::string text;
    for (size_t i = pos_; i < p; ++i) {
      if (src_[i] != '_') text += src_[i];
    }
    tokens_.push_back({is_float ? Token::Kind::kFloat : Token::Kind::kInt, text, line_});
    pos_ = p;
  }

  // Python-style escapes, as jinja2 decodes string literals.
  void lex_string(char quote) {
    const int start_line = line_;
    size_t p = pos_ + 1;
    std::string value;
    while (true) {
      if (p >= src_.size()) throw TemplateError("unterminated string literal", start_line);
      const char c = src_[p];
      if (c == quote) break;
      if (c != '\\' || p + 1 >= src_.size()) {
        value += c;
        ++p;
        continue;
      }
      const char e = src_[p + 1];
      p += 2;
      switch (e) {
        case 'n': value += '\n'; break;
        case 't': value += '\t'; break;
        case 'r': value += '\r'; break;
        case 'b': value += '\b'; break;
        case 'f': value += '\f'; break;
        case 'v': value += '\v'; break;
        case 'a': value += '\a'; break;
        case '0': value += '\0'; break;
        case '\\': value += '\\'; break;
        case '\'': value += '\''; break;
        case '"': value += '"'; break;
        case '\n': break;  // line continuation
        case 'x': case 'u': case 'U': {
          const size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          uint32_t cp = 0;
          for (size_t k = 0; k < n; ++k) {
            const char h = p + k < src_.size() ? src_[p + k] : '\0';
            if (!std::isxdigit(static_cast<unsigned char>(h))) {
              throw TemplateError(std::string("malformed \\") + e + " escape in string literal", line_);
            }
            cp = cp * 16 + static_cast<uint32_t>(std::isdigit(static_cast<unsigned char>(h)) ? h - '0'
                                                                                           : (std::tolower(h) - 'a' + 10));
          }
          p += n;
          append_utf8(cp, &value);
          break;
        }
        default: value += '\\'; value += e;  // unknown escapes stay as written
      }
    }
    tokens_.push_back({Token::Kind::kString, std::move(value), start_line});
    advance_to(p + 1);
  }

  std::string src_;
  size_t pos_ = 0;
  int line_ = 1;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> tokenize(std::string_view source) { return Lexer(normalize_newlines(source)).run(); }

}  // namespace llmpack::jinja
