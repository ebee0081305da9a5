#include <cmath>
#include <limits>

#include "chat/template/builtins.h"

namespace llmpack::jinja {
namespace {

[[noreturn]] void type_error(std::string_view op, const Value& a, const Value& b) {
  throw TemplateError("unsupported operand types for " + std::string(op) + ": '" + kind_name(a) + "' and '" +
                      kind_name(b) + "'");
}

bool is_integral(const Value& v) { return v.kind == Value::Kind::kInt || v.kind == Value::Kind::kBool; }
int64_t int_of(const Value& v) { return v.kind == Value::Kind::kBool ? (v.b ? 1 : 0) : v.i; }

Value checked(bool overflow, int64_t result) {
  if (overflow) throw TemplateError("integer overflow in arithmetic");
  return Value::integer(result);
}

Value int_pow(int64_t base, int64_t exp) {
  int64_t result = 1;
  while (exp > 0) {
    if (exp & 1) {
      if (__builtin_mul_overflow(result, base, &result)) throw TemplateError("integer overflow in '**'");
    }
    exp >>= 1;
    if (exp > 0 && __builtin_mul_overflow(base, base, &base)) throw TemplateError("integer overflow in '**'");
  }
  return Value::integer(result);
}

Value repeat(const Value& seq, int64_t times, const RenderLimits& limits) {
  if (times <= 0) return seq.is_string() ? Value::string("") : Value::from_list({});
  const size_t unit = seq.is_string() ? seq.s.size() : seq.list->size();
  if (unit != 0 && static_cast<uint64_t>(times) > limits.max_sequence_items / unit + 1) {
    throw TemplateError("'*' would build more than " + std::to_string(limits.max_sequence_items) + " items");
  }
  if (seq.is_string()) {
    std::string out;
    for (int64_t k = 0; k < times; ++k) out += seq.s;
    return Value::string(std::move(out));
  }
  ValueList out;
  for (int64_t k = 0; k < times; ++k) out.insert(out.end(), seq.list->begin(), seq.list->end());
  return Value::from_list(std::move(out));
}

Value arithmetic(std::string_view op, const Value& a, const Value& b) {
  if (is_integral(a) && is_integral(b)) {
    const int64_t x = int_of(a), y = int_of(b);
    int64_t r = 0;
    if (op == "+" || op == "-" || op == "*") {
      const bool overflow = op == "+"   ? __builtin_add_overflow(x, y, &r)
                            : op == "-" ? __builtin_sub_overflow(x, y, &r)
                                        : __builtin_mul_overflow(x, y, &r);
      return checked(overflow, r);
    }
    if (op == "/") {
      if (y == 0) throw TemplateError("division by zero");
      return Value::number(static_cast<double>(x) / static_cast<double>(y));
    }
    if (op == "//" || op == "%") {
      if (y == 0) throw TemplateError("integer division or modulo by zero");
      if (x == std::numeric_limits<int64_t>::min() && y == -1) throw TemplateError("integer overflow in '" + std::string(op) + "'");
      int64_t q = x / y, m = x % y;
      if (m != 0 && ((m < 0) != (y < 0))) {  // Python floors toward -inf
        --q;
        m += y;
      }
      return Value::integer(op == "//" ? q : m);
    }
    if (op == "**") {
      if (y >= 0) return int_pow(x, y);
      return Value::number(std::pow(static_cast<double>(x), static_cast<double>(y)));
    }
  }
  const double x = a.as_double(), y = b.as_double();
  if (op == "+") return Value::number(x + y);
  if (op == "-") return Value::number(x - y);
  if (op == "*") return Value::number(x * y);
  if (op == "**") return Value::number(std::pow(x, y));
  if (y == 0.0) throw TemplateError("float division by zero");
  if (op == "/") return Value::number(x / y);
  const double m = std::fmod(x, y);
  const double mod = (m != 0.0 && ((m < 0) != (y < 0))) ? m + y : m;
  if (op == "%") return Value::number(mod);
  return Value::number(std::floor(x / y));  // "//"
}

}  // namespace

void require_defined(const Value& v) {
  if (v.is_undefined()) {
    throw TemplateError(v.s.empty() ? std::string("value is undefined") : "'" + v.s + "' is undefined");
  }
}

int64_t to_int_index(const Value& v, const char* what) {
  if (!is_integral(v)) throw TemplateError(std::string(what) + " must be an integer, found " + kind_name(v));
  return int_of(v);
}

Value binary_op(std::string_view op, const Value& a, const Value& b, const RenderLimits& limits) {
  if (op == "~") {
    std::string s = to_display_string(a) + to_display_string(b);
    if (s.size() > limits.max_output_bytes) throw TemplateError("string concatenation exceeds the output limit");
    return Value::string(std::move(s));
  }
  require_defined(a);
  require_defined(b);
  if (a.is_number() && b.is_number()) return arithmetic(op, a, b);
  if (op == "+") {
    if (a.is_string() && b.is_string()) {
      if (a.s.size() + b.s.size() > limits.max_output_bytes) throw TemplateError("string concatenation exceeds the output limit");
      return Value::string(a.s + b.s);
    }
    if (a.is_list() && b.is_list()) {
      if (a.list->size() + b.list->size() > limits.max_sequence_items) throw TemplateError("list concatenation too long");
      ValueList out(*a.list);
      out.insert(out.end(), b.list->begin(), b.list->end());
      return Value::from_list(std::move(out));
    }
  }
  if (op == "*") {
    if ((a.is_string() || a.is_list()) && is_integral(b)) return repeat(a, int_of(b), limits);
    if ((b.is_string() || b.is_list()) && is_integral(a)) return repeat(b, int_of(a), limits);
  }
  type_error(op, a, b);
}

Value negate(const Value& v) {
  require_defined(v);
  if (is_integral(v)) {
    if (int_of(v) == std::numeric_limits<int64_t>::min()) throw TemplateError("integer overflow in unary '-'");
    return Value::integer(-int_of(v));
  }
  if (v.kind == Value::Kind::kFloat) return Value::number(-v.f);
  throw TemplateError(std::string("bad operand type for unary '-': '") + kind_name(v) + "'");
}

bool compare_op(std::string_view op, const Value& a, const Value& b) {
  if (op == "==") return values_equal(a, b);
  if (op == "!=") return !values_equal(a, b);
  if (op == "in") return contains(b, a);
  if (op == "not in") return !contains(b, a);
  int order = 0;
  if (a.is_number() && b.is_number()) {
    const double x = a.as_double(), y = b.as_double();
    if (is_integral(a) && is_integral(b)) order = int_of(a) < int_of(b) ? -1 : int_of(a) > int_of(b) ? 1 : 0;
    else if (std::isnan(x) || std::isnan(y)) return false;
    else order = x < y ? -1 : x > y ? 1 : 0;
  } else if (a.is_string() && b.is_string()) {
    order = a.s.compare(b.s);
  } else {
    require_defined(a);
    require_defined(b);
    throw TemplateError("'" + std::string(op) + "' not supported between '" + kind_name(a) + "' and '" +
                        kind_name(b) + "'");
  }
  if (op == "<") return order < 0;
  if (op == "<=") return order <= 0;
  if (op == ">") return order > 0;
  return order >= 0;
}

bool contains(const Value& container, const Value& item) {
  switch (container.kind) {
    case Value::Kind::kUndefined: return false;  // Undefined iterates as empty
    case Value::Kind::kString:
      if (!item.is_string()) throw TemplateError(std::string("'in <string>' requires a string, found ") + kind_name(item));
      return container.s.find(item.s) != std::string::npos;
    case Value::Kind::kList:
      for (const Value& v : *container.list) {
        if (values_equal(v, item)) return true;
      }
      return false;
    case Value::Kind::kDict:
      return item.is_string() && container.find(item.s) != nullptr;
    default:
      throw TemplateError(std::string("argument of type '") + kind_name(container) + "' is not iterable");
  }
}

Value get_attr(const Value& obj, const std::string& name) {
  require_defined(obj);
  if (obj.is_mapping()) {
    if (const Value* v = obj.find(name)) return *v;
  }
  return Value::undefined(name);
}

Value get_item(const Value& obj, const Value& key) {
  require_defined(obj);
  if (obj.is_list() || obj.is_string()) {
    if (!is_integral(key)) {
      if (key.is_string()) return Value::undefined(key.s);  // jinja2 falls back to an attribute
      throw TemplateError(std::string("indices must be integers, found ") + kind_name(key));
    }
    int64_t index = int_of(key);
    if (obj.is_list()) {
      const auto n = static_cast<int64_t>(obj.list->size());
      if (index < 0) index += n;
      if (index < 0 || index >= n) return Value::undefined("[" + std::to_string(int_of(key)) + "]");
      return (*obj.list)[static_cast<size_t>(index)];
    }
    const auto chars = split_code_points(obj.s);
    const auto n = static_cast<int64_t>(chars.size());
    if (index < 0) index += n;
    if (index < 0 || index >= n) return Value::undefined("[" + std::to_string(int_of(key)) + "]");
    return Value::string(std::string(chars[static_cast<size_t>(index)]));
  }
  if (obj.is_mapping()) {
    const std::string k = key.is_string() ? key.s : to_display_string(key);
    if (const Value* v = obj.find(k)) return *v;
    return Value::undefined(k);
  }
  return Value::undefined(to_display_string(key));
}

// Python's slice.indices(): clamps start/stop for the step's direction.
Value slice(const Value& obj, const Value& start, const Value& stop, const Value& step) {
  require_defined(obj);
  if (!obj.is_list() && !obj.is_string()) throw TemplateError(std::string("cannot slice a ") + kind_name(obj));
  std::vector<std::string_view> chars;
  if (obj.is_string()) chars = split_code_points(obj.s);
  const int64_t n = obj.is_list() ? static_cast<int64_t>(obj.list->size()) : static_cast<int64_t>(chars.size());
  auto given = [](const Value& v) { return !v.is_undefined() && !v.is_none(); };
  const int64_t st = given(step) ? to_int_index(step, "slice step") : 1;
  if (st == 0) throw TemplateError("slice step cannot be zero");
  auto clamp = [&](const Value& v, int64_t dflt) {
    if (!given(v)) return dflt;
    int64_t i = to_int_index(v, "slice index");
    if (i < 0) i = i < -n ? (st < 0 ? -1 : 0) : i + n;
    else if (i >= n) i = st < 0 ? n - 1 : n;
    return i;
  };
  const int64_t lo = clamp(start, st < 0 ? n - 1 : 0);
  const int64_t hi = clamp(stop, st < 0 ? -1 : n);
  ValueList items;
  std::string text;
  for (int64_t i = lo; st > 0 ? i < hi : i > hi; i += st) {
    if (obj.is_list()) items.push_back((*obj.list)[static_cast<size_t>(i)]);
    else text += chars[static_cast<size_t>(i)];
    if (st > 0 ? i > INT64_MAX - st : i < INT64_MIN - st) break;
  }
  return obj.is_list() ? Value::from_list(std::move(items)) : Value::string(std::move(text));
}

ValueList iterate(const Value& v) {
  switch (v.kind) {
    case Value::Kind::kUndefined: return {};
    case Value::Kind::kList: return *v.list;
    case Value::Kind::kDict: {
      ValueList keys;
      for (const auto& kv : *v.dict) keys.push_back(Value::string(kv.first));
      return keys;
    }
    case Value::Kind::kString: {
      ValueList chars;
      for (auto c : split_code_points(v.s)) chars.push_back(Value::string(std::string(c)));
      return chars;
    }
    default: throw TemplateError(std::string("'") + kind_name(v) + "' object is not iterable");
  }
}

}  // namespace llmpack::jinja
