#include "chat/template/parser.h"

#include <charconv>
#include <cstdlib>

#include "chat/template/lexer.h"

namespace llmpack::jinja {
namespace {

// Nesting of expressions and blocks; deeper input is rejected rather than
// risking the stack.
constexpr int kMaxParseDepth = 100;
constexpr const char* kUseBuiltin = "; use --chat_template NAME";

using TK = Token::Kind;

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  Body parse_all() {
    std::string end;
    Body body = parse_body({}, end);
    return body;
  }

 private:
  // ---- token helpers ----
  const Token& peek(size_t ahead = 0) const {
    const size_t i = pos_ + ahead;
    return i < tokens_.size() ? tokens_[i] : tokens_.back();
  }
  const Token& next() {
    const Token& t = peek();
    if (pos_ < tokens_.size() - 1) ++pos_;
    return t;
  }
  bool is_op(const char* op, size_t ahead = 0) const {
    return peek(ahead).kind == TK::kOp && peek(ahead).text == op;
  }
  bool is_name(const char* name, size_t ahead = 0) const {
    return peek(ahead).kind == TK::kName && peek(ahead).text == name;
  }
  [[noreturn]] void fail(const std::string& message) const { throw TemplateError(message, peek().line); }
  static std::string describe(const Token& t) {
    switch (t.kind) {
      case TK::kEof: return "end of template";
      case TK::kVarEnd: return "'}}'";
      case TK::kBlockEnd: return "'%}'";
      case TK::kString: return "a string";
      case TK::kText: return "text";
      default: return "'" + t.text + "'";
    }
  }
  void expect_op(const char* op) {
    if (!is_op(op)) fail(std::string("expected '") + op + "', found " + describe(peek()));
    next();
  }
  std::string expect_name() {
    if (peek().kind != TK::kName) fail("expected a name, found " + describe(peek()));
    return next().text;
  }
  void expect_block_end() {
    if (peek().kind != TK::kBlockEnd) fail("expected '%}', found " + describe(peek()));
    next();
  }

  struct DepthGuard {
    explicit DepthGuard(Parser& p) : p_(p) {
      if (++p_.depth_ > kMaxParseDepth) p_.fail("template nested deeper than 100 levels");
    }
    ~DepthGuard() { --p_.depth_; }
    Parser& p_;
  };

  static ExprPtr make(Expr::Kind kind, int line) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = line;
    return e;
  }

  // ---- statements ----
  // Parses until one of `ends` opens a block tag; `found` gets that tag name
  // (consumed, the rest of its tag is left to the caller).
  Body parse_body(const std::vector<std::string>& ends, std::string& found) {
    DepthGuard guard(*this);
    Body body;
    while (true) {
      const Token& t = peek();
      if (t.kind == TK::kEof) {
        if (!ends.empty()) fail("unexpected end of template: expected '{% " + ends.back() + " %}'");
        return body;
      }
      if (t.kind == TK::kText) {
        auto s = std::make_unique<Stmt>();
        s->kind = Stmt::Kind::kText;
        s->line = t.line;
        s->text = t.text;
        body.push_back(std::move(s));
        next();
      } else if (t.kind == TK::kVarBegin) {
        next();
        auto s = std::make_unique<Stmt>();
        s->kind = Stmt::Kind::kOutput;
        s->line = t.line;
        s->exprs.push_back(parse_tuple(true));
        if (peek().kind != TK::kVarEnd) fail("expected '}}', found " + describe(peek()));
        next();
        body.push_back(std::move(s));
      } else if (t.kind == TK::kBlockBegin) {
        next();
        if (peek().kind != TK::kName) fail("expected a tag name after '{%', found " + describe(peek()));
        const std::string tag = peek().text;
        for (const auto& e : ends) {
          if (tag == e) {
            next();
            found = tag;
            return body;
          }
        }
        body.push_back(parse_statement());
      } else {
        fail("unexpected " + describe(t));
      }
    }
  }

