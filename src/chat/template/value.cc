#include "chat/template/value.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace llmpack::jinja {

bool Value::truthy() const {
  switch (kind) {
    case Kind::kUndefined:
    case Kind::kNone: return false;
    case Kind::kBool: return b;
    case Kind::kInt: return i != 0;
    case Kind::kFloat: return f != 0.0;
    case Kind::kString: return !s.empty();
    case Kind::kList: return !list->empty();
    case Kind::kDict: return !dict->empty();
    case Kind::kNamespace:
    case Kind::kFunction: return true;
  }
  return false;
}

double Value::as_double() const {
  if (kind == Kind::kFloat) return f;
  if (kind == Kind::kInt) return static_cast<double>(i);
  if (kind == Kind::kBool) return b ? 1.0 : 0.0;
  return 0.0;
}

const Value* Value::find(std::string_view key) const {
  if (!is_mapping()) return nullptr;
  for (const auto& [k, v] : *dict) {
    if (k == key) return &v;
  }
  return nullptr;
}

const char* kind_name(const Value& v) {
  switch (v.kind) {
    case Value::Kind::kUndefined: return "undefined";
    case Value::Kind::kNone: return "none";
    case Value::Kind::kBool: return "bool";
    case Value::Kind::kInt: return "int";
    case Value::Kind::kFloat: return "float";
    case Value::Kind::kString: return "string";
    case Value::Kind::kList: return "list";
    case Value::Kind::kDict: return "dict";
    case Value::Kind::kNamespace: return "namespace";
    case Value::Kind::kFunction: return "function";
  }
  return "value";
}

std::string format_python_float(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  // Shortest round-trip digits in scientific form: "d.ddde[+-]x".
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), x, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  bool negative = !sci.empty() && sci[0] == '-';
  if (negative) sci.erase(0, 1);
  size_t e_pos = sci.find('e');
  std::string mantissa = sci.substr(0, e_pos);
  int exponent = std::atoi(sci.c_str() + e_pos + 1);
  std::string digits;
  for (char c : mantissa) {
    if (c != '.') digits.push_back(c);
  }
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  const int n = static_cast<int>(digits.size());
  const int decpt = exponent + 1;  // digits before the decimal point
  std::string out = negative ? "-" : "";
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) {
      out += "0." + std::string(-decpt, '0') + digits;
    } else if (decpt >= n) {
      out += digits + std::string(decpt - n, '0') + ".0";
    } else {
      out += digits.substr(0, decpt) + "." + digits.substr(decpt);
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (n > 1) out += "." + digits.substr(1);
  char exp_buf[16];
  std::snprintf(exp_buf, sizeof(exp_buf), "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
  return out + exp_buf;
}

std::vector<std::string_view> split_code_points(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 1;
    if (i + len > s.size()) len = 1;
    for (size_t k = 1; k < len; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) {
        len = 1;
        break;
      }
    }
    out.push_back(s.substr(i, len));
    i += len;
  }
  return out;
}

namespace {

// Values can nest without bound (a loop wrapping a list in a list); the
// recursive walks below stop at this depth instead of exhausting the stack.
constexpr int kMaxNesting = 256;

std::string display(const Value& v, int depth);

std::string repr_string(const std::string& s) {
  const bool has_single = s.find('\'') != std::string::npos;
  const bool has_double = s.find('"') != std::string::npos;
  const char quote = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, quote);
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (ch == quote || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (ch == '\n') {
      out += "\\n";
    } else if (ch == '\r') {
      out += "\\r";
    } else if (ch == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    } else {
      out += ch;
    }
  }
  out += quote;
  return out;
}

void json_string(const std::string& s, std::string& out) {
  out += '"';
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (ch) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += ch;
        }
    }
  }
  out += '"';
}

void json_value(const Value& v, int indent, int level, std::string& out) {
  if (level > kMaxNesting) throw TemplateError("tojson: value nested deeper than 256 levels");
  auto newline = [&](int lvl) {
    out += '\n';
    out.append(static_cast<size_t>(indent) * static_cast<size_t>(lvl), ' ');
  };
  switch (v.kind) {
    case Value::Kind::kNone: out += "null"; return;
    case Value::Kind::kBool: out += v.b ? "true" : "false"; return;
    case Value::Kind::kInt: out += std::to_string(v.i); return;
    case Value::Kind::kFloat:
      if (std::isnan(v.f)) out += "NaN";
      else if (std::isinf(v.f)) out += v.f > 0 ? "Infinity" : "-Infinity";
      else out += format_python_float(v.f);
      return;
    case Value::Kind::kString: json_string(v.s, out); return;
    case Value::Kind::kList:
    case Value::Kind::kDict: {
      const bool is_list = v.is_list();
      const size_t count = is_list ? v.list->size() : v.dict->size();
      out += is_list ? '[' : '{';
      if (count == 0) {
        out += is_list ? ']' : '}';
        return;
      }
      for (size_t k = 0; k < count; ++k) {
        if (k > 0) out += indent >= 0 ? "," : ", ";
        if (indent >= 0) newline(level + 1);
        if (is_list) {
          json_value((*v.list)[k], indent, level + 1, out);
        } else {
          json_string((*v.dict)[k].first, out);
          out += ": ";
          json_value((*v.dict)[k].second, indent, level + 1, out);
        }
      }
      if (indent >= 0) newline(level);
      out += is_list ? ']' : '}';
      return;
    }
    default:
      throw TemplateError(std::string("tojson: object of type ") + kind_name(v) +
                          " is not JSON serializable");
  }
}

}  // namespace

