// Parser of the Jinja2 subset: tokens -> statement tree. Tags, filters and
// tests outside the supported subset fail here, with their name and line,
// so that a template is rejected at load rather than mid-conversation.
#pragma once

#include <string_view>

#include "chat/template/ast.h"

namespace llmpack::jinja {

// Throws TemplateError (with the line) on a syntax error or an unsupported
// feature.
Body parse_template(std::string_view source);

// The filter and test names the evaluator implements (filters.cc).
bool is_known_filter(std::string_view name);
bool is_known_test(std::string_view name);

}  // namespace llmpack::jinja