  StmtPtr parse_statement() {
    const Token tag = next();
    auto s = std::make_unique<Stmt>();
    s->line = tag.line;
    const std::string& name = tag.text;
    if (name == "if") return parse_if(std::move(s));
    if (name == "for") return parse_for(std::move(s));
    if (name == "set") return parse_set(std::move(s));
    if (name == "macro") return parse_macro(std::move(s));
    if (name == "break" || name == "continue") {
      if (loop_depth_ == 0) throw TemplateError("'" + name + "' outside of a for loop", tag.line);
      s->kind = name == "break" ? Stmt::Kind::kBreak : Stmt::Kind::kContinue;
      expect_block_end();
      return s;
    }
    if (name == "generation") {
      expect_block_end();
      s->kind = Stmt::Kind::kScope;
      std::string found;
      s->bodies.push_back(parse_body({"endgeneration"}, found));
      expect_block_end();
      return s;
    }
    static const char* const kUnsupported[] = {"include", "import", "from", "extends", "block", "call",
                                               "filter", "with", "autoescape", "do", "trans", "recursive"};
    for (const char* u : kUnsupported) {
      if (name == u) throw TemplateError("unsupported tag '" + name + "'" + kUseBuiltin, tag.line);
    }
    throw TemplateError("unknown tag '" + name + "'", tag.line);
  }

  StmtPtr parse_if(StmtPtr s) {
    s->kind = Stmt::Kind::kIf;
    s->exprs.push_back(parse_tuple(true));
    expect_block_end();
    while (true) {
      std::string found;
      s->bodies.push_back(parse_body({"elif", "else", "endif"}, found));
      if (found == "elif") {
        s->exprs.push_back(parse_tuple(true));
        expect_block_end();
      } else if (found == "else") {
        expect_block_end();
        s->has_else = true;
        s->bodies.push_back(parse_body({"endif"}, found));
        expect_block_end();
        return s;
      } else {
        expect_block_end();
        return s;
      }
    }
  }

  StmtPtr parse_for(StmtPtr s) {
    s->kind = Stmt::Kind::kFor;
    s->names.push_back(expect_name());
    while (is_op(",")) {
      next();
      s->names.push_back(expect_name());
    }
    if (!is_name("in")) fail("expected 'in' in for loop, found " + describe(peek()));
    next();
    s->exprs.push_back(parse_tuple(false));
    ExprPtr filter;
    if (is_name("if")) {
      next();
      filter = parse_expression(true);
    }
    s->exprs.push_back(std::move(filter));
    if (is_name("recursive")) throw TemplateError(std::string("unsupported recursive for loop") + kUseBuiltin, peek().line);
    expect_block_end();
    ++loop_depth_;
    std::string found;
    s->bodies.push_back(parse_body({"else", "endfor"}, found));
    --loop_depth_;
    if (found == "else") {
      expect_block_end();
      s->has_else = true;
      s->bodies.push_back(parse_body({"endfor"}, found));
    } else {
      s->bodies.emplace_back();
    }
    expect_block_end();
    return s;
  }

  StmtPtr parse_set(StmtPtr s) {
    s->names.push_back(expect_name());
    if (is_op(".")) {
      next();
      s->text = s->names[0];
      s->names.clear();
      s->attr = expect_name();
    } else {
      while (is_op(",")) {
        next();
        s->names.push_back(expect_name());
      }
    }
    if (peek().kind == TK::kBlockEnd && s->attr.empty() && s->names.size() == 1) {
      next();
      s->kind = Stmt::Kind::kSetBlock;
      std::string found;
      s->bodies.push_back(parse_body({"endset"}, found));
      expect_block_end();
      return s;
    }
    s->kind = Stmt::Kind::kSet;
    expect_op("=");
    s->exprs.push_back(parse_tuple(true));
    expect_block_end();
    return s;
  }

