#include <ctime>

#include "chat/template/builtins.h"

namespace llmpack::jinja {
namespace {

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

// str.strip/lstrip/rstrip: `chars` absent or None strips whitespace.
std::string strip(const std::string& s, const Value* chars, bool left, bool right) {
  auto drop = [&](char c) {
    if (!chars || chars->is_none()) return is_ws(c);
    return chars->s.find(c) != std::string::npos;
  };
  size_t b = 0, e = s.size();
  if (left) {
    while (b < e && drop(s[b])) ++b;
  }
  if (right) {
    while (e > b && drop(s[e - 1])) --e;
  }
  return s.substr(b, e - b);
}

Value split(const std::string& s, const Value* sep, const Value* maxsplit_arg) {
  int64_t maxsplit = maxsplit_arg ? to_int_index(*maxsplit_arg, "split maxsplit") : -1;
  ValueList parts;
  if (!sep || sep->is_none()) {  // runs of whitespace, no empty parts
    size_t i = 0;
    while (i < s.size()) {
      while (i < s.size() && is_ws(s[i])) ++i;
      if (i >= s.size()) break;
      if (maxsplit == 0) {
        size_t e = s.size();
        while (e > i && is_ws(s[e - 1])) --e;
        parts.push_back(Value::string(s.substr(i, e - i)));
        break;
      }
      size_t j = i;
      while (j < s.size() && !is_ws(s[j])) ++j;
      parts.push_back(Value::string(s.substr(i, j - i)));
      if (maxsplit > 0) --maxsplit;
      i = j;
    }
    return Value::from_list(std::move(parts));
  }
  if (!sep->is_string()) throw TemplateError("split separator must be a string");
  if (sep->s.empty()) throw TemplateError("split: empty separator");
  size_t start = 0;
  while (true) {
    const size_t at = maxsplit == 0 ? std::string::npos : s.find(sep->s, start);
    if (at == std::string::npos) {
      parts.push_back(Value::string(s.substr(start)));
      break;
    }
    parts.push_back(Value::string(s.substr(start, at - start)));
    start = at + sep->s.size();
    if (maxsplit > 0) --maxsplit;
  }
  return Value::from_list(std::move(parts));
}

Value replace(const std::string& s, CallArgs& args) {
  const Value* from = arg(args, 0, "old");
  const Value* to = arg(args, 1, "new");
  const Value* count_arg = arg(args, 2, "count");
  if (!from || !to || !from->is_string() || !to->is_string()) throw TemplateError("replace needs two strings");
  int64_t count = count_arg ? to_int_index(*count_arg, "replace count") : -1;
  std::string out;
  size_t start = 0;
  if (from->s.empty()) {  // Python inserts `new` between characters
    for (auto c : split_code_points(s)) {
      if (count != 0) {
        out += to->s;
        if (count > 0) --count;
      }
      out += c;
    }
    if (count != 0) out += to->s;
    return Value::string(std::move(out));
  }
  while (count != 0) {
    const size_t at = s.find(from->s, start);
    if (at == std::string::npos) break;
    out += s.substr(start, at - start) + to->s;
    start = at + from->s.size();
    if (count > 0) --count;
  }
  out += s.substr(start);
  return Value::string(std::move(out));
}

// startswith/endswith accept a string or a tuple of strings.
bool affix(const std::string& s, const Value* what, bool prefix) {
  if (!what) throw TemplateError(std::string(prefix ? "startswith" : "endswith") + " needs an argument");
  ValueList options = what->is_list() ? *what->list : ValueList{*what};
  for (const Value& o : options) {
    if (!o.is_string()) throw TemplateError(std::string(prefix ? "startswith" : "endswith") + " needs strings");
    if (o.s.size() <= s.size() && s.compare(prefix ? 0 : s.size() - o.s.size(), o.s.size(), o.s) == 0) return true;
  }
  return false;
}

Value string_method(const std::string& s, const std::string& name, CallArgs& args, bool& found) {
  found = true;
  if (name == "strip") return Value::string(strip(s, arg(args, 0, "chars"), true, true));
  if (name == "lstrip") return Value::string(strip(s, arg(args, 0, "chars"), true, false));
  if (name == "rstrip") return Value::string(strip(s, arg(args, 0, "chars"), false, true));
  if (name == "split") return split(s, arg(args, 0, "sep"), arg(args, 1, "maxsplit"));
  if (name == "startswith") return Value::boolean(affix(s, arg(args, 0, "prefix"), true));
  if (name == "endswith") return Value::boolean(affix(s, arg(args, 0, "suffix"), false));
  if (name == "replace") return replace(s, args);
  if (name == "find") {
    const Value* sub = arg(args, 0, "sub");
    if (!sub || !sub->is_string()) throw TemplateError("find needs a string");
    const size_t at = s.find(sub->s);
    return Value::integer(at == std::string::npos ? -1 : static_cast<int64_t>(split_code_points(s.substr(0, at)).size()));
  }
  if (name == "count") {
    const Value* sub = arg(args, 0, "sub");
    if (!sub || !sub->is_string() || sub->s.empty()) throw TemplateError("count needs a non-empty string");
    int64_t n = 0;
    for (size_t at = s.find(sub->s); at != std::string::npos; at = s.find(sub->s, at + sub->s.size())) ++n;
    return Value::integer(n);
  }
  if (name == "join") {
    const Value* items = arg(args, 0, "iterable");
    if (!items) throw TemplateError("join needs a list");
    std::string out;
    bool first = true;
    for (const Value& v : iterate(*items)) {
      if (!v.is_string()) throw TemplateError("join: sequence item is not a string");
      if (!first) out += s;
      first = false;
      out += v.s;
    }
    return Value::string(std::move(out));
  }
  static const char* const kAsFilter[] = {"upper", "lower", "title", "capitalize"};
  for (const char* f : kAsFilter) {
    if (name == f) {
      CallArgs none;
      return apply_filter(name, Value::string(s), none, RenderLimits{});
    }
  }
  found = false;
  return Value::undefined(name);
}

Value dict_method(const Value& d, const std::string& name, CallArgs& args, bool& found) {
  found = true;
  if (name == "items" || name == "keys" || name == "values") {
    ValueList out;
    for (const auto& [k, v] : *d.dict) {
      if (name == "items") out.push_back(Value::from_list({Value::string(k), v}));
      else out.push_back(name == "keys" ? Value::string(k) : v);
    }
    return Value::from_list(std::move(out));
  }
  if (name == "get") {
    const Value* key = arg(args, 0, "key");
    const Value* dflt = arg(args, 1, "default");
    if (!key) throw TemplateError("get needs a key");
    const Value* v = d.find(key->is_string() ? key->s : to_display_string(*key));
    return v ? *v : (dflt ? *dflt : Value::none());
  }
  found = false;
  return Value::undefined(name);
}

Value make_namespace(CallArgs& args) {
  ValueDict items;
  for (const Value& p : args.positional) {
    if (p.kind != Value::Kind::kDict) throw TemplateError("namespace() takes a dict or keyword arguments");
    items.insert(items.end(), p.dict->begin(), p.dict->end());
  }
  for (auto& kv : args.keyword) items.push_back(kv);
  return Value::new_namespace(std::move(items));
}

Value make_range(CallArgs& args, const RenderLimits& limits) {
  if (args.positional.empty() || args.positional.size() > 3) throw TemplateError("range takes 1 to 3 integers");
  int64_t start = 0, stop = 0, step = 1;
  if (args.positional.size() == 1) {
    stop = to_int_index(args.positional[0], "range stop");
  } else {
    start = to_int_index(args.positional[0], "range start");
    stop = to_int_index(args.positional[1], "range stop");
    if (args.positional.size() == 3) step = to_int_index(args.positional[2], "range step");
  }
  if (step == 0) throw TemplateError("range step must not be zero");
  ValueList out;
  for (int64_t i = start; step > 0 ? i < stop : i > stop;) {
    if (out.size() >= limits.max_sequence_items) {
      throw TemplateError("range would build more than " + std::to_string(limits.max_sequence_items) + " items");
    }
    out.push_back(Value::integer(i));
    if (__builtin_add_overflow(i, step, &i)) break;
  }
  return Value::from_list(std::move(out));
}

Value strftime_now(CallArgs& args) {
  const Value* fmt = arg(args, 0, "format");
  if (!fmt || !fmt->is_string()) throw TemplateError("strftime_now needs a format string");
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char buf[256];
  const size_t n = std::strftime(buf, sizeof(buf), fmt->s.c_str(), &local);
  return Value::string(std::string(buf, n));
}

}  // namespace

Value call_method(const Value& obj, const std::string& name, CallArgs& args, bool& found) {
  if (obj.is_string()) return string_method(obj.s, name, args, found);
  if (obj.kind == Value::Kind::kDict) return dict_method(obj, name, args, found);
  found = false;
  return Value::undefined(name);
}

Value global_function(const std::string& name, bool with_strftime_now, const RenderLimits& limits) {
  if (name == "namespace") return Value::function([](CallArgs& a) { return make_namespace(a); });
  if (name == "range") return Value::function([limits](CallArgs& a) { return make_range(a, limits); });
  if (name == "dict") {
    return Value::function([](CallArgs& a) {
      ValueDict items(a.keyword.begin(), a.keyword.end());
      return Value::from_dict(std::move(items));
    });
  }
  if (name == "raise_exception") {
    return Value::function([](CallArgs& a) -> Value {
      throw TemplateError(a.positional.empty() ? std::string("raise_exception called") : to_display_string(a.positional[0]));
    });
  }
  if (name == "strftime_now" && with_strftime_now) return Value::function([](CallArgs& a) { return strftime_now(a); });
  return Value::undefined(name);
}

}  // namespace llmpack::jinja
