// Tree-walking evaluator of a parsed chat template, with jinja2's scoping:
// a for-loop iteration gets a fresh frame (a `set` inside a loop does not
// leak out, which is why templates use namespace()), `if` has no frame, a
// macro call sees the render context and its own frame only.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "chat/template/ast.h"
#include "chat/template/builtins.h"

namespace llmpack::jinja {

class Evaluator {
 public:
  Evaluator(ValueDict context, const RenderLimits& limits, bool with_strftime_now);

  // Throws TemplateError; line() then names the statement that failed.
  std::string render(const Body& body);
  int line() const { return line_; }

 private:
  enum class Flow { kNormal, kBreak, kContinue };
  using Frame = std::unordered_map<std::string, Value>;

  Flow exec_body(const Body& body);
  Flow exec(const Stmt& s);
  Flow exec_for(const Stmt& s);
  void exec_set(const Stmt& s);
  void define_macro(const Stmt& s);
  Value call_macro(const Stmt& macro, CallArgs& args);

  Value eval(const Expr& e);
  Value eval_call(const Expr& e);
  Value eval_compare(const Expr& e);
  CallArgs eval_args(const Expr& e, size_t first);
  Value lookup(const std::string& name);
  void assign(const std::string& name, Value v);
  void emit(const std::string& text);
  void step();

  std::vector<Frame> frames_;  // frames_[0]: the render context and top-level sets
  std::string out_;
  RenderLimits limits_;
  bool with_strftime_now_;
  size_t steps_ = 0;
  int macro_depth_ = 0;
  int line_ = 0;
};

}  // namespace llmpack::jinja