  StmtPtr parse_macro(StmtPtr s) {
    s->kind = Stmt::Kind::kMacro;
    s->text = expect_name();
    expect_op("(");
    while (!is_op(")")) {
      if (!s->names.empty()) expect_op(",");
      if (is_op(")")) break;
      s->names.push_back(expect_name());
      if (is_op("=")) {
        next();
        s->exprs.push_back(parse_expression(true));
      } else {
        s->exprs.push_back(nullptr);
      }
    }
    next();
    expect_block_end();
    const int saved_loops = loop_depth_;
    loop_depth_ = 0;
    std::string found;
    s->bodies.push_back(parse_body({"endmacro"}, found));
    loop_depth_ = saved_loops;
    expect_block_end();
    return s;
  }

  // ---- expressions (jinja2's precedence) ----
  // A comma-separated list without brackets is a tuple ("{% set a = 1, 2 %}").
  ExprPtr parse_tuple(bool with_condition) {
    const int line = peek().line;
    ExprPtr first = parse_expression(with_condition);
    if (!is_op(",")) return first;
    auto tuple = make(Expr::Kind::kTuple, line);
    tuple->children.push_back(std::move(first));
    while (is_op(",")) {
      next();
      if (peek().kind == TK::kBlockEnd || peek().kind == TK::kVarEnd) break;
      tuple->children.push_back(parse_expression(with_condition));
    }
    return tuple;
  }

  ExprPtr parse_expression(bool with_condition) {
    DepthGuard guard(*this);
    ExprPtr e = parse_or();
    if (!with_condition) return e;
    while (is_name("if")) {
      const int line = next().line;
      auto cond = make(Expr::Kind::kCondition, line);
      cond->children.push_back(parse_or());
      cond->children.push_back(std::move(e));
      if (is_name("else")) {
        next();
        cond->children.push_back(parse_expression(true));
      } else {
        cond->children.push_back(nullptr);
      }
      e = std::move(cond);
    }
    return e;
  }

  ExprPtr binary(const char* op, ExprPtr a, ExprPtr b, int line) {
    auto e = make(Expr::Kind::kBinary, line);
    e->name = op;
    e->children.push_back(std::move(a));
    e->children.push_back(std::move(b));
    return e;
  }

  ExprPtr parse_or() {
    ExprPtr e = parse_and();
    while (is_name("or")) {
      const int line = next().line;
      e = binary("or", std::move(e), parse_and(), line);
    }
    return e;
  }

  ExprPtr parse_and() {
    ExprPtr e = parse_not();
    while (is_name("and")) {
      const int line = next().line;
      e = binary("and", std::move(e), parse_not(), line);
    }
    return e;
  }

  ExprPtr parse_not() {
    if (is_name("not")) {
      DepthGuard guard(*this);
      auto e = make(Expr::Kind::kUnary, next().line);
      e->name = "not";
      e->children.push_back(parse_not());
      return e;
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    ExprPtr first = parse_math1();
    ExprPtr cmp;
    while (true) {
      std::string op;
      if (peek().kind == TK::kOp && (peek().text == "==" || peek().text == "!=" || peek().text == "<" ||
                                     peek().text == "<=" || peek().text == ">" || peek().text == ">=")) {
        op = next().text;
      } else if (is_name("in")) {
        next();
        op = "in";
      } else if (is_name("not") && is_name("in", 1)) {
        next();
        next();
        op = "not in";
      } else {
        break;
      }
      if (!cmp) {
        cmp = make(Expr::Kind::kCompare, first->line);
        cmp->children.push_back(std::move(first));
      }
      cmp->ops.push_back(op);
      cmp->children.push_back(parse_math1());
    }
    return cmp ? std::move(cmp) : std::move(first);
  }

  ExprPtr parse_math1() {
    ExprPtr e = parse_concat();
    while (is_op("+") || is_op("-")) {
      const Token& t = next();
      const char* op = t.text == "+" ? "+" : "-";
      e = binary(op, std::move(e), parse_concat(), t.line);
    }
    return e;
  }

  ExprPtr parse_concat() {
    ExprPtr e = parse_math2();
    while (is_op("~")) {
      const int line = next().line;
      e = binary("~", std::move(e), parse_math2(), line);
    }
    return e;
  }

  ExprPtr parse_math2() {
    ExprPtr e = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const Token& t = next();
      const std::string op = t.text;
      const int line = t.line;
      auto b = make(Expr::Kind::kBinary, line);
      b->name = op;
      b->children.push_back(std::move(e));
      b->children.push_back(parse_pow());
      e = std::move(b);
    }
    return e;
  }

