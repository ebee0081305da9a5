#include <algorithm>
#include <cctype>
#include <cmath>

#include "chat/template/builtins.h"
#include "chat/template/parser.h"

namespace llmpack::jinja {
namespace {

constexpr std::string_view kFilters[] = {
    "abs",   "attr",   "capitalize", "count",      "d",       "default", "e",     "escape", "first",
    "float", "indent", "int",        "items",      "join",    "last",    "length", "list",  "lower",
    "map",   "reject", "rejectattr", "replace",    "reverse", "round",   "safe",   "select", "selectattr",
    "string", "title", "tojson",     "trim",       "unique",  "upper",   "sum",    "min",   "max"};
constexpr std::string_view kTests[] = {
    "defined", "undefined", "none",  "string", "number", "integer", "float", "boolean", "true",
    "false",   "mapping",   "iterable", "sequence", "callable", "equalto", "eq", "ne", "lt",
    "gt",      "le",        "ge",    "odd",    "even",   "divisibleby", "in", "lower", "upper", "sameas"};

std::string ascii_lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}
std::string ascii_upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::string python_strip(const std::string& s) {
  size_t b = 0, e = s.size();
  auto ws = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; };
  while (b < e && ws(s[b])) ++b;
  while (e > b && ws(s[e - 1])) --e;
  return s.substr(b, e - b);
}

