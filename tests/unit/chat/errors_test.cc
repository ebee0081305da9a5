// Errors: unsupported features fail at parse time with their line, template
// exceptions carry the template's message, and runaway templates stop at
// the render limits instead of crashing or hanging.
#include <gtest/gtest.h>

#include <string>

#include "chat/template/chat_template.h"

namespace llmpack {
namespace {

std::string parse_error(const std::string& source) {
  auto t = ChatTemplate::parse(source);
  return t.ok() ? std::string("<parsed>") : t.status().message();
}

std::string render_error(const std::string& source, ChatTemplateOptions options = {}) {
  auto t = ChatTemplate::parse(source, options);
  if (!t.ok()) return "<parse error> " + t.status().message();
  auto out = (*t)->render({{"user", "Hi"}}, true, "<s>", "</s>");
  return out.ok() ? std::string("<rendered>") : out.status().message();
}

TEST(ChatTemplateErrors, UnsupportedTagNamesFeatureAndLine) {
  EXPECT_EQ(parse_error("{{ bos_token }}\n{% if true %}\n{% include 'x.jinja' %}\n{% endif %}"),
            "chat template line 3: unsupported tag 'include'; use --chat_template NAME");
  EXPECT_EQ(parse_error("a\n{% extends 'base' %}"),
            "chat template line 2: unsupported tag 'extends'; use --chat_template NAME");
  EXPECT_EQ(parse_error("{% call foo() %}{% endcall %}"),
            "chat template line 1: unsupported tag 'call'; use --chat_template NAME");
}

TEST(ChatTemplateErrors, UnsupportedFilterAndTestFailAtParse) {
  EXPECT_EQ(parse_error("\n\n{{ x | wordwrap(3) }}"),
            "chat template line 3: unsupported filter 'wordwrap'; use --chat_template NAME");
  EXPECT_EQ(parse_error("{% if x is prime %}{% endif %}"),
            "chat template line 1: unsupported test 'prime'; use --chat_template NAME");
  EXPECT_EQ(parse_error("{% for x in xs recursive %}{% endfor %}"),
            "chat template line 1: unsupported recursive for loop; use --chat_template NAME");
}

TEST(ChatTemplateErrors, SyntaxErrorsHaveLines) {
  EXPECT_EQ(parse_error("{% for m in messages %}\n{{ m }}\n"),
            "chat template line 2: unexpected end of template: expected '{% endfor %}'");
  EXPECT_EQ(parse_error("ok\n{{ 'a' + }}"), "chat template line 2: unexpected '}}' in expression");
  EXPECT_EQ(parse_error("{{ 'open"), "chat template line 1: unterminated string literal");
  EXPECT_EQ(parse_error("x\ny {{ a"), "chat template line 2: unclosed tag: expected '}}' before the end of the template");
  EXPECT_EQ(parse_error("{# never closed"), "chat template line 1: unclosed comment: expected '#}'");
  EXPECT_EQ(parse_error("{% break %}"), "chat template line 1: 'break' outside of a for loop");
  EXPECT_EQ(parse_error("{% endif %}"), "chat template line 1: unknown tag 'endif'");
  EXPECT_EQ(parse_error("{{ 99999999999999999999 }}"),
            "chat template line 1: integer literal 99999999999999999999 out of range");
}

TEST(ChatTemplateErrors, RaiseExceptionCarriesTemplateMessage) {
  EXPECT_EQ(render_error("a\n{% if messages[0].role == 'user' %}\n{{ raise_exception('Roles must alternate') }}\n{% endif %}"),
            "chat template line 3: Roles must alternate");
}

TEST(ChatTemplateErrors, RuntimeTypeErrorsNameTheProblem) {
  EXPECT_EQ(render_error("{{ foo.bar }}"), "chat template line 1: 'foo' is undefined");
  EXPECT_EQ(render_error("\n{{ 'a' + 1 }}"), "chat template line 2: unsupported operand types for +: 'string' and 'int'");
  EXPECT_EQ(render_error("{{ 1 // 0 }}"), "chat template line 1: integer division or modulo by zero");
  EXPECT_EQ(render_error("{{ 9223372036854775807 + 1 }}"), "chat template line 1: integer overflow in arithmetic");
  EXPECT_EQ(render_error("{{ 2 ** 64 }}"), "chat template line 1: integer overflow in '**'");
  EXPECT_EQ(render_error("{% set x = 1 %}{% set x.y = 2 %}"),
            "chat template line 1: cannot set attribute 'y' of 'x': it is a int, not a namespace()");
  EXPECT_EQ(render_error("{{ messages | tojson(indent=none) }}{{ raise_exception }}"), "<rendered>");
  EXPECT_EQ(render_error("{{ nothing() }}"), "chat template line 1: 'nothing' is undefined");
}

TEST(ChatTemplateErrors, StrftimeNowIsUndefinedUnlessEnabled) {
  auto t = ChatTemplate::parse("{{ strftime_now is defined }}");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ((*t)->render({}, false, "", "").value(), "False");
  ChatTemplateOptions options;
  options.enable_strftime_now = true;
  auto t2 = ChatTemplate::parse("{{ strftime_now('%Y') | length }}", options);
  ASSERT_TRUE(t2.ok());
  EXPECT_EQ((*t2)->render({}, false, "", "").value(), "4");
}

TEST(ChatTemplateLimits, RunawayLoopsStopAtStepLimit) {
  ChatTemplateOptions options;
  options.max_steps = 10000;
  EXPECT_EQ(render_error("{% for i in range(100000) %}\n{% for j in range(100000) %}{% endfor %}{% endfor %}", options),
            "chat template line 2: template ran more than 10000 steps");
}

TEST(ChatTemplateLimits, OutputSizeIsBounded) {
  ChatTemplateOptions options;
  options.max_output_bytes = 1000;
  const std::string msg = render_error("{% for i in range(5000) %}xy{% endfor %}", options);
  EXPECT_EQ(msg, "chat template line 1: rendered text exceeds 1000 bytes");
  EXPECT_NE(render_error("{{ 'x' * 1000000000 }}").find("items"), std::string::npos);
  EXPECT_NE(render_error("{{ range(1000000000) | length }}").find("items"), std::string::npos);
}

TEST(ChatTemplateLimits, MacroRecursionAndDeepNestingAreBounded) {
  EXPECT_EQ(render_error("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}"),
            "chat template line 1: macro calls nested deeper than 10");
  EXPECT_EQ(parse_error("{{ " + std::string(500, '(') + "1" + std::string(500, ')') + " }}"),
            "chat template line 1: template nested deeper than 100 levels");
  const std::string deep = render_error(
      "{% set ns = namespace(x=1) %}{% for i in range(1000) %}{% set ns.x = [ns.x] %}{% endfor %}");
  EXPECT_NE(deep.find("nested deeper than 200"), std::string::npos) << deep;
  EXPECT_EQ(render_error("{% set ns = namespace() %}{% set ns.me = [ns] %}"),
            "chat template line 1: a namespace attribute cannot hold a namespace");
}

}  // namespace
}  // namespace llmpack