  ExprPtr parse_pow() {
    ExprPtr e = parse_unary(true);
    while (is_op("**")) {
      const int line = next().line;
      e = binary("**", std::move(e), parse_unary(true), line);
    }
    return e;
  }

  ExprPtr parse_unary(bool with_filter) {
    DepthGuard guard(*this);
    ExprPtr e;
    if (is_op("-") || is_op("+")) {
      const Token& t = next();
      e = make(Expr::Kind::kUnary, t.line);
      e->name = t.text;
      e->children.push_back(parse_unary(false));
    } else {
      e = parse_primary();
    }
    e = parse_postfix(std::move(e));
    if (with_filter) e = parse_filters(std::move(e));
    return e;
  }

  ExprPtr parse_primary();
  ExprPtr parse_postfix(ExprPtr e);
  ExprPtr parse_subscript(ExprPtr e, int line);
  ExprPtr parse_filters(ExprPtr e);
  void parse_call_args(Expr& call);

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
};

ExprPtr Parser::parse_primary() {
  const Token& t = peek();
  if (t.kind == TK::kName) {
    next();
    auto e = make(Expr::Kind::kLiteral, t.line);
    if (t.text == "true" || t.text == "True") e->literal = Value::boolean(true);
    else if (t.text == "false" || t.text == "False") e->literal = Value::boolean(false);
    else if (t.text == "none" || t.text == "None") e->literal = Value::none();
    else {
      e->kind = Expr::Kind::kName;
      e->name = t.text;
    }
    return e;
  }
  if (t.kind == TK::kString) {
    auto e = make(Expr::Kind::kLiteral, t.line);
    std::string s;
    while (peek().kind == TK::kString) s += next().text;  // adjacent literals concatenate
    e->literal = Value::string(std::move(s));
    return e;
  }
  if (t.kind == TK::kInt || t.kind == TK::kFloat) {
    next();
    auto e = make(Expr::Kind::kLiteral, t.line);
    if (t.kind == TK::kInt) {
      int64_t v = 0;
      auto res = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
      if (res.ec != std::errc()) throw TemplateError("integer literal " + t.text + " out of range", t.line);
      e->literal = Value::integer(v);
    } else {
      e->literal = Value::number(std::strtod(t.text.c_str(), nullptr));
    }
    return e;
  }
  if (is_op("(")) {
    next();
    if (is_op(")")) {
      next();
      return make(Expr::Kind::kTuple, t.line);
    }
    ExprPtr inner = parse_expression(true);
    if (is_op(",")) {
      auto tuple = make(Expr::Kind::kTuple, t.line);
      tuple->children.push_back(std::move(inner));
      while (is_op(",")) {
        next();
        if (is_op(")")) break;
        tuple->children.push_back(parse_expression(true));
      }
      inner = std::move(tuple);
    }
    expect_op(")");
    return inner;
  }
  if (is_op("[") || is_op("{")) {
    const bool is_list = is_op("[");
    next();
    auto e = make(is_list ? Expr::Kind::kList : Expr::Kind::kDict, t.line);
    const char* close = is_list ? "]" : "}";
    while (!is_op(close)) {
      if (!e->children.empty()) {
        expect_op(",");
        if (is_op(close)) break;
      }
      e->children.push_back(parse_expression(true));
      if (!is_list) {
        expect_op(":");
        e->children.push_back(parse_expression(true));
      }
    }
    next();
    return e;
  }
  fail("unexpected " + describe(t) + " in expression");
}

