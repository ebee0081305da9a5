// The value model of the chat-template interpreter: the Python values a
// Jinja2 template sees (None, bool, int, float, str, list, dict, namespace,
// callables) plus jinja2's default Undefined. Lists and dicts are immutable
// once built (HF renders in an ImmutableSandboxedEnvironment), so they are
// shared by pointer; only namespace() objects are mutable.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace llmpack::jinja {

// Evaluation errors travel as this exception inside the interpreter only;
// ChatTemplate turns it into a Status at the API boundary. `line` is the
// template line (0: not known yet, filled in by the statement that ran).
class TemplateError : public std::runtime_error {
 public:
  explicit TemplateError(const std::string& message, int line = 0)
      : std::runtime_error(message), line_(line) {}
  int line() const { return line_; }

 private:
  int line_;
};

struct Value;
using ValueList = std::vector<Value>;
using ValueDict = std::vector<std::pair<std::string, Value>>;  // insertion order

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
};
using NativeFunction = std::function<Value(CallArgs&)>;

struct Value {
  enum class Kind { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict, kNamespace, kFunction };

  Kind kind = Kind::kUndefined;
  bool b = false;
  int64_t i = 0;
  double f = 0.0;
  std::string s;  // string value; for Undefined, the name that was undefined
  std::shared_ptr<const ValueList> list;
  std::shared_ptr<ValueDict> dict;  // dict (never mutated) or namespace (mutable)
  std::shared_ptr<NativeFunction> fn;
  // Nesting depth of lists/dicts; building a value deeper than kMaxDepth
  // throws, so that recursive walks and destructors stay bounded.
  int depth = 0;
  static constexpr int kMaxDepth = 200;

  static Value undefined(std::string name = {}) {
    Value v;
    v.s = std::move(name);
    return v;
  }
  static Value none() { return make(Kind::kNone); }
  static Value boolean(bool x) { Value v = make(Kind::kBool); v.b = x; return v; }
  static Value integer(int64_t x) { Value v = make(Kind::kInt); v.i = x; return v; }
  static Value number(double x) { Value v = make(Kind::kFloat); v.f = x; return v; }
  static Value string(std::string x) { Value v = make(Kind::kString); v.s = std::move(x); return v; }
  static Value from_list(ValueList items) {
    Value v = make(Kind::kList);
    v.depth = child_depth(items.begin(), items.end(), [](const Value& x) { return x.depth; });
    v.list = std::make_shared<const ValueList>(std::move(items));
    return v;
  }
  static Value from_dict(ValueDict items) {
    Value v = make(Kind::kDict);
    v.depth = child_depth(items.begin(), items.end(), [](const auto& kv) { return kv.second.depth; });
    v.dict = std::make_shared<ValueDict>(std::move(items));
    return v;
  }
  static Value new_namespace(ValueDict items) {
    Value v = from_dict(std::move(items));
    v.kind = Kind::kNamespace;
    return v;
  }
  static Value function(NativeFunction f) {
    Value v = make(Kind::kFunction);
    v.fn = std::make_shared<NativeFunction>(std::move(f));
    return v;
  }

  bool is_undefined() const { return kind == Kind::kUndefined; }
  bool is_none() const { return kind == Kind::kNone; }
  bool is_string() const { return kind == Kind::kString; }
  bool is_number() const { return kind == Kind::kInt || kind == Kind::kFloat || kind == Kind::kBool; }
  bool is_list() const { return kind == Kind::kList; }
  bool is_mapping() const { return kind == Kind::kDict || kind == Kind::kNamespace; }

  // Python truthiness (Undefined is falsy).
  bool truthy() const;
  // Number as double (bool and int included); callers check is_number().
  double as_double() const;
  // Member lookup for dicts and namespaces; nullptr when absent.
  const Value* find(std::string_view key) const;

 private:
  static Value make(Kind k) { Value v; v.kind = k; return v; }
  template <typename It, typename F>
  static int child_depth(It begin, It end, F depth_of) {
    int d = 0;
    for (It it = begin; it != end; ++it) d = std::max(d, depth_of(*it));
    if (d + 1 > kMaxDepth) throw TemplateError("value nested deeper than 200 levels");
    return d + 1;
  }
};

// str(value) as Python prints it ("True", "None", "[1, 'a']"); Undefined is "".
std::string to_display_string(const Value& v);
// repr(value): strings quoted, as inside a printed list.
std::string to_repr(const Value& v);
// Python repr of a float ("1.0", "0.30000000000000004", "1e+20", "inf").
std::string format_python_float(double x);
// Python ==, deep for lists and dicts; 1 == 1.0 == True.
bool values_equal(const Value& a, const Value& b);
// A name for error messages ("string", "list", "undefined").
const char* kind_name(const Value& v);

// json.dumps(v, ensure_ascii=False, indent=indent) as HF's tojson filter does:
// separators ", " / ": " (",", ": " with an indent), keys in insertion order.
// indent < 0: no indent.
std::string to_json_text(const Value& v, int indent);

// Objects keep the JSON library's key order (sorted for nlohmann::json,
// insertion order for nlohmann::ordered_json).
Value value_from_json(const nlohmann::json& j);
Value value_from_json(const nlohmann::ordered_json& j);

// Code points of a UTF-8 string (Python str semantics for len/slicing);
// invalid bytes count as one code point each.
std::vector<std::string_view> split_code_points(std::string_view s);

}  // namespace llmpack::jinja