// Title case as Python's str.title(): a letter after a non-letter is upper.
std::string title_case(const std::string& s) {
  std::string out = s;
  bool prev_letter = false;
  for (char& c : out) {
    const bool letter = std::isalpha(static_cast<unsigned char>(c)) != 0;
    if (letter) c = static_cast<char>(prev_letter ? std::tolower(static_cast<unsigned char>(c))
                                                  : std::toupper(static_cast<unsigned char>(c)));
    prev_letter = letter;
  }
  return out;
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

int64_t length_of(const Value& v) {
  switch (v.kind) {
    case Value::Kind::kUndefined: return 0;
    case Value::Kind::kString: return static_cast<int64_t>(split_code_points(v.s).size());
    case Value::Kind::kList: return static_cast<int64_t>(v.list->size());
    case Value::Kind::kDict:
    case Value::Kind::kNamespace: return static_cast<int64_t>(v.dict->size());
    default: throw TemplateError(std::string("object of type '") + kind_name(v) + "' has no length");
  }
}

// select/reject/selectattr/rejectattr: keep items whose (attribute's) test
// result equals `keep`; no test name means truthiness.
Value filter_items(const Value& input, CallArgs& args, bool by_attr, bool keep) {
  CallArgs rest;
  size_t first = 0;
  std::string attribute;
  if (by_attr) {
    if (args.positional.empty() || !args.positional[0].is_string()) throw TemplateError("selectattr/rejectattr need an attribute name");
    attribute = args.positional[0].s;
    first = 1;
  }
  std::string test;
  if (args.positional.size() > first) {
    if (!args.positional[first].is_string()) throw TemplateError("select/reject need a test name");
    test = args.positional[first].s;
    if (!is_known_test(test)) throw TemplateError("unsupported test '" + test + "'");
    rest.positional.assign(args.positional.begin() + static_cast<std::ptrdiff_t>(first + 1), args.positional.end());
  }
  ValueList out;
  for (const Value& item : iterate(input)) {
    const Value subject = by_attr ? get_attr(item, attribute) : item;
    CallArgs test_args = rest;
    const bool ok = test.empty() ? subject.truthy() : apply_test(test, subject, test_args);
    if (ok == keep) out.push_back(item);
  }
  return Value::from_list(std::move(out));
}

Value map_items(const Value& input, CallArgs& args, const RenderLimits& limits) {
  ValueList out;
  if (const Value* attribute = arg(args, 99, "attribute")) {
    const Value* dflt = arg(args, 99, "default");
    for (const Value& item : iterate(input)) {
      Value v = get_attr(item, to_display_string(*attribute));
      out.push_back(v.is_undefined() && dflt ? *dflt : v);
    }
    return Value::from_list(std::move(out));
  }
  if (args.positional.empty() || !args.positional[0].is_string()) throw TemplateError("map needs a filter name or attribute=");
  const std::string name = args.positional[0].s;
  if (!is_known_filter(name) || name == "map") throw TemplateError("unsupported filter '" + name + "' in map");
  for (const Value& item : iterate(input)) {
    CallArgs rest;
    rest.positional.assign(args.positional.begin() + 1, args.positional.end());
    out.push_back(apply_filter(name, item, rest, limits));
  }
  return Value::from_list(std::move(out));
}

Value join_items(const Value& input, CallArgs& args) {
  const Value* sep = arg(args, 0, "d");
  const Value* attribute = arg(args, 1, "attribute");
  std::string out;
  bool first = true;
  for (const Value& item : iterate(input)) {
    if (!first && sep) out += to_display_string(*sep);
    first = false;
    out += to_display_string(attribute ? get_attr(item, to_display_string(*attribute)) : item);
  }
  return Value::string(std::move(out));
}

Value indent_text(const Value& input, CallArgs& args) {
  const Value* width = arg(args, 0, "width");
  const Value* first = arg(args, 1, "first");
  const Value* blank = arg(args, 2, "blank");
  const std::string pad = width && width->is_string() ? width->s
                                                      : std::string(static_cast<size_t>(std::clamp<int64_t>(width ? to_int_index(*width, "indent width") : 4, 0, 256)), ' ');
  const std::string s = to_display_string(input);
  std::string out;
  size_t start = 0;
  bool first_line = true;
  while (true) {
    const size_t nl = s.find('\n', start);
    const std::string line = s.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    const bool add = first_line ? (first && first->truthy()) : (!line.empty() || (blank && blank->truthy()));
    if (add) out += pad;
    out += line;
    if (nl == std::string::npos) break;
    out += '\n';
    start = nl + 1;
    first_line = false;
  }
  return Value::string(std::move(out));
}

Value sequence_filter(const std::string& name, const Value& input) {
  if (name == "first" || name == "last") {
    ValueList items = iterate(input);
    if (items.empty()) return Value::undefined(name);
    return name == "first" ? items.front() : items.back();
  }
  if (name == "list") return Value::from_list(iterate(input));
  if (name == "reverse") {
    if (input.is_string()) {
      auto chars = split_code_points(input.s);
      std::string out;
      for (auto it = chars.rbegin(); it != chars.rend(); ++it) out += *it;
      return Value::string(std::move(out));
    }
    ValueList items = iterate(input);
    std::reverse(items.begin(), items.end());
    return Value::from_list(std::move(items));
  }
  if (name == "unique") {
    ValueList out;
    for (const Value& v : iterate(input)) {
      bool seen = false;
      for (const Value& o : out) seen = seen || values_equal(o, v);
      if (!seen) out.push_back(v);
    }
    return Value::from_list(std::move(out));
  }
  if (name == "items") {
    if (input.is_undefined()) return Value::from_list({});
    if (!input.is_mapping()) throw TemplateError(std::string("items filter needs a mapping, found ") + kind_name(input));
    ValueList out;
    for (const auto& [k, v] : *input.dict) out.push_back(Value::from_list({Value::string(k), v}));
    return Value::from_list(std::move(out));
  }
  // sum / min / max
  ValueList items = iterate(input);
  if (name == "sum") {
    Value total = Value::integer(0);
    RenderLimits limits;
    for (const Value& v : items) total = binary_op("+", total, v, limits);
    return total;
  }
  if (items.empty()) return Value::undefined(name);
  Value best = items[0];
  for (const Value& v : items) {
    if (compare_op(name == "min" ? "<" : ">", v, best)) best = v;
  }
  return best;
}

Value number_filter(const std::string& name, const Value& input, CallArgs& args) {
  if (name == "abs") {
    if (input.kind == Value::Kind::kFloat) return Value::number(std::fabs(input.f));
    const int64_t v = to_int_index(input, "abs argument");
    if (v == INT64_MIN) throw TemplateError("integer overflow in abs");
    return Value::integer(v < 0 ? -v : v);
  }
  if (name == "round") {
    const Value* precision = arg(args, 0, "precision");
    const int64_t digits = precision ? std::clamp<int64_t>(to_int_index(*precision, "round precision"), -30, 30) : 0;
    const double scale = std::pow(10.0, static_cast<double>(digits));
    return Value::number(std::round(input.as_double() * scale) / scale);
  }
  if (name == "int") {
    if (input.is_number()) {
      if (input.kind != Value::Kind::kFloat) return Value::integer(input.kind == Value::Kind::kBool ? input.b : input.i);
      if (!std::isfinite(input.f) || std::fabs(input.f) >= 9.2e18) throw TemplateError("int filter: float out of range");
      return Value::integer(static_cast<int64_t>(input.f));
    }
    const Value* dflt = arg(args, 0, "default");
    if (input.is_string()) {
      char* end = nullptr;
      errno = 0;
      const long long v = std::strtoll(input.s.c_str(), &end, 10);
      if (errno == 0 && end != input.s.c_str() && *end == '\0') return Value::integer(v);
    }
    return dflt ? *dflt : Value::integer(0);
  }
  // float
  if (input.is_number()) return Value::number(input.as_double());
  if (input.is_string()) {
    char* end = nullptr;
    const double v = std::strtod(input.s.c_str(), &end);
    if (end != input.s.c_str() && *end == '\0') return Value::number(v);
  }
  const Value* dflt = arg(args, 0, "default");
  return dflt ? *dflt : Value::number(0.0);
}

}  // namespace

bool is_known_filter(std::string_view name) {
  return std::find(std::begin(kFilters), std::end(kFilters), name) != std::end(kFilters);
}
bool is_known_test(std::string_view name) {
  return std::find(std::begin(kTests), std::end(kTests), name) != std::end(kTests);
}

