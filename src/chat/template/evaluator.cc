#include "chat/template/evaluator.h"

namespace llmpack::jinja {
namespace {

bool contains_namespace(const Value& v) {
  if (v.kind == Value::Kind::kNamespace) return true;
  if (v.is_list()) {
    for (const Value& x : *v.list) {
      if (contains_namespace(x)) return true;
    }
  }
  if (v.kind == Value::Kind::kDict) {
    for (const auto& kv : *v.dict) {
      if (contains_namespace(kv.second)) return true;
    }
  }
  return false;
}

// loop.index, loop.first, ... for iteration `i` of `n` items.
Value loop_object(size_t i, const ValueList& items) {
  const auto n = static_cast<int64_t>(items.size());
  const auto k = static_cast<int64_t>(i);
  ValueDict d = {
      {"index0", Value::integer(k)},
      {"index", Value::integer(k + 1)},
      {"revindex0", Value::integer(n - k - 1)},
      {"revindex", Value::integer(n - k)},
      {"first", Value::boolean(i == 0)},
      {"last", Value::boolean(k == n - 1)},
      {"length", Value::integer(n)},
      {"depth", Value::integer(1)},
      {"depth0", Value::integer(0)},
      {"previtem", i > 0 ? items[i - 1] : Value::undefined("previtem")},
      {"nextitem", k + 1 < n ? items[i + 1] : Value::undefined("nextitem")},
  };
  return Value::from_dict(std::move(d));
}

}  // namespace

Evaluator::Evaluator(ValueDict context, const RenderLimits& limits, bool with_strftime_now)
    : limits_(limits), with_strftime_now_(with_strftime_now) {
  frames_.emplace_back();
  for (auto& [k, v] : context) frames_[0][k] = std::move(v);
}

std::string Evaluator::render(const Body& body) {
  exec_body(body);
  return std::move(out_);
}

void Evaluator::step() {
  if (++steps_ > limits_.max_steps) {
    throw TemplateError("template ran more than " + std::to_string(limits_.max_steps) + " steps");
  }
}

void Evaluator::emit(const std::string& text) {
  if (out_.size() + text.size() > limits_.max_output_bytes) {
    throw TemplateError("rendered text exceeds " + std::to_string(limits_.max_output_bytes) + " bytes");
  }
  out_ += text;
}

Value Evaluator::lookup(const std::string& name) {
  for (auto it = frames_.rbegin(); it != frames_.rend(); ++it) {
    auto found = it->find(name);
    if (found != it->end()) return found->second;
  }
  return global_function(name, with_strftime_now_, limits_);
}

void Evaluator::assign(const std::string& name, Value v) { frames_.back()[name] = std::move(v); }

Evaluator::Flow Evaluator::exec_body(const Body& body) {
  for (const auto& s : body) {
    const Flow f = exec(*s);
    if (f != Flow::kNormal) return f;
  }
  return Flow::kNormal;
}

Evaluator::Flow Evaluator::exec(const Stmt& s) {
  step();
  line_ = s.line;
  switch (s.kind) {
    case Stmt::Kind::kText: emit(s.text); return Flow::kNormal;
    case Stmt::Kind::kOutput: {
      const Value v = eval(*s.exprs[0]);
      emit(to_display_string(v));
      return Flow::kNormal;
    }
    case Stmt::Kind::kIf:
      for (size_t k = 0; k < s.exprs.size(); ++k) {
        line_ = s.line;
        if (eval(*s.exprs[k]).truthy()) return exec_body(s.bodies[k]);
      }
      return s.has_else ? exec_body(s.bodies.back()) : Flow::kNormal;
    case Stmt::Kind::kFor: return exec_for(s);
    case Stmt::Kind::kSet: exec_set(s); return Flow::kNormal;
    case Stmt::Kind::kSetBlock: {
      std::string saved = std::move(out_);
      out_.clear();
      exec_body(s.bodies[0]);
      std::string captured = std::move(out_);
      out_ = std::move(saved);
      assign(s.names[0], Value::string(std::move(captured)));
      return Flow::kNormal;
    }
    case Stmt::Kind::kMacro: define_macro(s); return Flow::kNormal;
    case Stmt::Kind::kBreak: return Flow::kBreak;
    case Stmt::Kind::kContinue: return Flow::kContinue;
    case Stmt::Kind::kScope: return exec_body(s.bodies[0]);
  }
  return Flow::kNormal;
}

Evaluator::Flow Evaluator::exec_for(const Stmt& s) {
  ValueList all = iterate(eval(*s.exprs[0]));
  ValueList items;
  // The optional "if" filters first, so loop.length counts kept items.
  auto bind = [&](Frame& frame, const Value& item) {
    if (s.names.size() == 1) {
      frame[s.names[0]] = item;
      return;
    }
    ValueList parts = iterate(item);
    if (parts.size() != s.names.size()) {
      throw TemplateError("cannot unpack " + std::to_string(parts.size()) + " values into " +
                          std::to_string(s.names.size()) + " loop variables");
    }
    for (size_t k = 0; k < parts.size(); ++k) frame[s.names[k]] = parts[k];
  };
  if (s.exprs[1]) {
    for (const Value& item : all) {
      step();
      frames_.emplace_back();
      bind(frames_.back(), item);
      const bool keep = eval(*s.exprs[1]).truthy();
      frames_.pop_back();
      if (keep) items.push_back(item);
    }
  } else {
    items = std::move(all);
  }
  if (items.empty()) return exec_body(s.bodies[1]);
  for (size_t i = 0; i < items.size(); ++i) {
    step();
    frames_.emplace_back();
    bind(frames_.back(), items[i]);
    frames_.back()["loop"] = loop_object(i, items);
    const Flow f = exec_body(s.bodies[0]);
    frames_.pop_back();
    if (f == Flow::kBreak) break;
  }
  return Flow::kNormal;
}

void Evaluator::exec_set(const Stmt& s) {
  Value v = eval(*s.exprs[0]);
  if (!s.attr.empty()) {
    Value ns = lookup(s.text);
    if (ns.kind != Value::Kind::kNamespace) {
      throw TemplateError("cannot set attribute '" + s.attr + "' of '" + s.text + "': it is a " + kind_name(ns) +
                          ", not a namespace()");
    }
    // A namespace holding a namespace could form a reference cycle.
    if (contains_namespace(v)) throw TemplateError("a namespace attribute cannot hold a namespace");
    for (auto& kv : *ns.dict) {
      if (kv.first == s.attr) {
        kv.second = std::move(v);
        return;
      }
    }
    ns.dict->emplace_back(s.attr, std::move(v));
    return;
  }
  if (s.names.size() == 1) {
    assign(s.names[0], std::move(v));
    return;
  }
  ValueList parts = iterate(v);
  if (parts.size() != s.names.size()) {
    throw TemplateError("cannot unpack " + std::to_string(parts.size()) + " values into " +
                        std::to_string(s.names.size()) + " names");
  }
  for (size_t k = 0; k < parts.size(); ++k) assign(s.names[k], parts[k]);
}

void Evaluator::define_macro(const Stmt& s) {
  const Stmt* macro = &s;
  assign(s.text, Value::function([this, macro](CallArgs& args) { return call_macro(*macro, args); }));
}

Value Evaluator::call_macro(const Stmt& macro, CallArgs& args) {
  if (macro_depth_ >= limits_.max_macro_depth) {
    throw TemplateError("macro calls nested deeper than " + std::to_string(limits_.max_macro_depth));
  }
  if (args.positional.size() > macro.names.size()) {
    throw TemplateError("macro '" + macro.text + "' takes " + std::to_string(macro.names.size()) +
                        " arguments, " + std::to_string(args.positional.size()) + " given");
  }
  // The macro sees the render context (frame 0) and its own frame.
  std::vector<Frame> saved = std::move(frames_);
  frames_.clear();
  frames_.push_back(std::move(saved[0]));
  frames_.emplace_back();
  std::string saved_out = std::move(out_);
  out_.clear();
  const int saved_line = line_;
  ++macro_depth_;
  auto restore = [&] {
    --macro_depth_;
    saved[0] = std::move(frames_[0]);
    frames_ = std::move(saved);
    out_.swap(saved_out);
    line_ = saved_line;
  };
  try {
    for (size_t k = 0; k < macro.names.size(); ++k) {
      const Value* given = arg(args, k, macro.names[k]);
      if (given) frames_.back()[macro.names[k]] = *given;
      else if (macro.exprs[k]) frames_.back()[macro.names[k]] = eval(*macro.exprs[k]);
      else frames_.back()[macro.names[k]] = Value::undefined(macro.names[k]);
    }
    exec_body(macro.bodies[0]);
  } catch (...) {
    const int failed_line = line_;
    restore();
    line_ = failed_line;
    throw;
  }
  restore();
  return Value::string(std::move(saved_out));  // swapped: the macro's output
}

CallArgs Evaluator::eval_args(const Expr& e, size_t first) {
  CallArgs args;
  const size_t n_keyword = e.keywords.size();
  const size_t n_positional = e.children.size() - first - n_keyword;
  for (size_t k = 0; k < n_positional; ++k) args.positional.push_back(eval(*e.children[first + k]));
  for (size_t k = 0; k < n_keyword; ++k) {
    args.keyword.emplace_back(e.keywords[k], eval(*e.children[first + n_positional + k]));
  }
  return args;
}

Value Evaluator::eval_call(const Expr& e) {
  const Expr& callee = *e.children[0];
  if (callee.kind == Expr::Kind::kGetAttr) {
    Value obj = eval(*callee.children[0]);
    require_defined(obj);
    CallArgs args = eval_args(e, 1);
    bool found = false;
    Value result = call_method(obj, callee.name, args, found);
    if (found) return result;
    Value fn = get_attr(obj, callee.name);
    if (fn.kind == Value::Kind::kFunction) return (*fn.fn)(args);
    throw TemplateError(std::string("'") + kind_name(obj) + "' object has no method '" + callee.name + "'");
  }
  Value fn = eval(callee);
  require_defined(fn);
  if (fn.kind != Value::Kind::kFunction) throw TemplateError(std::string("'") + kind_name(fn) + "' object is not callable");
  CallArgs args = eval_args(e, 1);
  return (*fn.fn)(args);
}

Value Evaluator::eval_compare(const Expr& e) {
  Value left = eval(*e.children[0]);
  for (size_t k = 0; k < e.ops.size(); ++k) {
    Value right = eval(*e.children[k + 1]);
    if (!compare_op(e.ops[k], left, right)) return Value::boolean(false);
    left = std::move(right);
  }
  return Value::boolean(true);
}

Value Evaluator::eval(const Expr& e) {
  switch (e.kind) {
    case Expr::Kind::kLiteral: return e.literal;
    case Expr::Kind::kName: return lookup(e.name);
    case Expr::Kind::kGetAttr: return get_attr(eval(*e.children[0]), e.name);
    case Expr::Kind::kGetItem: {
      Value obj = eval(*e.children[0]);
      return get_item(obj, eval(*e.children[1]));
    }
    case Expr::Kind::kSlice: {
      Value obj = eval(*e.children[0]);
      Value parts[3];
      for (int k = 0; k < 3; ++k) {
        if (e.children[1 + k]) parts[k] = eval(*e.children[1 + k]);
      }
      return slice(obj, parts[0], parts[1], parts[2]);
    }
    case Expr::Kind::kCall: return eval_call(e);
    case Expr::Kind::kFilter: {
      Value input = eval(*e.children[0]);
      CallArgs args = eval_args(e, 1);
      return apply_filter(e.name, input, args, limits_);
    }
    case Expr::Kind::kTest: {
      Value input = eval(*e.children[0]);
      CallArgs args = eval_args(e, 1);
      return Value::boolean(apply_test(e.name, input, args) != e.negated);
    }
    case Expr::Kind::kUnary: {
      Value v = eval(*e.children[0]);
      if (e.name == "not") return Value::boolean(!v.truthy());
      if (e.name == "-") return negate(v);
      require_defined(v);
      return v;
    }
    case Expr::Kind::kBinary: {
      Value a = eval(*e.children[0]);
      if (e.name == "and") return a.truthy() ? eval(*e.children[1]) : a;
      if (e.name == "or") return a.truthy() ? a : eval(*e.children[1]);
      return binary_op(e.name, a, eval(*e.children[1]), limits_);
    }
    case Expr::Kind::kCompare: return eval_compare(e);
    case Expr::Kind::kCondition:
      if (eval(*e.children[0]).truthy()) return eval(*e.children[1]);
      return e.children[2] ? eval(*e.children[2]) : Value::undefined();
    case Expr::Kind::kList:
    case Expr::Kind::kTuple: {
      ValueList items;
      for (const auto& c : e.children) items.push_back(eval(*c));
      return Value::from_list(std::move(items));
    }
    case Expr::Kind::kDict: {
      ValueDict items;
      for (size_t k = 0; k + 1 < e.children.size(); k += 2) {
        Value key = eval(*e.children[k]);
        std::string name = key.is_string() ? key.s : to_display_string(key);
        Value v = eval(*e.children[k + 1]);
        bool replaced = false;
        for (auto& kv : items) {
          if (kv.first == name) {
            kv.second = v;
            replaced = true;
          }
        }
        if (!replaced) items.emplace_back(std::move(name), std::move(v));
      }
      return Value::from_dict(std::move(items));
    }
  }
  return Value::undefined();
}

}  // namespace llmpack::jinja