std::string to_json_text(const Value& v, int indent) {
  std::string out;
  json_value(v, indent, 0, out);
  return out;
}

namespace {

std::string repr(const Value& v, int depth) {
  if (v.is_string()) return repr_string(v.s);
  return display(v, depth);
}

std::string display(const Value& v, int depth) {
  if (depth > kMaxNesting) throw TemplateError("value nested deeper than 256 levels");
  switch (v.kind) {
    case Value::Kind::kUndefined: return "";
    case Value::Kind::kNone: return "None";
    case Value::Kind::kBool: return v.b ? "True" : "False";
    case Value::Kind::kInt: return std::to_string(v.i);
    case Value::Kind::kFloat: return format_python_float(v.f);
    case Value::Kind::kString: return v.s;
    case Value::Kind::kList: {
      std::string out = "[";
      for (size_t k = 0; k < v.list->size(); ++k) {
        if (k > 0) out += ", ";
        out += repr((*v.list)[k], depth + 1);
      }
      return out + "]";
    }
    case Value::Kind::kDict: {
      std::string out = "{";
      for (size_t k = 0; k < v.dict->size(); ++k) {
        if (k > 0) out += ", ";
        out += repr_string((*v.dict)[k].first) + ": " + repr((*v.dict)[k].second, depth + 1);
      }
      return out + "}";
    }
    case Value::Kind::kNamespace: return "<Namespace>";
    case Value::Kind::kFunction: return "<function>";
  }
  return "";
}

bool equal(const Value& a, const Value& b, int depth) {
  if (depth > kMaxNesting) throw TemplateError("comparison of values nested deeper than 256 levels");
  if (a.is_number() && b.is_number()) {
    if (a.kind == Value::Kind::kFloat || b.kind == Value::Kind::kFloat) return a.as_double() == b.as_double();
    const int64_t x = a.kind == Value::Kind::kBool ? a.b : a.i;
    const int64_t y = b.kind == Value::Kind::kBool ? b.b : b.i;
    return x == y;
  }
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone: return true;
    case Value::Kind::kString: return a.s == b.s;
    case Value::Kind::kList: {
      if (a.list->size() != b.list->size()) return false;
      for (size_t k = 0; k < a.list->size(); ++k) {
        if (!equal((*a.list)[k], (*b.list)[k], depth + 1)) return false;
      }
      return true;
    }
    case Value::Kind::kDict: {
      if (a.dict->size() != b.dict->size()) return false;
      for (const auto& [key, val] : *a.dict) {
        const Value* other = b.find(key);
        if (other == nullptr || !equal(val, *other, depth + 1)) return false;
      }
      return true;
    }
    case Value::Kind::kNamespace: return a.dict == b.dict;
    case Value::Kind::kFunction: return a.fn == b.fn;
    default: return false;
  }
}

}  // namespace

std::string to_repr(const Value& v) { return repr(v, 0); }
std::string to_display_string(const Value& v) { return display(v, 0); }
bool values_equal(const Value& a, const Value& b) { return equal(a, b, 0); }

namespace {

template <typename Json>
Value from_json_impl(const Json& j) {
  using json_value_t = nlohmann::detail::value_t;
  switch (j.type()) {
    case json_value_t::null: return Value::none();
    case json_value_t::boolean: return Value::boolean(j.template get<bool>());
    case json_value_t::number_integer: return Value::integer(j.template get<int64_t>());
    case json_value_t::number_unsigned: {
      const uint64_t u = j.template get<uint64_t>();
      if (u <= static_cast<uint64_t>(INT64_MAX)) return Value::integer(static_cast<int64_t>(u));
      return Value::number(static_cast<double>(u));
    }
    case json_value_t::number_float: return Value::number(j.template get<double>());
    case json_value_t::string: return Value::string(j.template get<std::string>());
    case json_value_t::array: {
      ValueList items;
      items.reserve(j.size());
      for (const auto& e : j) items.push_back(from_json_impl(e));
      return Value::from_list(std::move(items));
    }
    case json_value_t::object: {
      ValueDict items;
      items.reserve(j.size());
      for (auto it = j.begin(); it != j.end(); ++it) items.emplace_back(it.key(), from_json_impl(it.value()));
      return Value::from_dict(std::move(items));
    }
    default: return Value::none();
  }
}

}  // namespace

Value value_from_json(const nlohmann::json& j) { return from_json_impl(j); }
Value value_from_json(const nlohmann::ordered_json& j) { return from_json_impl(j); }

}  // namespace llmpack::jinja