const Value* arg(CallArgs& args, size_t index, std::string_view keyword) {
  if (index < args.positional.size()) return &args.positional[index];
  for (const auto& [k, v] : args.keyword) {
    if (k == keyword) return &v;
  }
  return nullptr;
}

Value apply_filter(const std::string& name, const Value& input, CallArgs& args, const RenderLimits& limits) {
  if (name == "default" || name == "d") {
    const Value* dflt = arg(args, 0, "default_value");
    const Value* boolean = arg(args, 1, "boolean");
    const bool use = input.is_undefined() || (boolean && boolean->truthy() && !input.truthy());
    return use ? (dflt ? *dflt : Value::string("")) : input;
  }
  if (name == "tojson") {
    const Value* indent = arg(args, 0, "indent");
    const int64_t width = indent && !indent->is_none() ? std::clamp<int64_t>(to_int_index(*indent, "tojson indent"), 0, 64) : -1;
    require_defined(input);
    return Value::string(to_json_text(input, static_cast<int>(width)));
  }
  if (name == "length" || name == "count") return Value::integer(length_of(input));
  if (name == "safe") return input;
  if (name == "string") return Value::string(to_display_string(input));
  if (name == "trim") return Value::string(python_strip(to_display_string(input)));
  if (name == "upper") return Value::string(ascii_upper(to_display_string(input)));
  if (name == "lower") return Value::string(ascii_lower(to_display_string(input)));
  if (name == "title") return Value::string(title_case(to_display_string(input)));
  if (name == "capitalize") {
    std::string s = ascii_lower(to_display_string(input));
    if (!s.empty()) s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
    return Value::string(std::move(s));
  }
  if (name == "e" || name == "escape") return Value::string(html_escape(to_display_string(input)));
  if (name == "replace") {
    CallArgs method_args = args;
    bool found = false;
    return call_method(Value::string(to_display_string(input)), "replace", method_args, found);
  }
  if (name == "indent") return indent_text(input, args);
  if (name == "join") return join_items(input, args);
  if (name == "map") return map_items(input, args, limits);
  if (name == "select" || name == "reject") return filter_items(input, args, false, name == "select");
  if (name == "selectattr" || name == "rejectattr") return filter_items(input, args, true, name == "selectattr");
  if (name == "attr") {
    const Value* attribute = arg(args, 0, "name");
    if (!attribute) throw TemplateError("attr filter needs a name");
    return get_attr(input, to_display_string(*attribute));
  }
  if (name == "abs" || name == "round" || name == "int" || name == "float") return number_filter(name, input, args);
  return sequence_filter(name, input);
}

bool apply_test(const std::string& name, const Value& input, CallArgs& args) {
  const Value* other = arg(args, 0, "value");
  auto need_other = [&]() -> const Value& {
    if (!other) throw TemplateError("test '" + name + "' needs an argument");
    return *other;
  };
  using K = Value::Kind;
  if (name == "defined") return !input.is_undefined();
  if (name == "undefined") return input.is_undefined();
  if (name == "none") return input.is_none();
  if (name == "string") return input.is_string();
  if (name == "number") return input.kind == K::kInt || input.kind == K::kFloat;
  if (name == "integer") return input.kind == K::kInt;
  if (name == "float") return input.kind == K::kFloat;
  if (name == "boolean") return input.kind == K::kBool;
  if (name == "true") return input.kind == K::kBool && input.b;
  if (name == "false") return input.kind == K::kBool && !input.b;
  if (name == "mapping") return input.kind == K::kDict;
  if (name == "iterable") return input.is_string() || input.is_list() || input.kind == K::kDict || input.is_undefined();
  if (name == "sequence") return input.is_string() || input.is_list() || input.kind == K::kDict;
  if (name == "callable") return input.kind == K::kFunction;
  if (name == "lower") return input.is_string() && ascii_lower(input.s) == input.s;
  if (name == "upper") return input.is_string() && ascii_upper(input.s) == input.s;
  if (name == "equalto" || name == "eq") return values_equal(input, need_other());
  if (name == "ne") return !values_equal(input, need_other());
  if (name == "lt") return compare_op("<", input, need_other());
  if (name == "gt") return compare_op(">", input, need_other());
  if (name == "le") return compare_op("<=", input, need_other());
  if (name == "ge") return compare_op(">=", input, need_other());
  if (name == "in") return contains(need_other(), input);
  if (name == "sameas") {
    const Value& o = need_other();
    if (input.kind != o.kind) return false;
    if (input.is_list()) return input.list == o.list;
    if (input.is_mapping()) return input.dict == o.dict;
    return values_equal(input, o);
  }
  const int64_t v = to_int_index(input, ("'" + name + "' test operand").c_str());
  if (name == "odd") return v % 2 != 0;
  if (name == "even") return v % 2 == 0;
  const int64_t d = to_int_index(need_other(), "divisibleby argument");  // divisibleby
  if (d == 0) throw TemplateError("divisibleby 0");
  if (d == -1) return true;
  return v % d == 0;
}

}  // namespace llmpack::jinja
