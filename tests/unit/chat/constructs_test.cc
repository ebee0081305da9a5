// One test per Jinja construct; the expected strings come from Python
// jinja2 3.1 with HF's settings (trim_blocks, lstrip_blocks, loopcontrols,
// HF's tojson) on the conversation below.
#include <gtest/gtest.h>

#include "chat/template/chat_template.h"

namespace llmpack {
namespace {

struct Case {
  const char* source;
  const char* expected;
};

const Case kCases[] = {
    {"{% for m in messages %}{{ loop.index0 }}{{ loop.index }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.revindex }}|{% endfor %}",
     "01TrueFalse33|12FalseFalse32|23FalseTrue31|"},
    {"{% for m in messages %}{% if m.role == 'user' %}U{% elif m.role == 'system' %}S{% else %}A{% endif %}{% endfor %}",
     "SUA"},
    {"{% set ns = namespace(n=0, s='') %}{% for m in messages %}{% set ns.n = ns.n + 1 %}{% set ns.s = ns.s ~ m.role[0] %}{% endfor %}{{ ns.n }} {{ ns.s }}",
     "3 sua"},
    {"{% set x = 1 %}{% for m in messages %}{% set x = x + 1 %}{{ x }}{% endfor %}{{ x }}",
     "2221"},
    {"{% macro turn(role, text='none') %}<{{ role }}:{{ text }}>{% endmacro %}{{ turn('a') }}{{ turn('b', 'c') }}{{ turn(text='t', role='r') }}",
     "<a:none><b:c><r:t>"},
    {"{{ messages[1:] | length }} {{ messages[::-1][0].role }} {{ messages[-1]['content'] }} {{ 'abcdef'[1:4] }} {{ 'abcdef'[::2] }} {{ [1,2,3,4][-2:] }}",
     "2 assistant  Hello!  bcd ace [3, 4]"},
    {"{{ '  x  '|trim }}|{{ ' x '.strip() }}|{{ 'xxaxx'.lstrip('x') }}|{{ 'xxaxx'.rstrip('x') }}|{{ 'a b  c'.split() }}|{{ 'a,b,,c'.split(',') }}|{{ 'hello world'.title() }}|{{ 'Ab'.upper() }}{{ 'Ab'.lower() }}|{{ 'aXbX'.replace('X', '-') }}",
     "x|x|axx|xxa|['a', 'b', 'c']|['a', 'b', '', 'c']|Hello World|ABab|a-b-"},
    {"{{ 'abc'.startswith('ab') }} {{ 'abc'.endswith('bc') }} {{ 'abc'.startswith(('x', 'a')) }} {{ 'b' in 'abc' }} {{ 'z' not in 'abc' }} {{ 'role' in messages[0] }} {{ 2 in [1,2] }}",
     "True True True True True True True"},
    {"{{ x is defined }} {{ messages is defined }} {{ none is none }} {{ 'a' is string }} {{ 1 is string }} {{ x is not defined }} {{ 3 is odd }} {{ {} is mapping }} {{ [] is iterable }} {{ false is false }}",
     "False True True True False True True True True True"},
    {"{{ 'a' ~ 1 ~ none }} {{ 'a' + 'b' }} {{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }} {{ 1.5 + 1 }}",
     "a1None ab 7 9 3 -4 2 3.5 1024 2.5"},
    {"{{ 1 < 2 and 2 < 3 }} {{ 1 < 2 < 1 }} {{ not true or false }} {{ 0 or 'x' }} {{ '' and 'y' }} {{ 1 == 1.0 }} {{ 'a' != 'b' }} {{ [1, 2] == [1, 2] }}",
     "True False False x  True True True"},
    {"{{ {'a': 1, 'b': [1, 2.5, none, true, 'x']} | tojson }}|{{ {'k': {'n': []}, 'e': {}} | tojson(indent=2) }}|{{ '<&>\"\\n' | tojson }}",
     "{\"a\": 1, \"b\": [1, 2.5, null, true, \"x\"]}|{\n  \"k\": {\n    \"n\": []\n  },\n  \"e\": {}\n}|\"<&>\\\"\\n\""},
    {"{{ [1, 'a', none, true] }} {{ {'k': 'v'} }} {{ 1.0 }} {{ 0.1 + 0.2 }} {{ 1e20 }} {{ 3.0e-5 }}",
     "[1, 'a', None, True] {'k': 'v'} 1.0 0.30000000000000004 1e+20 3e-05"},
    {"{% for m in messages %}{% if loop.index0 == 1 %}{% continue %}{% endif %}{% if loop.index0 == 2 %}{% break %}{% endif %}{{ m.role }}{% endfor %}",
     "system"},
    {"{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }};{% endfor %}{% for k, v in {'c': 3} | items %}{{ k }}{{ v }}{% endfor %}",
     "a=1;b=2;c3"},
    {"{% for m in messages if m.role != 'system' %}{{ m.role }}{{ loop.length }}{% else %}none{% endfor %}{% for x in [] %}x{% else %}empty{% endfor %}",
     "user2assistant2empty"},
    {"{{ messages | selectattr('role', 'equalto', 'user') | list | length }} {{ messages | map(attribute='role') | join(', ') }} {{ ['a', 'code', 'b'] | reject('equalto', 'code') | join('/') }}",
     "1 system, user, assistant a/b"},
    {"{{ 'yes' if messages else 'no' }} {{ 'a' if false }}| {{ undefined_thing }}| {{ x | default('dflt') }} {{ messages | first | tojson }} {{ [3, 1] | last }}",
     "yes | | dflt {\"role\": \"system\", \"content\": \"Be brief.\"} 1"},
    {"a\n  {% if true %}\n  b\n  {% endif %}\nc\n  {{ 'd' }}\n{# comment #}\ne {{- ' f ' -}} g\n  {%- if true %} h{% endif %}\n",
     "a\n  b\nc\n  d\ne f g h"},
    {"{% set greeting %}Hi {{ messages[1].content }}{% endset %}[{{ greeting }}]{% raw %}{{ not parsed }}{% endraw %}",
     "[Hi Hi]{{ not parsed }}"},
    {"{% if messages[0]['role'] == 'system' %}{% set sys = messages[0]['content'] %}{% endif %}{{ sys }}|{{ date_string }}|{{ messages[5] is defined }}|{{ messages[0].missing is defined }}",
     "Be brief.|26 Jul 2024|False|False"},
    {"{{ '\\u00e9\\x41\\t' | length }} {{ 'héllo'[1] }} {{ 'héllo' | length }} {{ 'a\"b' }} {{ \"it's\" }}",
     "3 é 5 a\"b it's"},
    {"{% set a, b = [1, 2] %}{{ a }}{{ b }} {{ range(3) | list }} {{ range(1, 7, 2) | list }} {{ dict(x=1) | tojson }} {{ [1,2,3] | sum }} {{ ' x ' ~ 'y' | upper }}",
     "12 [0, 1, 2] [1, 3, 5] {\"x\": 1} 6  x Y"},
};

class ConstructTest : public ::testing::TestWithParam<Case> {};

TEST_P(ConstructTest, RendersLikeJinja2) {
  const Case& c = GetParam();
  auto t = ChatTemplate::parse(c.source);
  ASSERT_TRUE(t.ok()) << t.status().message();
  const std::vector<ChatMessage> messages = {
      {"system", "Be brief."}, {"user", "Hi"}, {"assistant", " Hello! "}};
  auto out = (*t)->render(messages, true, "<s>", "</s>", {{"date_string", "26 Jul 2024"}});
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(out.value(), c.expected) << "template: " << c.source;
}

INSTANTIATE_TEST_SUITE_P(Jinja, ConstructTest, ::testing::ValuesIn(kCases));

}  // namespace
}  // namespace llmpack