ExprPtr Parser::parse_postfix(ExprPtr e) {
  while (true) {
    if (is_op(".")) {
      const int line = next().line;
      if (peek().kind == TK::kInt) {  // foo.0 is foo[0]
        auto idx = make(Expr::Kind::kGetItem, line);
        idx->children.push_back(std::move(e));
        auto lit = make(Expr::Kind::kLiteral, line);
        lit->literal = Value::integer(std::atoll(next().text.c_str()));
        idx->children.push_back(std::move(lit));
        e = std::move(idx);
        continue;
      }
      auto get = make(Expr::Kind::kGetAttr, line);
      get->name = expect_name();
      get->children.push_back(std::move(e));
      e = std::move(get);
    } else if (is_op("[")) {
      e = parse_subscript(std::move(e), next().line);
    } else if (is_op("(")) {
      auto call = make(Expr::Kind::kCall, peek().line);
      next();
      call->children.push_back(std::move(e));
      parse_call_args(*call);
      e = std::move(call);
    } else {
      return e;
    }
  }
}

ExprPtr Parser::parse_subscript(ExprPtr e, int line) {
  ExprPtr parts[3];
  int part = 0;
  bool is_slice = false;
  while (!is_op("]")) {
    if (is_op(":")) {
      next();
      is_slice = true;
      if (++part > 2) fail("too many ':' in slice");
      continue;
    }
    if (parts[part]) fail("expected ']' or ':' in subscript, found " + describe(peek()));
    parts[part] = parse_expression(true);
  }
  next();
  if (!is_slice) {
    if (!parts[0]) fail("empty subscript '[]'");
    auto get = make(Expr::Kind::kGetItem, line);
    get->children.push_back(std::move(e));
    get->children.push_back(std::move(parts[0]));
    return get;
  }
  auto slice = make(Expr::Kind::kSlice, line);
  slice->children.push_back(std::move(e));
  for (auto& p : parts) slice->children.push_back(std::move(p));
  return slice;
}

// After '(' : positional then keyword arguments, up to ')'.
void Parser::parse_call_args(Expr& call) {
  bool first = true;
  while (!is_op(")")) {
    if (!first) {
      expect_op(",");
      if (is_op(")")) break;
    }
    first = false;
    if (peek().kind == TK::kName && is_op("=", 1)) {
      call.keywords.push_back(next().text);
      next();
      call.children.push_back(parse_expression(true));
    } else {
      if (!call.keywords.empty()) fail("positional argument after a keyword argument");
      call.children.push_back(parse_expression(true));
    }
  }
  next();
}

ExprPtr Parser::parse_filters(ExprPtr e) {
  while (true) {
    if (is_op("|")) {
      const int line = next().line;
      auto f = make(Expr::Kind::kFilter, line);
      f->name = expect_name();
      if (!is_known_filter(f->name)) throw TemplateError("unsupported filter '" + f->name + "'" + kUseBuiltin, line);
      f->children.push_back(std::move(e));
      if (is_op("(")) {
        next();
        parse_call_args(*f);
      }
      e = std::move(f);
    } else if (is_name("is")) {
      const int line = next().line;
      auto test = make(Expr::Kind::kTest, line);
      if (is_name("not")) {
        next();
        test->negated = true;
      }
      test->name = expect_name();
      if (!is_known_test(test->name)) throw TemplateError("unsupported test '" + test->name + "'" + kUseBuiltin, line);
      test->children.push_back(std::move(e));
      if (is_op("(")) {
        next();
        parse_call_args(*test);
      } else if ((peek().kind == TK::kString || peek().kind == TK::kInt || peek().kind == TK::kFloat ||
                  is_op("[") || is_op("{") ||
                  (peek().kind == TK::kName && !is_name("else") && !is_name("or") && !is_name("and") &&
                   !is_name("if") && !is_name("in") && !is_name("not") && !is_name("is")))) {
        test->children.push_back(parse_postfix(parse_primary()));  // "is divisibleby 3"
      }
      e = std::move(test);
    } else if (is_op("(")) {
      auto call = make(Expr::Kind::kCall, next().line);
      call->children.push_back(std::move(e));
      parse_call_args(*call);
      e = std::move(call);
    } else {
      return e;
    }
  }
}

}  // namespace

Body parse_template(std::string_view source) { return Parser(tokenize(source)).parse_all(); }

}  // namespace llmpack::jinja
