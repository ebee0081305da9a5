// The syntax tree of a parsed chat template. Every node keeps its template
// line for error messages.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "chat/template/value.h"

namespace llmpack::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    kLiteral,   // literal
    kName,      // name
    kGetAttr,   // children[0].name
    kGetItem,   // children[0][children[1]]
    kSlice,     // children[0][c1:c2:c3], missing parts are nullptr
    kCall,      // children[0](children[1..]); the last keywords.size() args are keyword args
    kFilter,    // children[0] | name(children[1..])
    kTest,      // children[0] is [not] name(children[1..]); negated
    kUnary,     // name in {"-", "+", "not"}; children[0]
    kBinary,    // name in {"+","-","*","/","//","%","**","~","and","or"}
    kCompare,   // children[0] ops[k] children[k+1] ...
    kCondition, // children[1] if children[0] else children[2] (nullptr: undefined)
    kList,      // [children...]
    kTuple,     // (children...)
    kDict,      // {children[2k]: children[2k+1]}
  };
  Kind kind;
  int line = 0;
  std::string name;
  Value literal;
  std::vector<ExprPtr> children;
  std::vector<std::string> keywords;  // kCall / kFilter / kTest keyword argument names
  std::vector<std::string> ops;       // kCompare
  bool negated = false;
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct Stmt {
  enum class Kind {
    kText,      // text
    kOutput,    // {{ exprs[0] }}
    kIf,        // exprs = conditions, bodies[k] for exprs[k], bodies.back() = else when has_else
    kFor,       // for names in exprs[0] [if exprs[1]]: bodies[0] else bodies[1]
    kSet,       // set names[0] (or names tuple, or text.attr) = exprs[0]
    kSetBlock,  // set names[0] %} bodies[0] {% endset
    kMacro,     // macro text(names = exprs defaults, nullptr: none) bodies[0]
    kBreak,
    kContinue,
    kScope,     // bodies[0] run as is (the HF {% generation %} block)
  };
  Kind kind;
  int line = 0;
  std::string text;   // kText text; kSet namespace name when attr is set; kMacro name
  std::string attr;   // kSet: the namespace attribute ({% set ns.attr = ... %})
  std::vector<std::string> names;
  std::vector<ExprPtr> exprs;
  std::vector<Body> bodies;
  bool has_else = false;
};

}  // namespace llmpack::jinja
