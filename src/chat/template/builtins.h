// Operators, filters, tests, methods and global functions of the Jinja2
// subset, with Python's semantics. All of them throw TemplateError on a
// type error; the evaluator adds the template line.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "chat/template/value.h"

namespace llmpack::jinja {

// Bounds that keep an arbitrary template from exhausting memory or time.
struct RenderLimits {
  size_t max_output_bytes = 4u << 20;    // rendered text, macro output included
  size_t max_steps = 1'000'000;          // statements run + loop iterations
  size_t max_sequence_items = 100'000;   // list/string built by range(), *, +
  int max_macro_depth = 10;              // nested macro calls
};

// Operators (operators.cc).
Value binary_op(std::string_view op, const Value& a, const Value& b, const RenderLimits& limits);
Value negate(const Value& v);
bool compare_op(std::string_view op, const Value& a, const Value& b);
bool contains(const Value& container, const Value& item);
Value get_item(const Value& obj, const Value& key);
Value get_attr(const Value& obj, const std::string& name);
Value slice(const Value& obj, const Value& start, const Value& stop, const Value& step);
// Items a for loop visits: list items, dict keys, string characters.
ValueList iterate(const Value& v);
// Raises jinja2's UndefinedError when `v` is undefined.
void require_defined(const Value& v);
int64_t to_int_index(const Value& v, const char* what);

// Filters and tests (filters.cc).
Value apply_filter(const std::string& name, const Value& input, CallArgs& args, const RenderLimits& limits);
bool apply_test(const std::string& name, const Value& input, CallArgs& args);

// Methods on strings, dicts and lists (methods.cc). `found` is false when
// the object has no method of that name.
Value call_method(const Value& obj, const std::string& name, CallArgs& args, bool& found);
// Global functions: namespace, range, dict, raise_exception; strftime_now
// only when enabled (HF defines it; the fixtures leave it undefined).
Value global_function(const std::string& name, bool with_strftime_now, const RenderLimits& limits);

// Argument helpers shared by filters and methods.
const Value* arg(CallArgs& args, size_t index, std::string_view keyword);

}  // namespace llmpack::jinja
